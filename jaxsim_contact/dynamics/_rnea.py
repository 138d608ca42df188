"""Generalised forces: bias (recursive Newton–Euler), passive (springs, dampers), actuators.

Bias (Coriolis, centrifugal and gravity), the ``b(q, v)`` / ``C(q, v) v + g(q)`` of seed 004
§II-C eq. (1): RNEA with zero joint acceleration (Featherstone RBDA §5.3), with gravity entering as
a fictitious upward acceleration of the world (as MuJoCo's ``mj_rne``). In the world frame:

    a_i  = [0; -g] + Σ_{dofs d moving i} Ṡ_d v_d,          Ṡ_d = V_frame(d) ×ₘ S_d
    f_i  = I_i a_i + V_i ×f (I_i V_i)
    τ_d  = S_dᵀ Σ_{j in subtree(body(d))} f_j

``V_frame(d)`` is the velocity of the frame in which dof ``d``'s axis is fixed (see
:attr:`~jaxsim_contact._model.KinematicTree.dof_frame_velocity`); it reproduces MuJoCo's
``cdof_dot`` and therefore its ``qfrc_bias``. Ancestor sums and subtree sums are products with
static incidence matrices (no loop over bodies).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..constraints._jacobian import point_jacobian, rotation_jacobian, site_frames
from .._math import quat_conj, quat_mul, quat_normalize, quat_rotate, quat_to_matrix, safe_norm
from .._model import Model
from .._types import JointType
from ._actuation import actuator_input, clamp_controls, muscle_bias, muscle_gain
from ._crba import body_spatial_inertias
from ._fluid import fluid_forces
from ._kinematics import Kinematics, forward_kinematics, motion_axes
from ._spatial import cross_force, cross_motion
from ._tendons import tendon_armature, tendon_forces, tendon_kinematics
from .._precision import full_precision_matmuls

__all__ = ["bias_forces", "bias_forces_from_kinematics", "body_velocities_and_axis_rates",
           "body_accelerations", "body_inertial_forces", "passive_forces", "actuator_forces",
           "actuator_terms", "multi_dof_joint_transmissions", "site_transmissions",
           "gravity_compensation"]


def bias_forces_from_kinematics(
    model: Model, kin: Kinematics, axes: jax.Array, v: jax.Array
) -> jax.Array:
    """``(nv,)`` bias forces from precomputed kinematics and dof motion axes ``(nv, 6)``."""
    tree = model.tree
    dtype = axes.dtype
    if tree.nv == 0:
        return jnp.zeros((0,), dtype)
    v = v.astype(dtype)
    dof_body = np.asarray(tree.dof_body, dtype=np.int64)
    body_vel, axes_rate = body_velocities_and_axis_rates(model, axes, v)
    body_acc = body_accelerations(model, axes, axes_rate, v)
    force = body_inertial_forces(model, kin, body_vel, body_acc)
    subtree_force = jnp.asarray(tree.body_ancestor.T, dtype) @ force  # [i] = Σ_{j below i} f_j
    return jnp.sum(axes * subtree_force[dof_body], axis=-1)


def body_velocities_and_axis_rates(model: Model, axes: jax.Array, v: jax.Array):
    """``(V (nbody, 6), Ṡ (nv, 6))``: every body's spatial velocity ``[ω; v_O]`` (world frame,
    linear part at the world origin; MuJoCo's ``cvel`` up to the reference point) and the time
    derivative of every dof's motion axis (MuJoCo ``cdof_dot``, mj_comVel; module docstring)."""
    tree = model.tree
    dtype = axes.dtype
    dof_parent_body = np.asarray(tree.body_parent, dtype=np.int64)[np.asarray(tree.dof_body, dtype=np.int64)]
    weighted_axes = axes * v[:, None]
    body_vel = jnp.asarray(tree.dof_moves_body, dtype=dtype) @ weighted_axes  # (nbody, 6)
    frame_vel = body_vel[dof_parent_body] + jnp.asarray(tree.dof_frame_velocity, dtype) @ weighted_axes
    return body_vel, cross_motion(frame_vel, axes)


def body_accelerations(model: Model, axes: jax.Array, axes_rate: jax.Array, v: jax.Array,
                       qacc: jax.Array | None = None) -> jax.Array:
    """``(nbody, 6)`` spatial accelerations ``[α; a_O]`` (world frame, rad/s², m/s²) of the
    bodies for joint accelerations ``qacc`` ``(nv,)`` (``None``: zero, the bias terms), gravity entering as an upward acceleration
    of the world (MuJoCo ``cacc``, mj_rnePostConstraint: ``a_i = −g + Σ Ṡ_d v_d + S_d q̈_d``)."""
    dtype = axes.dtype
    world_acc = jnp.concatenate([jnp.zeros(3, dtype), -model.options.gravity.astype(dtype)])
    moves = jnp.asarray(model.tree.dof_moves_body, dtype=dtype)
    dof_acc = axes_rate * v[:, None]
    if qacc is not None:
        dof_acc = dof_acc + axes * qacc[:, None]
    return world_acc + moves @ dof_acc


def body_inertial_forces(model: Model, kin: Kinematics, body_vel: jax.Array,
                         body_acc: jax.Array) -> jax.Array:
    """``(nbody, 6)`` ``I a + V ×f (I V)`` (N·m; N) of every body: the wrench that produces its
    motion (MuJoCo ``cfrc_body`` of mj_rnePostConstraint; world frame, torque about the origin)."""
    inertia = body_spatial_inertias(model, kin)
    momentum = jnp.einsum("bij,bj->bi", inertia, body_vel)
    return jnp.einsum("bij,bj->bi", inertia, body_acc) + cross_force(body_vel, momentum)


@full_precision_matmuls
def bias_forces(model: Model, q: jax.Array, v: jax.Array) -> jax.Array:
    """Bias forces ``C(q, v) v + g(q)`` ``(nv,)``: Coriolis, centrifugal and gravity.

    Equals MuJoCo's ``qfrc_bias``. The equation of motion is ``M v̇ = τ - bias``.
    """
    kin = forward_kinematics(model, q)
    axes = motion_axes(model, kin)
    bias = bias_forces_from_kinematics(model, kin, axes, v)
    if model.tendons.armature_tendons:  # tendon armature: J^T a J̇v (MuJoCo's qfrc_bias includes it)
        bias = bias + tendon_armature(model, q, v, tendon_kinematics(model, q, kin, axes))[1]
    return bias


def _scalar_joint_dofs(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hinge/slide joints: (joint index, qpos address, dof address) arrays."""
    tree = model.tree
    joints = np.asarray(
        [j for j, t in enumerate(tree.joint_type) if t in (JointType.HINGE, JointType.SLIDE)],
        dtype=np.int64,
    )
    qpos = np.asarray(tree.joint_qpos_adr, dtype=np.int64)[joints] if joints.size else joints
    dofs = np.asarray(tree.joint_dof_adr, dtype=np.int64)[joints] if joints.size else joints
    return joints, qpos, dofs


def quaternion_difference(q: jax.Array, reference: jax.Array) -> jax.Array:
    """``(..., 3)`` rotation vector ``r`` with ``reference ⊗ exp(r) = q`` (MuJoCo ``mju_subQuat``):
    axis times angle, the angle in ``[−π, π]``; finite value and derivatives at ``q = reference``."""
    relative = quat_mul(quat_conj(reference), q)
    w, xyz = relative[..., 0], relative[..., 1:]
    sine = safe_norm(xyz)
    angle = 2.0 * jnp.arctan2(sine, w)
    angle = jnp.where(angle > jnp.pi, angle - 2.0 * jnp.pi, angle)
    # angle / sin(angle/2) → 2 as sine → 0 (w > 0): the double where keeps derivatives finite
    small = sine < 1e-8
    scale = jnp.where(small, 2.0 / jnp.where(w >= 0, 1.0, -1.0) * jnp.ones_like(sine),
                      angle / jnp.where(small, 1.0, sine))
    return xyz * scale[..., None]


def rotational_spring_displacements(model: Model, q: jax.Array):
    """Per joint of ``model.rotational_spring_joints``: ``(stiffness, first dof, displacement)``
    with the displacement ``(p − p_s, subQuat(quat, quat_s))`` ``(6,)`` of a free joint or
    ``subQuat(quat, quat_s)`` ``(3,)`` of a ball joint from ``qpos_spring`` (MuJoCo
    ``mj_passive`` / ``mj_energyPos``)."""
    dtype = q.dtype
    tree = model.tree
    spring_q = model.qpos_spring.astype(dtype)
    out = []
    for joint in model.rotational_spring_joints:
        qpos = tree.joint_qpos_adr[joint]
        parts = []
        if tree.joint_type[joint] == JointType.FREE:
            parts.append(q[qpos:qpos + 3] - spring_q[qpos:qpos + 3])
            qpos += 3
        parts.append(quaternion_difference(quat_normalize(q[qpos:qpos + 4]), spring_q[qpos:qpos + 4]))
        out.append((model.joint_stiffness.astype(dtype)[joint], tree.joint_dof_adr[joint],
                    jnp.concatenate(parts)))
    return out


def _rotational_springs(model: Model, q: jax.Array) -> jax.Array:
    """``(nv,)`` spring forces of free and ball joints: ``−k`` times their displacement
    (:func:`rotational_spring_displacements`) on their dofs."""
    force = jnp.zeros((model.nv,), q.dtype)
    for k, dof, displacement in rotational_spring_displacements(model, q):
        force = force.at[dof:dof + displacement.shape[0]].add(-k * displacement)
    return force


def _tendons_at(model: Model, q: jax.Array, tendon):
    """``tendon`` or, when not given and the model has tendons, the tendon kinematics at ``q``."""
    if tendon is not None or model.ntendon == 0:
        return tendon
    kin = forward_kinematics(model, q)
    return tendon_kinematics(model, q, kin, motion_axes(model, kin))


def gravity_compensation(model: Model, kin: Kinematics, axes: jax.Array) -> jax.Array:
    """``(nv,)`` generalized force of MuJoCo's body gravity compensation (``qfrc_gravcomp``): on
    each body of ``model.gravcomp_bodies`` the force ``−gravcomp · m · g`` at its centre of mass,
    mapped by that point's Jacobian (``(v_O + ω × c) · F`` per dof moving the body)."""
    dtype = kin.body_pos.dtype
    bodies = np.asarray(model.gravcomp_bodies, dtype=np.int64)
    if bodies.size == 0:
        return jnp.zeros((model.nv,), dtype)
    force = (-model.body_gravcomp.astype(dtype)[bodies] * model.body_mass.astype(dtype)[bodies])[:, None] \
        * model.options.gravity.astype(dtype)[None, :]  # (b, 3)
    centre = kin.com_pos[bodies]
    # (v_O + ω × c) · F = v_O · F + ω · (c × F)
    lever = jnp.concatenate([jnp.cross(centre, force), force], axis=-1)  # (b, 6) like axes' [ω; v_O]
    moves = jnp.asarray(model.tree.dof_moves_body, dtype=dtype)[bodies]  # (b, nv)
    return jnp.sum((lever @ axes.T) * moves, axis=0)


def _actuated_gravcomp_dofs(model: Model) -> np.ndarray:
    """Static ``(nv,)`` bool: dofs of the joints whose gravity compensation is an actuator force."""
    mask = np.zeros(model.nv, dtype=bool)
    for joint in model.joint_actuator_gravcomp:
        start = model.tree.joint_dof_adr[joint]
        mask[start:start + model.tree.joint_type[joint].nv] = True
    return mask


def _gravcomp_at(model: Model, q: jax.Array, kinematics, axes):
    if not model.gravcomp_bodies:
        return None
    if kinematics is None:
        kinematics = forward_kinematics(model, q)
        axes = motion_axes(model, kinematics)
    return gravity_compensation(model, kinematics, axes)


def passive_forces(model: Model, q: jax.Array, v: jax.Array, tendon=None, kinematics=None,
                   axes=None) -> jax.Array:
    """Passive forces ``(nv,)``: joint damping ``-damping · v``, hinge/slide springs
    ``-stiffness · (q - qpos_spring)``, the tendons' springs and dampers
    (:func:`~jaxsim_contact.dynamics._tendons.tendon_forces`; ``tendon``: the
    :class:`~jaxsim_contact.dynamics._tendons.TendonKinematics` at ``q``, computed when omitted)
    and gravity compensation (:func:`gravity_compensation`, except on the joints where it is an
    actuator force; ``kinematics``, ``axes`` at ``q`` computed when omitted) and fluid forces
    (:func:`~jaxsim_contact.dynamics._fluid.fluid_forces`). Equals MuJoCo's ``qfrc_passive``."""
    dtype = v.dtype
    force = -model.dof_damping.astype(dtype) * v
    joints, qpos, dofs = _scalar_joint_dofs(model)
    if joints.size:
        spring = -model.joint_stiffness.astype(dtype)[joints] * (
            q[qpos] - model.qpos_spring.astype(dtype)[qpos]
        )
        force = force.at[dofs].add(spring)
    if model.rotational_spring_joints:
        force = force + _rotational_springs(model, q)
    if model.ntendon:
        force = force + tendon_forces(model, _tendons_at(model, q, tendon), v)
    gravcomp = _gravcomp_at(model, q, kinematics, axes)
    if gravcomp is not None:
        force = force + jnp.where(jnp.asarray(_actuated_gravcomp_dofs(model)), 0.0, gravcomp)
    if model.fluid_bodies or model.fluid_geoms:
        if kinematics is None:
            kinematics = forward_kinematics(model, q)
            axes = motion_axes(model, kinematics)
        force = force + fluid_forces(model, kinematics, axes, v)
    return force


def actuator_forces(model: Model, q: jax.Array, v: jax.Array, ctrl: jax.Array | None,
                    tendon=None, kinematics=None, axes=None, act: jax.Array | None = None) -> jax.Array:
    """Generalised actuator forces ``(nv,)`` (MuJoCo ``qfrc_actuator``).

    For actuator ``k`` with gear ``g``: ``ctrl`` clamped to its range (if limited),
    ``force = (g0 + g1·length + g2·velocity)·ctrl + b0 + b1·length + b2·velocity`` (MuJoCo's
    fixed / affine gain and none / affine bias; Computation chapter "Actuation model") clamped to
    the force range (if limited),
    with ``length = g q_j``, ``velocity = g v_j`` on joint ``j`` (generalised force ``g · force``
    on its dof) or ``length = g l_t``, ``velocity = g l̇_t`` on tendon ``t`` (generalised force
    ``g · force · J_t``). A tendon whose ``actuatorfrcrange`` is limited scales the forces of its
    actuators so that their sum stays in the range (MuJoCo ``tendon_actfrcrange``). A torque
    motor has ``b = 0``; a position servo has ``g = (kp, 0, 0)``, ``b = (0, -kp, -kv)``, a
    velocity servo ``g = (kv, 0, 0)``, ``b = (0, 0, -kv)``, a damper ``g = (0, 0, -kv)``. ``tendon``:
    the tendon kinematics at ``q`` (computed when omitted and some actuator drives a tendon).
    Site transmissions and joint transmissions on ball and free joints have a length and a moment
    row of their own (:func:`site_transmissions`, :func:`multi_dof_joint_transmissions`):
    velocity ``moment · v``, generalised force ``momentᵀ · force``.
    Gravity compensation of the joints with ``actuatorgravcomp`` is added here, as MuJoCo does
    (``kinematics``, ``axes``: at ``q``, computed when omitted).

    Actuators with activation dynamics multiply their gain by ``act`` ``(na,)`` (``None``:
    zeros) instead of ``ctrl`` — by the next activation with ``actearly`` — and muscles use
    MuJoCo's muscle gain and bias (:mod:`._actuation`).
    """
    dtype = v.dtype
    out = jnp.zeros((model.nv,), dtype)
    if model.joint_actuator_gravcomp:
        gravcomp = _gravcomp_at(model, q, kinematics, axes)
        if gravcomp is not None:
            out = jnp.where(jnp.asarray(_actuated_gravcomp_dofs(model)), gravcomp, 0.0)
    if model.nu == 0:
        return _clamp_joint_totals(model, out)
    tendon = _tendons_at(model, q, tendon) if any(model.actuator_on_tendon) else tendon
    site_actuators = _site_actuators(model)
    site_terms = None
    if site_actuators.size:
        if kinematics is None:
            kinematics = forward_kinematics(model, q)
            axes = motion_axes(model, kinematics)
        site_terms = site_transmissions(model, kinematics, axes)
    multi_dof_actuators = _multi_dof_joint_actuators(model)
    multi_dof_terms = multi_dof_joint_transmissions(model, q) if multi_dof_actuators.size else None
    _, _, force = actuator_terms(model, q, v, ctrl, tendon, act, site_terms=site_terms,
                                 multi_dof_terms=multi_dof_terms)
    on_tendon = np.asarray(model.actuator_on_tendon, dtype=bool)
    target = np.asarray(model.actuator_target, dtype=np.int64)
    on_joint = _scalar_joint_actuators(model)
    tendon_actuators = np.flatnonzero(on_tendon)
    dofs = np.asarray(model.tree.joint_dof_adr, dtype=np.int64)[target[on_joint]]
    gear = model.actuator_gear.astype(dtype)
    out = out.at[dofs].add(gear[on_joint] * force[on_joint])
    if tendon_actuators.size:
        out = out + (gear[tendon_actuators] * force[tendon_actuators]) @ tendon.jacobian[target[tendon_actuators]]
    if site_actuators.size:
        out = out + force[site_actuators] @ site_terms[1].astype(dtype)
    if multi_dof_actuators.size:
        out = out + force[multi_dof_actuators] @ multi_dof_terms[1].astype(dtype)
    return _clamp_joint_totals(model, out)


def actuator_terms(model: Model, q: jax.Array, v: jax.Array, ctrl: jax.Array | None, tendon=None,
                   act: jax.Array | None = None, kinematics=None, axes=None, site_terms=None,
                   multi_dof_terms=None):
    """``(length, velocity, force)``, each ``(nu,)``: MuJoCo's ``actuator_length``,
    ``actuator_velocity`` (m or rad, per s) and ``actuator_force`` (N or N·m, after the force
    range and the tendons' ``actuatorfrcrange``) of every actuator (:func:`actuator_forces`).
    ``kinematics``, ``axes`` (at ``q``) or ``site_terms`` (:func:`site_transmissions`): used by
    site transmissions, computed when omitted; ``multi_dof_terms``
    (:func:`multi_dof_joint_transmissions`): used by joint transmissions on ball and free joints,
    computed when omitted."""
    dtype = v.dtype
    ctrl = clamp_controls(model, jnp.asarray(ctrl, dtype))
    actuator_in = actuator_input(model, ctrl, act, model.options.dt.astype(dtype))
    on_tendon = np.asarray(model.actuator_on_tendon, dtype=bool)
    target = np.asarray(model.actuator_target, dtype=np.int64)
    on_joint = _scalar_joint_actuators(model)
    tendon_actuators = np.flatnonzero(on_tendon)
    qpos = np.asarray(model.tree.joint_qpos_adr, dtype=np.int64)[target[on_joint]]
    dofs = np.asarray(model.tree.joint_dof_adr, dtype=np.int64)[target[on_joint]]
    gear = model.actuator_gear.astype(dtype)
    length = jnp.zeros((model.nu,), dtype).at[on_joint].set(q[qpos])
    velocity = jnp.zeros((model.nu,), dtype).at[on_joint].set(v[dofs])
    if tendon_actuators.size:
        tendon = _tendons_at(model, q, tendon)
        driven = target[tendon_actuators]
        length = length.at[tendon_actuators].set(tendon.length[driven])
        velocity = velocity.at[tendon_actuators].set(tendon.velocity(v)[driven])
    length, velocity = gear * length, gear * velocity
    site_actuators = _site_actuators(model)
    if site_actuators.size:  # the full gear is in the site's length and moment
        if site_terms is None:
            if kinematics is None:
                kinematics = forward_kinematics(model, q)
                axes = motion_axes(model, kinematics)
            site_terms = site_transmissions(model, kinematics, axes)
        site_length, moment = site_terms
        length = length.at[site_actuators].set(site_length.astype(dtype))
        velocity = velocity.at[site_actuators].set(moment.astype(dtype) @ v)
    multi_dof_actuators = _multi_dof_joint_actuators(model)
    if multi_dof_actuators.size:  # the full gear is in the length and moment, as for sites
        if multi_dof_terms is None:
            multi_dof_terms = multi_dof_joint_transmissions(model, q)
        joint_length, moment = multi_dof_terms
        length = length.at[multi_dof_actuators].set(joint_length.astype(dtype))
        velocity = velocity.at[multi_dof_actuators].set(moment.astype(dtype) @ v)
    bias = model.actuator_bias.astype(dtype)
    gain = model.actuator_gain.astype(dtype)
    gain = gain[:, 0] + gain[:, 1] * length + gain[:, 2] * velocity
    force = gain * actuator_in + bias[:, 0] + bias[:, 1] * length + bias[:, 2] * velocity
    if any(model.actuator_states.muscle_gain) or any(model.actuator_states.muscle_bias):
        force = _with_muscles(model, length, velocity, actuator_in, gain, force)
    force_range = model.actuator_force_range.astype(dtype)
    force = jnp.where(
        jnp.asarray(model.actuator_force_limited),
        jnp.clip(force, force_range[:, 0], force_range[:, 1]),
        force,
    )
    if tendon_actuators.size:
        force = _clamp_tendon_totals(model, force, tendon_actuators, target[tendon_actuators])
    return length, velocity, force


def _on_site(model: Model) -> np.ndarray:
    """Static ``(nu,)`` bool: the actuators with a site transmission."""
    if not model.actuator_on_site:
        return np.zeros((model.nu,), dtype=bool)
    return np.asarray(model.actuator_on_site, dtype=bool)


def _on_multi_dof_joint(model: Model) -> np.ndarray:
    """Static ``(nu,)`` bool: the actuators with a joint transmission on a ball or free joint
    (MuJoCo ``mjTRN_JOINT`` / ``mjTRN_JOINTINPARENT`` with a 3- or 6-component gear)."""
    on_joint = ~np.asarray(model.actuator_on_tendon, dtype=bool) & ~_on_site(model)
    joint_type = model.tree.joint_type
    return np.asarray([bool(on_joint[a]) and joint_type[joint] in (JointType.BALL, JointType.FREE)
                       for a, joint in enumerate(model.actuator_target)], dtype=bool).reshape(model.nu)


def _multi_dof_joint_actuators(model: Model) -> np.ndarray:
    """Static indices of the actuators with a joint transmission on a ball or free joint."""
    return np.flatnonzero(_on_multi_dof_joint(model))


def _scalar_joint_actuators(model: Model) -> np.ndarray:
    """Static indices of the actuators with a joint transmission on a hinge or slide joint
    (length ``gear[0] · q_j``, moment ``gear[0]`` on its dof)."""
    on_joint = ~np.asarray(model.actuator_on_tendon, dtype=bool) & ~_on_site(model)
    return np.flatnonzero(on_joint & ~_on_multi_dof_joint(model))


def _in_parent(model: Model) -> np.ndarray:
    """Static ``(nu,)`` bool: the joint transmissions whose gear is in the parent frame."""
    if not model.actuator_in_parent:
        return np.zeros((model.nu,), dtype=bool)
    return np.asarray(model.actuator_in_parent, dtype=bool)


def multi_dof_joint_transmissions(model: Model, q: jax.Array):
    """``(length (k,), moment (k, nv))`` of the ``k`` actuators with a joint transmission on a
    ball or free joint (MuJoCo ``mj_transmission``, ``mjTRN_JOINT`` / ``mjTRN_JOINTINPARENT``), in
    actuator order, at ``q`` ``(nq,)``.

    With the full gear ``g`` (6-vector, ``Model.actuator_site_gear``) and the joint's normalised
    quaternion ``Q`` (a free joint's orientation part):

    * ball joint: the gear axis ``a = g[:3]``, or ``a = R(Q)ᵀ g[:3]`` when the gear is in the
      parent frame (``jointinparent``); length ``r · a`` with ``r`` the rotation vector of ``Q``
      (MuJoCo ``mju_quat2Vel``: axis times angle, the angle in ``[−π, π]``; rad), moment ``a`` on
      the joint's three angular-velocity dofs (the force is a torque, N·m, along ``a`` in the
      child frame);
    * free joint: length 0 (MuJoCo: no meaningful length), moment ``g[:3]`` on the three
      translational dofs (world frame) and ``g[3:]`` — or ``R(Q)ᵀ g[3:]`` in the parent
      (world) frame — on the three rotational dofs (body frame).

    The velocity is ``moment · v`` and the generalised force ``momentᵀ · force``.
    """
    dtype = q.dtype
    tree = model.tree
    identity = jnp.asarray([1.0, 0.0, 0.0, 0.0], dtype)
    in_parent = _in_parent(model)
    lengths, moments = [], []
    for actuator in _multi_dof_joint_actuators(model):
        joint = model.actuator_target[actuator]
        qpos, dof = tree.joint_qpos_adr[joint], tree.joint_dof_adr[joint]
        gear = model.actuator_site_gear.astype(dtype)[actuator]
        moment = jnp.zeros((model.nv,), dtype)
        if tree.joint_type[joint] == JointType.BALL:
            quat = quat_normalize(q[qpos:qpos + 4])
            axis = quat_rotate(quat_conj(quat), gear[:3]) if in_parent[actuator] else gear[:3]
            lengths.append(jnp.dot(quaternion_difference(quat, identity), axis))
            moments.append(moment.at[dof:dof + 3].set(axis))
        else:
            quat = quat_normalize(q[qpos + 3:qpos + 7])
            axis = quat_rotate(quat_conj(quat), gear[3:]) if in_parent[actuator] else gear[3:]
            lengths.append(jnp.zeros((), dtype))
            moments.append(moment.at[dof:dof + 3].set(gear[:3]).at[dof + 3:dof + 6].set(axis))
    return jnp.stack(lengths), jnp.stack(moments)


def _site_actuators(model: Model) -> np.ndarray:
    """Static indices of the actuators with a site transmission (MuJoCo ``mjTRN_SITE``)."""
    return np.flatnonzero(_on_site(model))


def site_transmissions(model: Model, kin: Kinematics, axes: jax.Array):
    """``(length (k,), moment (k, nv))`` of the ``k`` actuators with a site transmission (MuJoCo
    ``mj_transmission``, ``mjTRN_SITE``), in actuator order; ``kin``, ``axes``: at ``q``.

    With gear ``g`` (6-vector, ``Model.actuator_site_gear``), site position ``p``, orientation
    ``R`` and Jacobians ``J_p``, ``J_r``: without a reference site the length is 0 and the moment
    ``J_pᵀ R g[:3] + J_rᵀ R g[3:]`` (a wrench fixed in the site frame). With a reference site
    (``p_ref``, ``R_ref``): length ``(R_refᵀ (p − p_ref))·g[:3] + subQuat(q, q_ref)·g[3:]`` and
    moment ``(J_p − J_p,ref)ᵀ R_ref g[:3] + (J_r − J_r,ref)ᵀ R_ref g[3:]`` with the columns of
    the dofs that move both bodies zeroed. Like MuJoCo, that moment neglects the rotation of the
    reference frame (it is not exactly the length's gradient). The orientations in ``subQuat``
    are ``xquat ⊗ site_quat`` of each site's body: what MuJoCo 4.0.0 computes (checked against
    its ``actuator_length``), not normalised.
    """
    dtype = kin.body_pos.dtype
    actuators = _site_actuators(model)
    sites = np.asarray(model.actuator_target, dtype=np.int64)[actuators]
    refsites = np.asarray(model.actuator_refsite, dtype=np.int64)[actuators]
    gear = model.actuator_site_gear.astype(dtype)[actuators]  # (k, 6)
    pos, quat, body = site_frames(model, kin, sites)
    # the site itself stands for a missing reference site (its own frame then); those rows keep
    # the plain moment: no reference Jacobian subtracted, no column cleared
    has = jnp.asarray(refsites >= 0)
    ref = np.where(refsites >= 0, refsites, sites)
    ref_pos, ref_quat, ref_body = site_frames(model, kin, ref)
    moves = np.asarray(model.tree.dof_moves_body, dtype=bool)
    common = moves[body] & moves[ref_body] & (refsites >= 0)[:, None]  # dofs moving both bodies
    keep = jnp.asarray(~common, dtype=dtype)[:, None, :]
    with_ref = has.astype(dtype)[:, None, None]
    rel_jac_p = (point_jacobian(model, axes, body, pos)
                 - with_ref * point_jacobian(model, axes, ref_body, ref_pos)) * keep
    rel_jac_r = (rotation_jacobian(model, axes, body) - with_ref * rotation_jacobian(model, axes, ref_body)) * keep
    ref_rot = quat_to_matrix(ref_quat)
    wrench_t = jnp.einsum("kij,kj->ki", ref_rot, gear[:, :3])
    wrench_r = jnp.einsum("kij,kj->ki", ref_rot, gear[:, 3:])
    moment = jnp.einsum("ki,kin->kn", wrench_t, rel_jac_p) + jnp.einsum("ki,kin->kn", wrench_r, rel_jac_r)
    offset = jnp.einsum("kji,kj->ki", ref_rot, pos - ref_pos)  # R_refᵀ (p − p_ref)
    angle = quaternion_difference(quat, ref_quat)
    length = jnp.sum(offset * gear[:, :3], axis=-1) + jnp.sum(angle * gear[:, 3:], axis=-1)
    return jnp.where(has, length, 0.0), moment


def _with_muscles(model: Model, length, velocity, actuator_in, affine_gain, force):
    """``force`` ``(nu,)`` with the muscles' gain and / or bias curves replacing the affine ones
    (``affine_gain``: the affine gains already evaluated)."""
    states = model.actuator_states
    dtype = length.dtype
    bias_prm = model.actuator_bias.astype(dtype)
    length_range, acc0 = states.length_range.astype(dtype), states.acc0.astype(dtype)
    gain = jnp.where(jnp.asarray(states.muscle_gain, dtype=bool),
                     muscle_gain(length, velocity, states.muscle_gain_prm.astype(dtype), length_range, acc0),
                     affine_gain)
    bias = jnp.where(jnp.asarray(states.muscle_bias, dtype=bool),
                     muscle_bias(length, states.muscle_bias_prm.astype(dtype), length_range, acc0),
                     bias_prm[:, 0] + bias_prm[:, 1] * length + bias_prm[:, 2] * velocity)
    muscles = np.asarray(states.muscle_gain, dtype=bool) | np.asarray(states.muscle_bias, dtype=bool)
    return jnp.where(jnp.asarray(muscles), gain * actuator_in + bias, force)


def _clamp_joint_totals(model: Model, out: jax.Array) -> jax.Array:
    """The total actuator force on each hinge / slide joint of ``joint_actuator_force_limited``
    clamped to its ``joint_actuator_force_range`` (MuJoCo ``actuatorfrcrange``)."""
    joints = np.asarray(model.joint_actuator_force_limited, dtype=np.int64)
    if joints.size == 0:
        return out
    dofs = np.asarray(model.tree.joint_dof_adr, dtype=np.int64)[joints]
    limits = model.joint_actuator_force_range.astype(out.dtype)[joints]
    return out.at[dofs].set(jnp.clip(out[dofs], limits[:, 0], limits[:, 1]))


def _clamp_tendon_totals(model: Model, force, actuators: np.ndarray, tendons: np.ndarray):
    """Scale the forces of the actuators on each tendon with a limited actuator-force range so that
    their sum is the sum clamped to the range (MuJoCo ``tendon_actfrclimited``)."""
    limited = np.asarray(model.tendons.actuator_force_limited, dtype=bool)
    if not limited[tendons].any():
        return force
    dtype = force.dtype
    ranges = model.tendons.actuator_force_range.astype(dtype)
    incidence = jnp.asarray(np.arange(model.ntendon)[:, None] == tendons[None, :], dtype)
    total = incidence @ force[actuators]  # (ntendon,)
    clamped = jnp.clip(total, ranges[:, 0], ranges[:, 1])
    scale = jnp.where(jnp.asarray(limited) & (clamped != total),
                      clamped / jnp.where(total == 0, 1.0, total), 1.0)
    return force.at[actuators].multiply(scale[tendons])
