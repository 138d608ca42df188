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

Writes ``benchmarks/results/solver_trace_<scene>_<settle>.md``. With ``--capped N`` it instead
rolls out ``--batch`` spread trajectories (as ``solver_cap.py --batch``) and traces N of the
problems whose default solve ended above the tolerance, spread over the run
(``solver_trace_<scene>_capped.md``).
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
from jaxsim_contact.contact._loop import initial_state  # noqa: E402

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


def trace(solver, problem, safe, warm, iterations: int):
    """Per iteration ``(ε_p, ε_d, ε_c, ρ)`` of ``solver`` on the sanitised problem ``safe``, from
    the warm start ``warm = (warm_start, warm_primal)`` the step would use (as the solve's loop)."""
    state, _ = initial_state(problem, safe, solver, *warm)
    step = eqx.filter_jit(lambda p, s: solver.step(p, s))
    refresh = eqx.filter_jit(lambda p, s: solver.refresh(p, s))
    criteria = eqx.filter_jit(lambda p, s: residuals(p, s.force, solver.formulation))
    rows = []
    for k in range(iterations):
        first, epoch = solver.first_epoch_length, solver.epoch_length
        if epoch and (k == 0 or (k >= first and (k - first) % epoch == 0)):
            state = refresh(problem, state)
        state = step(problem, state)
        r = criteria(problem, state)
        rows.append((float(r.primal), float(r.dual), float(r.complementarity), float(solver.rho(state))))
    return np.asarray(rows)


def _delassus_line(problem) -> str:
    active = np.asarray(problem.active)
    rows3 = np.repeat(active, 3)
    eigenvalues = np.linalg.eigvalsh(np.asarray(problem.delassus)[np.ix_(rows3, rows3)])
    significant = eigenvalues > 1e-10 * eigenvalues[-1]
    return (f"{problem.num_contacts} contact slots, {int(active.sum())} active; Delassus of the active rows: "
            f"λ_max {eigenvalues[-1]:.2e}, smallest significant {eigenvalues[significant].min():.2e}, rank "
            f"{int(significant.sum())} of {len(eigenvalues)}")


def _table(model, problem, warm, iterations: int) -> list[str]:
    """Markdown rows: each variant's criteria at the checkpoints and its first iteration at the
    default tolerance."""
    checkpoints = [c for c in CHECKPOINTS if c <= iterations]
    lines = ["| variant | " + " | ".join(str(c) for c in checkpoints) + " | first ≤ tolerance |",
             "|---|" + "---|" * (len(checkpoints) + 1)]
    safe = sanitize_problem(problem)[0]
    tolerance = float(model.options.solver.tolerance)
    for name, solver in variants(model.options.solver).items():
        rows = trace(solver, problem, safe, warm, iterations)
        met = np.flatnonzero(rows[:, :3].max(axis=1) <= tolerance)
        cells = [f"{rows[c - 1, 0]:.0e} / {rows[c - 1, 1]:.0e} / {rows[c - 1, 2]:.0e}, ρ {rows[c - 1, 3]:.1e}"
                 for c in checkpoints]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {met[0] + 1 if len(met) else 'never'} |")
        print(lines[-1], flush=True)
    return lines


def _capped_problems(model, state, batch: int, steps: int, count: int):
    """Roll out ``batch`` spread trajectories (``solver_cap.lanes``) for ``steps`` steps with the
    default solver; returns the summary line and ``count`` unconverged ``(step, lane, state before
    the step, its criterion)`` spread over the run."""
    ctrl = jnp.zeros((model.nu,))

    def body(s, _):
        after = jc.step(model, s, ctrl)
        return after, (s, after.contact.residual)

    rollout = jax.jit(lambda s: jax.lax.scan(jax.vmap(body, in_axes=(0, None)), s, None, length=steps))
    _, (before, criterion) = rollout(solver_cap.lanes(model, state, batch))
    criterion = np.asarray(criterion)
    unconverged = np.argwhere(criterion > float(model.options.solver.tolerance))
    summary = (f"{len(unconverged)} of {criterion.size} env-steps unconverged (batch {batch} × {steps} steps), "
               f"per lane {[int(n) for n in (criterion > float(model.options.solver.tolerance)).sum(0)]}")
    picks = unconverged[:: max(1, len(unconverged) // count)][:count]
    return summary, [(int(t), int(k), jax.tree_util.tree_map(lambda x: x[t, k], before), float(criterion[t, k]))
                     for t, k in picks]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default="humanoid")
    parser.add_argument("--settle", type=int, default=29, help="steps simulated before the capture")
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--capped", type=int, default=0,
                        help="instead of --settle: trace this many unconverged problems of a batch rollout")
    parser.add_argument("--batch", type=int, default=8, help="with --capped: trajectories (spread as solver_cap)")
    parser.add_argument("--steps", type=int, default=300, help="with --capped: steps per trajectory")
    args = parser.parse_args(argv)
    model, state = solver_cap.scene(args.scene)
    command = f"`python benchmarks/solver_trace.py {' '.join(sys.argv[1:] if argv is None else argv)}`"
    stamp = (f"{time.strftime('%Y-%m-%d %H:%M')}, jax {jax.__version__}, float64; load average {loadavg()}.")
    legend = ("Each cell: ε_p / ε_d / ε_c (seed 001 eq. 15, force units: N, m/s², W) and ρ after that many "
              "iterations (tolerance 0, warm start of the step).")
    if args.capped:
        summary, picks = _capped_problems(model, state, args.batch, args.steps, args.capped)
        lines = [f"# Solver trace: {args.scene}, unconverged problems of a batch rollout", "",
                 f"{command} — {stamp}", "", summary + ".", "", legend]
        for t, k, before, criterion in picks:
            problem, warm = step_profile._capture_problem(model, before)
            lines += ["", f"## Step {t}, lane {k} (default step's criterion {criterion:.1e})", "",
                      _delassus_line(problem) + ".", ""]
            print(lines[-2], flush=True)
            lines += _table(model, problem, warm, args.iterations)
        out = HERE / "results" / f"solver_trace_{args.scene}_capped.md"
    else:
        step = jax.jit(lambda s: jc.step(model, s, jnp.zeros((model.nu,))))
        for _ in range(args.settle):
            state = step(state)
        problem, warm = step_profile._capture_problem(model, state)
        after = step(state)
        lines = [f"# Solver trace: {args.scene}, the problem of step {args.settle + 1}", "",
                 f"{command} — {stamp}", "",
                 f"{_delassus_line(problem)}; max |normal force| of the step "
                 f"{float(jnp.max(jnp.abs(after.contact.force[..., 2]))):.3g} N. The step itself (default solver, "
                 f"warm start): {int(after.contact.iterations)} iterations, criterion "
                 f"{float(after.contact.residual):.2e}.", "", legend, ""]
        lines += _table(model, problem, warm, args.iterations)
        out = HERE / "results" / f"solver_trace_{args.scene}_{args.settle}.md"
    out.write_text("\n".join(lines) + "\n")
    print(out.read_text())


if __name__ == "__main__":
    main()
