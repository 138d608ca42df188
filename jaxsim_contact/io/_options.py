"""MuJoCo's ``<option>`` fields and ``<flag>`` bits: each one is applied, refused, or reported.

MuJoCo XML Reference ``<option>`` / ``<option><flag>``, Computation chapter. The loader never
drops an option silently (issue 44):

* **applied** — ``timestep``, ``gravity``, ``integrator``, ``density``, ``viscosity``, ``wind``
  (fluid forces), ``magnetic`` (magnetometer sensors) (read by the loader), and the flags
  that switch parts of the physics off: ``constraint``, ``contact``, ``limit``, ``equality``,
  ``frictionloss``, ``spring``, ``damper``, ``gravity``, ``clampctrl``, ``actuation``,
  ``eulerdamp``, the ``actuatorgroupdisable`` groups, and the ``override`` flag's ``o_friction``
  and ``o_margin`` (:func:`apply_options` edits a copy of the compiled model accordingly);
* **refused** (:class:`~._errors.UnsupportedFeatureError`) — ``filterparent`` disabled (collisions
  between a body and its parent);
* **ignored with an** :class:`~._errors.IgnoredOptionWarning` naming each one, when it differs from
  MuJoCo's default: the settings of MuJoCo's own soft-constraint solver and collision
  implementation, which the hard model has no counterpart for — ``impratio``, ``o_solref`` /
  ``o_solimp`` under ``override``, ``noslip_iterations``, ``iterations``, ``tolerance``,
  ``ls_iterations``, ``ls_tolerance``, ``solver``, ``jacobian``, ``ccd_*``, ``sdf_*``,
  ``sleep_tolerance``, and the flags ``warmstart``, ``refsafe``, ``midphase``, ``nativeccd``,
  ``multiccd``, ``island``, ``autoreset``, ``sensor`` (sensors are computed on demand, ``jc.sensors``), ``fwdinv``,
  ``invdiscrete``, ``diagexact``, ``sleep`` (bodies never sleep), ``ipc``, ``speculative``
  (contacts are speculative anyway), ``energy`` (energy is computed on demand, ``jc.energy``).
  ``cone`` needs no warning: hard contacts obey the exact (elliptic) Coulomb cone whichever
  MuJoCo approximation the model names.

Under ``constraint_model="mujoco"`` the rows follow MuJoCo's soft model, so more is applied:
``cone``, ``impratio``, ``iterations`` (the Newton cap), ``o_solref`` / ``o_solimp`` under
``override``, the ``refsafe`` flag; and the choices that do not change the converged answer of
MuJoCo's strictly convex problem — ``solver`` (Newton, CG and PGS solve the same problem; ours is
Newton), ``tolerance`` (ours stops at a 1e-10 residual), ``ls_iterations``, ``ls_tolerance``,
``jacobian`` — are not warned about. ``noslip_*`` (a post-processing that changes the forces),
``diagexact`` and the collision settings are warned about in both modes.
"""

from __future__ import annotations

import copy
import warnings
from pathlib import Path

import numpy as np

from ..dynamics._sensors import COMPUTED_SENSORS
from ._errors import IgnoredOptionWarning, IgnoredSensorWarning, UnsupportedFeatureError

__all__ = ["apply_options", "check_options", "warn_sensors"]

#: numeric ``<option>`` fields of MuJoCo's solver and collision implementation (no counterpart)
_SOLVER_FIELDS = ("impratio", "noslip_iterations", "noslip_tolerance", "iterations", "tolerance",
                  "ls_iterations", "ls_tolerance", "solver", "jacobian", "ccd_iterations",
                  "ccd_tolerance", "sdf_iterations", "sdf_initpoints", "sleep_tolerance")
#: disable bits without a counterpart: MuJoCo solver / collision implementation choices
_IGNORED_DISABLE = ("WARMSTART", "REFSAFE", "MIDPHASE", "NATIVECCD", "MULTICCD", "ISLAND",
                    "AUTORESET", "SENSOR")
#: enable bits without a counterpart
_IGNORED_ENABLE = ("FWDINV", "INVDISCRETE", "DIAGEXACT", "SLEEP", "IPC", "SPECULATIVE", "ENERGY")


def _bit(enum, name: str) -> int:
    member = enum.__members__.get(name)
    return 0 if member is None else int(member)


def _disabled(mj, name: str) -> bool:
    import mujoco

    return bool(int(mj.opt.disableflags) & _bit(mujoco.mjtDisableBit, f"mjDSBL_{name}"))


def _enabled(mj, name: str) -> bool:
    import mujoco

    return bool(int(mj.opt.enableflags) & _bit(mujoco.mjtEnableBit, f"mjENBL_{name}"))


#: fields the MuJoCo-compatible constraint model honours or whose effect it has (module docstring)
_SOFT_FIELDS = ("impratio", "iterations", "tolerance", "solver", "ls_iterations", "ls_tolerance",
                "jacobian")


def check_options(mj, path: Path, soft: bool = False) -> None:
    """Refuse the options the engine cannot simulate and warn about those it ignores (module
    docstring), naming ``path`` and each option. ``soft``: for the MuJoCo-compatible constraint
    model, which honours ``impratio``, ``iterations`` and ``tolerance``."""
    import mujoco

    if _disabled(mj, "FILTERPARENT"):
        raise UnsupportedFeatureError(
            f"{path}: <flag filterparent=\"disable\"> (collisions between a body and its parent) "
            "is not supported: remove the flag, or list the pairs with <contact><pair>")
    default = mujoco.MjModel.from_xml_string("<mujoco/>").opt
    ignored = []
    for field in _SOLVER_FIELDS:
        if soft and field in _SOFT_FIELDS:
            continue
        value = np.asarray(getattr(mj.opt, field))
        if not np.array_equal(value, np.asarray(getattr(default, field))):
            ignored.append(f"{field}={value.tolist()}")
    if _enabled(mj, "OVERRIDE") and not soft:
        ignored.append("override o_solref / o_solimp (o_friction and o_margin are applied)")
    ignored += [f"flag {name.lower()}=disable" for name in _IGNORED_DISABLE
                if _disabled(mj, name) and not (soft and name == "REFSAFE")]
    ignored += [f"flag {name.lower()}=enable" for name in _IGNORED_ENABLE if _enabled(mj, name)]
    if ignored:
        warnings.warn(
            f"{path}: <option> settings with no counterpart in the hard-contact engine are ignored "
            f"(MuJoCo's own solver and collision settings; jaxsim_contact.io._options lists them): "
            + ", ".join(ignored), IgnoredOptionWarning, stacklevel=4)


def warn_sensors(mj, path: Path) -> None:
    """Sensors that :func:`jaxsim_contact.sensors` does not compute load with one
    :class:`~._errors.IgnoredSensorWarning` naming the file and the count of each such type
    (never a silent drop); reading one raises ``NotImplementedError``."""
    import mujoco

    counts: dict[str, int] = {}
    for kind in np.asarray(mj.sensor_type):
        name = mujoco.mjtSensor(int(kind)).name.removeprefix("mjSENS_").lower()
        if name not in COMPUTED_SENSORS:
            counts[name] = counts.get(name, 0) + 1
    if not counts:
        return
    listed = ", ".join(f"{name} x{count}" for name, count in sorted(counts.items()))
    warnings.warn(f"{path}: {sum(counts.values())} sensor(s) are loaded but not computed "
                  f"(jc.sensors raises for them): {listed}", IgnoredSensorWarning, stacklevel=4)


def apply_options(mj):
    """A copy of the compiled ``mj`` with the physics switched off by its disable flags removed
    and the ``override`` contact parameters written into the geoms (module docstring), so that
    the conversion to a :class:`~jaxsim_contact.Model` reads them as ordinary parameters. ``mj``
    itself is returned when no such flag is set. Gravity, contacts, limits and all constraints
    are read by :func:`~._loader.from_mjmodel` itself."""
    flags = [name for name in ("EQUALITY", "FRICTIONLOSS", "SPRING", "DAMPER", "CLAMPCTRL",
                               "ACTUATION") if _disabled(mj, name)]
    override = _enabled(mj, "OVERRIDE")
    groups = int(getattr(mj.opt, "disableactuator", 0))
    if not flags and not override and not groups:
        return mj
    out = copy.deepcopy(mj)
    if "EQUALITY" in flags:
        out.eq_active0[:] = 0
    if "FRICTIONLOSS" in flags:
        out.dof_frictionloss[:] = 0.0
        out.tendon_frictionloss[:] = 0.0
    if "SPRING" in flags:
        out.jnt_stiffness[:] = 0.0
        out.tendon_stiffness[:] = 0.0
    if "DAMPER" in flags:
        out.dof_damping[:] = 0.0
        out.tendon_damping[:] = 0.0
    if "CLAMPCTRL" in flags:
        out.actuator_ctrllimited[:] = 0
    if "ACTUATION" in flags:
        out.actuator_gainprm[:] = 0.0
        out.actuator_biasprm[:] = 0.0
        out.jnt_actgravcomp[:] = 0
    elif groups:
        # <option actuatorgroupdisable>: actuators of a disabled group (0-30) apply no force
        group = np.asarray(out.actuator_group, dtype=np.int64)
        off = (group >= 0) & (group < 31) & ((groups >> np.clip(group, 0, 30)) & 1).astype(bool)
        out.actuator_gainprm[off] = 0.0
        out.actuator_biasprm[off] = 0.0
    if override:
        # contacts take o_friction (sliding, torsional, rolling) and o_margin instead of the geoms'
        out.geom_friction[:] = np.asarray(out.opt.o_friction)[[0, 2, 3]]
        out.geom_margin[:] = out.opt.o_margin
    return out
