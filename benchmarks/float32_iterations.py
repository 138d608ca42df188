"""Solver iterations per step in float32 against float64 (issue 42), default options, one
environment: mean / max iterations, steps stopped at the cap, steps flagged not converged, per
scene over ``--steps`` steps from the scene's start (``benchmarks/_scenes.py``).

Each dtype runs in its own child process (``jax_enable_x64`` is per process); ``--library DIR``
puts another checkout's ``jaxsim_contact`` first on the children's ``PYTHONPATH`` (the scenes
come from this checkout), so one table holds a before and an after:

    python benchmarks/float32_iterations.py --steps 200 --scenes box tower humanoid panda go2 ant \\
        --library /tmp/base --label "before (de81ab0)" --out float32_iterations

Writes ``benchmarks/results/NAME.json`` / ``.md`` (appending the rows of a second call with
another ``--label`` to the same file; the text below the ``.md``'s table is kept).
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


def child(dtype: str, steps: int, scenes: list[str]) -> list[dict]:
    import jax

    jax.config.update("jax_enable_x64", dtype == "float64")
    import jax.numpy as jnp
    import numpy as np

    sys.path.insert(0, str(HERE))
    import _scenes
    import jaxsim_contact as jc

    rows = []
    for name in scenes:
        mj, q0 = _scenes.load(name)
        model = jc.io.from_mjmodel(mj)
        state = jc.init(model, q=jnp.asarray(q0))
        cap = model.options.solver.max_iterations

        def run(s):
            def body(s, _):
                s = jc.step(model, s, jnp.zeros((model.nu,)))
                return s, (s.contact.iterations, s.contact.converged)
            return jax.lax.scan(body, s, None, length=steps)

        final, (iterations, converged) = jax.jit(run)(state)
        iterations, converged = np.asarray(iterations), np.asarray(converged)
        rows.append(dict(scene=name, dtype=str(final.q.dtype), steps=steps,
                         mean_iterations=float(iterations.mean()), max_iterations=int(iterations.max()),
                         at_cap=int((iterations >= cap).sum()), not_converged=int((~converged).sum()),
                         finite=bool(np.all(np.isfinite(np.asarray(final.q))))))
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--scenes", nargs="+", default=["box", "tower", "humanoid", "panda", "go2", "ant"])
    parser.add_argument("--library", default=None, help="checkout whose jaxsim_contact the children import")
    parser.add_argument("--label", default="this checkout")
    parser.add_argument("--out", default="float32_iterations")
    parser.add_argument("--child", choices=["float32", "float64"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print("ROWS " + json.dumps(child(args.child, args.steps, args.scenes)))
        return 0
    env = dict(os.environ)
    if args.library:
        env["PYTHONPATH"] = str(Path(args.library).resolve())
    rows = []
    for dtype in ("float32", "float64"):
        out = subprocess.run([sys.executable, __file__, "--child", dtype, "--steps", str(args.steps),
                              "--scenes", *args.scenes], env=env, cwd="/", capture_output=True,
                             text=True, check=True).stdout
        rows += json.loads(next(line for line in out.splitlines() if line.startswith("ROWS "))[5:])
    for row in rows:
        row["label"] = args.label
    path = HERE / "results" / f"{args.out}.json"
    previous = json.loads(path.read_text())["rows"] if path.exists() else []
    previous = [r for r in previous if r["label"] != args.label] + rows
    path.write_text(json.dumps(dict(rows=previous), indent=1))
    lines = ["# Solver iterations per step: float32 against float64 (issue 42)", "",
             f"`python benchmarks/float32_iterations.py` (see its docstring for the calls), "
             f"{time.strftime('%Y-%m-%d')}; default options (ADMM-NCP, tolerance 1e-6, cap 500), one "
             "environment, zero controls, from each scene's start.", "",
             "| library | scene | dtype | steps | mean iterations | max | steps at the cap | not converged | finite |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in previous:
        lines.append(f"| {r['label']} | {r['scene']} | {r['dtype']} | {r['steps']} | {r['mean_iterations']:.1f} "
                     f"| {r['max_iterations']} | {r['at_cap']} | {r['not_converged']} | {r['finite']} |")
    # Readings added by hand below the table stay (the table above them is regenerated).
    md = HERE / "results" / f"{args.out}.md"
    if md.exists():
        text = md.read_text().splitlines()
        rows_end = max((i for i, line in enumerate(text) if line.startswith("|")), default=len(text) - 1)
        lines += text[rows_end + 1:]
    md.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
