"""Fluid forces: MuJoCo's inertia-box model (Computation chapter "Fluid forces", ``mj_fluid``).

Each body with mass ``m`` and principal inertia ``(I₀, I₁, I₂)`` is replaced by the box of equal
mass and inertia, sides ``bᵢ = sqrt(6 (Iⱼ + Iₖ − Iᵢ) / m)``. With ``ω``, ``u`` its angular
velocity and the velocity of its centre of mass relative to the wind, both in its inertial frame,
the fluid applies at the centre of mass (density ``ρ``, viscosity ``β``)

    viscous   τ = −π d³ β ω,            f = −3 π d β u,          d = (b₀ + b₁ + b₂) / 3
    drag      τᵢ −= ρ bᵢ (bⱼ⁴ + bₖ⁴) |ωᵢ| ωᵢ / 64,   fᵢ −= ½ ρ bⱼ bₖ |uᵢ| uᵢ

(a sphere's Stokes drag and a box's quadratic drag per axis). MuJoCo's alternative ellipsoid
model (geoms with ``fluidshape="ellipsoid"``) is refused by the loader.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..math import quat_to_matrix
from ..model import Model
from .kinematics import Kinematics

__all__ = ["fluid_forces"]

#: MuJoCo's ``mjMINVAL``
_MINVAL = 1e-15


def fluid_forces(model: Model, kin: Kinematics, axes: jax.Array, v: jax.Array) -> jax.Array:
    """Generalised fluid forces ``(nv,)`` (MuJoCo ``qfrc_fluid``, inertia-box model).

    Args:
      kin: forward kinematics at ``q``; axes: ``(nv, 6)`` world motion axes ``[ω; v_O]`` at ``q``.
      v: ``(nv,)`` generalised velocity.
    """
    dtype = v.dtype
    bodies = np.asarray(model.fluid_bodies, dtype=np.int64)
    if bodies.size == 0:
        return jnp.zeros((model.nv,), dtype)
    options = model.options
    density, viscosity = options.fluid_density.astype(dtype), options.fluid_viscosity.astype(dtype)
    mass = model.body_mass.astype(dtype)[bodies]
    inertia = model.body_inertia.astype(dtype)[bodies]
    box = jnp.sqrt(jnp.maximum(_MINVAL, inertia.sum(axis=-1, keepdims=True) - 2.0 * inertia)
                   / mass[:, None] * 6.0)  # (b, 3): I_j + I_k - I_i
    # inertial frames (MuJoCo ximat) and centres of mass
    rot = kin.body_rot[bodies] @ quat_to_matrix(model.body_iquat.astype(dtype)[bodies])
    centre = kin.com_pos[bodies]
    moves = jnp.asarray(model.tree.dof_moves_body, dtype=dtype)[bodies]  # (b, nv)
    body_velocity = moves @ (axes * v[:, None])  # (b, 6): [ω; v_O] world frame at the origin
    angular = body_velocity[:, :3]
    linear = body_velocity[:, 3:] + jnp.cross(angular, centre) - options.wind.astype(dtype)
    local_angular = jnp.einsum("bji,bj->bi", rot, angular)
    local_linear = jnp.einsum("bji,bj->bi", rot, linear)

    diameter = jnp.mean(box, axis=-1, keepdims=True)
    torque = -jnp.pi * diameter ** 3 * viscosity * local_angular
    force = -3.0 * jnp.pi * diameter * viscosity * local_linear
    area = jnp.stack([box[:, 1] * box[:, 2], box[:, 0] * box[:, 2], box[:, 0] * box[:, 1]], axis=-1)
    force = force - 0.5 * density * area * jnp.abs(local_linear) * local_linear
    fourth = box ** 4
    arm = jnp.stack([fourth[:, 1] + fourth[:, 2], fourth[:, 0] + fourth[:, 2],
                     fourth[:, 0] + fourth[:, 1]], axis=-1)
    torque = torque - density * box * arm * jnp.abs(local_angular) * local_angular / 64.0

    world_torque = jnp.einsum("bij,bj->bi", rot, torque)
    world_force = jnp.einsum("bij,bj->bi", rot, force)
    # force at the centre of mass: [c × f + τ; f] against the motion axes [ω; v_O]
    wrench = jnp.concatenate([jnp.cross(centre, world_force) + world_torque, world_force], axis=-1)
    return jnp.sum((wrench @ axes.T) * moves, axis=0)
