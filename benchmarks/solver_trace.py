"""Convergence trace of the default contact solver (and variants) on one captured step problem.

Simulates ``--settle`` steps of a scene (``benchmarks/step.py`` scenes, or ``demo``) with the
default options, captures the contact problem of the next step (as ``jc.step`` builds it, with the
Delassus factor and the warm start it would use), and runs ADMM variants on it with tolerance 0
for ``--iterations`` iterations, printing seed 001's criteria (ε_p, ε_d, ε_c; force units) and ρ at
a few iteration counts, and the first iteration that meets the default tolerance. It is the tool
behind the cap/criterion decisions in ``jaxsim_contact/model.py`` (``_default_solver``) and the
session notes of issue 5; e.g. the humanoid at step 29 cycles at ε_c ≈ 6e-5 with
``rho_update="balanced"`` (ρ collapses to ~1e-7) while ``"spectral"`` reaches 1e-6 only after
~500 iterations.

    PYTHONPATH=. taskset -c 0 python benchmarks/solver_trace.py --scene humanoid --settle 29

Writes ``benchmarks/results/solver_trace_<scene>_<settle>.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from _common import enable_float64, loadavg  # noqa: E402

enable_float64()  # a script, not the library

import jaxsim_contact as jc  # noqa: E402
from jaxsim_contact.contact._problem import residuals  # noqa: E402
from jaxsim_contact.contact import sanitize_problem  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import solver_cap  # noqa: E402
import step_profile  # noqa: E402

CHECKPOINTS = (10, 50, 100, 200, 500, 1000, 2000)


def variants(default):
    return {
        "default (balanced ρ, Cholesky, refactor 10)": default,
        "default without Anderson acceleration": default.replace(anderson_memory=0),
        "spectral ρ": default.replace(rho_update="spectral"),
        "balanced ρ, refactor every iteration": default.replace(refactor_every=1),
        "eigh, balanced ρ": default.replace(factorization="eigh"),
        "eigh, spectral ρ": default.replace(factorization="eigh", rho_update="spectral"),
    }


def trace(solver, problem, warm, iterations: int):
    """Per iteration ``(ε_p, ε_d, ε_c, ρ)`` of ``solver`` on the sanitised ``problem``."""
    state = solver.init(problem, warm, jnp.zeros((), warm.dtype))
    step = eqx.filter_jit(lambda p, s: solver.step(p, s))
    refresh = eqx.filter_jit(lambda p, s: solver.refresh(p, s))
    criteria = eqx.filter_jit(lambda p, s: residuals(p, s.force, solver.formulation))
    rows = []
    for k in range(iterations):
        if solver.epoch_length and k % solver.epoch_length == 0:
            state = refresh(problem, state)
        state = step(problem, state)
        r = criteria(problem, state)
        rows.append((float(r.primal), float(r.dual), float(r.complementarity), float(solver.rho(state))))
    return np.asarray(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default="humanoid")
    parser.add_argument("--settle", type=int, default=29, help="steps simulated before the capture")
    parser.add_argument("--iterations", type=int, default=1000)
    args = parser.parse_args(argv)
    model, state = solver_cap.scene(args.scene)
    step = jax.jit(lambda s: jc.step(model, s, jnp.zeros((model.nu,))))
    for _ in range(args.settle):
        state = step(state)
    problem, warm = step_profile._capture_problem(model, state)
    after = step(state)
    active = np.asarray(problem.active)
    rows3 = np.repeat(active, 3)
    eigenvalues = np.linalg.eigvalsh(np.asarray(problem.delassus)[np.ix_(rows3, rows3)])
    significant = eigenvalues > 1e-10 * eigenvalues[-1]
    lines = [f"# Solver trace: {args.scene}, the problem of step {args.settle + 1}", "",
             f"`python benchmarks/solver_trace.py {' '.join(sys.argv[1:] if argv is None else argv)}` — "
             f"{time.strftime('%Y-%m-%d %H:%M')}, jax {jax.__version__}, float64; load average "
             f"{loadavg()}.", "",
             f"{problem.num_contacts} contact slots, {int(active.sum())} active; Delassus of the active rows: "
             f"λ_max {eigenvalues[-1]:.2e}, smallest significant {eigenvalues[significant].min():.2e}, rank "
             f"{int(significant.sum())} of {len(eigenvalues)}; max |normal force| of the step "
             f"{float(jnp.max(jnp.abs(after.contact.force[..., 2]))):.3g} N. The step itself (default solver, warm "
             f"start): {int(after.contact.iterations)} iterations, criterion {float(after.contact.residual):.2e}.", "",
             "Each cell: ε_p / ε_d / ε_c (seed 001 eq. 15, force units: N, m/s², W) and ρ after that many "
             "iterations (tolerance 0, warm start of the step).", "",
             "| variant | " + " | ".join(str(c) for c in CHECKPOINTS if c <= args.iterations)
             + " | first ≤ tolerance |", "|---|" + "---|" * (sum(c <= args.iterations for c in CHECKPOINTS) + 1)]
    safe = sanitize_problem(problem)[0]
    tolerance = float(model.options.solver.tolerance)
    for name, solver in variants(model.options.solver).items():
        rows = trace(solver, safe, warm, args.iterations)
        worst = rows[:, :3].max(axis=1)
        met = np.flatnonzero(worst <= tolerance)
        cells = [f"{rows[c - 1, 0]:.0e} / {rows[c - 1, 1]:.0e} / {rows[c - 1, 2]:.0e}, ρ {rows[c - 1, 3]:.1e}"
                 for c in CHECKPOINTS if c <= args.iterations]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {met[0] + 1 if len(met) else 'never'} |")
        print(lines[-1], flush=True)
    out = HERE / "results" / f"solver_trace_{args.scene}_{args.settle}.md"
    out.write_text("\n".join(lines) + "\n")
    print(out.read_text())


if __name__ == "__main__":
    main()
