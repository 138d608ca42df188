"""ADMM epoch length (``refactor_every``) against iterations and run time per step (issue 42).

The default step solver (``jc.Options().solver``: Cholesky ADMM, Anderson memory 5, balanced ρ)
runs epochs of ``refactor_every = 10`` iterations: ρ changes only between epochs, where the
factor of ``G + R + ρI`` is refreshed. The float32 tower at rest takes two epochs per step
(15-16 iterations, float64 4-5). This probe runs, per scene, dtype and epoch length, 200 steps
of one environment from the scene's start (``benchmarks/_scenes.py``, zero controls, everything
else default) as one ``jax.jit`` of a ``lax.scan``, and reports mean iterations (all steps and
the second half), max, steps at the cap, steps not converged, max |v| at the end, and the
rollout's run time (median of 3 blocked calls after the compiling one; CPU, one core).

Each (scene, dtype) runs in its own child process pinned to one core (x64 is per process):

    PYTHONPATH=. python benchmarks/probes/admm_epoch_length.py --scenes tower humanoid go2 \\
        --dtypes float32 float64 --lengths 10 5 3

Writes ``benchmarks/results/admm_epoch_length.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent  # benchmarks/
sys.path.insert(0, str(HERE))
import _common  # noqa: E402


def child(scene: str, dtype: str, lengths: list[int], steps: int) -> list[dict]:
    _common.pin_to_one_core(opt_out=None)
    import jax

    jax.config.update("jax_enable_x64", dtype == "float64")
    import jax.numpy as jnp
    import numpy as np

    import _scenes

    import jaxsim_contact as jc

    mj, q0 = _scenes.load(scene)
    base = jc.io.from_mjmodel(mj)
    rows = []
    for length in lengths:
        model = base.replace_options(solver=base.options.solver.replace(refactor_every=length))
        state = jc.init(model, q=jnp.asarray(q0))
        cap = model.options.solver.max_iterations

        def run(s, model=model):
            def body(s, _):
                s = jc.step(model, s, jnp.zeros((model.nu,)))
                return s, (s.contact.iterations, s.contact.converged, jnp.max(jnp.abs(s.v)))
            return jax.lax.scan(body, s, None, length=steps)

        compiled = jax.jit(run).lower(state).compile()
        final, (iterations, converged, speed) = jax.block_until_ready(compiled(state))
        seconds = _common.median_time(lambda: compiled(state), repeats=3)
        iterations = np.asarray(iterations)
        rows.append(dict(scene=scene, dtype=dtype, refactor_every=length, steps=steps,
                         mean_iterations=float(iterations.mean()),
                         rest_mean_iterations=float(iterations[steps // 2:].mean()),
                         max_iterations=int(iterations.max()), at_cap=int((iterations >= cap).sum()),
                         not_converged=int((~np.asarray(converged)).sum()),
                         final_max_speed=float(np.asarray(speed)[-1]),
                         ms_per_step=1e3 * seconds / steps,
                         finite=bool(np.all(np.isfinite(np.asarray(final.q))))))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def render(report: dict) -> str:
    lines = ["# ADMM epoch length against iterations and run time (issue 42)", "",
             f"`{report['command']}` — {report['date']}, jax {report['jax']}, library {report['commit']}; "
             "one environment, zero controls, default options but `refactor_every`, one core per child "
             "(module docstring: setup).", "",
             "| scene | dtype | refactor_every | mean iterations | second half: mean | max | at cap "
             "| not converged | final max abs(v) (m/s) | ms / step | finite |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        lines.append(f"| {r['scene']} | {r['dtype']} | {r['refactor_every']} | {r['mean_iterations']:.1f} "
                     f"| {r['rest_mean_iterations']:.1f} | {r['max_iterations']} | {r['at_cap']} "
                     f"| {r['not_converged']} | {r['final_max_speed']:.2g} | {r['ms_per_step']:.3g} "
                     f"| {r['finite']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", nargs="+", default=["tower", "humanoid", "go2"])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    parser.add_argument("--lengths", nargs="+", type=int, default=[10, 5, 3])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--out", default=str(HERE / "results" / "admm_epoch_length"))
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print("ROWS " + json.dumps(child(*args.child, args.lengths, args.steps)))
        return 0
    import jax

    rows = []
    for scene in args.scenes:
        for dtype in args.dtypes:
            out = subprocess.run([sys.executable, __file__, "--child", scene, dtype, "--steps",
                                  str(args.steps), "--lengths", *map(str, args.lengths)],
                                 capture_output=True, text=True, check=True).stdout
            rows += json.loads(next(line for line in out.splitlines() if line.startswith("ROWS "))[5:])
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    report = dict(command="python benchmarks/probes/admm_epoch_length.py " + " ".join(argv or sys.argv[1:]),
                  date=time.strftime("%Y-%m-%d %H:%M"), jax=jax.__version__, commit=commit, rows=rows)
    out = Path(args.out)
    _common.write_results(out.name, report, render(report), out_dir=out.parent)
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
