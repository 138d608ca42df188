"""Forward kinematics: body poses, joint anchors/axes, dof motion axes and body velocities.

Joint conventions are MuJoCo's (``mj_kinematics``): a body's frame is its parent's frame times the
constant offset ``(body_pos, body_quat)`` times, for each of its joints in order, a joint transform
expressed in the body frame:

* hinge: rotation by ``q - qpos0`` about ``joint_axis`` through ``joint_pos``;
* slide: translation by ``(q - qpos0) · joint_axis``;
* ball: rotation by the unit quaternion ``q`` about ``joint_pos``;
* free: the body frame *is* ``(q[0:3], q[3:7])`` in the world (free bodies are world children).

Quaternions read from ``q`` are normalised (as MuJoCo does), so slightly drifted states are fine.
Poses are computed one tree level at a time (a static Python loop over depth levels, each level
vectorised over its bodies); velocities are sums over ancestors, i.e. one matrix product.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..math import Transform, quat_from_axis_angle, quat_mul, quat_normalize, quat_rotate, quat_to_matrix
from ..model import Model
from ..types import JointType
from .spatial import rotational_motion

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


def forward_kinematics(model: Model, q: jax.Array) -> Kinematics:
    """Body poses, inertias and joint anchors/axes in the world frame at configuration ``q`` (nq,).

    Matches MuJoCo's ``mj_kinematics`` (``xpos``, ``xquat``, ``xipos``, ``xanchor``, ``xaxis``).
    """
    tree = model.tree
    dtype = q.dtype
    nbody, njnt = tree.nbody, tree.njnt
    joint_pos, joint_quat = joint_transforms(model, q)
    jtype = np.asarray(tree.joint_type, dtype=np.int64)
    slots = tree.joint_slots

    world_pos = jnp.zeros((nbody, 3), dtype)
    world_quat = jnp.zeros((nbody, 4), dtype).at[:, 0].set(1.0)
    anchor = jnp.zeros((njnt, 3), dtype)
    axis = jnp.zeros((njnt, 3), dtype)
    body_offset = Transform(model.body_pos.astype(dtype), model.body_quat.astype(dtype))

    for level in tree.levels:  # static loop over tree depth, vectorised within a level
        bodies = np.asarray(level)
        parents = np.asarray([tree.body_parent[b] for b in level])
        frame = Transform(world_pos[parents], world_quat[parents]) @ Transform(
            body_offset.pos[bodies], body_offset.quat[bodies]
        )
        for k in range(max(tree.body_joint_num[b] for b in level)):
            jnt = slots[bodies, k]
            valid = jnt >= 0
            jnt_idx = np.where(valid, jnt, 0)
            # Anchor and axis in the world, in the frame just before this joint acts.
            anchor = anchor.at[jnt[valid]].set(frame.apply(model.joint_pos[jnt_idx])[valid])
            axis = axis.at[jnt[valid]].set(frame.rotate(model.joint_axis[jnt_idx])[valid])
            moved = frame @ Transform(joint_pos[jnt_idx], joint_quat[jnt_idx])
            is_free = jnp.asarray(valid & (jtype[jnt_idx] == int(JointType.FREE)))[:, None]
            valid_col = jnp.asarray(valid)[:, None]
            new_pos = jnp.where(is_free, joint_pos[jnt_idx], moved.pos)
            new_quat = jnp.where(is_free, joint_quat[jnt_idx], moved.quat)
            frame = Transform(
                jnp.where(valid_col, new_pos, frame.pos), jnp.where(valid_col, new_quat, frame.quat)
            )
            if np.any(valid & (jtype[jnt_idx] == int(JointType.FREE))):
                free_rows = np.nonzero(valid & (jtype[jnt_idx] == int(JointType.FREE)))[0]
                anchor = anchor.at[jnt[free_rows]].set(frame.pos[free_rows])
        world_pos = world_pos.at[bodies].set(frame.pos)
        world_quat = world_quat.at[bodies].set(frame.quat)

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


def body_velocities(model: Model, axes: jax.Array, v: jax.Array) -> jax.Array:
    """``(nbody, 6)`` spatial velocity ``[ω; v_O]`` of every body (world frame, about the origin):
    the sum of ``axes[d] · v[d]`` over the dofs of the body and its ancestors."""
    moves = jnp.asarray(model.tree.dof_moves_body, dtype=v.dtype)
    return moves @ (axes * v[:, None])
