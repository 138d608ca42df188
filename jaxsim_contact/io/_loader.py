"""``jc.load``: MJCF / URDF → :class:`~jaxsim_contact._model.Model` through the MuJoCo compiler.

MuJoCo resolves defaults, includes, ``fromto``, inertias computed from geoms, fused static bodies
and URDF conversion; we then copy the compiled ``mjModel`` arrays into our own pytree. ``mujoco``
is imported here only: nothing in the simulation calls it.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from ..constraints._soft_contacts import pair_condim
from ..contact import PrimalNewton
from ..collision._pairs import build_collision_structure
from .._model import (ActuatorDynamics, ActuatorStates, ConstraintModel, FrictionCone, Equalities, EqualityKind, Integrator,
                     KinematicTree, Model, Options, Sensors, TendonPathElement, Tendons, WrapKind, SoftConstraints,
                     ContactOverride)
from .._types import GeomType, JointType
from ._errors import (
    DegenerateMeshError,
    InvalidGeometryError,
    InvalidInertiaError,
    InvalidMassError,
    MissingAssetError,
    ModelError,
    ModelParseError,
    PairParameterWarning,
    UnsupportedFeatureError,
)
from ._meshes import check_meshes
from ._overlaps import excluded_geom_pairs
from ._overlaps import exclude_self_overlaps as handle_self_overlaps
from ._options import apply_options
from ._soft_parameters import warn_out_of_range
from ._urdf import add_floating_base, inline_unreadable_meshes, resolve_mesh_files
from ._validation import check_compiled, check_spec, check_xml, parse_xml

__all__ = ["load", "compile_mjmodel", "prepare_spec", "compile_spec", "from_mjmodel"]

# mjtGeom → GeomType (SDF is rejected by validation).
_GEOM_FROM_MJ = {
    0: GeomType.PLANE,
    1: GeomType.HFIELD,
    2: GeomType.SPHERE,
    3: GeomType.CAPSULE,
    4: GeomType.ELLIPSOID,
    5: GeomType.CYLINDER,
    6: GeomType.BOX,
    7: GeomType.MESH,
}


def load(
    path: str | Path,
    *,
    package_dirs: Sequence[str | Path] = (),
    floating_base: bool = False,
    balance_inertia: bool = False,
    ignore_equality: bool = False,
    exclude_self_overlaps: bool | None = None,
    constraint_model: ConstraintModel | str = ConstraintModel.HARD,
    dtype=None,
) -> Model:
    """Load an MJCF (``<mujoco>``) or URDF (``<robot>``) file into a :class:`Model`.

    The model follows MuJoCo's body, joint, ``qpos`` and ``qvel`` order; :func:`compile_mjmodel`
    with the same arguments gives the MuJoCo C model it was converted from (for comparisons and
    benchmarks).

    Args:
      path: model file.
      package_dirs: directories searched for URDF ``package://PKG/...`` mesh URIs (before the
        installed ``example-robot-data`` tree).
      floating_base: give each top-level body without a joint a free joint. MuJoCo welds URDF
        roots to the world, so pass ``True`` for legged robots and humanoids.
      balance_inertia: let MuJoCo's compiler repair inertias that violate the triangle inequality
        (``<compiler balanceinertia="true">``; e.g. the Allegro hand URDF needs it). Otherwise
        such an inertia raises ``InvalidInertiaError``.
      ignore_equality: drop the equality constraints (e.g. those MuJoCo creates for URDF
        ``mimic`` joints) with a warning naming them, instead of simulating them as hard
        bilateral rows (:mod:`jaxsim_contact.constraints._equality_rows`).
      exclude_self_overlaps: exclude from collision the pairs of bodies of one kinematic tree
        whose geoms overlap by more than 10 µm at the reference pose ``qpos0`` (MuJoCo C's
        collision detection; :func:`jaxsim_contact.io._overlaps.self_overlaps`), with a
        ``SelfOverlapWarning`` naming each pair and its depth. MuJoCo keeps such pairs as a
        permanent soft contact; a hard contact between links that start inside each other cannot
        be resolved and keeps the solver at its cap (issue 43). ``False`` keeps them (and still
        warns). Default (``None``): ``True`` for the hard model, ``False`` for
        ``constraint_model="mujoco"`` (MuJoCo's own contact set).
      constraint_model: ``"hard"`` (default) or ``"mujoco"``
        (:class:`~jaxsim_contact.ConstraintModel`): MuJoCo's soft constraints as the file declares
        them (``solref``, ``solimp``, cone, ``impratio``), solved by
        :class:`~jaxsim_contact.contact.PrimalNewton` with the file's ``iterations``, so that a
        step matches ``mj_step`` (:mod:`jaxsim_contact.constraints._soft`), every integrator
        included (RK4 re-solves the constraints at each stage, as MuJoCo). Contacts with
        ``condim`` 4 / 6 under the elliptic cone are refused by name in that mode.
      dtype: floating dtype of the model's arrays; default ``float64`` when JAX x64 is enabled,
        else ``float32``.

    Raises:
      FileNotFoundError: ``path`` does not exist.
      ModelParseError: malformed XML or syntax the MuJoCo compiler rejects.
      MissingAssetError: a mesh file that does not exist (also a ``FileNotFoundError``).
      InvalidMassError, InvalidInertiaError, InvalidFrictionError, InvalidFluidError: bad
        physical parameters.
      UnsupportedFeatureError: (a ``NotImplementedError``) a joint type or element the engine does
        not simulate (height fields, muscle actuators, actuator dynamics, tendon
        armature, flex equalities, ...).
      All messages name the file, the element and the value.
    """
    constraint_model = ConstraintModel.parse(constraint_model, "jc.load(constraint_model=...)")
    soft = constraint_model is ConstraintModel.MUJOCO
    mj = compile_mjmodel(
        path,
        package_dirs=package_dirs,
        floating_base=floating_base,
        balance_inertia=balance_inertia,
        ignore_equality=ignore_equality,
        exclude_self_overlaps=(not soft) if exclude_self_overlaps is None else exclude_self_overlaps,
        constraint_model=constraint_model,
    )
    with warnings.catch_warnings():
        if soft:  # the pair's own parameters are used in this mode: no warning that they are not
            warnings.simplefilter("ignore", PairParameterWarning)
        model = from_mjmodel(mj, source=str(path), dtype=dtype)
    if soft:
        model = mujoco_compatible(model, mj)
        pair_condim(model)  # what the elliptic cone cannot take, refused by name at load
    return model


def mujoco_compatible(model: Model, mj) -> Model:
    """``model`` with ``Options.constraint_model = "mujoco"`` and MuJoCo's solver settings of
    ``mj`` (a :class:`~jaxsim_contact.contact.PrimalNewton` capped at ``<option iterations>``;
    its tolerance stays tight, 1e-10 on the CCP residual, since MuJoCo's ``tolerance`` measures
    the relative cost decrease, another quantity)."""
    warn_out_of_range(mj, model.source)
    solver = PrimalNewton(max_iterations=max(int(mj.opt.iterations), 1), tolerance=1e-10)
    return model.replace_options(constraint_model=ConstraintModel.MUJOCO, solver=solver).astype(model.dtype)


def compile_mjmodel(
    path: str | Path,
    *,
    package_dirs: Sequence[str | Path] = (),
    floating_base: bool = False,
    balance_inertia: bool = False,
    ignore_equality: bool = False,
    exclude_self_overlaps: bool = True,
    constraint_model: ConstraintModel | str = ConstraintModel.HARD,
):
    """Validate and compile ``path`` with MuJoCo into a ``mujoco.MjModel`` (arguments and
    exceptions as :func:`load`)."""
    spec = prepare_spec(path, package_dirs=package_dirs, floating_base=floating_base,
                        balance_inertia=balance_inertia, ignore_equality=ignore_equality)
    return compile_spec(spec, path, exclude_self_overlaps=exclude_self_overlaps,
                        constraint_model=constraint_model)


def prepare_spec(
    path: str | Path,
    *,
    package_dirs: Sequence[str | Path] = (),
    floating_base: bool = False,
    balance_inertia: bool = False,
    ignore_equality: bool = False,
):
    """The validated ``mujoco.MjSpec`` of ``path`` before compilation (arguments and exceptions as
    :func:`load`): URDF meshes resolved, floating base added, equalities dropped if asked.

    Edit it (e.g. add a floor geom or ``<exclude>`` pairs) and pass it to :func:`compile_spec`;
    benchmarks use this to hand the very same compiled model to MuJoCo C, MJX and
    :func:`from_mjmodel`.
    """
    import mujoco

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"model file not found: {path}")
    check_xml(parse_xml(path), path)
    try:
        spec = mujoco.MjSpec.from_file(str(path))
    except ValueError as err:
        raise _translate_compiler_error(err, path) from None
    if floating_base:
        add_floating_base(spec)
    resolve_mesh_files(spec, path, package_dirs)
    check_spec(spec, path, balance_inertia)
    inline_unreadable_meshes(spec, path)
    check_meshes(spec, path)
    if balance_inertia:
        spec.compiler.balanceinertia = True
    if ignore_equality:
        _drop_equalities(spec, path)
    return spec


def compile_spec(spec, path: str | Path = "<spec>", exclude_self_overlaps: bool = True,
                 constraint_model: ConstraintModel | str = ConstraintModel.HARD):
    """Compile a spec from :func:`prepare_spec` and validate the result (``path`` names the source
    in error messages; ``exclude_self_overlaps`` as in :func:`load`: it may add ``<exclude>``
    pairs to ``spec``)."""
    path = Path(path)
    try:
        mj = spec.compile()
    except ValueError as err:
        raise _translate_compiler_error(err, path) from None
    check_compiled(mj, path, soft=ConstraintModel.parse(
        constraint_model, "constraint_model") is ConstraintModel.MUJOCO)
    return handle_self_overlaps(spec, mj, path, exclude=exclude_self_overlaps)


def _drop_equalities(spec, path: Path) -> None:
    equalities = list(spec.equalities)
    if equalities:
        names = [e.name or f"#{i}" for i, e in enumerate(equalities)]
        warnings.warn(f"{path}: ignoring equality constraint(s) {names}", stacklevel=3)
    for equality in equalities:
        spec.delete(equality)


def _translate_compiler_error(err: ValueError, path: Path) -> Exception:
    """Map a MuJoCo compiler message onto our specific exception types (keeping its text)."""
    text = " ".join(str(err).split())
    # normally pre-empted by check_meshes / check_spec, which name the value as well
    if re.search(r"mesh volume is too small|(coplanar|collinear|colocated) vertices|"
                 r"at least 4 vertices|vertex coordinate", text):
        return DegenerateMeshError(f"{path}: {text}")
    if re.search(r"size \d+ must be positive|nan size", text):
        return InvalidGeometryError(f"{path}: {text}")
    if "Error opening file" in text or "could not open" in text.lower():
        return MissingAssetError(f"{path}: {text}")
    if "mass" in text and "moving bodies" in text:
        return InvalidMassError(f"{path}: {text}")
    if "inertia" in text:
        hint = "; pass balance_inertia=True to jc.load to repair it" if "A + B >= C" in text else ""
        return InvalidInertiaError(f"{path}: {text}{hint}")
    if re.search(r"XML (parse )?Error|Unrecognized|unrecognized|invalid keyword", text):
        return ModelParseError(f"{path}: {text}")
    if "not supported" in text.lower():
        return UnsupportedFeatureError(f"{path}: {text}")
    return ModelError(f"{path}: MuJoCo compiler: {text}")


def _explicit_contact_pairs(mj, source: str) -> tuple[tuple[int, int], ...]:
    """``<contact><pair>`` elements as ``(geom1, geom2)`` candidates. The engine takes friction
    from the geoms (MuJoCo's maximum rule) and has no solref/solimp/margin per pair: a pair whose
    sliding friction differs from that rule, or that sets a margin or gap, gets a warning naming it."""
    import mujoco

    pairs = []
    for i in range(mj.npair):
        g1, g2 = int(mj.pair_geom1[i]), int(mj.pair_geom2[i])
        pairs.append((g1, g2))
        geom_rule = max(float(mj.geom_friction[g1, 0]), float(mj.geom_friction[g2, 0]))
        if (abs(float(mj.pair_friction[i, 0]) - geom_rule) > 1e-12 * max(1.0, geom_rule)
                or float(mj.pair_margin[i]) != 0.0 or float(mj.pair_gap[i]) != 0.0):
            name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_PAIR, i) or f"#{i}"
            warnings.warn(
                f"{source}: contact pair {name} (geoms {g1}, {g2}): its own friction "
                f"{float(mj.pair_friction[i, 0])}, margin or gap are not used by the hard model, "
                f"which uses the geoms' friction {geom_rule} and the global contact margin "
                "(constraint_model='mujoco' uses the pair's own)", PairParameterWarning, stacklevel=4)
    return tuple(pairs)


def _tree_from_mjmodel(mj) -> KinematicTree:
    parent = tuple(int(p) for p in mj.body_parentid)
    depth = [0] * mj.nbody
    for b in range(1, mj.nbody):
        depth[b] = depth[parent[b]] + 1
    levels = tuple(
        tuple(b for b in range(1, mj.nbody) if depth[b] == d)
        for d in range(1, max(depth, default=0) + 1)
    )
    return KinematicTree(
        body_parent=parent,
        body_joint_adr=tuple(int(a) for a in mj.body_jntadr),
        body_joint_num=tuple(int(n) for n in mj.body_jntnum),
        joint_type=tuple(JointType(int(t)) for t in mj.jnt_type),
        joint_body=tuple(int(b) for b in mj.jnt_bodyid),
        joint_qpos_adr=tuple(int(a) for a in mj.jnt_qposadr),
        joint_dof_adr=tuple(int(a) for a in mj.jnt_dofadr),
        dof_body=tuple(int(b) for b in mj.dof_bodyid),
        dof_joint=tuple(int(j) for j in mj.dof_jntid),
        levels=levels,
    )


_WRAP_FROM_MJ = {1: WrapKind.JOINT, 2: WrapKind.PULLEY, 3: WrapKind.SITE, 4: WrapKind.SPHERE,
                 5: WrapKind.CYLINDER}


def _tendons_from_mjmodel(mj, arr) -> Tendons:
    """The compiled tendons (``tendon_*``, ``wrap_*``) and sites of ``mj`` as :class:`Tendons`."""
    import mujoco

    path = []
    for t in range(mj.ntendon):
        elements = []
        for w in range(mj.tendon_adr[t], mj.tendon_adr[t] + mj.tendon_num[t]):
            kind = _WRAP_FROM_MJ[int(mj.wrap_type[w])]
            side = None
            if kind in (WrapKind.SPHERE, WrapKind.CYLINDER) and mj.wrap_prm[w] >= 0:
                side = int(mj.wrap_prm[w])  # MuJoCo stores the side site's id in wrap_prm
            elements.append(TendonPathElement(kind, int(mj.wrap_objid[w]), side))
        path.append(tuple(elements))
    kinds = [e.kind for p in path for e in p]
    # a fixed tendon's joint coefficient or a pulley's divisor; a wrap geom's wrap_prm is its side
    # site, kept in the static path instead
    has_coef = np.asarray([k in (WrapKind.JOINT, WrapKind.PULLEY) for k in kinds], dtype=bool)
    coef = np.where(has_coef, np.asarray(mj.wrap_prm, dtype=np.float64)[:len(kinds)], 0.0)
    return Tendons(
        stiffness=arr(mj.tendon_stiffness, (mj.ntendon,)),
        damping=arr(mj.tendon_damping, (mj.ntendon,)),
        length_spring=arr(mj.tendon_lengthspring, (mj.ntendon, 2)),
        range=arr(mj.tendon_range, (mj.ntendon, 2)),
        wrap_coef=arr(coef, (len(kinds),)),
        actuator_force_range=arr(mj.tendon_actfrcrange, (mj.ntendon, 2)),
        actuator_force_limited=tuple(bool(x) for x in mj.tendon_actfrclimited),
        frictionloss=arr(mj.tendon_frictionloss, (mj.ntendon,)),
        length0=arr(mj.tendon_length0, (mj.ntendon,)),
        armature=arr(mj.tendon_armature, (mj.ntendon,)),
        armature_tendons=tuple(int(t) for t in np.flatnonzero(np.asarray(mj.tendon_armature) != 0)),
        frictionloss_tendons=tuple(int(t) for t in np.flatnonzero(np.asarray(mj.tendon_frictionloss) > 0)),
        names=tuple(mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_TENDON, i) or ""
                    for i in range(mj.ntendon)),
        limited=tuple(bool(x) for x in mj.tendon_limited),
        path=tuple(path),
        multi_tree_tendons=tuple(int(t) for t in np.flatnonzero(np.asarray(mj.tendon_treenum) > 1)),
    )


def _affine_parameters(prm, kinds, affine: int, keep_first: bool) -> np.ndarray:
    """``(nu, 3)`` coefficients ``(c0, c1, c2)`` of ``c0 + c1·length + c2·velocity`` of a gain or
    bias: what MuJoCo reads of ``gainprm`` / ``biasprm`` for its type (fixed gain: ``c0`` only;
    no bias: zeros; affine: all three), so parameters MuJoCo ignores cannot act here."""
    out = np.array(np.asarray(prm, dtype=np.float64)[:, :3])
    not_affine = np.asarray(kinds) != affine
    out[not_affine, 1:] = 0.0
    if not keep_first:
        out[not_affine, 0] = 0.0
    return out


#: MuJoCo ``mjtDyn`` → :class:`ActuatorDynamics` (the loader's validation refuses the others)
_DYNAMICS_FROM_MJ = {0: ActuatorDynamics.NONE, 1: ActuatorDynamics.INTEGRATOR,
                     2: ActuatorDynamics.FILTER, 3: ActuatorDynamics.FILTEREXACT,
                     4: ActuatorDynamics.MUSCLE}


def _actuator_states_from_mjmodel(mj, arr) -> ActuatorStates:
    """Activation dynamics and muscle parameters of ``mj``'s actuators (:class:`ActuatorStates`)."""
    import mujoco

    nu = mj.nu
    muscle_gain = tuple(int(t) == int(mujoco.mjtGain.mjGAIN_MUSCLE) for t in mj.actuator_gaintype)
    muscle_bias = tuple(int(t) == int(mujoco.mjtBias.mjBIAS_MUSCLE) for t in mj.actuator_biastype)
    return ActuatorStates(
        dynamics_prm=arr(np.asarray(mj.actuator_dynprm)[:, :3], (nu, 3)),
        act_range=arr(mj.actuator_actrange, (nu, 2)),
        muscle_gain_prm=arr(np.asarray(mj.actuator_gainprm)[:, :9], (nu, 9)),
        muscle_bias_prm=arr(np.asarray(mj.actuator_biasprm)[:, :9], (nu, 9)),
        length_range=arr(mj.actuator_lengthrange, (nu, 2)),
        acc0=arr(mj.actuator_acc0, (nu,)),
        dynamics=tuple(_DYNAMICS_FROM_MJ[int(t)] for t in mj.actuator_dyntype),
        act_limited=tuple(bool(x) for x in mj.actuator_actlimited),
        act_early=tuple(bool(x) for x in mj.actuator_actearly),
        muscle_gain=muscle_gain,
        muscle_bias=muscle_bias,
    )


def _sensors_from_mjmodel(mj, arr) -> Sensors:
    """The sensors of ``mj`` (:class:`Sensors`; every type is described, :func:`jc.sensors`
    computes the position and velocity ones)."""
    import mujoco

    def kind(value: int) -> str:
        return mujoco.mjtSensor(int(value)).name.removeprefix("mjSENS_").lower()

    def data_type(value: int) -> str:
        return mujoco.mjtDataType(int(value)).name.removeprefix("mjDATATYPE_").lower()

    return Sensors(
        cutoff=arr(mj.sensor_cutoff, (mj.nsensor,)),
        kind=tuple(kind(t) for t in mj.sensor_type),
        object_type=tuple(int(t) for t in mj.sensor_objtype),
        object_id=tuple(int(i) for i in mj.sensor_objid),
        reference_type=tuple(int(t) for t in mj.sensor_reftype),
        reference_id=tuple(int(i) for i in mj.sensor_refid),
        address=tuple(int(a) for a in mj.sensor_adr),
        dimension=tuple(int(d) for d in mj.sensor_dim),
        data_type=tuple(data_type(t) for t in mj.sensor_datatype),
        names=tuple(mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_SENSOR, i) or "" for i in range(mj.nsensor)),
    )


#: MuJoCo ``mjtIntegrator`` → :class:`Integrator`
_INTEGRATOR_FROM_MJ = {0: Integrator.EULER, 1: Integrator.RK4, 2: Integrator.IMPLICIT,
                       3: Integrator.IMPLICITFAST}

_EQUALITY_FROM_MJ = {0: EqualityKind.CONNECT, 1: EqualityKind.WELD, 2: EqualityKind.JOINT,
                     3: EqualityKind.TENDON}


def _equalities_from_mjmodel(mj, arr) -> Equalities:
    """The compiled equality constraints (``eq_*``) of ``mj`` as :class:`Equalities` (the loader's
    validation has rejected the kinds the engine does not simulate)."""
    import mujoco

    site = int(mujoco.mjtObj.mjOBJ_SITE)
    return Equalities(
        data=arr(np.asarray(mj.eq_data, dtype=np.float64).reshape(mj.neq, 11 if mj.neq == 0 else -1)[:, :11],
                 (mj.neq, 11)),
        active=arr(np.asarray(mj.eq_active0, dtype=np.float64), (mj.neq,)),
        names=tuple(mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_EQUALITY, i) or ""
                    for i in range(mj.neq)),
        kind=tuple(_EQUALITY_FROM_MJ[int(t)] for t in mj.eq_type),
        object1=tuple(int(o) for o in mj.eq_obj1id),
        object2=tuple(None if int(o) < 0 else int(o) for o in mj.eq_obj2id),
        on_sites=tuple(int(t) == site for t in mj.eq_objtype),
    )


def _geom_data_index(mj, geom_type) -> tuple[int, ...]:
    """Per geom, its mesh / height-field index (MuJoCo ``geom_dataid``) where its type is
    ``geom_type``, else -1."""
    return tuple(int(i) if int(t) == int(geom_type) else -1 for t, i in zip(mj.geom_type, mj.geom_dataid))


def _transparent_geoms(mj) -> tuple[int, ...]:
    """The geoms MuJoCo's ``mj_ray`` skips as invisible: rgba alpha 0 without a material, or a
    material with alpha 0."""
    material = np.asarray(mj.geom_matid)
    alpha = np.asarray(mj.geom_rgba, np.float64).reshape(mj.ngeom, 4)[:, 3]
    material_alpha = np.asarray(mj.mat_rgba, np.float64).reshape(-1, 4)[:, 3]
    return tuple(g for g in range(mj.ngeom)
                 if (material[g] < 0 and alpha[g] == 0)
                 or (material[g] >= 0 and material_alpha[material[g]] == 0))


def _hfield_grids(mj, arr) -> tuple:
    """Per height field, its ``(nrow, ncol)`` normalised elevations (MuJoCo ``hfield_data``)."""
    grids = []
    for h in range(mj.nhfield):
        nrow, ncol, start = int(mj.hfield_nrow[h]), int(mj.hfield_ncol[h]), int(mj.hfield_adr[h])
        grids.append(arr(mj.hfield_data[start:start + nrow * ncol], (nrow, ncol)))
    return tuple(grids)


def _fluid_structure(mj) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The bodies of MuJoCo's inertia-box fluid model and the geoms of its ellipsoid model
    (``mj_fluid``): with a nonzero density or viscosity, every body with mass (``>= mjMINVAL``)
    uses the ellipsoid model when one of its geoms has ``geom_fluid[0] > 0``
    (``fluidshape="ellipsoid"``), for each of its geoms with ``geom_fluid[0] != 0``, and the
    inertia box otherwise; none without fluid."""
    if not (mj.opt.density or mj.opt.viscosity):
        return (), ()
    interaction = np.asarray(mj.geom_fluid, dtype=np.float64).reshape(mj.ngeom, 12)[:, 0]
    bodies, geoms = [], []
    for b in np.flatnonzero(np.asarray(mj.body_mass) >= 1e-15):
        own = range(int(mj.body_geomadr[b]), int(mj.body_geomadr[b]) + int(mj.body_geomnum[b]))
        if any(interaction[g] > 0 for g in own):
            geoms.extend(g for g in own if interaction[g] != 0)
        else:
            bodies.append(int(b))
    return tuple(bodies), tuple(geoms)


def from_mjmodel(mj, *, source: str = "", dtype=None) -> Model:
    """Convert a compiled ``mujoco.MjModel`` (already validated) into a :class:`Model`.

    The result follows MuJoCo's body, joint, ``qpos`` and ``qvel`` order exactly. The model's
    ``<option>`` flags that switch physics off are applied (:func:`._options.apply_options`).
    """
    mj = apply_options(mj)
    dtype = dtype or jnp.result_type(float)

    def arr(x, shape=None):
        a = np.asarray(x, dtype=np.float64)
        if shape is not None:
            a = a.reshape(shape)
        return jnp.asarray(a, dtype=dtype)

    meshes = tuple(
        arr(mj.mesh_vert[mj.mesh_vertadr[i]: mj.mesh_vertadr[i] + mj.mesh_vertnum[i]])
        for i in range(mj.nmesh)
    )
    bodies = _body_and_joint_fields(mj, arr)
    geoms = _geom_and_site_fields(mj, arr, meshes)
    return Model(
        tree=_tree_from_mjmodel(mj),
        **bodies,
        **_actuator_fields(mj, arr),
        **geoms,
        tendons=_tendons_from_mjmodel(mj, arr),
        equalities=_equalities_from_mjmodel(mj, arr),
        actuator_states=_actuator_states_from_mjmodel(mj, arr),
        sensors=_sensors_from_mjmodel(mj, arr),
        options=_options_from_mjmodel(mj, arr),
        soft=_soft_from_mjmodel(mj, arr),
        **_collision_from_mjmodel(mj, bodies, geoms, source),
        source=source,
    ).astype(dtype)  # default option objects (solver tolerances, ...) follow the model dtype


def _names(mj, obj_type, count: int) -> tuple[str, ...]:
    import mujoco

    return tuple(mujoco.mj_id2name(mj, obj_type, i) or "" for i in range(count))


def _body_and_joint_fields(mj, arr) -> dict:
    """The Model fields of bodies, joints and dofs (MuJoCo's ``body_*``, ``jnt_*``, ``dof_*``)."""
    import mujoco

    return dict(
        body_pos=arr(mj.body_pos, (mj.nbody, 3)),
        body_quat=arr(mj.body_quat, (mj.nbody, 4)),
        body_mass=arr(mj.body_mass, (mj.nbody,)),
        body_ipos=arr(mj.body_ipos, (mj.nbody, 3)),
        body_iquat=arr(mj.body_iquat, (mj.nbody, 4)),
        body_inertia=arr(mj.body_inertia, (mj.nbody, 3)),
        body_gravcomp=arr(mj.body_gravcomp, (mj.nbody,)),
        joint_pos=arr(mj.jnt_pos, (mj.njnt, 3)),
        joint_axis=arr(mj.jnt_axis, (mj.njnt, 3)),
        joint_range=arr(mj.jnt_range, (mj.njnt, 2)),
        joint_stiffness=arr(mj.jnt_stiffness, (mj.njnt,)),
        joint_actuator_force_range=arr(mj.jnt_actfrcrange, (mj.njnt, 2)),
        qpos0=arr(mj.qpos0, (mj.nq,)),
        qpos_spring=arr(mj.qpos_spring, (mj.nq,)),
        dof_armature=arr(mj.dof_armature, (mj.nv,)),
        dof_damping=arr(mj.dof_damping, (mj.nv,)),
        dof_frictionloss=arr(mj.dof_frictionloss, (mj.nv,)),
        body_names=_names(mj, mujoco.mjtObj.mjOBJ_BODY, mj.nbody),
        joint_names=_names(mj, mujoco.mjtObj.mjOBJ_JOINT, mj.njnt),
        joint_limited=tuple(bool(x) for x in mj.jnt_limited),
        # MuJoCo encodes an <exclude> as (body1 << 16) + body2
        exclude_body_pairs=tuple((int(signature >> 16), int(signature & 0xFFFF))
                                 for signature in np.asarray(mj.exclude_signature, dtype=np.int64)),
        frictionloss_dofs=tuple(int(d) for d in np.flatnonzero(np.asarray(mj.dof_frictionloss) > 0)),
        gravcomp_bodies=tuple(int(b) for b in np.flatnonzero(np.asarray(mj.body_gravcomp) != 0)),
        rotational_spring_joints=tuple(int(j) for j in range(mj.njnt)
                                       if int(mj.jnt_type[j]) in (0, 1) and mj.jnt_stiffness[j] != 0),
        joint_actuator_gravcomp=tuple(int(j) for j in np.flatnonzero(np.asarray(mj.jnt_actgravcomp))),
        joint_actuator_force_limited=tuple(int(j) for j in np.flatnonzero(np.asarray(mj.jnt_actfrclimited))),
    )


def _actuator_fields(mj, arr) -> dict:
    """The Model fields of actuators: gains, biases, gears, ranges and transmissions
    (MuJoCo's ``actuator_*``)."""
    import mujoco

    nu = mj.nu
    on_site = tuple(int(t) == int(mujoco.mjtTrn.mjTRN_SITE) for t in mj.actuator_trntype)
    in_parent = tuple(int(t) == int(mujoco.mjtTrn.mjTRN_JOINTINPARENT) for t in mj.actuator_trntype)
    return dict(
        actuator_gain=arr(_affine_parameters(mj.actuator_gainprm, mj.actuator_gaintype,
                                             int(mujoco.mjtGain.mjGAIN_AFFINE), keep_first=True), (nu, 3)),
        actuator_bias=arr(_affine_parameters(mj.actuator_biasprm, mj.actuator_biastype,
                                             int(mujoco.mjtBias.mjBIAS_AFFINE), keep_first=False), (nu, 3)),
        actuator_gear=arr(mj.actuator_gear[:, 0], (nu,)),
        actuator_site_gear=arr(mj.actuator_gear, (nu, 6)),
        actuator_ctrl_range=arr(mj.actuator_ctrlrange, (nu, 2)),
        actuator_force_range=arr(mj.actuator_forcerange, (nu, 2)),
        actuator_names=_names(mj, mujoco.mjtObj.mjOBJ_ACTUATOR, nu),
        actuator_target=tuple(int(j) for j in mj.actuator_trnid[:, 0]) if nu else (),
        actuator_on_tendon=tuple(int(t) == int(mujoco.mjtTrn.mjTRN_TENDON) for t in mj.actuator_trntype),
        actuator_ctrl_limited=tuple(bool(x) for x in mj.actuator_ctrllimited),
        actuator_force_limited=tuple(bool(x) for x in mj.actuator_forcelimited),
        actuator_on_site=on_site if any(on_site) else (),
        actuator_refsite=tuple(int(mj.actuator_trnid[a, 1]) if on_site[a] else -1
                               for a in range(nu)) if any(on_site) else (),
        actuator_in_parent=in_parent if any(in_parent) else (),
    )


def _geom_and_site_fields(mj, arr, meshes) -> dict:
    """The Model fields of geoms, meshes, height fields and sites (MuJoCo's ``geom_*``,
    ``mesh_*``, ``hfield_*``, ``site_*``)."""
    import mujoco

    fluid_bodies, fluid_geoms = _fluid_structure(mj)
    return dict(
        geom_size=arr(mj.geom_size, (mj.ngeom, 3)),
        geom_pos=arr(mj.geom_pos, (mj.ngeom, 3)),
        geom_quat=arr(mj.geom_quat, (mj.ngeom, 4)),
        geom_friction=arr(mj.geom_friction, (mj.ngeom, 3)),
        geom_margin=arr(mj.geom_margin, (mj.ngeom,)),
        geom_fluid=arr(mj.geom_fluid, (mj.ngeom, 12)),
        mesh_vertices=meshes,
        hfield_size=arr(mj.hfield_size, (mj.nhfield, 4)),
        hfield_data=_hfield_grids(mj, arr),
        site_pos=arr(mj.site_pos, (mj.nsite, 3)),
        site_quat=arr(mj.site_quat, (mj.nsite, 4)),
        site_size=arr(mj.site_size, (mj.nsite, 3)),
        geom_names=_names(mj, mujoco.mjtObj.mjOBJ_GEOM, mj.ngeom),
        geom_type=tuple(_GEOM_FROM_MJ[int(t)] for t in mj.geom_type),
        geom_body=tuple(int(b) for b in mj.geom_bodyid),
        geom_contype=tuple(int(c) for c in mj.geom_contype),
        geom_conaffinity=tuple(int(c) for c in mj.geom_conaffinity),
        geom_mesh=_geom_data_index(mj, mujoco.mjtGeom.mjGEOM_MESH),
        geom_hfield=_geom_data_index(mj, mujoco.mjtGeom.mjGEOM_HFIELD),
        hfield_names=_names(mj, mujoco.mjtObj.mjOBJ_HFIELD, mj.nhfield),
        site_body=tuple(int(b) for b in mj.site_bodyid),
        site_names=_names(mj, mujoco.mjtObj.mjOBJ_SITE, mj.nsite),
        site_type=tuple(_GEOM_FROM_MJ[int(t)] for t in mj.site_type),
        fluid_bodies=fluid_bodies,
        fluid_geoms=fluid_geoms,
        mesh_faces=tuple(tuple(int(i) for i in np.asarray(mj.mesh_face[mj.mesh_faceadr[m]:
                                                              mj.mesh_faceadr[m] + mj.mesh_facenum[m]]).ravel())
                         for m in range(mj.nmesh)),
        transparent_geoms=_transparent_geoms(mj),
    )


def _options_from_mjmodel(mj, arr) -> Options:
    """``Options`` from MuJoCo's ``<option>`` (time step, gravity, integrator, disable flags, fluid
    medium, magnetic field)."""
    import mujoco

    disabled = int(mj.opt.disableflags)
    gravity = np.asarray(mj.opt.gravity, dtype=np.float64)
    if disabled & int(mujoco.mjtDisableBit.mjDSBL_GRAVITY):
        gravity = np.zeros(3)
    constraints_off = bool(disabled & int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT))
    return Options(
        dt=arr(mj.opt.timestep), gravity=arr(gravity),
        integrator=_INTEGRATOR_FROM_MJ[int(mj.opt.integrator)],
        enable_contacts=not (constraints_off or disabled & int(mujoco.mjtDisableBit.mjDSBL_CONTACT)),
        enable_joint_limits=not (constraints_off or disabled & int(mujoco.mjtDisableBit.mjDSBL_LIMIT)),
        euler_damping=not disabled & int(mujoco.mjtDisableBit.mjDSBL_EULERDAMP),
        fluid_density=arr(mj.opt.density), fluid_viscosity=arr(mj.opt.viscosity),
        wind=arr(mj.opt.wind, (3,)),
        magnetic=arr(mj.opt.magnetic, (3,)),
    )


def _soft_from_mjmodel(mj, arr) -> SoftConstraints:
    """MuJoCo's per-element solver parameters (:class:`~jaxsim_contact._model.SoftConstraints`),
    read by the MuJoCo-compatible constraint model only."""
    import mujoco

    def rows(x, width):
        return arr(np.asarray(x, np.float64).reshape(-1, width))

    disabled = int(mj.opt.disableflags)
    override = None
    if int(mj.opt.enableflags) & int(mujoco.mjtEnableBit.mjENBL_OVERRIDE):
        override = ContactOverride(solref=arr(mj.opt.o_solref, (2,)), solimp=arr(mj.opt.o_solimp, (5,)),
                                   friction=arr(mj.opt.o_friction, (5,)), margin=arr(mj.opt.o_margin))
    return SoftConstraints(
        geom_solref=rows(mj.geom_solref, 2), geom_solimp=rows(mj.geom_solimp, 5),
        geom_solmix=arr(mj.geom_solmix), geom_gap=arr(mj.geom_gap),
        geom_friction=rows(mj.geom_friction, 3),
        pair_solref=rows(mj.pair_solref, 2), pair_solreffriction=rows(mj.pair_solreffriction, 2),
        pair_solimp=rows(mj.pair_solimp, 5), pair_friction=rows(mj.pair_friction, 5),
        pair_margin=arr(mj.pair_margin), pair_gap=arr(mj.pair_gap),
        body_invweight0=rows(mj.body_invweight0, 2), dof_invweight0=arr(mj.dof_invweight0),
        tendon_invweight0=arr(mj.tendon_invweight0),
        joint_solref=rows(mj.jnt_solref, 2), joint_solimp=rows(mj.jnt_solimp, 5),
        joint_margin=arr(mj.jnt_margin),
        dof_solref=rows(mj.dof_solref, 2), dof_solimp=rows(mj.dof_solimp, 5),
        tendon_solref_limit=rows(mj.tendon_solref_lim, 2),
        tendon_solimp_limit=rows(mj.tendon_solimp_lim, 5), tendon_margin=arr(mj.tendon_margin),
        tendon_solref_friction=rows(mj.tendon_solref_fri, 2),
        tendon_solimp_friction=rows(mj.tendon_solimp_fri, 5),
        equality_solref=rows(mj.eq_solref, 2), equality_solimp=rows(mj.eq_solimp, 5),
        impratio=arr(mj.opt.impratio), override=override,
        geom_priority=tuple(int(p) for p in mj.geom_priority),
        geom_condim=tuple(int(c) for c in mj.geom_condim),
        pair_geoms=tuple((int(a), int(b)) for a, b in zip(mj.pair_geom1, mj.pair_geom2)),
        pair_condim=tuple(int(c) for c in mj.pair_dim),
        cone=FrictionCone.ELLIPTIC if int(mj.opt.cone) == int(mujoco.mjtCone.mjCONE_ELLIPTIC) else FrictionCone.PYRAMIDAL,
        refsafe=not disabled & int(mujoco.mjtDisableBit.mjDSBL_REFSAFE),
    )


def _collision_from_mjmodel(mj, bodies: dict, geoms: dict, source: str) -> dict:
    """The Model fields of what may touch: the explicit ``<contact><pair>`` list and the static
    collision structure (pair groups, broad-phase tables), built from the body and geom fields
    already read (``bodies``, ``geoms``)."""
    contact_pairs = _explicit_contact_pairs(mj, source)
    exclude_geoms = excluded_geom_pairs(mj, source)
    return dict(
        contact_geom_pairs=contact_pairs,
        exclude_geom_pairs=exclude_geoms,
        collision=build_collision_structure(
            geom_type=geoms["geom_type"],
            geom_body=geoms["geom_body"],
            geom_contype=geoms["geom_contype"],
            geom_conaffinity=geoms["geom_conaffinity"],
            body_parent=tuple(int(p) for p in mj.body_parentid),
            body_joint_num=tuple(int(n) for n in mj.body_jntnum),
            exclude_body_pairs=bodies["exclude_body_pairs"],
            contact_geom_pairs=contact_pairs,
            exclude_geom_pairs=exclude_geoms,
            mesh_vertices=tuple(np.asarray(v) for v in geoms["mesh_vertices"]),
            geom_hfield=geoms["geom_hfield"],
            hfield_size=np.asarray(mj.hfield_size, np.float64).reshape(mj.nhfield, 4),
            hfield_shape=tuple((int(mj.hfield_nrow[h]), int(mj.hfield_ncol[h])) for h in range(mj.nhfield)),
            geom_size=np.asarray(mj.geom_size, np.float64),
            geom_mesh=geoms["geom_mesh"],
            geom_margin=np.asarray(mj.geom_margin, np.float64),
        ),
    )
