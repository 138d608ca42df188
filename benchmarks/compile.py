"""Issue 46: cold and warm compile time of a robot's step, rollout and rollout gradient, next to
MJX's cold compile of the same model's step.

For every model (corpus keys of ``corpus.py``; a default set of robots below) and every program —
``step`` (``jit(jc.step)``), ``rollout`` (``jit`` of a ``lax.scan`` of steps) and ``grad``
(``jit(grad)`` of a scalar of the rollout's final state w.r.t. the initial velocity: every
model has one, not every model has controls) — two **fresh child
processes** run one after the other, pinned to one core:

* **cold**: an empty persistent compilation cache (a new temporary directory);
* **warm**: the cache the cold process filled (JAX's ``jax_persistent_cache_min_compile_time_secs``
  set to 0 so every program is stored).

A fourth program, ``exported``, is the step through ``jc.export_step`` (cold child: export into
the cache folder) and ``jc.load_exported`` (every child: load + first call) — the warm start
without tracing the engine's Python.

Each child times, separately: building the model (``jc.io``), tracing + lowering
(``jax.jit(f).lower``), XLA compilation (``.compile()``; a cache hit loads instead) and the first
call (blocked). It also reports the size of the lowered StableHLO module (lines), the persistent
cache's requests / hits (``jc.compile_report``) and the error of a child that failed.
MJX (``mujoco.mjx``, its JAX backend): one cold child per model for ``jit(mjx.step)``.

The models are built as ``corpus.py`` builds them (URDF robots on a floor, floating where legged;
the start pose of ``corpus.start_configuration``). float64 unless ``--dtype float32``.

    python benchmarks/compile.py --out compile            # default robots, ~20-30 min on one core
    python benchmarks/compile.py --match ur5 --programs step --engines ours   # one quick row

Writes ``results/<out>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: the robots of issue 46's must-show (corpus keys; substrings are enough)
DEFAULT_MODELS = (
    "mujoco/mjx/test_data/humanoid/humanoid.xml",
    "gymnasium/envs/mujoco/assets/ant.xml",
    "gymnasium/envs/mujoco/assets/hopper.xml",
    "gymnasium/envs/mujoco/assets/pusher.xml",
    "robots/double_pendulum_description/urdf/double_pendulum.urdf",
    "robots/ur_description/urdf/ur5_robot.urdf",
    "robots/panda_description/urdf/panda.urdf",
    "robots/solo_description/robots/solo12.urdf",
    "robots/go2_description/urdf/go2.urdf",
    "robots/a1_description/urdf/a1.urdf",
)
PROGRAMS = ("step", "rollout", "grad", "exported")
#: steps of the rollout and of the differentiated rollout (compile time does not depend on it:
#: a lax.scan)
ROLLOUT_STEPS = 8
CHILD_TIMEOUT_S = 900


# --------------------------------------------------------------------------- child


def _programs(model, state, steps: int):
    """``{name: (function, args)}`` of the three programs."""
    import jax
    import jax.numpy as jnp

    import jaxsim_contact as jc

    ctrls = jnp.zeros((steps, model.nu), model.dtype)

    def rollout(state, ctrls):
        return jc.rollout(model, state, ctrls)[0]

    def final_scalar(v0):  # a scalar of the final state; any would do for compile time
        start = jc.init(model, q=state.q, v=v0)
        return jnp.sum(rollout(start, ctrls).q ** 2)

    return {"step": (lambda s, u: jc.step(model, s, u), (state, ctrls[0])),
            "rollout": (rollout, (state, ctrls)),
            "grad": (jax.grad(final_scalar), (state.v,))}


def corpus_model(key: str):
    """``(MjModel, jc.Model, start qpos)`` of a corpus entry, built and placed as ``corpus.py``
    does (its load warnings silenced)."""
    import corpus

    entry = next(e for e in corpus.corpus(corpus.SOURCES) if e.key == key)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mj, model = corpus.build(entry)
    return mj, model, corpus.start_configuration(mj, entry)[0]


def _ours(key: str, program: str, dtype: str) -> dict:
    import jax
    import jax.numpy as jnp

    import jaxsim_contact as jc

    t0 = time.perf_counter()
    mj, model, q0 = corpus_model(key)
    if dtype == "float32":
        model = model.astype(jnp.float32)
    state = jc.init(model, q=jnp.asarray(q0, model.dtype))
    build_s = time.perf_counter() - t0
    extra = dict(nv=int(mj.nv), ngeom=int(mj.ngeom))
    if program == "exported":
        return _time_exported(model, state, build_s, extra)
    function, args = _programs(model, state, ROLLOUT_STEPS)[program]
    return _time_program(jax.jit(function), args, build_s, extra)


def _time_exported(model, state, build_s: float, extra: dict) -> dict:
    """The step through ``jc.export_step`` / ``jc.load_exported``: the cold child exports it (trace
    + lower + serialise, as ``lower_s``) into the cache folder; every child then loads the bytes and
    makes the first call (deserialise + XLA compile or cache hit + run, as ``compile_s``)."""
    import jax
    import jax.numpy as jnp

    import jaxsim_contact as jc

    path = Path(os.environ["JAX_COMPILATION_CACHE_DIR"]) / "step.jcx"
    lower_s = 0.0
    if not path.exists():
        t0 = time.perf_counter()
        path.write_bytes(jc.export_step(model))
        lower_s = time.perf_counter() - t0
    ctrl = jnp.zeros((model.nu,), model.dtype)
    with jc.compile_report("program", announce=False) as report:
        program = jc.load_exported(path.read_bytes(), model)
        jax.block_until_ready(program(state, ctrl))
    return dict(status="ok", build_s=round(build_s, 2), lower_s=round(lower_s, 2),
                compile_s=round(report.seconds, 2), first_call_s=0.0, stablehlo_lines=None,
                cache=report.cache_status, cache_requests=report.cache_requests,
                cache_hits=report.cache_hits, exported_bytes=path.stat().st_size, **extra)


def _mjx(key: str, dtype: str) -> dict:
    import jax
    from mujoco import mjx

    t0 = time.perf_counter()
    mj, _, q0 = corpus_model(key)
    model = mjx.put_model(mj)
    data = mjx.make_data(model).replace(qpos=jax.numpy.asarray(q0))
    if dtype == "float32":
        model, data = jax.tree_util.tree_map(
            lambda x: x.astype("float32") if hasattr(x, "dtype") and x.dtype == "float64" else x, (model, data))
    build_s = time.perf_counter() - t0
    return _time_program(jax.jit(mjx.step), (model, data), build_s, dict(nv=int(mj.nv), ngeom=int(mj.ngeom)))


def _time_program(jitted, args, build_s: float, extra: dict) -> dict:
    import jax

    import jaxsim_contact as jc

    t0 = time.perf_counter()
    lowered = jitted.lower(*args)
    lower_s = time.perf_counter() - t0
    with jc.compile_report("program", announce=False) as report:
        compiled = lowered.compile()
    t0 = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    first_call_s = time.perf_counter() - t0
    return dict(status="ok", build_s=round(build_s, 2), lower_s=round(lower_s, 2),
                compile_s=round(report.seconds, 2), first_call_s=round(first_call_s, 3),
                stablehlo_lines=lowered.as_text().count("\n"), cache=report.cache_status,
                cache_requests=report.cache_requests, cache_hits=report.cache_hits, **extra)


def child_main(args) -> int:
    try:
        row = _mjx(args.child, args.dtype) if args.engine == "mjx" else _ours(args.child, args.program, args.dtype)
    except Exception as err:  # reported as the row's status, the run goes on
        row = dict(status="error", error=f"{type(err).__name__}: {str(err).strip().splitlines()[0][:200]}"
                   if str(err).strip() else type(err).__name__)
    print("RESULT " + json.dumps(row), flush=True)
    return 0


# --------------------------------------------------------------------------- parent


def run_child(key: str, engine: str, program: str, dtype: str, cache_dir: str, core: int) -> dict:
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=cache_dir,
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")
    command = ["taskset", "-c", str(core), sys.executable, str(Path(__file__).resolve()), "--child", key,
               "--engine", engine, "--program", program, "--dtype", dtype]
    t0 = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, env=env,
                              cwd=HERE)
    except subprocess.TimeoutExpired:
        return dict(status="timeout", wall_s=CHILD_TIMEOUT_S)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        tail = (done.stderr.strip().splitlines() or [""])[-1]
        return dict(status="crashed", returncode=done.returncode, error=tail[:200])
    row = json.loads(lines[-1][len("RESULT "):])
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    return row


def _cell(row: dict | None, field: str = "compile_s") -> str:
    if row is None:
        return ""
    if row.get("status") != "ok":
        return row.get("status", "?")
    return f"{row['lower_s'] + row[field]:.1f}"


def report(rows: dict, args, started: str, load: list) -> str:
    import jax

    lines = ["# Compile time: cold and warm, ours next to MJX", "",
             f"`python benchmarks/compile.py {' '.join(sys.argv[1:])}` — {started}, jax {jax.__version__}, "
             f"{args.dtype}, every program in a fresh process pinned to core {args.core}; load average at "
             f"start {load}.", "",
             "Seconds of trace + lower + XLA compile (the first call's run time apart). **cold**: empty "
             "persistent cache; **warm**: a fresh process with the cache the cold one filled. MJX: "
             "`jit(mjx.step)` cold. `rollout`: `jit` of a `lax.scan` of steps; `grad`: `jit(grad)` of a "
             "scalar of the rollout's final state w.r.t. the initial velocity; `exported step`: "
             "`jc.export_step` in the cold child (its trace + lower + serialise) and, in every child, "
             "`jc.load_exported` + the first call (deserialise + compile or cache hit + run: the "
             "warm column is a user's warm start after building the model, `build_s` in the JSON).", "",
             "| model | nv | ngeom | step cold | step warm | rollout cold | rollout warm | grad cold | grad warm "
             "| exported step cold | exported step warm | MJX step cold | step StableHLO lines | rollout / step |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key, by in rows.items():
        any_ok = next((r for r in by.values() if r and r.get("status") == "ok"), {})
        step, roll = by.get("ours/step/cold"), by.get("ours/rollout/cold")
        ratio = ""
        if step and roll and step.get("status") == roll.get("status") == "ok":
            ratio = f"{(roll['lower_s'] + roll['compile_s']) / (step['lower_s'] + step['compile_s']):.2f}"
        lines.append(
            f"| `{key}` | {any_ok.get('nv', '')} | {any_ok.get('ngeom', '')} | "
            + " | ".join(_cell(by.get(f"ours/{p}/{w}")) for p in PROGRAMS for w in ("cold", "warm"))
            + f" | {_cell(by.get('mjx/step/cold'))} | {(step or {}).get('stablehlo_lines', '')} | {ratio} |")
    errors = [(key, name, r) for key, by in rows.items() for name, r in by.items()
              if r and r.get("status") != "ok"]
    if errors:
        lines += ["", "Children that did not finish:", ""]
        lines += [f"- `{key}` {name}: {r.get('status')} {r.get('error', '')}" for key, name, r in errors]
    warm_status = sorted({r.get("cache") for by in rows.values() for n, r in by.items()
                          if n.endswith("/warm") and r and r.get("status") == "ok"})
    lines += ["", f"Cache status of the warm children: {warm_status} (\"hit\": every program loaded from the "
              "cache)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--match", nargs="*", default=None,
                        help="corpus key substrings (default: the robots of DEFAULT_MODELS)")
    parser.add_argument("--programs", nargs="*", default=list(PROGRAMS), choices=PROGRAMS)
    parser.add_argument("--engines", nargs="*", default=["ours", "mjx"], choices=["ours", "mjx"])
    parser.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    parser.add_argument("--core", type=int, default=max(os.sched_getaffinity(0)))
    parser.add_argument("--out", default=None, help="results/<out>.md and .json (default: print only)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--engine", default="ours", help=argparse.SUPPRESS)
    parser.add_argument("--program", default="step", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.dtype == "float64":
        os.environ.setdefault("JAX_ENABLE_X64", "1")
    if args.child:
        return child_main(args)

    import corpus

    entries = corpus.corpus(corpus.SOURCES)
    wanted = args.match or list(DEFAULT_MODELS)
    keys = [e.key for e in entries if any(w == e.key for w in wanted)] if not args.match else \
        [e.key for e in entries if any(w in e.key for w in wanted)]
    from _common import loadavg

    started, load = time.strftime("%Y-%m-%d %H:%M"), loadavg()
    rows: dict[str, dict] = {}
    for key in keys:
        rows[key] = {}
        if "ours" in args.engines:
            for program in args.programs:
                with tempfile.TemporaryDirectory(prefix="jc-compile-bench-") as cache:
                    for when in ("cold", "warm"):
                        row = run_child(key, "ours", program, args.dtype, cache, args.core)
                        rows[key][f"ours/{program}/{when}"] = row
                        print(key, program, when, row, flush=True)
        if "mjx" in args.engines:
            with tempfile.TemporaryDirectory(prefix="jc-compile-bench-") as cache:
                row = run_child(key, "mjx", "step", args.dtype, cache, args.core)
                rows[key]["mjx/step/cold"] = row
                print(key, "mjx step cold", row, flush=True)
    text = report(rows, args, started, load)
    print(text)
    if args.out:
        (HERE / "results" / f"{args.out}.md").write_text(text)
        (HERE / "results" / f"{args.out}.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
