"""Staggered projections (seed 001 §III-D, Alg. 7) on random hyperstatic problems: how often the
outer fixed point reaches the NCP criterion 1e-6 within a cap, and in how many outer iterations,
for three variants of the outer iteration:

* ``plain``: Alg. 7 as printed (``anderson_memory=0``);
* ``anderson``: Anderson acceleration (memory 5) with the stall guard disabled (the module's
  ``STALL_PATIENCE`` set above the cap);
* ``anderson+guard``: the default (Anderson, switched off once the criterion stalls).

Hyperstatic = fewer dofs than contact rows (``nv < 3n``: ``G`` rank-deficient, ``G_TT``
singular), from ``builders.random_problem(rng, n, nv)`` with ``rng = default_rng(7000 + n + nv)``
(the sample ``tests/contact/test_solvers.py`` draws its hyperstatic cases from). These are
iteration counts, not timings.

    python benchmarks/staggered_hyperstatic.py                      # ~15 min of one core
    python benchmarks/staggered_hyperstatic.py --cases 16:24 --problems 32 --cap 2000

Writes benchmarks/results/staggered_hyperstatic.{json,md} (``--out NAME`` to rename).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time

from _common import enable_float64, write_results

enable_float64()  # a script, not the library: float64 for accuracy

import jax  # noqa: E402
import numpy as np  # noqa: E402

import jaxsim_contact as jc  # noqa: E402
from jaxsim_contact.contact import _staggered as staggered  # noqa: E402

C = jc.contact
VARIANTS = ("plain", "anderson", "anderson+guard")


def sample(n: int, nv: int, count: int):
    rng = np.random.default_rng(7000 + n + nv)
    problems = [jc.testing.problems.random_problem(rng, n, nv) for _ in range(count)]
    return jax.tree_util.tree_map(lambda *xs: np.stack(xs), *problems)


def run_variant(variant: str, problems, cap: int, tolerance: float):
    default_patience = staggered.STALL_PATIENCE
    staggered.STALL_PATIENCE = cap + 1 if variant == "anderson" else default_patience
    try:
        solver = C.StaggeredProjections(max_iterations=cap, tolerance=tolerance,
                                        anderson_memory=0 if variant == "plain" else 5)
        solution = jax.jit(jax.vmap(lambda p: C.solve(p, solver)))(problems)
        jax.block_until_ready(solution.force)
    finally:
        staggered.STALL_PATIENCE = default_patience
    iterations = np.asarray(solution.iterations)
    criterion = np.asarray(solution.criterion)
    failed = criterion > tolerance
    return {
        "failed": int(failed.sum()),
        "failed_indices": np.flatnonzero(failed).tolist(),
        "failed_criteria": criterion[failed].tolist(),
        "mean_iterations": float(iterations.mean()),
        "median_iterations": float(np.median(iterations)),
        "p90_iterations": float(np.percentile(iterations, 90)),
        "max_iterations_converged": int(iterations[~failed].max()) if (~failed).any() else None,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=["16:24", "16:32", "32:64"],
                        help="contacts:dofs pairs")
    parser.add_argument("--problems", type=int, default=128)
    parser.add_argument("--cap", type=int, default=20000, help="outer-iteration cap")
    parser.add_argument("--tolerance", type=float, default=1e-6)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--out", default="staggered_hyperstatic")
    args = parser.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M")
    rows = []
    for case in args.cases:
        n, nv = (int(x) for x in case.split(":"))
        if nv >= 3 * n:
            raise SystemExit(f"{case}: not hyperstatic (needs dofs < 3 x contacts)")
        problems = sample(n, nv, args.problems)
        for variant in args.variants:
            row = dict(contacts=n, dofs=nv, variant=variant,
                       **run_variant(variant, problems, args.cap, args.tolerance))
            rows.append(row)
            print(row, flush=True)
    command = "python benchmarks/staggered_hyperstatic.py " + shlex.join(sys.argv[1:])
    header = (f"`{command}` — started {started}, finished {time.strftime('%Y-%m-%d %H:%M')}; "
              f"jax {jax.__version__}, float64, {args.problems} problems per case, NCP criterion "
              f"{args.tolerance:g}, cap {args.cap} outer iterations, 10 inner ADMM iterations per "
              f"sub-problem; stall guard: patience {staggered.STALL_PATIENCE}, factor "
              f"{staggered.STALL_FACTOR}. Iteration counts over all problems (failed ones count "
              "the cap); 'max (converged)' over the problems that reached the tolerance.")
    lines = ["# Staggered projections on random hyperstatic problems", "", header, "",
             "| contacts × dofs | variant | failed | failed at criterion | mean it | median it "
             "| p90 it | max it (converged) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        crit = ", ".join(f"{c:.1e}" for c in r["failed_criteria"]) or "–"
        lines.append(f"| {r['contacts']} × {r['dofs']} | {r['variant']} | {r['failed']} / "
                     f"{args.problems} | {crit} | {r['mean_iterations']:.0f} | "
                     f"{r['median_iterations']:.0f} | {r['p90_iterations']:.0f} | "
                     f"{r['max_iterations_converged']} |")
    write_results(args.out, dict(command=command, rows=rows), "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
