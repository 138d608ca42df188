"""Is the step GPU-shaped? Checked on a CPU (issue 47, "GPU-shaped code").

A vmapped loop on a GPU runs until its slowest lane is done, host round trips stall the device,
and scatters / gathers are the slow memory operations there. This script reports, per scene
(``benchmarks/_scenes.py``), without a GPU:

* **lane spread** — of a batch of ``--batch`` environments (each lane with its own small initial
  velocity, as in ``gpu/run.py``), settled ``--settle`` steps, then ``--steps`` steps: the
  solver iterations per step as the lane mean, the lane max (mean over steps of the batch's
  largest count: what a vmapped loop pays) and their ratio; the same for GJK and EPA iterations
  of ``jc.collision.distance`` on random ellipsoid pairs (separated and overlapping);
* **program census** — operation counts in the StableHLO of ``jit(vmap(step))``: loops
  (``while``), branches (``case`` / ``if``), ``scatter``, ``gather``, ``dynamic_slice``,
  ``dynamic_update_slice``, ``sort``, ``custom_call`` targets, and host callbacks (none allowed).

    python benchmarks/gpu/shape_report.py --batch 256 --out gpu_shape_report

Writes ``benchmarks/results/NAME.md`` and ``.json``. float32 (what GPUs run) unless ``--float64``.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

# the lanes, the spread and the GJK placements of the GPU command itself
from run import prepare_gjk, lane_spread, lane_velocities  # noqa: E402

#: StableHLO operations the census counts (``stablehlo.<name>``)
CENSUS = ("while", "case", "if", "scatter", "gather", "dynamic_slice", "dynamic_update_slice",
          "sort", "custom_call")


def census(text: str) -> dict:
    """Counts of :data:`CENSUS` operations, ``custom_call`` targets and host callbacks in the
    StableHLO ``text``."""
    counts = {name: len(re.findall(rf"stablehlo\.{name}\b", text)) for name in CENSUS}
    targets = collections.Counter(re.findall(r"stablehlo\.custom_call @(\w+)", text))
    counts["custom_call_targets"] = dict(targets)
    counts["host_callbacks"] = sum(n for t, n in targets.items() if "callback" in t.lower())
    return counts


def scene_report(name: str, batch: int, settle: int, steps: int) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import _scenes
    import jaxsim_contact as jc

    mj, q0 = _scenes.load(name)
    model = jc.io.from_mjmodel(mj)
    state = jc.init(model, q=jnp.asarray(q0))
    velocity = jnp.asarray(lane_velocities(batch, mj.nv), state.v.dtype)
    states = jax.vmap(lambda v: jc.init(model, q=state.q, v=v))(velocity)
    ctrl = jnp.zeros((model.nu,))
    step = jax.vmap(lambda s: jc.step(model, s, ctrl))
    text = jax.jit(step).lower(states).as_text()

    def run(s):
        def body(s, _):
            s = step(s)
            return s, s.contact.iterations
        return jax.lax.scan(body, s, None, length=steps)

    roll = jax.jit(run)  # one compile: the settling runs in calls of `steps` steps too
    for _ in range(-(-settle // steps)):
        states, _ = roll(states)
    _, iterations = roll(states)  # (steps, batch)
    return dict(scene=name, nv=int(mj.nv), solver=lane_spread(np.asarray(iterations).T),
                census=census(text))


def gjk_report(batch: int) -> tuple[list[dict], dict]:
    """GJK and EPA iteration spread of ``batch`` random ellipsoid pairs per placement (the GPU
    command's ``prepare_gjk``, every pair distinct), and the census of the query."""
    import jax
    import numpy as np

    rows = []
    for placement in ("separated", "overlapping"):
        fn, args = prepare_gjk("ellipsoid", placement, batch, batch)
        _, iterations, epa_iterations, _ = jax.jit(fn)(*args)
        rows.append(dict(placement=placement, gjk=lane_spread(np.asarray(iterations)[:, None]),
                         epa=lane_spread(np.asarray(epa_iterations)[:, None])))
    return rows, census(jax.jit(fn).lower(*args).as_text())


def markdown(meta: dict, scenes: list[dict], gjk: list[dict], gjk_census: dict) -> str:
    lines = [f"# GPU shape of the step, checked on a CPU ({meta['dtype']})", "",
             f"`python benchmarks/gpu/shape_report.py {meta['argv']}` — {meta['date']}, jax {meta['jax']}, "
             f"commit {meta['commit']}. Batch {meta['batch']}, each lane with its own initial velocity "
             f"(σ = 1e-2), {meta['settle']} steps to settle (rounded up to whole calls), then {meta['steps']} steps counted; default options.",
             "", "## Solver iterations per step across the batch", "",
             "Lane max = mean over steps of the batch's largest count: a vmapped `while` loop runs that "
             "many iterations for every lane. Ratio = lane max / mean: the factor a GPU pays over "
             "the average lane.", "",
             "| scene | nv | mean | lane max | ratio | max |", "|---|---|---|---|---|---|"]
    for r in scenes:
        s = r["solver"]
        ratio = "—" if s["ratio"] is None else f"{s['ratio']:.1f}"
        lines.append(f"| {r['scene']} | {r['nv']} | {s['mean']:.1f} | {s['lane_max']:.1f} | {ratio} | {s['max']} |")
    lines += ["", f"## GJK / EPA iterations across {meta['gjk_batch']} random ellipsoid pairs", "",
              "| placement | GJK mean / max (ratio) | EPA mean / max (ratio) |", "|---|---|---|"]
    for r in gjk:
        g, e = r["gjk"], r["epa"]
        fmt = lambda x: f"{x['mean']:.1f} / {x['max']} ({'—' if x['ratio'] is None else format(x['max'] / x['mean'], '.1f')})"  # noqa: E731
        lines.append(f"| {r['placement']} | {fmt(g)} | {fmt(e)} |")
    lines += ["", "## Program census (StableHLO of `jit(vmap(step))`)", "",
              "| program | " + " | ".join(CENSUS) + " | host callbacks | custom-call targets |",
              "|---|" + "---|" * (len(CENSUS) + 2)]
    for name, c in [(r["scene"], r["census"]) for r in scenes] + [("GJK/EPA query", gjk_census)]:
        targets = ", ".join(f"{t} ×{n}" for t, n in sorted(c["custom_call_targets"].items())) or "—"
        lines.append(f"| {name} | " + " | ".join(str(c[k]) for k in CENSUS)
                     + f" | {c['host_callbacks']} | {targets} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--gjk-batch", type=int, default=4096)
    parser.add_argument("--settle", type=int, default=40)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--scenes", nargs="+", default=["humanoid", "ant", "go2", "panda", "tower"])
    parser.add_argument("--float64", action="store_true")
    parser.add_argument("--out", default="gpu_shape_report")
    args = parser.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", args.float64)
    import subprocess

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True,
                            text=True).stdout.strip()
    meta = dict(argv=" ".join(sys.argv[1:] if argv is None else argv), date=time.strftime("%Y-%m-%d"),
                jax=jax.__version__, commit=commit, batch=args.batch, gjk_batch=args.gjk_batch,
                settle=args.settle, steps=args.steps, dtype="float64" if args.float64 else "float32")
    scenes = []
    for name in args.scenes:
        scenes.append(scene_report(name, args.batch, args.settle, args.steps))
        print(json.dumps(scenes[-1]), flush=True)
    gjk, gjk_census = gjk_report(args.gjk_batch)
    results = HERE.parent / "results"
    (results / f"{args.out}.json").write_text(json.dumps(dict(meta=meta, scenes=scenes, gjk=gjk,
                                                              gjk_census=gjk_census), indent=1))
    text = markdown(meta, scenes, gjk, gjk_census)
    (results / f"{args.out}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
