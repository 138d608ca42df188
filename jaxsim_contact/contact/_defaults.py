"""The default solver choices (seed 001 §III; DESIGN §5).

* :func:`default_step_solver` — the solver of a step's contact problems when the model's options
  name none: NCP ADMM with Cholesky factorisations refreshed once per epoch of 10 iterations,
  residual-balancing ρ and Anderson acceleration. Each of these choices cut the mean iteration
  count, the steps stopped at the cap, or the cost per iteration on the benchmark scenes.
* :func:`default_problem_solver` — the solver of :func:`~jaxsim_contact.contact.solve` when the
  caller passes none: plain NCP ADMM (the seed's).
* :func:`unrolled_solver` — the variant of a solver that unrolled derivatives go through.
"""

from __future__ import annotations

from ._admm import ADMM
from ._solver import ContactSolver

__all__ = ["default_step_solver", "default_problem_solver", "unrolled_solver"]


def default_step_solver() -> ADMM:
    """NCP ADMM for multibody steps: cap 500 (a batched loop pays its slowest lane, and fewer
    steps stop at the cap), tolerance 1e-6, Cholesky refactored every 10 iterations with 10 power
    iterations for κ, ρ by residual balancing, Anderson memory 5."""
    return ADMM(formulation="ncp", max_iterations=500, tolerance=1e-6, factorization="cholesky",
                refactor_every=10, power_iterations=10, rho_update="balanced",
                anderson_memory=5)


def default_problem_solver() -> ADMM:
    """``ADMM(formulation="ncp")`` with its own defaults (seed 001 Alg. 3 on the NCP)."""
    return ADMM(formulation="ncp")


def unrolled_solver(solver: ContactSolver) -> ContactSolver:
    """The solver used for unrolled gradients: ADMM with ``factorization="eigh"`` becomes the
    Cholesky variant (the same fixed point; κ from power iteration and ρ adapted per epoch, so the
    iterates differ slightly), because the derivative of an eigendecomposition is NaN at repeated
    eigenvalues (symmetric contact layouts, identity blocks of inactive contacts) while the
    Cholesky factor's is not."""
    if isinstance(solver, ADMM) and solver.factorization == "eigh":
        return solver.replace(factorization="cholesky")
    return solver
