"""Host-side validation of a model, before and after MuJoCo compiles it.

Three passes, each raising a specific exception from :mod:`._errors` that names the file, the
element and the value:

1. :func:`check_xml` on the raw XML tree: well-formedness (with line and column), joint types and
   elements this engine does not simulate. Runs first because MuJoCo's own messages for these are
   terse or refer to internal ids.
2. :func:`check_spec` on the parsed ``mujoco.MjSpec``: explicit masses and inertias, friction,
   mesh files. MuJoCo would reject some of these later with a less specific message (and accepts
   negative friction silently).
3. :func:`check_compiled` on the compiled ``mujoco.MjModel``: everything the compiler derived
   (inertias from geoms, fused static bodies, defaults), plus features present only after includes
   and defaults are resolved (tendons, equality constraints, unsupported actuators).
"""

from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from ._errors import (
    InvalidActuatorError,
    InvalidFluidError,
    InvalidFrictionError,
    InvalidGeometryError,
    InvalidInertiaError,
    InvalidMassError,
    MissingAssetError,
    ModelParseError,
    UnsupportedFeatureError,
    describe,
)
from ._options import check_options, warn_sensors

__all__ = ["parse_xml", "check_xml", "check_spec", "check_compiled"]

# MJCF joint types and URDF joint types this engine simulates.
_MJCF_JOINT_TYPES = {"free", "ball", "slide", "hinge"}
_URDF_JOINT_TYPES = {"revolute", "continuous", "prismatic", "fixed", "floating"}
# MJCF elements that change the dynamics in ways the engine does not model yet.
# (<tendon> and <equality> are checked on the compiled model: inside <default> they only set
# defaults, and gymnasium's inverted pendulum declares one with no tendon.)
_MJCF_UNSUPPORTED_ELEMENTS = {
    "flexcomp": "deformable (flex) objects",
    "flex": "deformable (flex) objects",
    "composite": "composite objects",
    "plugin": "engine plugins",
    "extension": "engine plugins",
}
_MJCF_SUPPORTED_ACTUATORS = {"motor", "position", "velocity", "intvelocity", "damper", "cylinder",
                             "muscle", "general"}
_MJCF_UNSUPPORTED_ACTUATORS = {"adhesion", "plugin"}

# Size components each primitive uses (MuJoCo's geom_size layout); with ``fromto`` only the
# radius / first half-size is given explicitly.
_PRIMITIVE_SIZE_COUNT = {"mjGEOM_SPHERE": 1, "mjGEOM_CAPSULE": 2, "mjGEOM_CYLINDER": 2,
                         "mjGEOM_ELLIPSOID": 3, "mjGEOM_BOX": 3}
# Bounding radii (m) outside which a geom triggers a warning: collision tolerances are relative to
# the pair's size, but the default time step, contact stabilisation and float32 resolution of
# positions assume objects between about a tenth of a millimetre and ten kilometres.
GEOM_SCALE_RANGE = (1e-4, 1e4)

# Relative tolerance of the inertia triangle inequality (A + B >= C), as MuJoCo's compiler.
_TRIANGLE_RTOL = 1e-9


def parse_xml(path: Path) -> ET.Element:
    """Parse ``path`` as XML; :class:`ModelParseError` with line and column when malformed."""
    try:
        return ET.parse(path).getroot()
    except ET.ParseError as err:
        line, column = err.position
        raise ModelParseError(
            f"{path}: malformed XML at line {line}, column {column}: {err}"
        ) from None


def check_xml(root: ET.Element, path: Path) -> str:
    """Check the raw XML; returns ``"mjcf"`` or ``"urdf"``."""
    if root.tag == "robot":
        # Only the robot's own joints: <transmission> also holds <joint> elements (without type).
        for joint in root.findall("joint"):
            jtype = joint.get("type", "")
            if jtype not in _URDF_JOINT_TYPES:
                raise UnsupportedFeatureError(
                    f"{path}: URDF joint '{joint.get('name', '')}' has type '{jtype}', which is "
                    f"not supported (supported: {sorted(_URDF_JOINT_TYPES)})"
                )
        return "urdf"
    if root.tag != "mujoco":
        raise ModelParseError(
            f"{path}: root element <{root.tag}> is neither <mujoco> (MJCF) nor <robot> (URDF)"
        )
    parent_of = {child: parent for parent in root.iter() for child in parent}
    for element in root.iter():
        tag = element.tag
        if tag == "joint" and element.get("type", "hinge") not in _MJCF_JOINT_TYPES:
            raise UnsupportedFeatureError(
                f"{path}: <joint name='{element.get('name', '')}'> has type "
                f"'{element.get('type')}', which is not supported "
                f"(supported: {sorted(_MJCF_JOINT_TYPES)})"
            )
        if tag in _MJCF_UNSUPPORTED_ELEMENTS:
            raise UnsupportedFeatureError(
                f"{path}: element <{tag}> ({_MJCF_UNSUPPORTED_ELEMENTS[tag]}) is not supported"
            )
        # <velocity> etc. declare actuators inside <actuator> (or their defaults in <default>).
        parent = parent_of.get(element)
        if tag in _MJCF_UNSUPPORTED_ACTUATORS and parent is not None and parent.tag in (
            "actuator", "default"
        ):
            raise UnsupportedFeatureError(
                f"{path}: actuator <{tag} name='{element.get('name', '')}'> is not supported "
                f"(supported: {sorted(_MJCF_SUPPORTED_ACTUATORS)} on hinge/slide joints, tendons "
                "and sites; adhesion's body transmission is not)"
            )
    return "mjcf"


def _check_inertia(values: np.ndarray, where: str, triangle: bool = True, moving: bool = True) -> None:
    """Check principal moments ``values`` (3,): positive definite for a body moved by a joint
    (positive semi-definite for a welded body, whose inertia is only added to its parent's), and
    (optionally) the triangle inequality A + B >= C that every rigid body satisfies."""
    a, b, c = np.sort(values)
    tolerance = 1e-12 * max(abs(c), 1e-300)  # rounding of an eigen-decomposition
    if not np.all(np.isfinite(values)) or (a <= 0 if moving else a < -tolerance):
        kind = "positive definite" if moving else "positive semi-definite"
        raise InvalidInertiaError(f"{where}: inertia {values.tolist()} is not {kind}")
    if triangle and moving and a + b < c * (1 - _TRIANGLE_RTOL):
        raise InvalidInertiaError(
            f"{where}: principal inertia {values.tolist()} violates the triangle inequality "
            f"A + B >= C (no rigid body has it); pass balance_inertia=True to jc.load to let "
            f"MuJoCo's compiler repair it"
        )


def _full_inertia_eigenvalues(full: np.ndarray) -> np.ndarray:
    """Eigenvalues of the symmetric matrix given as MuJoCo's (xx, yy, zz, xy, xz, yz)."""
    xx, yy, zz, xy, xz, yz = full
    mat = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    return np.linalg.eigvalsh(mat)


def check_spec(spec, path: Path, balance_inertia: bool = False) -> None:
    """Validate explicit inertials, friction and mesh files of a parsed ``mujoco.MjSpec``.

    With ``balance_inertia`` the triangle inequality is left to MuJoCo's ``balanceinertia``
    repair; positive definiteness is always required.
    """
    for index, body in enumerate(spec.bodies):
        if index == 0:
            continue
        where = f"{path}: {describe('body', body.name, index)}"
        # A moving leaf body must carry its own mass; a moving body with children may be massless
        # in the file when welded children are fused into it (checked again after compiling).
        moving = len(body.joints) > 0
        moving_leaf = moving and len(body.bodies) == 0
        if body.explicitinertial:
            mass = float(body.mass)
            if not np.isfinite(mass) or mass < 0 or (moving_leaf and mass <= 0):
                raise InvalidMassError(
                    f"{where} has mass {mass}; a body moved by a joint needs a positive mass "
                    f"and no body may have a negative one"
                )
            full = np.asarray(body.fullinertia, dtype=float)
            if np.isfinite(full[0]):
                moments = _full_inertia_eigenvalues(full)
            else:
                moments = np.asarray(body.inertia, dtype=float)
            if mass > 0 or np.any(moments != 0):
                _check_inertia(moments, where, not balance_inertia, moving)
    for index, geom in enumerate(spec.geoms):
        # MuJoCo rejects these too, with a message naming neither the value nor the file
        for what, value in (("mass", geom.mass), ("density", geom.density)):
            if np.isfinite(value) and value < 0 or np.isnan(value) and what == "density":
                raise InvalidMassError(
                    f"{path}: {describe('geom', geom.name, index)} has {what} {float(value)}; it "
                    f"must be non-negative"
                )
        friction = np.asarray(geom.friction, dtype=float)
        if not np.all(np.isfinite(friction)) or np.any(friction < 0):
            raise InvalidFrictionError(
                f"{path}: {describe('geom', geom.name, index)} has friction {friction.tolist()}; "
                f"friction coefficients must be finite and non-negative"
            )
    _check_primitive_sizes(spec, path)
    model_dir = Path(spec.modelfiledir or path.parent)
    mesh_dir = model_dir / (spec.meshdir or "")
    for index, mesh in enumerate(spec.meshes):
        if not mesh.file:
            continue
        mesh_path = Path(mesh.file)
        if not mesh_path.is_absolute():
            mesh_path = mesh_dir / mesh_path
        if not mesh_path.is_file():
            raise MissingAssetError(
                f"{path}: {describe('mesh', mesh.name, index)} refers to file '{mesh.file}', "
                f"which does not exist (looked for {os.fspath(mesh_path)})"
            )


def _check_primitive_sizes(spec, path: Path) -> None:
    """Every size a primitive geom uses must be finite and positive (MuJoCo's own message names
    neither the value nor the file)."""
    for index, geom in enumerate(spec.geoms):
        type_name = geom.type.name
        if type_name not in _PRIMITIVE_SIZE_COUNT or geom.meshname:
            continue  # planes (size = rendering extent), meshes, and mesh-fitted primitives
        count = _PRIMITIVE_SIZE_COUNT[type_name]
        if np.all(np.isfinite(np.asarray(geom.fromto, dtype=float))):
            count = 1  # the length comes from fromto
        size = np.asarray(geom.size, dtype=float)[:count]
        if not np.all(np.isfinite(size)) or np.any(size <= 0):
            raise InvalidGeometryError(
                f"{path}: {describe('geom', geom.name, index)} ({type_name[7:].lower()}) has "
                f"size {size.tolist()}; every size must be finite and positive"
            )


def _warn_extreme_scales(mj, path: Path) -> None:
    """Warn (naming geom and size) about geoms outside :data:`GEOM_SCALE_RANGE`."""
    import mujoco

    low, high = GEOM_SCALE_RANGE
    for g in range(mj.ngeom):
        if int(mj.geom_type[g]) == int(mujoco.mjtGeom.mjGEOM_PLANE):
            continue
        radius = float(mj.geom_rbound[g])
        if not low <= radius <= high:
            name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_GEOM, g) or ""
            warnings.warn(
                f"{path}: {describe('geom', name, g)} has bounding radius {radius:.3g} m, outside "
                f"[{low:g}, {high:g}] m; it loads unchanged, but choose the time step and units "
                f"with care (contact tolerances and float32 positions assume that range)",
                stacklevel=4,
            )


def check_compiled(mj, path: Path, soft: bool = False) -> None:
    """Validate a compiled ``mujoco.MjModel`` against what the engine simulates (``soft``: for
    the MuJoCo-compatible constraint model, which honours more of ``<option>``)."""
    import mujoco

    def name(obj_type, index: int) -> str:
        return mujoco.mj_id2name(mj, obj_type, index) or ""

    counts = {
        "flex": mj.nflex,
        "plugin": mj.nplugin,
    }
    for kind, count in counts.items():
        if count:
            raise UnsupportedFeatureError(f"{path}: {count} {kind} element(s); not supported")
    _check_fluid(mj, path)
    _check_height_fields(mj, path)

    check_options(mj, path, soft=soft)
    warn_sensors(mj, path)
    _check_mass_matrix(mj, path)
    _check_tendons(mj, path)
    _check_equalities(mj, path)
    _check_frictionloss(mj, path)
    _warn_extreme_scales(mj, path)
    jnt_body = np.asarray(mj.jnt_bodyid)
    moving = np.zeros(mj.nbody, dtype=bool)
    moving[jnt_body] = True
    for b in range(1, mj.nbody):
        where = f"{path}: {describe('body', name(mujoco.mjtObj.mjOBJ_BODY, b), b)}"
        mass = float(mj.body_mass[b])
        if mass < 0 or (moving[b] and mass <= 0) or not np.isfinite(mass):
            raise InvalidMassError(f"{where} has mass {mass} (moved by a joint: {bool(moving[b])})")
        if moving[b] or mass > 0:
            _check_inertia(np.asarray(mj.body_inertia[b], dtype=float), where)
        if not np.isfinite(mj.body_gravcomp[b]):
            raise InvalidMassError(f"{where} has gravcomp={mj.body_gravcomp[b]}")

    for j in range(mj.njnt):
        jtype = int(mj.jnt_type[j])
        if mj.jnt_actfrclimited[j] and jtype in (0, 1):
            raise UnsupportedFeatureError(
                f"{path}: {describe('joint', name(mujoco.mjtObj.mjOBJ_JOINT, j), j)} has "
                f"actuatorfrcrange {mj.jnt_actfrcrange[j].tolist()} on a free/ball joint; clamping "
                "the total actuator force is supported on hinge/slide joints")

    friction = np.asarray(mj.geom_friction)
    for g in range(mj.ngeom):
        if not np.all(np.isfinite(friction[g])) or np.any(friction[g] < 0):
            raise InvalidFrictionError(
                f"{path}: {describe('geom', name(mujoco.mjtObj.mjOBJ_GEOM, g), g)} has friction "
                f"{friction[g].tolist()}; friction coefficients must be finite and non-negative"
            )
        if int(mj.geom_type[g]) not in _SUPPORTED_MJ_GEOMS:
            raise UnsupportedFeatureError(
                f"{path}: {describe('geom', name(mujoco.mjtObj.mjOBJ_GEOM, g), g)} has type "
                f"{mujoco.mjtGeom(int(mj.geom_type[g])).name}, which is not supported"
            )

    for a in range(mj.nu):
        where = f"{path}: {describe('actuator', name(mujoco.mjtObj.mjOBJ_ACTUATOR, a), a)}"
        transmission = int(mj.actuator_trntype[a])
        if transmission not in (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT),
                                int(mujoco.mjtTrn.mjTRN_TENDON), int(mujoco.mjtTrn.mjTRN_SITE)):
            raise UnsupportedFeatureError(
                f"{where}: transmission {_enum_name(mujoco.mjtTrn, transmission)} is not supported "
                "(joint, jointinparent, tendon and site transmissions are; slider-crank and body "
                "transmissions, i.e. adhesion actuators, are not)")
        if transmission == int(mujoco.mjtTrn.mjTRN_SITE) and not (
                0 <= int(mj.actuator_trnid[a, 0]) < mj.nsite and -1 <= int(mj.actuator_trnid[a, 1]) < mj.nsite):
            raise InvalidActuatorError(
                f"{where}: site transmission with site {int(mj.actuator_trnid[a, 0])} and "
                f"reference site {int(mj.actuator_trnid[a, 1])}, which are not sites of the model")
        dyntype, gaintype, biastype = (int(mj.actuator_dyntype[a]), int(mj.actuator_gaintype[a]),
                                       int(mj.actuator_biastype[a]))
        if dyntype not in _SUPPORTED_DYNAMICS or int(mj.actuator_actnum[a]) > 1:
            raise UnsupportedFeatureError(
                f"{where}: activation dynamics {_enum_name(mujoco.mjtDyn, dyntype)} with "
                f"{int(mj.actuator_actnum[a])} state(s) is not supported (none, integrator, "
                "filter, filterexact and muscle are)")
        if gaintype not in _SUPPORTED_GAINS:
            raise UnsupportedFeatureError(
                f"{where}: gain type {_enum_name(mujoco.mjtGain, gaintype)} is not supported "
                "(fixed, affine and muscle are)")
        if biastype not in _SUPPORTED_BIASES:
            raise UnsupportedFeatureError(
                f"{where}: bias type {_enum_name(mujoco.mjtBias, biastype)} is not supported "
                "(none, affine and muscle are)")
        _check_actuator_parameters(mj, a, where, dyntype)


#: MuJoCo ``mjtDyn`` none, integrator, filter, filterexact, muscle; ``mjtGain`` fixed, affine,
#: muscle; ``mjtBias`` none, affine, muscle (jaxsim_contact.dynamics._actuation)
_SUPPORTED_DYNAMICS = {0, 1, 2, 3, 4}
_SUPPORTED_GAINS = {0, 1, 2}
_SUPPORTED_BIASES = {0, 1, 2}


def _check_mass_matrix(mj, path: Path) -> None:
    """The joint-space mass matrix must be positive definite at ``qpos0``: MuJoCo only warns
    (``mjWARN_INERTIA``) and regularises, the engine's Cholesky factor would be NaN and every
    environment would freeze at its first step. Typical causes: redundant joints (four slides on
    three axes) or a moving body without mass or armature."""
    import mujoco

    if mj.nv == 0:
        return
    data = mujoco.MjData(mj)
    mujoco.mj_forward(mj, data)
    warning = data.warning[int(mujoco.mjtWarning.mjWARN_INERTIA)]
    if warning.number > 0:
        dof = int(warning.lastinfo)
        joint = int(mj.dof_jntid[dof]) if 0 <= dof < mj.nv else -1
        name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_JOINT, joint) or "" if joint >= 0 else ""
        raise InvalidInertiaError(
            f"{path}: the joint-space mass matrix is singular at qpos0 (MuJoCo's factorisation "
            f"fails at dof {dof}, {describe('joint', name, joint)}): redundant joints or a moving "
            "body without mass; give that joint's dofs some armature")


#: MuJoCo's ``geom_fluid`` layout after the interaction coefficient: ``fluidcoef``, then the
#: virtual mass and inertia its compiler derives from the geom's size
_FLUID_COEFFICIENTS = ("blunt drag", "slender drag", "angular drag", "Kutta lift", "Magnus lift")


def _check_fluid(mj, path: Path) -> None:
    """MuJoCo's inertia-box and ellipsoid fluid models are simulated
    (:mod:`jaxsim_contact.dynamics._fluid`); the medium must be finite and non-negative, and the
    coefficients of the geoms with ``fluidshape="ellipsoid"`` finite (MuJoCo compiles a NaN or
    an infinite ``fluidcoef``, and every step would be NaN)."""
    import mujoco

    medium = {"density": float(mj.opt.density), "viscosity": float(mj.opt.viscosity)}
    for name, value in medium.items():
        if not np.isfinite(value) or value < 0:
            raise InvalidFluidError(f"{path}: <option {name}={value}>: must be finite and >= 0")
    if not np.all(np.isfinite(np.asarray(mj.opt.wind, dtype=float))):
        raise InvalidFluidError(f"{path}: <option wind={np.asarray(mj.opt.wind).tolist()}>: must be finite")
    if not (medium["density"] or medium["viscosity"]):
        return
    coefficients = np.asarray(mj.geom_fluid, dtype=float).reshape(mj.ngeom, 12)
    for g in np.flatnonzero(coefficients[:, 0] != 0):
        row = coefficients[g]
        if np.all(np.isfinite(row)):
            continue
        name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_GEOM, int(g)) or ""
        where = f"{path}: {describe('geom', name, int(g))} (fluidshape=\"ellipsoid\")"
        if not np.all(np.isfinite(row[1:6])):
            labels = ", ".join(_FLUID_COEFFICIENTS)
            raise InvalidFluidError(f"{where} has fluidcoef={row[1:6].tolist()} ({labels}): "
                                    "must be finite")
        raise InvalidFluidError(
            f"{where}: MuJoCo's compiler gave it a non-finite virtual mass / inertia "
            f"{row[6:].tolist()} (from size {np.asarray(mj.geom_size[g]).tolist()}) or "
            f"interaction coefficient {row[0]}")


def _check_actuator_parameters(mj, a: int, where: str, dyntype: int) -> None:
    """Time constants of filters and muscles must be positive (MuJoCo silently floors them at
    1e-15 s, which makes the activation jump), gains and biases finite."""
    prm = np.asarray(mj.actuator_dynprm[a], dtype=float)
    for label, value in (("gainprm", mj.actuator_gainprm[a]), ("biasprm", mj.actuator_biasprm[a]),
                         ("dynprm", prm)):
        if not np.all(np.isfinite(np.asarray(value, dtype=float))):
            raise InvalidActuatorError(f"{where} has non-finite {label} {np.asarray(value).tolist()}")
    if dyntype in (2, 3) and not prm[0] > 0:
        raise InvalidActuatorError(f"{where} is a filter with time constant {prm[0]}; it must be > 0")
    if dyntype == 4 and not (prm[0] > 0 and prm[1] > 0):
        raise InvalidActuatorError(
            f"{where} is a muscle with time constants {prm[:2].tolist()} (activation, "
            "deactivation); both must be > 0")


def _enum_name(enum, value: int) -> str:
    for name, member in enum.__members__.items():
        if int(member) == value:
            return name
    return str(value)


# MuJoCo geom types we can represent: plane, height field, sphere, capsule, ellipsoid, cylinder,
# box, mesh.
_SUPPORTED_MJ_GEOMS = {0, 1, 2, 3, 4, 5, 6, 7}


def _check_height_fields(mj, path: Path) -> None:
    """A height field needs a grid of at least 2 × 2 finite elevations and finite, positive sizes
    (MuJoCo's compiler checks the element count against ``nrow × ncol`` itself)."""
    import mujoco

    for h in range(mj.nhfield):
        where = f"{path}: {describe('hfield', mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_HFIELD, h) or '', h)}"
        nrow, ncol = int(mj.hfield_nrow[h]), int(mj.hfield_ncol[h])
        if nrow < 2 or ncol < 2:
            raise InvalidGeometryError(f"{where} has {nrow} rows and {ncol} columns; a height field "
                                       "needs at least 2 of each to have a cell")
        size = np.asarray(mj.hfield_size[h], dtype=float)
        if not np.all(np.isfinite(size)) or np.any(size <= 0):
            raise InvalidGeometryError(f"{where} has size {size.tolist()}; its x, y half-sizes, "
                                       "elevation and base depth must be finite and positive")
        start = int(mj.hfield_adr[h])
        data = np.asarray(mj.hfield_data[start:start + nrow * ncol], dtype=float)
        if not np.all(np.isfinite(data)):
            bad = int(np.flatnonzero(~np.isfinite(data))[0])
            raise InvalidGeometryError(f"{where} has elevation {data[bad]} at row {bad // ncol}, "
                                       f"column {bad % ncol}; elevations must be finite")


def _check_tendons(mj, path: Path) -> None:
    """Tendon features the engine does not simulate yet raise by name (never silently ignored):
    polynomial stiffness / damping, plasticity."""
    import mujoco

    for t in range(mj.ntendon):
        where = f"{path}: {describe('tendon', mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_TENDON, t) or '', t)}"
        unsupported = {
            "stiffness polynomial": float(np.abs(mj.tendon_stiffnesspoly[t]).max(initial=0.0)),
            "damping polynomial": float(np.abs(mj.tendon_dampingpoly[t]).max(initial=0.0)),
            "spring yield (plasticity)": float(mj.tendon_springyield[t]),
        }
        for feature, value in unsupported.items():
            if value != 0:
                raise UnsupportedFeatureError(f"{where} has {feature} {value}; not supported yet")
        for element in range(mj.tendon_adr[t], mj.tendon_adr[t] + mj.tendon_num[t]):
            kind = int(mj.wrap_type[element])
            if kind == int(mujoco.mjtWrap.mjWRAP_JOINT):
                joint = int(mj.wrap_objid[element])
                if int(mj.jnt_type[joint]) not in (2, 3):
                    raise UnsupportedFeatureError(
                        f"{where}: fixed tendons act on hinge/slide joints, joint {joint} is "
                        f"{mujoco.mjtJoint(int(mj.jnt_type[joint])).name}")


def _check_frictionloss(mj, path: Path) -> None:
    """Dry friction must be finite and non-negative (MuJoCo's compiler accepts a negative value
    and ignores it; here it is a mistake to name)."""
    import mujoco

    for d in range(mj.nv):
        value = float(mj.dof_frictionloss[d])
        if not np.isfinite(value) or value < 0:
            joint = int(mj.dof_jntid[d])
            raise InvalidFrictionError(
                f"{path}: {describe('joint', mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_JOINT, joint) or '', joint)} "
                f"has frictionloss {value}; it must be finite and non-negative")
    for t in range(mj.ntendon):
        value = float(mj.tendon_frictionloss[t])
        if not np.isfinite(value) or value < 0:
            raise InvalidFrictionError(
                f"{path}: {describe('tendon', mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_TENDON, t) or '', t)} "
                f"has frictionloss {value}; it must be finite and non-negative")


def _check_equalities(mj, path: Path) -> None:
    """Connect, weld, joint and tendon equalities are simulated; other kinds raise by name, as do
    joint couplings of non-scalar joints and non-finite polynomial coefficients."""
    import mujoco

    supported = {int(mujoco.mjtEq.mjEQ_CONNECT), int(mujoco.mjtEq.mjEQ_WELD),
                 int(mujoco.mjtEq.mjEQ_JOINT), int(mujoco.mjtEq.mjEQ_TENDON)}
    for e in range(mj.neq):
        where = f"{path}: {describe('equality', mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_EQUALITY, e) or '', e)}"
        kind = int(mj.eq_type[e])
        if kind not in supported:
            raise UnsupportedFeatureError(
                f"{where} is a {mujoco.mjtEq(kind).name} constraint; connect, weld, joint and "
                "tendon equalities are supported")
        data = np.asarray(mj.eq_data[e], dtype=np.float64)
        if not np.all(np.isfinite(data)):
            raise InvalidGeometryError(f"{where} has non-finite parameters {data.tolist()}")
        if kind == int(mujoco.mjtEq.mjEQ_JOINT):
            for joint in (int(mj.eq_obj1id[e]), int(mj.eq_obj2id[e])):
                if joint >= 0 and int(mj.jnt_type[joint]) not in (2, 3):
                    raise UnsupportedFeatureError(
                        f"{where} couples joint {joint} of type "
                        f"{mujoco.mjtJoint(int(mj.jnt_type[joint])).name}; hinge and slide joints "
                        "can be coupled")
