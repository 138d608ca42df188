"""Planned memory of ``jax.grad`` through a 100-step rollout, per scene of ``gradients.py`` (issue 6).

For each scene (same models, states, controls and loss as ``benchmarks/gradients.py``) it compiles
``jax.jit(jax.grad(loss))`` of ``jc.rollout`` over ``HORIZON`` steps and reads XLA's allocation
plan, ``compiled.memory_analysis()``: ``temp`` is every buffer the program allocates while it runs,
dominated by the residuals reverse mode keeps for each step. Compile only, nothing is timed, so the
figures do not depend on the machine's load (they do depend on the jax/XLA version).

    python benchmarks/gradient_memory.py [--scenes panda go2] [--out gradient_memory]

To compare with another commit: ``git worktree add /tmp/old <rev>`` and run this file with
``PYTHONPATH=/tmp/old`` (the package is then imported from there; the scenes come from this
directory's ``gradients.py``). Writes ``benchmarks/results/<out>.{json,md}``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gradients as bench  # noqa: E402  (pins one core, as gradients.py does)
import jax  # noqa: E402
from _common import enable_float64, write_results  # noqa: E402

import jaxsim_contact as jc  # noqa: E402


def planned_memory(mj, qpos, qvel) -> dict:
    """``temp`` / ``argument`` / ``output`` bytes of the compiled rollout gradient, and its compile s."""
    model = jc.io.from_mjmodel(mj)
    state, _, _ = bench.flat_step(model, qpos, qvel)
    loss, loss_args = bench.rollout_loss(model, state)
    t0 = time.perf_counter()
    compiled = jax.jit(jax.grad(loss, argnums=(0, 1))).lower(*loss_args).compile()
    compile_s = time.perf_counter() - t0
    plan = compiled.memory_analysis()
    return dict(temp_bytes=int(plan.temp_size_in_bytes), argument_bytes=int(plan.argument_size_in_bytes),
                output_bytes=int(plan.output_size_in_bytes), compile_s=compile_s,
                constraint_slots=int(state.contact.active.shape[0]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", nargs="*", default=None)
    parser.add_argument("--out", default="gradient_memory")
    args = parser.parse_args(argv)
    enable_float64()
    meta = dict(date=time.strftime("%Y-%m-%d %H:%M"), jax=jax.__version__, horizon=bench.HORIZON,
                package=str(Path(jc.__file__).resolve().parent))
    rows = []
    for name, (mj, qpos, qvel) in bench.scenes(settle=100).items():
        if args.scenes and name not in args.scenes:
            continue
        rows.append(dict(scene=name, nv=int(mj.nv), **planned_memory(mj, qpos, qvel)))
        print(rows[-1], flush=True)
    lines = [
        f"# Planned memory of `jax.grad` through a {bench.HORIZON}-step rollout",
        "",
        f"`python benchmarks/gradient_memory.py {' '.join(argv if argv is not None else sys.argv[1:])}`"
        f" — {meta['date']}, jax {meta['jax']}, float64, package from `{meta['package']}`. XLA's "
        "allocation plan of the compiled gradient (`memory_analysis()`); `temp` holds the residuals.",
        "",
        "| scene | nv | constraint slots | temp (MB) | temp per step (kB) | compile (s) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['scene']} | {r['nv']} | {r['constraint_slots']} | {r['temp_bytes'] / 1e6:.2f} "
                     f"| {r['temp_bytes'] / 1e3 / bench.HORIZON:.0f} | {r['compile_s']:.0f} |")
    _, md = write_results(args.out, dict(meta=meta, rows=rows), "\n".join(lines) + "\n")
    print(md.read_text())


if __name__ == "__main__":
    main()
