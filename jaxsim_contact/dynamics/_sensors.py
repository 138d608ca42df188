"""Sensor readings in MuJoCo's ``sensordata`` layout (XML Reference ``<sensor>``; MuJoCo
``mj_sensorPos`` / ``mj_sensorVel`` / ``mj_sensorAcc``).

Computed: position and velocity sensors — ``jointpos``, ``jointvel``, ``ballquat``,
``ballangvel``, ``tendonpos``, ``tendonvel``, ``actuatorpos``, ``actuatorvel``, ``framepos``,
``framequat``, ``framexaxis`` / ``yaxis`` / ``zaxis``, ``framelinvel``, ``frameangvel`` (of
xbodies, bodies' inertial frames, geoms and sites, optionally in a reference frame), ``gyro``,
``velocimeter``, ``magnetometer``, ``subtreecom``, ``subtreelinvel``, ``subtreeangmom``,
``e_potential``, ``e_kinetic``, ``clock`` — the actuation sensors ``actuatorfrc``,
``jointactfrc``, ``tendonactfrc`` — and the acceleration-stage sensors (MuJoCo
``mj_sensorAcc``) ``accelerometer``, ``framelinacc``, ``frameangacc``, ``force``, ``torque``,
``jointlimitfrc``, ``tendonlimitfrc``, ``touch`` — and site ``rangefinder``s reading the distance only
(:func:`_rangefinders`). The acceleration-stage ones read the state's acceleration and constraint forces,
which :func:`sensors` computes when one of them is requested by running the step's dynamics and
constraint solve at the state (:mod:`._body_forces`: MuJoCo's ``qacc``, ``cacc``, ``cfrc_int``
with this engine's hard constraint forces — equal to MuJoCo's wherever no constraint is active).
Cutoffs as MuJoCo (real sensors clamped to ``±cutoff``, positive ones to ``cutoff``; axes and
quaternions never). A sensor's ``noise`` is metadata, as in MuJoCo since 3.1.4 (which removed its
``sensornoise`` flag): no noise is added. Other kinds (limit distances and velocities, cameras, user / plugin
sensors, ...) are not computed: :func:`sensors` raises ``NotImplementedError`` naming them.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..collision._ray import ray_primitive, ray_scene
from .._math import quat_mul, quat_normalize, quat_to_matrix
from ..constraints import limited_ball_joints, limited_joints, limited_tendons, slot_ranges
from .._model import Model, State
from ._body_forces import body_forces, constrained_dynamics, contact_slot_bodies
from ._crba import body_spatial_inertias
from ._energy import kinetic_energy, potential_energy
from ._kinematics import forward_kinematics, motion_axes
from ._rnea import actuator_forces, actuator_terms
from ._tendons import tendon_kinematics
from .._precision import full_precision_matmuls

__all__ = ["sensors", "COMPUTED_SENSORS"]

#: the sensor kinds :func:`sensors` computes (MuJoCo type names without prefix)
COMPUTED_SENSORS = frozenset({
    "jointpos", "jointvel", "ballquat", "ballangvel", "tendonpos", "tendonvel", "actuatorpos",
    "actuatorvel", "actuatorfrc", "jointactfrc", "tendonactfrc", "framepos", "framequat",
    "framexaxis", "frameyaxis", "framezaxis", "framelinvel", "frameangvel", "gyro", "velocimeter",
    "magnetometer", "subtreecom", "subtreelinvel", "subtreeangmom", "e_potential", "e_kinetic",
    "clock", "accelerometer", "framelinacc", "frameangacc", "force", "torque", "jointlimitfrc",
    "tendonlimitfrc", "touch", "rangefinder"})

#: sensors that read the body accelerations and interaction forces (MuJoCo mj_rnePostConstraint)
_BODY_FORCE_SENSORS = frozenset({"accelerometer", "framelinacc", "frameangacc", "force", "torque"})
#: sensors that need the constraint solve at the state
_SOLVE_SENSORS = _BODY_FORCE_SENSORS | {"jointlimitfrc", "tendonlimitfrc", "touch"}

# MuJoCo mjtObj values of the frames a sensor may name
_BODY, _XBODY, _GEOM, _SITE = 1, 2, 5, 6


class _Frames:
    """World frames and velocities of one state, computed once for every sensor."""

    def __init__(self, model: Model, q: jax.Array, v: jax.Array):
        self.model = model
        self.kin = forward_kinematics(model, q)
        self.axes = motion_axes(model, self.kin)
        moves = jnp.asarray(model.tree.dof_moves_body, dtype=v.dtype)
        self.body_velocity = moves @ (self.axes * v[:, None])  # (nbody, 6) [ω; v_O]
        self.dtype = v.dtype

    def frame(self, object_type: int, index: int):
        """``(position (3,), rotation (3, 3), quaternion (4,), body)`` of an object."""
        model, kin = self.model, self.kin
        if object_type == _XBODY:
            return kin.body_pos[index], kin.body_rot[index], kin.body_quat[index], index
        if object_type == _BODY:
            quat = quat_mul(kin.body_quat[index], model.body_iquat.astype(self.dtype)[index])
            return kin.com_pos[index], quat_to_matrix(quat), quat, index
        if object_type == _GEOM:
            body = model.geom_body[index]
            local_pos, local_quat = model.geom_pos[index], model.geom_quat[index]
        elif object_type == _SITE:
            body = model.site_body[index]
            local_pos, local_quat = model.site_pos[index], model.site_quat[index]
        else:
            raise NotImplementedError(
                f"{model.source}: a sensor on an object of MuJoCo type {object_type} (cameras, "
                "lights, ...) is not computed")
        local_pos = local_pos.astype(self.dtype)
        quat = quat_mul(kin.body_quat[body], local_quat.astype(self.dtype))
        return kin.body_pos[body] + kin.body_rot[body] @ local_pos, quat_to_matrix(quat), quat, body

    def velocity(self, object_type: int, index: int):
        """``(angular, linear)`` world velocity of an object's origin."""
        position, _, _, body = self.frame(object_type, index)
        angular, origin_linear = self.body_velocity[body, :3], self.body_velocity[body, 3:]
        return angular, origin_linear + jnp.cross(angular, position)


def _subtree_quantities(model: Model, frames: _Frames):
    """``(com (nbody, 3), linear velocity (nbody, 3), angular momentum (nbody, 3))`` of every
    body's subtree (MuJoCo ``subtree_com``, ``subtree_linvel``, ``subtree_angmom``)."""
    dtype = frames.dtype
    kin = frames.kin
    mass = model.body_mass.astype(dtype)
    below = jnp.asarray(model.tree.body_ancestor.T, dtype)  # [i, j]: j in subtree of i
    subtree_mass = below @ mass
    safe_mass = jnp.where(subtree_mass > 0, subtree_mass, 1.0)
    com = (below @ (mass[:, None] * kin.com_pos)) / safe_mass[:, None]
    angular, origin_linear = frames.body_velocity[:, :3], frames.body_velocity[:, 3:]
    com_velocity = origin_linear + jnp.cross(angular, kin.com_pos)
    linear = (below @ (mass[:, None] * com_velocity)) / safe_mass[:, None]
    inertia = body_spatial_inertias(model, kin)
    # angular momentum of each body about the world origin, then about each subtree's centre
    momentum_origin = jnp.einsum("bij,bj->bi", inertia, frames.body_velocity)[:, :3]
    total = below @ momentum_origin  # (nbody, 3) about the origin
    momentum = below @ (mass[:, None] * com_velocity)  # linear momentum of each subtree
    about_com = total - jnp.cross(com, momentum)
    return com, linear, about_com


@full_precision_matmuls
def sensors(model: Model, state: State, ctrl: jax.Array | None = None,
            select: Sequence[int | str] | None = None) -> jax.Array:
    """MuJoCo's ``sensordata`` ``(nsensordata,)`` at ``state`` (module docstring).

    Args:
      model: the model (its :class:`~jaxsim_contact._model.Sensors`).
      state: the state (``q``, ``v``, ``act``, ``time``).
      ctrl: ``(nu,)`` controls for the actuation sensors (``None``: zeros).
      select: sensor indices or names (static); ``None``: every sensor. The result is then the
        selected sensors' values, concatenated in the given order.
    Raises:
      NotImplementedError: a requested sensor is of a kind that is not computed (named).
      KeyError: an unknown sensor name.
    """
    specification = model.sensors
    chosen = _selection(model, select)
    missing = sorted({specification.kind[s] for s in chosen} - COMPUTED_SENSORS)
    if missing:
        raise NotImplementedError(
            f"{model.source}: sensors of kind {missing} are not computed (computed: "
            f"{sorted(COMPUTED_SENSORS)}; pass select= to read the others)")
    q, v = state.q, state.v
    dtype = q.dtype
    if not chosen:
        return jnp.zeros((0,), dtype)
    frames = _Frames(model, q, v)
    kinds = {specification.kind[s] for s in chosen}
    tendon = (tendon_kinematics(model, q, frames.kin, frames.axes) if model.ntendon else None)
    ctrl = jnp.zeros((model.nu,), dtype) if ctrl is None else jnp.asarray(ctrl, dtype)
    actuation = None
    if kinds & {"actuatorpos", "actuatorvel", "actuatorfrc", "tendonactfrc"}:
        actuation = actuator_terms(model, q, v, ctrl, tendon, state.act,
                                   kinematics=frames.kin, axes=frames.axes)
    joint_force = None
    if "jointactfrc" in kinds:
        joint_force = actuator_forces(model, q, v, ctrl, tendon, frames.kin, frames.axes, act=state.act)
    subtree = _subtree_quantities(model, frames) if kinds & {"subtreecom", "subtreelinvel",
                                                            "subtreeangmom"} else None
    dynamics = constrained_dynamics(model, state, ctrl) if kinds & _SOLVE_SENSORS else None
    bodies = body_forces(model, dynamics, v) if kinds & _BODY_FORCE_SENSORS else None
    rangefinder = _rangefinders(model, frames, [s for s in chosen if specification.kind[s] == "rangefinder"])
    tree = model.tree
    values = []
    for s in chosen:
        kind = specification.kind[s]
        obj, index = specification.object_type[s], specification.object_id[s]
        ref_type, ref = specification.reference_type[s], specification.reference_id[s]
        if kind == "jointpos":
            value = q[tree.joint_qpos_adr[index]][None]
        elif kind == "jointvel":
            value = v[tree.joint_dof_adr[index]][None]
        elif kind == "ballquat":
            adr = tree.joint_qpos_adr[index]
            value = quat_normalize(q[adr:adr + 4])
        elif kind == "ballangvel":
            adr = tree.joint_dof_adr[index]
            value = v[adr:adr + 3]
        elif kind == "tendonpos":
            value = tendon.length[index][None]
        elif kind == "tendonvel":
            value = tendon.velocity(v)[index][None]
        elif kind in ("actuatorpos", "actuatorvel", "actuatorfrc"):
            value = actuation[("actuatorpos", "actuatorvel", "actuatorfrc").index(kind)][index][None]
        elif kind == "jointactfrc":
            value = joint_force[tree.joint_dof_adr[index]][None]
        elif kind == "tendonactfrc":
            on_it = [a for a in range(model.nu)
                     if model.actuator_on_tendon[a] and model.actuator_target[a] == index]
            value = jnp.sum(actuation[2][np.asarray(on_it, dtype=np.int64)])[None]
        elif kind in ("framepos", "framexaxis", "frameyaxis", "framezaxis", "framequat"):
            value = _frame_sensor(frames, kind, obj, index, ref_type, ref)
        elif kind in ("framelinvel", "frameangvel"):
            value = _frame_velocity(frames, kind, obj, index, ref_type, ref)
        elif kind in ("gyro", "velocimeter"):
            angular, linear = frames.velocity(_SITE, index)
            rotation = frames.frame(_SITE, index)[1]
            value = rotation.T @ (angular if kind == "gyro" else linear)
        elif kind == "rangefinder":
            value = rangefinder[s]
        elif kind in ("subtreecom", "subtreelinvel", "subtreeangmom"):
            value = subtree[("subtreecom", "subtreelinvel", "subtreeangmom").index(kind)][index]
        elif kind == "magnetometer":
            value = frames.frame(_SITE, index)[1].T @ model.options.magnetic.astype(dtype)
        elif kind == "e_potential":
            value = potential_energy(model, q)[None]
        elif kind == "e_kinetic":
            value = kinetic_energy(model, q, v)[None]
        elif kind in ("accelerometer", "framelinacc", "frameangacc"):
            value = _acceleration_sensor(frames, bodies, kind, obj, index)
        elif kind in ("force", "torque"):
            value = _interaction_sensor(frames, bodies, kind, index)
        elif kind in ("jointlimitfrc", "tendonlimitfrc"):
            value = _limit_force(model, dynamics.contact, kind, index)
        elif kind == "touch":
            value = _touch(model, frames, dynamics.contact, index)
        else:  # clock
            value = jnp.asarray(state.time, dtype)[None]
        values.append(_cutoff(value, specification.cutoff.astype(dtype)[s], specification.data_type[s]))
    return jnp.concatenate(values)


def _selection(model: Model, select) -> tuple[int, ...]:
    """Sensor indices of ``select`` (indices or names; ``None``: all)."""
    names = model.sensors.names
    if select is None:
        return tuple(range(model.sensors.nsensor))
    chosen = []
    for item in select:
        if isinstance(item, str):
            if item not in names:
                raise KeyError(f"{model.source}: no sensor named {item!r} (sensors: {list(names)})")
            chosen.append(names.index(item))
        else:
            chosen.append(int(item))
    return tuple(chosen)


def _rangefinders(model: Model, frames: _Frames, chosen: Sequence[int]) -> dict[int, jax.Array]:
    """Site rangefinders (MuJoCo ``mj_sensorPos``, ``mjSENS_RANGEFINDER``): per sensor ``(1,)``, the
    distance (m) from the site along its ``+z`` axis to the nearest geom not on the site's body
    (``mj_ray`` with no group filter, static geoms included, transparent geoms skipped;
    :func:`~jaxsim_contact.collision._ray.ray_scene`), ``-1`` when the ray hits nothing. The rays of
    all ``chosen`` sensors are cast in one vmapped call.

    Raises:
      NotImplementedError: a camera rangefinder, or one reading more than one number (MuJoCo's
        ``data`` fields other than ``dist`` or ``depth``, which equal the distance for a site).
    """
    specification = model.sensors
    if not chosen:
        return {}
    for s in chosen:
        if specification.object_type[s] != _SITE or specification.dimension[s] != 1:
            raise NotImplementedError(
                f"{model.source}: rangefinder {specification.names[s] or s} is on a camera or reads "
                "fields other than its distance (only site rangefinders with data=\"dist\" are computed)")
    sites = [specification.object_id[s] for s in chosen]
    origins = jnp.stack([frames.frame(_SITE, site)[0] for site in sites])
    directions = jnp.stack([frames.frame(_SITE, site)[1][:, 2] for site in sites])
    exclude = jnp.asarray([model.site_body[site] for site in sites], jnp.int32)
    distance, _, hit = jax.vmap(
        lambda origin, direction, body: ray_scene(model, frames.kin.body_pos, frames.kin.body_quat,
                                                  origin, direction, exclude_body=body))(
        origins, directions, exclude)
    reading = jnp.where(hit, distance, -1.0)
    return {s: reading[i][None] for i, s in enumerate(chosen)}


def _frame_sensor(frames: _Frames, kind: str, obj: int, index: int, ref_type: int, ref: int):
    position, rotation, quat, _ = frames.frame(obj, index)
    if kind == "framequat":
        if ref < 0:
            return quat
        ref_quat = frames.frame(ref_type, ref)[2]
        return quat_mul(ref_quat * jnp.asarray([1.0, -1.0, -1.0, -1.0], quat.dtype), quat)
    if kind == "framepos":
        value = position
        if ref >= 0:
            ref_position, ref_rotation, _, _ = frames.frame(ref_type, ref)
            return ref_rotation.T @ (position - ref_position)
        return value
    axis = rotation[:, ("framexaxis", "frameyaxis", "framezaxis").index(kind)]
    if ref >= 0:
        return frames.frame(ref_type, ref)[1].T @ axis
    return axis


def _frame_velocity(frames: _Frames, kind: str, obj: int, index: int, ref_type: int, ref: int):
    angular, linear = frames.velocity(obj, index)
    if ref >= 0:
        position = frames.frame(obj, index)[0]
        ref_position, ref_rotation, _, _ = frames.frame(ref_type, ref)
        ref_angular, ref_linear = frames.velocity(ref_type, ref)
        # relative velocity seen from the rotating reference frame (MuJoCo mj_sensorVel)
        linear = linear - ref_linear + jnp.cross(position - ref_position, ref_angular)
        angular = angular - ref_angular
        angular, linear = ref_rotation.T @ angular, ref_rotation.T @ linear
    return linear if kind == "framelinvel" else angular


def _acceleration_sensor(frames: _Frames, bodies, kind: str, obj: int, index: int):
    """MuJoCo ``mj_objectAcceleration``: the classical acceleration of the object's origin
    ``a_O + α × p + ω × v_p`` (accelerometer: of a site, in its frame; framelinacc: world) or
    its angular acceleration (frameangacc). Gravity is an upward acceleration of the world, so a
    static or mocap body reads ``−g`` (MuJoCo 4.0.0, measured; newer sources return zero)."""
    obj = _SITE if kind == "accelerometer" else obj
    position, rotation, _, body = frames.frame(obj, index)
    angular_acc, origin_acc = bodies.acceleration[body, :3], bodies.acceleration[body, 3:]
    if kind == "frameangacc":
        return angular_acc
    angular, origin_velocity = bodies.velocity[body, :3], bodies.velocity[body, 3:]
    point_velocity = origin_velocity + jnp.cross(angular, position)
    linear = origin_acc + jnp.cross(angular_acc, position) + jnp.cross(angular, point_velocity)
    return rotation.T @ linear if kind == "accelerometer" else linear


def _interaction_sensor(frames: _Frames, bodies, kind: str, index: int):
    """MuJoCo force / torque sensors: the wrench the parent exerts on the site's body
    (``cfrc_int``), torque about the site, in the site's frame."""
    position, rotation, _, body = frames.frame(_SITE, index)
    torque_origin, force = bodies.internal[body, :3], bodies.internal[body, 3:]
    if kind == "force":
        return rotation.T @ force
    return rotation.T @ (torque_origin - jnp.cross(position, force))


def _touch(model: Model, frames: _Frames, contact, site: int) -> jax.Array:
    """MuJoCo's touch sensor ``(1,)`` (N): the sum of the normal forces of the active contacts of
    the site's body whose ray — from the contact point along the normal, pointing away from the
    site's body's side — meets the site's volume (``mju_rayGeom``; always when the point is
    inside it)."""
    count = slot_ranges(model)["contacts"].stop
    dtype = contact.force.dtype
    if count == 0:
        return jnp.zeros((1,), dtype)
    body = model.site_body[site]
    body_a, body_b = contact_slot_bodies(model, contact)
    normal_force = contact.force[:count, 2]
    involved = contact.active[:count] & ((body_a == body) | (body_b == body)) & (normal_force > 0)
    position, rotation, _, _ = frames.frame(_SITE, site)
    # the normal points from a to b: from the site's body towards the other when it is body a
    direction = contact.frame[:count, 2] * jnp.where(body_b == body, -1.0, 1.0)[:, None]
    origin = jnp.where(involved[:, None], contact.point[:count], position)
    size = model.site_size.astype(dtype)[site]
    _, hit = jax.vmap(lambda p, d: ray_primitive(p, d, position, rotation, size,
                                                 model.site_type[site]))(origin, direction)
    return jnp.sum(jnp.where(involved & hit, normal_force, 0.0))[None]


def _limit_force(model: Model, contact, kind: str, index: int):
    """The limit slot's normal force (N or N·m; MuJoCo ``efc_force`` of the joint's or tendon's
    limit row — a ball joint's single row on its rotation angle included), zero when the joint or
    tendon has no limit slot or the slot is inactive."""
    dtype = contact.force.dtype
    if kind == "tendonlimitfrc":
        blocks = (("tendon_limits", limited_tendons(model)),)
    else:
        blocks = (("limits", limited_joints(model)), ("ball_limits", limited_ball_joints(model)))
    for name, limited in blocks:
        if index in limited:
            slot = slot_ranges(model)[name].start + limited.index(index)
            return jnp.where(contact.active[slot], contact.force[slot, 2], 0.0)[None]
    return jnp.zeros((1,), dtype)


def _cutoff(value: jax.Array, cutoff: jax.Array, data_type: str) -> jax.Array:
    """MuJoCo's ``apply_cutoff``: real sensors to ``±cutoff``, positive ones to ``≤ cutoff``,
    when ``cutoff > 0``; axes and quaternions unchanged."""
    if data_type == "real":
        return jnp.where(cutoff > 0, jnp.clip(value, -cutoff, cutoff), value)
    if data_type == "positive":
        return jnp.where(cutoff > 0, jnp.minimum(value, cutoff), value)
    return value
