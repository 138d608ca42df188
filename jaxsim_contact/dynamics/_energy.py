"""Energy and momentum of the whole system (diagnostics for drift tests and run summaries).

Definitions match MuJoCo's ``mj_energyPos`` / ``mj_energyVel`` (``mjData.energy``):
potential = gravity (``-Σ m_i g·c_i``) + joint springs (``½ k (q - q_spring)²``; free / ball:
position and rotation-vector differences) + tendon
springs (``½ k d²``, ``d`` the length's distance outside the spring's dead band);
kinetic = ``½ vᵀ M v`` (armature included, as in MuJoCo).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._model import Model
from .._types import JointType
from ._crba import body_spatial_inertias, mass_matrix_from_kinematics
from ._kinematics import body_velocities, forward_kinematics, motion_axes
from ._rnea import rotational_spring_displacements
from ._tendons import spring_stretch, tendon_armature, tendon_kinematics

__all__ = ["potential_energy", "kinetic_energy", "spatial_momentum"]


def potential_energy(model: Model, q: jax.Array) -> jax.Array:
    """Gravitational plus spring potential energy (J), zero at the world origin height."""
    kin = forward_kinematics(model, q)
    gravity = model.options.gravity.astype(q.dtype)
    energy = -jnp.sum(model.body_mass.astype(q.dtype) * (kin.com_pos @ gravity))
    tree = model.tree
    scalar = [j for j, t in enumerate(tree.joint_type) if t in (JointType.HINGE, JointType.SLIDE)]
    if scalar:
        joints = np.asarray(scalar)
        qpos = np.asarray(tree.joint_qpos_adr)[joints]
        stretch = q[qpos] - model.qpos_spring.astype(q.dtype)[qpos]
        energy = energy + 0.5 * jnp.sum(model.joint_stiffness.astype(q.dtype)[joints] * stretch**2)
    for k, _, displacement in rotational_spring_displacements(model, q):  # free / ball springs
        energy = energy + 0.5 * k * jnp.sum(displacement ** 2)
    if model.ntendon:
        tendon = tendon_kinematics(model, q, kin, motion_axes(model, kin))
        stretch = spring_stretch(model, tendon.length)
        energy = energy + 0.5 * jnp.sum(model.tendons.stiffness.astype(q.dtype) * stretch**2)
    return energy


def kinetic_energy(model: Model, q: jax.Array, v: jax.Array) -> jax.Array:
    """``½ vᵀ M(q) v`` (J), tendon armature included."""
    kin = forward_kinematics(model, q)
    axes = motion_axes(model, kin)
    mass = mass_matrix_from_kinematics(model, kin, axes)
    if model.tendons.armature_tendons:
        mass = mass + tendon_armature(model, q, v, tendon_kinematics(model, q, kin, axes))[0]
    return 0.5 * v @ (mass @ v)


def spatial_momentum(model: Model, q: jax.Array, v: jax.Array) -> jax.Array:
    """``(6,)`` total momentum ``[angular momentum about the world origin; linear momentum]``
    (kg·m²/s, kg·m/s), world frame. Conserved without gravity and external forces."""
    kin = forward_kinematics(model, q)
    velocity = body_velocities(model, motion_axes(model, kin), v)
    inertia = body_spatial_inertias(model, kin)
    return jnp.einsum("bij,bj->i", inertia, velocity)
