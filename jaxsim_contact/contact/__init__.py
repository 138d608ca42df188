"""Frictional contact problems and solvers (seed 001; DESIGN §5 ``jc.contact``).

``ContactProblem(delassus, free_velocity, friction, compliance=None, active=None)`` with per-contact
frames ``(t1, t2, n)`` (normal last); ``solve(problem, solver, warm_start)``; solvers ``PGS``,
``ADMM``, ``StaggeredProjections``, ``Raisim``, ``PrimalNewton``; criteria ``residuals``;
``solve_batch(problems, solver)`` solves a batch of independent problems on a few lanes
fed from a work queue (about the mean iteration count per problem instead of vmap's slowest lane).
``solve`` is differentiable w.r.t. ``G, g, μ, R`` (``gradient="implicit"``: mode-aware implicit
rule of :mod:`._implicit`, seed 004 §III-B; ``"unrolled"``; or ``RelaxedComplementarity(ρ)``: the
smoothed derivative of the relaxed problem, seed 002 §V-D, :mod:`._relaxed`; or
``RandomizedSmoothing(key, noise_scale)``: the average of implicit derivatives at randomly
perturbed free velocities, seed 000 §III-A, :mod:`._randomized`); ``contact_modes``
exposes the breaking / sticking / sliding classification the implicit rule uses. Problems with
spin slots (``ContactProblem(num_spin=..., spin_friction=...)``: MuJoCo's elliptic torsional and
rolling friction) are solved by ``PrimalNewton`` and differentiated by the compliant CCP's
fixed-point rule (:mod:`._compliant_implicit`).
"""

from ._admm import ADMM
from ._implicit import BREAKING, GRADIENTS, SLIDING, STICKING, contact_modes, implicit_force
from ._newton import PrimalNewton
from ._pgs import PGS
from ._problem import (
    FORMULATIONS,
    ContactProblem,
    Residuals,
    contact_residuals,
    contact_velocity,
    criterion,
    de_saxce,
    project_cone,
    project_dual_cone,
    project_pyramid_box,
    residuals,
    sanitize_problem,
)
from ._raisim import Raisim
from ._randomized import RandomizedSmoothing, randomized_force
from ._relaxed import RelaxedComplementarity, smoothed_force
from ._solve import solve
from ._solver import ContactSolution, ContactSolver
from ._staggered import StaggeredProjections
from ._work_queue import solve_batch

__all__ = [
    "solve_batch",
    "implicit",
    "relaxed",
    "randomized",
    "RelaxedComplementarity",
    "smoothed_force",
    "RandomizedSmoothing",
    "randomized_force",
    "GRADIENTS",
    "BREAKING",
    "STICKING",
    "SLIDING",
    "contact_modes",
    "implicit_force",
    "ContactProblem",
    "ContactSolution",
    "ContactSolver",
    "Residuals",
    "FORMULATIONS",
    "solve",
    "sanitize_problem",
    "residuals",
    "contact_residuals",
    "contact_velocity",
    "criterion",
    "project_cone",
    "project_dual_cone",
    "project_pyramid_box",
    "de_saxce",
    "PGS",
    "ADMM",
    "StaggeredProjections",
    "Raisim",
    "PrimalNewton",
]
