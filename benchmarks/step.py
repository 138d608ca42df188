"""Simulation throughput: env-steps/s of ``jc.step`` next to MJX and MuJoCo C on the same compiled
model, in the same run (issue 5).

Scenes (one ``mujoco.MjModel`` each, handed to all three engines — ours through
``jc.io.from_mjmodel``, MJX through ``mjx.put_model``, MuJoCo C as is):

* ``box``       — one 0.1 m cube dropped 0.1 mm onto a plane (in contact from the first steps);
* ``tower``     — ten 0.1 m cubes stacked with 1 mm gaps (``jc.scenes.box_tower``);
* ``humanoid``  — MJX's own benchmark humanoid (``mujoco/mjx/test_data/humanoid/humanoid.xml``,
  its tuned solver options; 21 motors, zero controls) — needs the ``bench`` extra;
* ``panda``     — the Franka Panda URDF of ``example-robot-data`` on a floor, self-collision off;
* ``go2``       — the Unitree Go2 URDF (floating base, legs in a standing pose, feet 1 cm above
  the floor) on a floor, self-collision off.

Each engine advances ``batch`` environments ``steps`` steps from the same initial state. Ours and
MJX run one ``jit(vmap(scan(step)))`` (the first call is reported as compile time, then the median
of ``--repeats`` calls, blocked on the result) — or, with ``--chunk N``, both run
``jit(jc.chunked_vmap(scan(step), N))``: the batch in chunks of ``N`` environments one after
another, which on a CPU keeps a chunk's working set in cache (see ``jc.chunked_vmap``); MuJoCo C runs ``mujoco.rollout`` on one thread.
Times are CPU time of the pinned process (``time.process_time``), so other jobs on a shared
machine do not inflate them. The physics differ on purpose: we solve hard NCP contact with ADMM (default options, float64
here), MuJoCo / MJX their soft-contact convex model with their Newton / CG solver — compare
throughput, not trajectories. With ``--solver mujoco`` ours simulates that same soft model
(``constraint_model="mujoco"``, issue 45): the same physics in all three engines. Our mean solver
iterations and max criterion are reported too.

    pip install -e ".[test,bench]"
    python benchmarks/step.py --quick     # batch 1 and 32, ~10 minutes on 2 loaded cores
    python benchmarks/step.py             # batch 1, 32, 256, 1024
    python benchmarks/step.py --chunk 16 --batches 256 1024   # chunked batches (step_chunk16.*)
    python benchmarks/step.py --solver mujoco   # MuJoCo's soft model in all three (step_mujoco_soft.*)

Writes ``benchmarks/results/step.json`` and ``step.md`` (``step_quick.*`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

from _common import RESULTS, enable_float64, loadavg, pin_to_one_core, timed, write_results

# One core for every engine unless --all-cores: XLA:CPU hands work between its pool threads inside
# loops, and on a shared machine each handoff can wait a scheduler quantum — measured here under
# load 6 on 2 cores, one tower contact stage took 1.1 s on two cores and 4.3 ms pinned to one.
# Pinning (before JAX starts its threads) makes runs comparable; MuJoCo C runs one thread anyway.
pin_to_one_core()
enable_float64()  # a script, not the library

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import mujoco  # noqa: E402

import jaxsim_contact as jc  # noqa: E402

HERE = Path(__file__).resolve().parent


# ---- scenes: one MjModel per scene (benchmarks/_scenes.py) ---------------------------------------

from _scenes import load as _load_scene  # noqa: E402
from _scenes import panda  # noqa: E402  (scripts that import step use step.panda)

__all__ = ["bench_mjx", "bench_mujoco_c", "bench_ours", "ours_options", "panda", "scenes"]

#: the scenes of this benchmark, in report order
SCENES = ("box", "tower", "humanoid", "panda", "go2")


def scenes() -> dict:
    """name -> (MjModel, initial qpos)."""
    out = {}
    for name in SCENES:
        try:
            out[name] = _load_scene(name)
        except (ImportError, FileNotFoundError) as err:
            print(f"{name} skipped: {err} (pip install -e '.[bench]')")
    return out


# ---- engines ------------------------------------------------------------------------------------

def _median_time(fn, repeats: int):
    """``(steady s, compile s, output)`` of ``fn`` (``_common.timed``), blocked on results.

    CPU time of this (pinned) process, not wall time: with other jobs on the machine wall time
    counts their time slices too (3 agents on 2 cores inflated it ~3x in earlier runs)."""
    steady, compile_s, out, _ = timed(fn, repeats, clock=time.process_time)
    return steady, compile_s, out


def _batched(run, batch: int, chunk: int):
    """``jax.vmap(run)``, or ``jc.chunked_vmap(run, chunk)`` when ``0 < chunk < batch``."""
    return jc.chunked_vmap(run, chunk) if 0 < chunk < batch else jax.vmap(run)


NEWTON_CAP = 100


def ours_options(solver: str, compliance: float, tangential_compliance: float = 0.0,
                 limit_compliance: float = 0.0) -> tuple[dict, str]:
    """``Model.replace_options`` arguments of ``--solver`` / ``--compliance`` /
    ``--tangential-compliance`` / ``--limit-compliance`` and the report's description of them."""
    if solver == "mujoco":
        return dict(mujoco_compatible=True), (
            "MuJoCo's soft constraint model (`jc.io.mujoco_compatible`: the model's solref / solimp, "
            "cone, impratio; PrimalNewton with the model's iterations, tolerance 1e-10)")
    if solver == "admm" and compliance == 0 and tangential_compliance == 0 and limit_compliance == 0:
        return {}, "hard NCP contact, ADMM (default options)"
    options = {} if compliance == 0 else dict(compliance=compliance)
    if tangential_compliance:
        options["tangential_compliance"] = tangential_compliance
    if limit_compliance:
        options["limit_compliance"] = limit_compliance
    label = "ADMM-NCP"
    if solver == "newton":
        options["solver"] = jc.contact.PrimalNewton(max_iterations=NEWTON_CAP)
        label = f"PrimalNewton-CCP (cap {NEWTON_CAP})"
    tangential = f", tangential compliance {tangential_compliance:g}" if tangential_compliance else ""
    limits = f", limit compliance {limit_compliance:g}" if limit_compliance else ""
    return options, f"{label}, compliance {compliance:g}{tangential}{limits}"


def bench_ours(mj, q0, batch: int, steps: int, repeats: int, chunk: int = 0, options=None):
    model = jc.io.from_mjmodel(mj)
    options = dict(options or {})
    if options.pop("mujoco_compatible", False):  # the same physics as MJX and MuJoCo C
        model = jc.io.mujoco_compatible(model, mj)
    if options:
        model = model.replace_options(**options)
    state = jc.init(model, q=jnp.asarray(q0))
    states = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), state)
    ctrl = jnp.zeros((model.nu,))

    def run(s):
        def body(carry, _):
            s, iters, most, worst = carry
            s = jc.step(model, s, ctrl)
            return (s, iters + s.contact.iterations, jnp.maximum(most, s.contact.iterations),
                    jnp.maximum(worst, s.contact.residual)), None

        zero = jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32), jnp.zeros((), s.q.dtype)
        (s, iters, most, worst), _ = jax.lax.scan(body, (s, *zero), None, length=steps)
        return s.q, iters, most, worst

    fn = jax.jit(_batched(run, batch, chunk))
    steady, compile_s, (q, iters, most, worst) = _median_time(lambda: fn(states), repeats)
    finite = bool(np.all(np.isfinite(np.asarray(q))))
    return dict(seconds=steady, compile_s=compile_s, env_steps_per_s=batch * steps / steady,
                mean_iterations=float(np.mean(iters)) / steps, max_iterations=int(np.max(most)),
                max_residual=float(np.max(worst)), finite=finite, dtype=str(q.dtype))


def bench_mjx(mj, q0, batch: int, steps: int, repeats: int, chunk: int = 0):
    from mujoco import mjx

    mx = mjx.put_model(mj)
    data = mjx.make_data(mx).replace(qpos=jnp.asarray(q0))
    datas = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), data)

    def run(d):
        d, _ = jax.lax.scan(lambda d, _: (mjx.step(mx, d), None), d, None, length=steps)
        return d.qpos

    fn = jax.jit(_batched(run, batch, chunk))
    steady, compile_s, q = _median_time(lambda: fn(datas), repeats)
    return dict(seconds=steady, compile_s=compile_s, env_steps_per_s=batch * steps / steady,
                finite=bool(np.all(np.isfinite(np.asarray(q)))))


def bench_mujoco_c(mj, q0, batch: int, steps: int, repeats: int, chunk: int = 0):
    from mujoco import rollout

    data = mujoco.MjData(mj)
    data.qpos[:] = q0
    mujoco.mj_forward(mj, data)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state = np.empty(mujoco.mj_stateSize(mj, spec))
    mujoco.mj_getState(mj, data, state, spec)
    initial = np.tile(state, (batch, 1))
    control = np.zeros((batch, steps, mj.nu))
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        out, _ = rollout.rollout(mj, data, initial, control, nstep=steps)
        times.append(time.process_time() - t0)
    steady = float(np.median(times))
    return dict(seconds=steady, compile_s=0.0, env_steps_per_s=batch * steps / steady,
                finite=bool(np.all(np.isfinite(out))))


# ---- driver -------------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="batch 1 and 32 only")
    parser.add_argument("--batches", type=int, nargs="*", default=None)
    parser.add_argument("--scenes", nargs="*", default=None)
    parser.add_argument("--steps", type=int, default=50, help="steps per timed call")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=0,
                        help="run ours and MJX batches through jc.chunked_vmap in chunks of this many "
                             "environments (0: plain vmap); writes step_chunk<N>.*")
    parser.add_argument("--all-cores", action="store_true", help="do not pin the process to one core")
    parser.add_argument("--solver", choices=("admm", "newton", "mujoco"), default="admm",
                        help="our contact solver: the default ADMM-NCP, PrimalNewton-CCP (needs "
                             "--compliance > 0; MJX and MuJoCo C are compliant too), or 'mujoco': "
                             "constraint_model='mujoco', the physics MJX and MuJoCo C simulate "
                             "(writes step_mujoco_soft.*)")
    parser.add_argument("--compliance", type=float, default=0.0,
                        help="our Options.compliance (absolute, see jc.Options); 0: rigid (default)")
    parser.add_argument("--tangential-compliance", type=float, default=0.0,
                        help="our Options.tangential_compliance (friction rows); 0: exact stiction "
                             "(default). MuJoCo's elliptic cones use compliance / impratio (1 here)")
    parser.add_argument("--limit-compliance", type=float, default=0.0,
                        help="our Options.limit_compliance (joint-limit rows); 0: hard limits (default)")
    parser.add_argument("--out", default=None,
                        help="stem of the result files in benchmarks/results (default: step, "
                             "step_quick with --quick, step_chunk<N> with --chunk N)")
    parser.add_argument("--engines", nargs="*", default=["ours", "mujoco_c", "mjx"],
                        choices=["ours", "mujoco_c", "mjx"], help="engines to run (default: all three)")
    parser.add_argument("--out-dir", default=None,
                        help="folder of the result files (default: benchmarks/results)")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                        help="ours and MJX in this dtype (x64 on or off for the process; MuJoCo C "
                             "is float64 always); float32 writes step_float32.* by default")
    parser.add_argument("--max-seconds", type=float, default=60.0,
                        help="skip an engine's larger batches once one call would exceed this (MJX on "
                             "meshes: 16 s per 20-step call at batch 1 for the Panda)")
    args = parser.parse_args(argv)
    enable_float64(args.dtype == "float64")  # before any array: models and states follow it
    if args.solver == "newton" and args.compliance <= 0:
        parser.error("--solver newton needs --compliance > 0 (the primal is only viable with compliance)")
    argv = sys.argv[1:] if argv is None else argv  # for the command line in the report
    batches = args.batches or ([1, 32] if args.quick else [1, 32, 256, 1024])
    try:
        import mujoco.mjx  # noqa: F401
        have_mjx = "mjx" in args.engines
    except ImportError:
        have_mjx = False
        print("MJX columns skipped: mujoco-mjx is not installed (pip install -e '.[bench]')")
    ours_opts, ours_label = ours_options(args.solver, args.compliance, args.tangential_compliance,
                                         args.limit_compliance)
    meta = dict(date=time.strftime("%Y-%m-%d %H:%M"), machine=platform.machine(), cpus=os.cpu_count(),
                jax=jax.__version__, mujoco=mujoco.__version__, steps=args.steps, repeats=args.repeats,
                cores_used=len(os.sched_getaffinity(0)), solver=args.solver, compliance=args.compliance,
                tangential_compliance=args.tangential_compliance,
                limit_compliance=args.limit_compliance, ours=ours_label, dtype=args.dtype,
                loadavg_start=loadavg())
    rows = []
    if args.chunk < 0:
        parser.error(f"--chunk must be >= 0, got {args.chunk}")
    stem = "step_quick" if args.quick else "step"
    if args.solver == "mujoco":
        stem = f"{stem}_mujoco_soft"
    if args.dtype == "float32":
        stem = f"{stem}_float32"
    if args.chunk:
        stem = f"{stem}_chunk{args.chunk}"
    stem = args.out or stem
    meta["chunk"] = args.chunk
    out_dir = Path(args.out_dir) if args.out_dir else RESULTS
    out_dir.mkdir(exist_ok=True)
    all_scenes = scenes()
    for name, (mj, q0) in all_scenes.items():
        if args.scenes and name not in args.scenes:
            continue
        too_slow = {}  # engine -> seconds per call at a smaller batch
        for batch in batches:
            row = dict(scene=name, batch=batch, nv=int(mj.nv))
            engines = [("ours", bench_ours), ("mujoco_c", bench_mujoco_c)]
            if have_mjx:
                engines.append(("mjx", bench_mjx))
            engines = [(e, fn) for e, fn in engines if e in args.engines]
            for engine, fn in engines:
                if engine in too_slow:
                    row[engine] = dict(error=f"skipped: {too_slow[engine]:.1f} s per call at a smaller batch")
                    continue
                try:
                    extra = dict(options=ours_opts) if engine == "ours" else {}
                    row[engine] = fn(mj, q0, batch, args.steps, args.repeats, args.chunk, **extra)
                    # the next batch's call, extrapolated linearly (pessimistic: batching is
                    # sublinear); extrapolating to the largest batch skipped whole scenes
                    larger = [b for b in batches if b > batch]
                    if larger and row[engine]["seconds"] * larger[0] / batch > args.max_seconds:
                        too_slow[engine] = row[engine]["seconds"]
                except Exception as err:  # a peer that cannot run a scene is reported, not fatal
                    row[engine] = dict(error=f"{type(err).__name__}: {err}"[:300])
                print(name, batch, engine, {k: (round(v, 4) if isinstance(v, float) else v)
                                            for k, v in row[engine].items()}, flush=True)
            rows.append(row)
            # written after every row, so an interrupted run keeps what it measured
            meta["loadavg_end"] = loadavg()
            write_results(stem, dict(meta=meta, rows=rows), markdown(meta, rows, argv), out_dir)
    print((out_dir / f"{stem}.md").read_text())


def _rate(r):
    return r.get("env_steps_per_s") if isinstance(r, dict) else None


def markdown(meta, rows, argv) -> str:
    lines = [
        "# Step throughput: jaxsim_contact vs MJX vs MuJoCo C",
        "",
        f"`python benchmarks/step.py {' '.join(argv or [])}` — {meta['date']}, {meta['cpus']} CPUs "
        f"({meta['machine']}; process pinned to {meta['cores_used']}), jax {meta['jax']}, mujoco {meta['mujoco']}, {meta['steps']} steps per "
        f"call, median of {meta['repeats']} (CPU time); load average {meta['loadavg_start']} → {meta['loadavg_end']}.",
        f"{meta.get('dtype', 'float64').capitalize()} (ours and MJX; MuJoCo C float64). Ours: {meta.get('ours', 'hard NCP contact, ADMM (default options)')}. MJX / MuJoCo C: their soft "
        "contact and solver options from the same model. MuJoCo C: one thread (`mujoco.rollout`); ours and MJX in the same pinned process"
        + (f", both batched by `jc.chunked_vmap` in chunks of {meta['chunk']} environments." if meta.get("chunk") else ", batched by `jax.vmap`."),
        "",
        "| scene | nv | batch | ours env-steps/s | MJX env-steps/s | MuJoCo C env-steps/s | ours / MJX | "
        "ours / MuJoCo C | compile ours / MJX (s) | ours iterations mean / max | ours max criterion |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ours, mjx, c = r.get("ours", {}), r.get("mjx", {}), r.get("mujoco_c", {})

        def fmt(x):
            return "error" if x is None else f"{x:,.0f}"

        ratio = lambda a, b: "—" if a is None or b is None else f"{a / b:.2f}"  # noqa: E731
        lines.append(
            f"| {r['scene']} | {r['nv']} | {r['batch']} | {fmt(_rate(ours))} | "
            f"{fmt(_rate(mjx)) if mjx else '—'} | {fmt(_rate(c))} | {ratio(_rate(ours), _rate(mjx))} | "
            f"{ratio(_rate(ours), _rate(c))} | {ours.get('compile_s', float('nan')):.1f} / "
            f"{mjx.get('compile_s', float('nan')):.1f} | {ours.get('mean_iterations', float('nan')):.1f} / "
            f"{ours.get('max_iterations', '—')} | "
            f"{ours.get('max_residual', float('nan')):.1e} |")
    errors = [(r["scene"], r["batch"], k, v["error"]) for r in rows for k, v in r.items()
              if isinstance(v, dict) and "error" in v]
    if errors:
        lines += ["", "Errors:", ""] + [f"- {s} batch {b} {k}: {e}" for s, b, k, e in errors]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
