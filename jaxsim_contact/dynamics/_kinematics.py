"""Forward kinematics: body poses, joint anchors/axes, dof motion axes and body velocities.

Joint conventions are MuJoCo's (``mj_kinematics``): a body's frame is its parent's frame times the
constant offset ``(body_pos, body_quat)`` times, for each of its joints in order, a joint transform
expressed in the body frame:

* hinge: rotation by ``q - qpos0`` about ``joint_axis`` through ``joint_pos``;
* slide: translation by ``(q - qpos0) · joint_axis``;
* ball: rotation by the unit quaternion ``q`` about ``joint_pos``;
* free: the body frame *is* ``(q[0:3], q[3:7])`` in the world (free bodies are world children).

Quaternions read from ``q`` are normalised (as MuJoCo does), so slightly drifted states are fine.
Poses are composed along the tree by pointer jumping (``⌈log₂ depth⌉`` vectorised rounds);
velocities are sums over ancestors, i.e. one matrix product.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._math import Transform, quat_from_axis_angle, quat_normalize, quat_rotate, quat_to_matrix
from .._model import Model
from .._types import JointType
from ._spatial import rotational_motion
from .._precision import full_precision_matmuls

__all__ = ["Kinematics", "forward_kinematics", "body_poses", "motion_axes", "body_velocities"]


class Kinematics(eqx.Module):
    """World-frame kinematic quantities at one configuration.

    Attributes:
      body_pos: ``(nbody, 3)`` body frame origins (MuJoCo ``xpos``), m.
      body_quat: ``(nbody, 4)`` body orientations (MuJoCo ``xquat``), w first.
      body_rot: ``(nbody, 3, 3)`` rotation matrices of ``body_quat`` (``xmat``).
      com_pos: ``(nbody, 3)`` centres of mass (``xipos``), m.
      inertia_com: ``(nbody, 3, 3)`` rotational inertia about the centre of mass, world axes.
      joint_anchor: ``(njnt, 3)`` joint anchors (``xanchor``), m.
      joint_axis: ``(njnt, 3)`` joint axes (``xaxis``), unit.
    """

    body_pos: jax.Array
    body_quat: jax.Array
    body_rot: jax.Array
    com_pos: jax.Array
    inertia_com: jax.Array
    joint_anchor: jax.Array
    joint_axis: jax.Array


def _joint_gather_index(model: Model, width: int) -> np.ndarray:
    """``(njnt, width)`` indices into ``q`` starting at each joint's address (clipped to ``nq``)."""
    adr = np.asarray(model.tree.joint_qpos_adr, dtype=np.int64).reshape(-1, 1)
    return np.minimum(adr + np.arange(width), max(model.nq - 1, 0))


def joint_transforms(model: Model, q: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Per-joint transform in its body's frame (for a free joint: the absolute body pose).

    Returns:
      ``(pos (njnt, 3), quat (njnt, 4))``.
    """
    tree = model.tree
    dtype = q.dtype
    if tree.njnt == 0:
        return jnp.zeros((0, 3), dtype), jnp.zeros((0, 4), dtype)
    jtype = np.asarray(tree.joint_type, dtype=np.int64)
    block = q[_joint_gather_index(model, 7)]  # (njnt, 7): each joint's coordinates (+ padding)
    ref = model.qpos0[_joint_gather_index(model, 1)][:, 0]
    scalar = block[:, 0] - ref  # hinge angle / slide displacement from the reference

    anchor, axis = model.joint_pos, model.joint_axis
    identity = jnp.zeros((tree.njnt, 4), dtype).at[:, 0].set(1.0)
    hinge_quat = quat_from_axis_angle(axis, scalar)
    ball_quat = quat_normalize(block[:, :4])
    free_quat = quat_normalize(block[:, 3:7])

    is_type = lambda t: jnp.asarray(jtype == int(t))[:, None]  # noqa: E731
    quat = jnp.where(
        is_type(JointType.HINGE),
        hinge_quat,
        jnp.where(is_type(JointType.BALL), ball_quat, jnp.where(is_type(JointType.FREE), free_quat, identity)),
    )
    # Rotations are about the anchor p: x ↦ p + R (x - p), i.e. translation p - R p.
    pos_rot = anchor - quat_rotate(quat, anchor)
    pos = jnp.where(
        is_type(JointType.SLIDE),
        axis * scalar[:, None],
        jnp.where(is_type(JointType.FREE), block[:, :3], pos_rot),
    )
    return pos, quat


def _local_frames(model: Model, q: jax.Array):
    """Body frames in their parent's frame, and each joint's frame just before it acts.

    Returns:
      ``(local, before_joint)``: ``Transform`` ``(nbody,)`` of each body in its parent frame
      (offset ∘ joint 1 ∘ joint 2 ∘ …; for a free body its world pose), and ``Transform``
      ``(njnt,)`` of the frame in which each joint's anchor and axis are given, in the parent
      body's frame.
    """
    tree = model.tree
    dtype = q.dtype
    joint_pos, joint_quat = joint_transforms(model, q)
    jtype = np.asarray(tree.joint_type, dtype=np.int64)
    slots = tree.joint_slots  # (nbody, max joints per body), -1 when empty
    frame = Transform(model.body_pos.astype(dtype), model.body_quat.astype(dtype))
    before = []  # frame before slot k, for all bodies
    for k in range(tree.max_joints_per_body):  # static; MuJoCo bodies have a few joints at most
        before.append(frame)
        jnt = slots[:, k]
        jnt_idx = np.where(jnt >= 0, jnt, 0)
        moved = frame @ Transform(joint_pos[jnt_idx], joint_quat[jnt_idx])
        is_free = jnp.asarray((jnt >= 0) & (jtype[jnt_idx] == int(JointType.FREE)))[:, None]
        valid = jnp.asarray(jnt >= 0)[:, None]
        frame = Transform(
            jnp.where(valid, jnp.where(is_free, joint_pos[jnt_idx], moved.pos), frame.pos),
            jnp.where(valid, jnp.where(is_free, joint_quat[jnt_idx], moved.quat), frame.quat),
        )
    if tree.njnt:
        # joint j is slot (j - body_joint_adr[body]) of its body
        body = np.asarray(tree.joint_body, dtype=np.int64)
        slot = np.arange(tree.njnt) - np.asarray(tree.body_joint_adr, dtype=np.int64)[body]
        before_joint = Transform(
            jnp.stack([f.pos for f in before])[slot, body],
            jnp.stack([f.quat for f in before])[slot, body],
        )
    else:
        before_joint = Transform(jnp.zeros((0, 3), dtype), jnp.zeros((0, 4), dtype).at[:, 0].set(1.0))
    return frame, before_joint


def _compose_along_paths(parent: np.ndarray, levels, local_pos: jax.Array, local_quat: jax.Array):
    """World poses ``(pos (nbody, 3), quat (nbody, 4))`` from poses in the parent frame
    (``parent`` and ``levels`` as in :class:`~jaxsim_contact._model.KinematicTree`).

    Pointer jumping: every body holds the composition of the frames between it and its current
    ancestor ``up[b]`` (initially its parent); each round composes it with the ancestor's own and
    jumps ``up[b] ← up[up[b]]``, so ``⌈log₂ depth⌉`` rounds reach the world (body 0, whose frame
    is the identity). Bodies are sorted by depth (a static permutation), so the bodies still
    short of the world after a round are a suffix: each round is one gather and one vectorised
    composition over that suffix, joined to the finished prefix by a concatenation.

    Not a ``lax.scan`` over depth levels: linearising a scan for reverse mode stacks every
    intermediate of its body per level (one dynamic-update-slice kernel each), and a chain robot
    has one level per link (the Panda 11). Pointer jumping is as fast or faster for a step and
    its ``jacrev``; only ``jacfwd`` of a shallow, wide tree can be slower (``log₂ depth`` rounds
    over most bodies carry more tangent work than one pass per level), and there ``jacrev`` is
    the faster mode anyway.
    """
    order = np.concatenate([[0], *levels]).astype(np.int64)  # by depth, the world first
    rank = np.argsort(order)
    up = rank[parent[order]]
    up[0] = 0
    # the world frame is the identity (the composition's neutral element)
    pos = local_pos[order].at[0].set(0.0)
    quat = local_quat[order].at[0].set(jnp.asarray([1.0, 0.0, 0.0, 0.0], local_quat.dtype))
    while np.any(up != 0):  # static: ⌈log₂ depth⌉ rounds
        start = int(np.argmax(up != 0))  # the bodies from here on are not done
        frame = Transform(pos[up[start:]], quat[up[start:]]) @ Transform(pos[start:], quat[start:])
        pos = jnp.concatenate([pos[:start], frame.pos])
        quat = jnp.concatenate([quat[:start], frame.quat])
        up = np.concatenate([up[:start], up[up[start:]]])
    return pos[rank], quat[rank]


@full_precision_matmuls
def forward_kinematics(model: Model, q: jax.Array) -> Kinematics:
    """Body poses, inertias and joint anchors/axes in the world frame at configuration ``q`` (nq,).

    Matches MuJoCo's ``mj_kinematics`` (``xpos``, ``xquat``, ``xipos``, ``xanchor``, ``xaxis``).
    World poses are composed along the tree by pointer jumping (:func:`_compose_along_paths`).
    """
    tree = model.tree
    dtype = q.dtype
    local, before_joint = _local_frames(model, q)

    world_pos, world_quat = _compose_along_paths(np.asarray(tree.body_parent, dtype=np.int64),
                                                 tree.levels, local.pos, local.quat)

    # joint anchors and axes: the parent's world frame ∘ the frame just before the joint
    joint_body = np.asarray(tree.joint_body, dtype=np.int64)
    joint_parent = np.asarray(tree.body_parent, dtype=np.int64)[joint_body]
    frame = Transform(world_pos[joint_parent], world_quat[joint_parent]) @ before_joint
    anchor = frame.apply(model.joint_pos.astype(dtype))
    axis = frame.rotate(model.joint_axis.astype(dtype))
    is_free = jnp.asarray(np.asarray(tree.joint_type, dtype=np.int64) == int(JointType.FREE))[:, None]
    anchor = jnp.where(is_free, world_pos[joint_body], anchor)  # MuJoCo: a free joint's anchor is the body origin

    rot = quat_to_matrix(world_quat)
    com = world_pos + quat_rotate(world_quat, model.body_ipos.astype(dtype))
    inertia_rot = rot @ quat_to_matrix(model.body_iquat.astype(dtype))
    inertia_com = (inertia_rot * model.body_inertia.astype(dtype)[:, None, :]) @ jnp.swapaxes(
        inertia_rot, -1, -2
    )
    return Kinematics(
        body_pos=world_pos,
        body_quat=world_quat,
        body_rot=rot,
        com_pos=com,
        inertia_com=inertia_com,
        joint_anchor=anchor,
        joint_axis=axis,
    )


@full_precision_matmuls
def body_poses(model: Model, q: jax.Array) -> Transform:
    """World pose of every body (``Transform`` with ``pos (nbody, 3)``, ``quat (nbody, 4)``);
    body 0 is the world (identity). Equals MuJoCo's ``xpos`` / ``xquat``."""
    kin = forward_kinematics(model, q)
    return Transform(kin.body_pos, kin.body_quat)


def motion_axes(model: Model, kin: Kinematics) -> jax.Array:
    """``(nv, 6)`` world-frame motion axis of every dof (MuJoCo's ``cdof``, about the world origin
    instead of the subtree centre of mass).

    Hinge: rotation about the joint axis through the anchor; slide: translation along the axis;
    ball and the rotational part of free: rotations about the body frame's axes through the anchor
    (qvel is a body-frame angular velocity); free translation: world x, y, z.
    """
    tree = model.tree
    dtype = kin.body_pos.dtype
    if tree.nv == 0:
        return jnp.zeros((0, 6), dtype)
    dof_joint = np.asarray(tree.dof_joint, dtype=np.int64)
    dof_body = np.asarray(tree.dof_body, dtype=np.int64)
    jtype = np.asarray(tree.joint_type, dtype=np.int64)[dof_joint]
    # Index of the dof within its joint (0..5 for free, 0..2 for ball).
    within = np.arange(tree.nv) - np.asarray(tree.joint_dof_adr, dtype=np.int64)[dof_joint]

    anchor = kin.joint_anchor[dof_joint]
    joint_axis = kin.joint_axis[dof_joint]
    body_axis = jnp.take_along_axis(
        kin.body_rot[dof_body], jnp.asarray(within % 3)[:, None, None], axis=-1
    )[..., 0]  # column (within % 3) of the body rotation
    world_axis = jnp.asarray(np.eye(3)[within % 3], dtype)

    hinge = rotational_motion(joint_axis, anchor)
    slide = jnp.concatenate([jnp.zeros_like(joint_axis), joint_axis], axis=-1)
    spin = rotational_motion(body_axis, anchor)
    translate = jnp.concatenate([jnp.zeros_like(world_axis), world_axis], axis=-1)

    col = lambda mask: jnp.asarray(mask)[:, None]  # noqa: E731
    is_free_translation = (jtype == int(JointType.FREE)) & (within < 3)
    is_spin = (jtype == int(JointType.BALL)) | ((jtype == int(JointType.FREE)) & (within >= 3))
    return jnp.where(
        col(is_free_translation),
        translate,
        jnp.where(col(is_spin), spin, jnp.where(col(jtype == int(JointType.SLIDE)), slide, hinge)),
    )


@full_precision_matmuls
def body_velocities(model: Model, axes: jax.Array, v: jax.Array) -> jax.Array:
    """``(nbody, 6)`` spatial velocity ``[ω; v_O]`` of every body (world frame, about the origin):
    the sum of ``axes[d] · v[d]`` over the dofs of the body and its ancestors."""
    moves = jnp.asarray(model.tree.dof_moves_body, dtype=v.dtype)
    return moves @ (axes * v[:, None])
