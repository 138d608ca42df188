"""Frictional contact problems and solvers (seed 001; DESIGN §5 ``jc.contact``).

``ContactProblem(delassus, free_velocity, friction, compliance=None, active=None)`` with per-contact
frames ``(t1, t2, n)`` (normal last); ``solve(problem, solver, warm_start)``; solvers ``PGS``,
``ADMM``, ``StaggeredProjections``, ``Raisim``, ``PrimalNewton``; criteria ``residuals``.
"""

from . import builders
from .admm import ADMM
from .newton import PrimalNewton
from .pgs import PGS
from .problem import (
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
)
from .raisim import Raisim
from .solve import ContactSolution, ContactSolver, sanitize_problem, solve
from .staggered import StaggeredProjections

__all__ = [
    "builders",
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
