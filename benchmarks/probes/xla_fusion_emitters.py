"""Compile time and run time with and without ``--xla_cpu_use_fusion_emitters=false``, in one run.

Three settings: no flag (``default``), the legacy emitters under LLVM's default optimisation
(``fast``), and the legacy emitters with ``--xla_backend_optimization_level=0`` (``fast+O0``, the
test suite's configuration, ``tests/suite_flags.py``). The library sets no XLA flag
(``docs/sharp_bits.md``, "Compile time on CPU", for an EPA query the legacy emitters once got
wrong).

Each setting runs in its own child process (XLA reads ``XLA_FLAGS`` once per process), pinned to
one core, alternating ``default, fast, fast+O0, default, ...`` for ``--rounds`` rounds so that drift
of a shared machine hits all alike. A child measures, with CPU time of its process:

* ``distance``: ``jit(vmap(jc.collision.distance))`` (Nesterov GJK + EPA, float64) over 1024
  random poses of an ellipsoid pair and of a pair of 100-point hulls — compile time (lowering
  excluded, it does not depend on the flag) and µs per query (median of 5 calls);
* ``step``: ``benchmarks/step.py``'s ``jit(vmap(scan(jc.step)))`` of the tower, the MJX humanoid
  (with the ``bench`` extra) and the Go2 at batch 32, 20 steps — compile time (first call minus a
  steady call) and env-steps/s (median of 3).

    PYTHONPATH=. python benchmarks/probes/xla_fusion_emitters.py     # ~12 minutes on one core
    PYTHONPATH=. python benchmarks/probes/xla_fusion_emitters.py --rounds 1 --scenes tower

Writes ``benchmarks/results/xla_fusion_emitters.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent  # benchmarks/ (this probe lives in benchmarks/probes)
SETTINGS = {"default": "", "fast": "--xla_cpu_use_fusion_emitters=false",
            # the test suite's compiler configuration (tests/suite_flags.py, less its Eigen flag)
            "fast+O0": "--xla_cpu_use_fusion_emitters=false --xla_backend_optimization_level=0"}


def child(scenes: list[str]) -> dict:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    sys.path.insert(0, str(HERE))
    import step as step_bench  # enables float64, pins the process

    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxsim_contact as jc

    out = {"xla_flags": os.environ.get("XLA_FLAGS", ""), "distance": {}, "step": {}}
    rng = np.random.default_rng(0)
    batch = 1024
    positions = jnp.asarray(rng.uniform(-0.6, 0.6, (batch, 3)))
    quats = jax.vmap(jc._math.quat_normalize)(jnp.asarray(rng.normal(size=(batch, 4))))
    poses_b = jc.Transform(positions, quats)
    pose_a = jc.Transform(jnp.zeros(3), jnp.array([1.0, 0.0, 0.0, 0.0]))
    pairs = {
        "ellipsoid-ellipsoid": (jc.Ellipsoid(jnp.array([0.3, 0.2, 0.1])),
                                jc.Ellipsoid(jnp.array([0.2, 0.25, 0.3]))),
        "hull100-hull100": (jc.ConvexMesh.from_points(rng.normal(size=(100, 3)) * 0.3),
                            jc.ConvexMesh.from_points(rng.normal(size=(100, 3)) * 0.3)),
    }
    for name, (shape_a, shape_b) in pairs.items():
        fn = jax.jit(jax.vmap(lambda pb, sa=shape_a, sb=shape_b: jc.collision.distance(
            sa, pose_a, sb, pb, method="nesterov").signed_distance))
        lowered = fn.lower(poses_b)
        t0 = time.process_time()
        compiled = lowered.compile()
        compile_s = time.process_time() - t0
        times = []
        for _ in range(5):
            t0 = time.process_time()
            compiled(poses_b).block_until_ready()
            times.append(time.process_time() - t0)
        out["distance"][name] = {"compile_s": compile_s,
                                 "us_per_query": 1e6 * float(np.median(times)) / batch}
    all_scenes = step_bench.scenes()
    for name in scenes:
        if name not in all_scenes:
            continue
        mj, q0 = all_scenes[name]
        result = step_bench.bench_ours(mj, q0, batch=32, steps=20, repeats=3)
        out["step"][name] = {k: result[k] for k in ("compile_s", "env_steps_per_s", "mean_iterations")}
    return out


def render(report: dict) -> str:
    rounds = report["rounds"]
    lines = [
        "# XLA:CPU fusion emitters on / off: compile and run time",
        "",
        f"`{report['command']}` — {report['date']}, {report['machine']}, jax {report['jax']}; "
        f"each setting in its own process pinned to one core, CPU time, {len(rounds)} alternating "
        "rounds (one column per round). `fast` = `--xla_cpu_use_fusion_emitters=false` "
        "(XLA's older LLVM emitters) at LLVM's default optimisation, `fast+O0` = the same with "
        "`--xla_backend_optimization_level=0` (the test suite's configuration, `tests/suite_flags.py`), "
        "`default` = no flag. The library sets no XLA flag (`docs/sharp_bits.md`, \"Compile time on "
        "CPU\").",
        "",
    ]
    settings = [s for s in SETTINGS if s in rounds[0]]
    others = settings[1:]
    lines.append("| program | quantity | " + " | ".join(settings) + " | "
                 + " | ".join(f"{s} / default (means)" for s in others) + " |")
    lines.append("|---|---|" + "---|" * (len(settings) + len(others)))

    def row(kind, name, key, label):
        def values(setting):
            return [r[setting][kind][name][key] for r in rounds if name in r[setting][kind]]

        columns = {s: values(s) for s in settings}
        if not columns["default"]:
            return
        mean = lambda x: sum(x) / len(x)  # noqa: E731
        fmt = lambda xs: ", ".join(f"{x:,.3g}" for x in xs)  # noqa: E731
        base = mean(columns["default"])
        ratios = [f"{mean(columns[s]) / base:.2f}" if base else "—" for s in others]
        lines.append(f"| {kind} {name} | {label} | " + " | ".join(fmt(columns[s]) for s in settings)
                     + " | " + " | ".join(ratios) + " |")

    for name in rounds[0]["default"]["distance"]:
        row("distance", name, "compile_s", "compile (s)")
        row("distance", name, "us_per_query", "µs / query (batch 1024)")
    for name in rounds[0]["default"]["step"]:
        row("step", name, "compile_s", "compile (s)")
        row("step", name, "env_steps_per_s", "env-steps/s (batch 32)")
        row("step", name, "mean_iterations", "mean ADMM iterations")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--scenes", nargs="*", default=["tower", "humanoid", "go2"])
    parser.add_argument("--out", default=str(HERE / "results" / "xla_fusion_emitters"))
    parser.add_argument("--render", action="store_true", help="only re-render the Markdown of --out")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.render:
        out = Path(args.out)
        out.with_suffix(".md").write_text(render(json.loads(out.with_suffix(".json").read_text())))
        return 0
    if args.child:
        json.dump(child(args.scenes), sys.stdout)
        return 0
    import jax

    rounds = []
    for k in range(args.rounds):
        current = {}
        for setting, flags in SETTINGS.items():
            env = dict(os.environ, XLA_FLAGS=flags)
            proc = subprocess.run([sys.executable, __file__, "--child", "--scenes", *args.scenes],
                                  env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                sys.stderr.write(proc.stderr[-3000:])
                return proc.returncode
            current[setting] = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"round {k} {setting}: {json.dumps(current[setting])}", flush=True)
        rounds.append(current)
    report = {
        "command": "python benchmarks/probes/xla_fusion_emitters.py " + " ".join(argv or sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{os.cpu_count()} CPUs ({platform.machine()})",
        "jax": jax.__version__,
        "rounds": rounds,
    }
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    out.with_suffix(".md").write_text(render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
