"""Out-of-range MuJoCo solver parameters, named at load (issue 45, "Bad input").

MuJoCo uses a ``solref`` / ``solimp`` outside its valid range in a fixed way (``getsolparam``,
engine_core_constraint.c; XML Reference, "Solver parameters"): a ``solref`` whose two numbers
have different signs is replaced by the default ``(0.02, 1)`` (``solreffriction``: by ``(0, 0)``,
none), a standard time constant below ``2 timestep`` is raised to it unless ``refsafe`` is
disabled, and ``solimp``'s ``dmin``, ``dmax``, ``midpoint`` are clamped into ``[1e-4, 0.9999]``,
``width`` to ``≥ 0`` and ``power`` to ``≥ 1``. The MuJoCo-compatible constraint model does the
same when it builds its rows (:mod:`jaxsim_contact.constraints._soft`); this module says so once,
at load, with a :class:`~._errors.ClampedParameterWarning` naming each element. Contact parameters
are checked on the geoms and explicit pairs they are mixed from (a mixed pair can only be in range
when both geoms are).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..constraints._soft import clamp_solimp, clamp_solref
from ._errors import ClampedParameterWarning, describe

__all__ = ["warn_out_of_range"]

#: elements listed per warning before "and N more"
LISTED = 8


def _values(row) -> str:
    """``[0.02, -1]``: a row for a message (``:g``, so a float32 clamp shows no round-off)."""
    return "[" + ", ".join(f"{float(x):g}" for x in row) + "]"


def _solref_problems(solref: np.ndarray, timestep: float, refsafe: bool, label: str) -> list:
    """Per row of ``solref`` ``(n, 2)``: what MuJoCo changes (``None``: nothing), the values
    used computed by the rows' own :func:`~jaxsim_contact.constraints._soft.clamp_solref`."""
    friction = label == "solreffriction"
    used = np.asarray(clamp_solref(solref, timestep, refsafe, zero_default=friction))
    changed = np.any(used != solref.astype(used.dtype), axis=1)  # in the clamp's dtype (x64 or not)
    mixed = (solref[:, 0] > 0) != (solref[:, 1] > 0)
    replaced_by = "(0, 0): none" if friction else "the default (0.02, 1)"
    return [None if not c else
            f"mixed-sign {label} {_values(r)} replaced by {replaced_by}" if m else
            f"{label} time constant {r[0]:g} below 2 timestep, raised to {u[0]:g} (refsafe)"
            for r, u, m, c in zip(solref, used, mixed, changed)]


def _solimp_problems(solimp: np.ndarray) -> list:
    used = np.asarray(clamp_solimp(solimp))
    changed = np.any(used != solimp.astype(used.dtype), axis=1)
    return [f"solimp {_values(r)} clamped to {_values(u)}" if c else None
            for r, u, c in zip(solimp, used, changed)]


def warn_out_of_range(mj, source: str) -> None:
    """One :class:`ClampedParameterWarning` naming the elements of ``mj`` (a compiled ``MjModel``)
    whose ``solref`` / ``solimp`` MuJoCo uses other than written."""
    import mujoco

    timestep = float(mj.opt.timestep)
    refsafe = not int(mj.opt.disableflags) & int(mujoco.mjtDisableBit.mjDSBL_REFSAFE)
    rows = lambda x, width: np.asarray(x, np.float64).reshape(-1, width)  # noqa: E731
    # (element kind, MuJoCo object, solref label, solref, solimp or None)
    groups = [
        ("geom", mujoco.mjtObj.mjOBJ_GEOM, "solref", mj.geom_solref, mj.geom_solimp),
        ("pair", mujoco.mjtObj.mjOBJ_PAIR, "solref", mj.pair_solref, mj.pair_solimp),
        ("pair", mujoco.mjtObj.mjOBJ_PAIR, "solreffriction", mj.pair_solreffriction, None),
        ("joint limit", mujoco.mjtObj.mjOBJ_JOINT, "solref", mj.jnt_solref, mj.jnt_solimp),
        ("tendon limit", mujoco.mjtObj.mjOBJ_TENDON, "solref", mj.tendon_solref_lim, mj.tendon_solimp_lim),
        ("tendon frictionloss", mujoco.mjtObj.mjOBJ_TENDON, "solref", mj.tendon_solref_fri,
         mj.tendon_solimp_fri),
        ("equality", mujoco.mjtObj.mjOBJ_EQUALITY, "solref", mj.eq_solref, mj.eq_solimp),
    ]
    found: list[str] = []
    for kind, obj, label, solref, solimp in groups:
        problems = [_solref_problems(rows(solref, 2), timestep, refsafe, label)]
        if solimp is not None:
            problems.append(_solimp_problems(rows(solimp, 5)))
        for i, per_element in enumerate(zip(*problems)):
            name = describe(kind, mujoco.mj_id2name(mj, obj, i) or "", i)
            found += [f"{name}: {problem}" for problem in per_element if problem]
    # dof frictionloss rows: dof parameters, named by their joint
    dofs = np.flatnonzero(np.asarray(mj.dof_frictionloss) > 0)
    dof_problems = zip(_solref_problems(rows(mj.dof_solref, 2)[dofs], timestep, refsafe, "solref"),
                       _solimp_problems(rows(mj.dof_solimp, 5)[dofs]))
    for dof, per_dof in zip(dofs, dof_problems):
        joint = int(mj.dof_jntid[dof])
        name = describe("frictionloss of joint",
                        mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_JOINT, joint) or "", joint)
        found += [f"{name} (dof {dof}): {problem}" for problem in per_dof if problem]
    if found:
        listed = "; ".join(found[:LISTED]) + (f"; and {len(found) - LISTED} more" if len(found) > LISTED else "")
        warnings.warn(f"{source}: {len(found)} solver parameter(s) outside MuJoCo's valid range are "
                      f"used as MuJoCo uses them: {listed}", ClampedParameterWarning, stacklevel=3)
