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

from ._errors import ClampedParameterWarning, describe

__all__ = ["warn_out_of_range"]

MIN_IMPEDANCE, MAX_IMPEDANCE = 1e-4, 0.9999
#: elements listed per warning before "and N more"
LISTED = 8


def _solref_problem(solref: np.ndarray, timestep: float, refsafe: bool, friction: bool) -> str | None:
    label = "solreffriction" if friction else "solref"
    if (solref[0] > 0) != (solref[1] > 0):
        used = "(0, 0): none" if friction else "the default (0.02, 1)"
        return f"mixed-sign {label} {solref.tolist()} replaced by {used}"
    if refsafe and solref[0] > 0 and solref[0] < 2 * timestep:
        return (f"{label} time constant {solref[0]:g} below 2 timestep, raised to "
                f"{2 * timestep:g} (refsafe)")
    return None


def _solimp_problem(solimp: np.ndarray) -> str | None:
    used = solimp.copy()
    for k in (0, 1, 3):
        used[k] = min(MAX_IMPEDANCE, max(MIN_IMPEDANCE, used[k]))
    used[2], used[4] = max(0.0, used[2]), max(1.0, used[4])
    if np.array_equal(used, solimp):
        return None
    return f"solimp {solimp.tolist()} clamped to {used.tolist()}"


def warn_out_of_range(mj, source: str) -> None:
    """One :class:`ClampedParameterWarning` per problem kind, naming the elements of ``mj`` (a
    compiled ``MjModel``) whose ``solref`` / ``solimp`` MuJoCo uses other than written."""
    import mujoco

    timestep = float(mj.opt.timestep)
    refsafe = not int(mj.opt.disableflags) & int(mujoco.mjtDisableBit.mjDSBL_REFSAFE)
    groups = [  # (element kind, MuJoCo object, solref array, solimp array, solref of friction rows)
        ("geom", mujoco.mjtObj.mjOBJ_GEOM, mj.geom_solref, mj.geom_solimp, False),
        ("pair", mujoco.mjtObj.mjOBJ_PAIR, mj.pair_solref, mj.pair_solimp, False),
        ("pair", mujoco.mjtObj.mjOBJ_PAIR, mj.pair_solreffriction, None, True),
        ("joint limit", mujoco.mjtObj.mjOBJ_JOINT, mj.jnt_solref, mj.jnt_solimp, False),
        ("tendon limit", mujoco.mjtObj.mjOBJ_TENDON, mj.tendon_solref_lim, mj.tendon_solimp_lim, False),
        ("tendon frictionloss", mujoco.mjtObj.mjOBJ_TENDON, mj.tendon_solref_fri, mj.tendon_solimp_fri, False),
        ("equality", mujoco.mjtObj.mjOBJ_EQUALITY, mj.eq_solref, mj.eq_solimp, False),
    ]
    found: list[str] = []
    for kind, obj, solref, solimp, friction in groups:
        solref = np.asarray(solref, np.float64).reshape(-1, 2)
        for i in range(solref.shape[0]):
            problems = [_solref_problem(solref[i], timestep, refsafe, friction)]
            if solimp is not None:
                problems.append(_solimp_problem(np.asarray(solimp, np.float64).reshape(-1, 5)[i]))
            for problem in filter(None, problems):
                name = describe(kind, mujoco.mj_id2name(mj, obj, i) or "", i)
                found.append(f"{name}: {problem}")
    # dof frictionloss rows: dof parameters, named by their joint
    dof_solref = np.asarray(mj.dof_solref, np.float64).reshape(-1, 2)
    dof_solimp = np.asarray(mj.dof_solimp, np.float64).reshape(-1, 5)
    for dof in np.flatnonzero(np.asarray(mj.dof_frictionloss) > 0):
        joint = int(mj.dof_jntid[dof])
        name = describe("frictionloss of joint", mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_JOINT, joint) or "", joint)
        for problem in filter(None, [_solref_problem(dof_solref[dof], timestep, refsafe, False),
                                     _solimp_problem(dof_solimp[dof])]):
            found.append(f"{name} (dof {dof}): {problem}")
    if found:
        listed = "; ".join(found[:LISTED]) + (f"; and {len(found) - LISTED} more" if len(found) > LISTED else "")
        warnings.warn(f"{source}: {len(found)} solver parameter(s) outside MuJoCo's valid range are "
                      f"used as MuJoCo uses them: {listed}", ClampedParameterWarning, stacklevel=3)
