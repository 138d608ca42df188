"""Issue 46 probe: where a robot's step compile time goes, stage by stage.

For each model (corpus keys, as ``benchmarks/compile.py``), compiles separately — each in a fresh
child process pinned to one core, persistent cache off — the jitted programs of:

* ``step``: the whole ``jc.step``;
* ``smooth``: ``jc.dynamics.smooth_dynamics`` (kinematics, M, bias, its factor, free velocity);
* ``rows``: collision + every constraint row block, stacked (``constraints._assembler``);
* ``stage, no solve``: rows + the contact problem (Jacobians, Delassus factor, warm start);
* ``solve``: the contact solve alone (the step's solver, on the problem captured at the start);
* ``solve, no polish``: the same with ``ADMM(polish=False)``.

and reports, per program, StableHLO lines and seconds of trace + lower and of XLA compile. The
sum of the stages exceeds the step a little (each program has its own overhead).

    python benchmarks/probes/compile_stages.py --match ur5_robot.urdf double_pendulum.urdf go2.urdf

Writes ``benchmarks/results/compile_stages.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
sys.path.insert(0, str(BENCH))

STAGES = ("step", "smooth", "rows", "stage, no solve", "solve", "solve, no polish")


def _stage_program(model, state, stage: str):
    import jax.numpy as jnp

    import jaxsim_contact as jc
    from jaxsim_contact.constraints import _assembler
    from jaxsim_contact.contact import solve
    from jaxsim_contact.dynamics import smooth_dynamics

    import step_profile

    ctrl = jnp.zeros((model.nu,), model.dtype)
    dt = model.options.dt
    if stage == "step":
        return (lambda s, u: jc.step(model, s, u)), (state, ctrl)
    if stage == "smooth":
        return (lambda s, u: smooth_dynamics(model, s, u)), (state, ctrl)
    smooth = smooth_dynamics(model, state, ctrl)
    if stage == "rows":
        return (lambda s, sm: _assembler.stack(_assembler.constraint_rows(model, s, sm, dt, False)[0])), (state, smooth)
    if stage == "stage, no solve":
        def build(s, sm):
            blocks, _ = _assembler.constraint_rows(model, s, sm, dt, False)
            return _assembler.contact_problem(model, blocks, _assembler.stack(blocks), sm, s.v, dt)
        return build, (state, smooth)
    problem, (warm, warm_primal) = step_profile._capture_problem(model, state)
    solver = model.options.solver
    if stage == "solve, no polish":
        solver = solver.replace(polish=False)
    return (lambda p, w: solve(p, solver, warm_start=w, gradient=model.options.contact_gradient)), (problem, warm)


def child(key: str, stage: str) -> dict:
    import jax
    import jax.numpy as jnp

    import jaxsim_contact as jc
    from compile import corpus_model

    _, model, q0 = corpus_model(key)
    state = jc.init(model, q=jnp.asarray(q0))
    function, args = _stage_program(model, state, stage)
    t0 = time.perf_counter()
    lowered = jax.jit(function).lower(*args)
    lower_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    lowered.compile()
    compile_s = time.perf_counter() - t0
    return dict(lower_s=round(lower_s, 2), compile_s=round(compile_s, 2),
                lines=lowered.as_text().count("\n"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--match", nargs="*", default=["ur5_robot.urdf", "double_pendulum.urdf"])
    parser.add_argument("--core", type=int, default=max(os.sched_getaffinity(0)))
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default="compile_stages")
    args = parser.parse_args(argv)
    if args.child:
        os.environ["JAX_ENABLE_X64"] = "1"
        try:
            row = child(*args.child)
        except Exception as err:
            row = dict(error=f"{type(err).__name__}: {str(err).strip()[:200]}")
        print("RESULT " + json.dumps(row), flush=True)
        return 0
    import corpus
    from _common import loadavg

    keys = [e.key for e in corpus.corpus(corpus.SOURCES) if any(m in e.key for m in args.match)]
    lines = ["# Compile time per stage of the step", "",
             f"`python benchmarks/probes/compile_stages.py {' '.join(sys.argv[1:])}` — "
             f"{time.strftime('%Y-%m-%d %H:%M')}, float64, one fresh process per program pinned to core "
             f"{args.core}, persistent cache off; load average at start {loadavg()}.", "",
             "Each cell: StableHLO lines / trace + lower s / XLA compile s.", "",
             "| model | " + " | ".join(STAGES) + " |", "|---|" + "---|" * len(STAGES)]
    env = dict(os.environ, JAX_ENABLE_X64="1")
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    for key in keys:
        cells = []
        for stage in STAGES:
            done = subprocess.run(["taskset", "-c", str(args.core), sys.executable, __file__, "--child", key, stage],
                                  capture_output=True, text=True, env=env, cwd=BENCH, timeout=900)
            found = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
            row = json.loads(found[-1][7:]) if found else dict(error=(done.stderr.strip().splitlines() or ["?"])[-1][:200])
            print(key, stage, row, flush=True)
            cells.append(row.get("error", "")[:60] if "error" in row
                         else f"{row['lines']} / {row['lower_s']:.1f} / {row['compile_s']:.1f}")
        lines.append(f"| `{key}` | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    (BENCH / "results" / f"{args.out}.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
