"""Fluid forces: MuJoCo's inertia-box and ellipsoid models (Computation chapter "Fluid forces",
``mj_fluid``).

Every body with mass uses one of the two models: the ellipsoid model when one of its geoms has
``fluidshape="ellipsoid"`` (``Model.fluid_geoms``), the inertia box otherwise
(``Model.fluid_bodies``). Velocities are relative to the wind; density ``ρ``, viscosity ``β``.

**Inertia box** ("Inertia model"). A body with mass ``m`` and principal inertia
``(I₀, I₁, I₂)`` is replaced by the box of equal mass and inertia, sides
``bᵢ = sqrt(6 (Iⱼ + Iₖ − Iᵢ) / m)``. With ``ω``, ``u`` its angular velocity and the velocity of
its centre of mass, both in its inertial frame, the fluid applies at the centre of mass

    viscous   τ = −π d³ β ω,            f = −3 π d β u,          d = (b₀ + b₁ + b₂) / 3
    drag      τᵢ −= ρ bᵢ (bⱼ⁴ + bₖ⁴) |ωᵢ| ωᵢ / 64,   fᵢ −= ½ ρ bⱼ bₖ |uᵢ| uᵢ

(a sphere's Stokes drag and a box's quadratic drag per axis).

**Ellipsoid** ("Ellipsoid model"). Each geom of such a body with a nonzero interaction
coefficient ``c`` (``Model.geom_fluid[:, 0]``: 1 with ``fluidshape="ellipsoid"``, else 0) is the
ellipsoid of semi-axes ``r`` (MuJoCo ``mju_geomSemiAxes``: a sphere ``(s₀, s₀, s₀)``, a capsule
``(s₀, s₀, s₀ + s₁)``, a cylinder ``(s₀, s₀, s₁)``, any other geom ``(s₀, s₁, s₂)``). With
``ω``, ``u`` the angular velocity and the velocity of its centre, both in the geom frame, volume
``V = 4/3 π r₀ r₁ r₂``, ``r_max ≥ r_mid ≥ r_min`` the sorted semi-axes, its ``fluidcoef``
``(C_blunt, C_slender, C_angular, C_K, C_M)`` and MuJoCo's compiled virtual mass ``m_A`` and
inertia ``I_A`` per unit density (``geom_fluid[:, 6:12]``), the fluid applies at the geom's
centre ``c`` times (``∘``: element-wise)

    added mass   f_A = ρ (m_A ∘ u) × ω,    τ_A = ρ (m_A ∘ u) × u + ρ (I_A ∘ ω) × ω
    Magnus       f_M = C_M ρ V ω × u
    Kutta        f_K = C_K ρ cos α A_proj (n̂ × u) × u,   nᵢ = (rⱼ rₖ)² uᵢ,  cos α = n̂ · u / |u|
    drag         f_D = −(β 3π D + ρ |u| (C_blunt A_proj + C_slender (π r_max r_mid − A_proj))) u
                 τ_D = −(β π D³ + ρ |h|) ω,   hᵢ = ωᵢ (C_angular Iᵢ + C_slender (I_max − Iᵢ)),
                 D = 2/3 (r₀ + r₁ + r₂),  Iᵢ = 8/15 π rᵢ max(rⱼ, rₖ)⁴,  I_max = 8/15 π r_mid r_max⁴

with ``A_proj = π sqrt(Σ (rⱼ rₖ)⁴ uᵢ² / Σ (rⱼ rₖ uᵢ)²)`` the area the ellipsoid projects along
``u`` and ``n`` the normal of the section it projects (the added-mass term without its
acceleration part, which MuJoCo leaves out). ``A_proj`` and ``cos α`` depend on the direction of
``u`` only; MuJoCo 4.0.0 computes them without a floor down to ``|u| = mjMINVAL`` and drops
``A_proj`` and the Kutta lift below (measured against ``mj_forward``; the C source read for this,
``mj_viscousForces`` of August 2026, floors ``Σ (rⱼ rₖ uᵢ)²`` and ``|u| Σ (rⱼ rₖ)⁴ uᵢ²`` at
``mjMINVAL`` instead, which changes the forces of thin or small geoms by orders of magnitude —
the 0.1 mm plates of MuJoCo's ``testdata/model.xml`` — and is not what 4.0.0 simulates). They
are computed here from the unit direction and ``rⱼ rₖ`` over its largest value, so that no
fourth power of a length underflows in float32. The force and torque of each geom act on its body; ``geom_fluid`` and the
geom sizes are dynamic leaves (changing a size does not recompute the virtual mass and inertia,
as in MuJoCo, whose compiler derives them).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._math import quat_to_matrix
from .._model import Model
from .._types import GeomType
from ._kinematics import Kinematics

__all__ = ["fluid_forces"]

#: MuJoCo's ``mjMINVAL``
_MINVAL = 1e-15


def fluid_forces(model: Model, kin: Kinematics, axes: jax.Array, v: jax.Array) -> jax.Array:
    """Generalised fluid forces ``(nv,)`` (MuJoCo ``qfrc_fluid``): the inertia-box model on
    ``model.fluid_bodies`` plus the ellipsoid model on ``model.fluid_geoms``.

    Args:
      kin: forward kinematics at ``q``; axes: ``(nv, 6)`` world motion axes ``[ω; v_O]`` at ``q``.
      v: ``(nv,)`` generalised velocity.
    """
    force = jnp.zeros((model.nv,), v.dtype)
    if model.fluid_bodies:
        force = force + _inertia_box_forces(model, kin, axes, v)
    if model.fluid_geoms:
        force = force + _ellipsoid_forces(model, kin, axes, v)
    return force


def _inertia_box_forces(model: Model, kin: Kinematics, axes: jax.Array, v: jax.Array) -> jax.Array:
    """Generalised forces ``(nv,)`` of the inertia-box model on ``model.fluid_bodies``."""
    dtype = v.dtype
    bodies = np.asarray(model.fluid_bodies, dtype=np.int64)
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
    local_angular, local_linear = _local_velocities(model, axes, v, moves, centre, rot)

    diameter = jnp.mean(box, axis=-1, keepdims=True)
    torque = -jnp.pi * diameter ** 3 * viscosity * local_angular
    force = -3.0 * jnp.pi * diameter * viscosity * local_linear
    area = jnp.stack([box[:, 1] * box[:, 2], box[:, 0] * box[:, 2], box[:, 0] * box[:, 1]], axis=-1)
    force = force - 0.5 * density * area * jnp.abs(local_linear) * local_linear
    fourth = box ** 4
    arm = jnp.stack([fourth[:, 1] + fourth[:, 2], fourth[:, 0] + fourth[:, 2],
                     fourth[:, 0] + fourth[:, 1]], axis=-1)
    torque = torque - density * box * arm * jnp.abs(local_angular) * local_angular / 64.0
    return _generalised(axes, moves, centre, rot, force, torque)


def _ellipsoid_forces(model: Model, kin: Kinematics, axes: jax.Array, v: jax.Array) -> jax.Array:
    """Generalised forces ``(nv,)`` of the ellipsoid model on ``model.fluid_geoms`` (module
    docstring; MuJoCo ``mj_ellipsoidFluidModel``)."""
    dtype = v.dtype
    geoms = np.asarray(model.fluid_geoms, dtype=np.int64)
    bodies = np.asarray(model.geom_body, dtype=np.int64)[geoms]
    options = model.options
    density, viscosity = options.fluid_density.astype(dtype), options.fluid_viscosity.astype(dtype)
    coefficients = model.geom_fluid.astype(dtype)[geoms]  # (g, 12)
    radii = _semi_axes(model, geoms, dtype)  # (g, 3)
    # geom frames (MuJoCo geom_xpos, geom_xmat)
    body_rot = kin.body_rot[bodies]
    centre = kin.body_pos[bodies] + jnp.einsum("gij,gj->gi", body_rot,
                                               model.geom_pos.astype(dtype)[geoms])
    rot = body_rot @ quat_to_matrix(model.geom_quat.astype(dtype)[geoms])
    moves = jnp.asarray(model.tree.dof_moves_body, dtype=dtype)[bodies]  # (g, nv)
    omega, u = _local_velocities(model, axes, v, moves, centre, rot)

    interaction = coefficients[:, 0:1]
    blunt, slender, angular_drag, kutta, magnus = (coefficients[:, k:k + 1] for k in range(1, 6))
    virtual_mass, virtual_inertia = coefficients[:, 6:9], coefficients[:, 9:12]

    # added mass (no acceleration term): virtual momenta of the fluid moving with the geom
    linear_momentum = density * virtual_mass * u
    angular_momentum = density * virtual_inertia * omega
    force = jnp.cross(linear_momentum, omega)
    torque = jnp.cross(linear_momentum, u) + jnp.cross(angular_momentum, omega)

    volume = 4.0 / 3.0 * jnp.pi * jnp.prod(radii, axis=-1, keepdims=True)
    r_max = jnp.max(radii, axis=-1, keepdims=True)
    r_min = jnp.min(radii, axis=-1, keepdims=True)
    r_mid = jnp.sum(radii, axis=-1, keepdims=True) - r_max - r_min
    force = force + magnus * density * volume * jnp.cross(omega, u)

    # Kutta lift: the area A_proj the ellipsoid projects along u and the unit normal n̂ of the
    # section it projects, from the direction û and the products rⱼ rₖ scaled to at most 1 (both
    # scale-free, as in MuJoCo 4.0.0; see the module docstring)
    section = jnp.stack([radii[:, 1] * radii[:, 2], radii[:, 2] * radii[:, 0],
                         radii[:, 0] * radii[:, 1]], axis=-1)  # rⱼ rₖ
    largest_section = jnp.max(section, axis=-1, keepdims=True)
    scaled = (section / largest_section) ** 2  # (rⱼ rₖ)² / max²
    speed = _safe_norm(u)
    moving = speed > _MINVAL
    direction = u / jnp.where(moving, speed, 1.0)
    normal_sq = jnp.sum((scaled * direction) ** 2, axis=-1, keepdims=True)  # |n|², n = scaled ∘ û
    along = jnp.sum(scaled * direction ** 2, axis=-1, keepdims=True)  # n · û
    area = jnp.where(moving, jnp.pi * largest_section
                     * _safe_sqrt(normal_sq / jnp.where(moving, along, 1.0)), 0.0)
    # C_K ρ cos α A_proj (n̂ × u) × u with cos α = n · û / |n| and n̂ = n / |n|
    kutta_scale = jnp.where(moving, along / jnp.where(moving, normal_sq, 1.0), 0.0)
    circulation = kutta * density * kutta_scale * area * jnp.cross(scaled * direction, u)
    force = force + jnp.cross(circulation, u)

    # viscous (Stokes, equivalent sphere) and quadratic drag
    diameter = 2.0 / 3.0 * jnp.sum(radii, axis=-1, keepdims=True)
    largest_other = jnp.maximum(jnp.roll(radii, -1, axis=-1), jnp.roll(radii, -2, axis=-1))
    swept = 8.0 / 15.0 * jnp.pi * radii * largest_other ** 4  # Iᵢ
    swept_max = 8.0 / 15.0 * jnp.pi * r_mid * r_max ** 4
    angular_moment = omega * (angular_drag * swept + slender * (swept_max - swept))
    linear_drag = (viscosity * 3.0 * jnp.pi * diameter
                   + density * speed * (area * blunt + slender * (jnp.pi * r_max * r_mid - area)))
    angular_drag_coefficient = viscosity * jnp.pi * diameter ** 3 + density * _safe_norm(angular_moment)
    torque = interaction * (torque - angular_drag_coefficient * omega)
    force = interaction * (force - linear_drag * u)
    return _generalised(axes, moves, centre, rot, force, torque)


def _semi_axes(model: Model, geoms: np.ndarray, dtype) -> jax.Array:
    """``(g, 3)`` semi-axes of the geoms' equivalent ellipsoids (MuJoCo ``mju_geomSemiAxes``)."""
    types = [model.geom_type[g] for g in geoms]
    columns = np.asarray([(0, 0, 0) if t == GeomType.SPHERE else (0, 0, 1)
                          if t in (GeomType.CAPSULE, GeomType.CYLINDER) else (0, 1, 2)
                          for t in types], dtype=np.int64).reshape(-1, 3)
    capsule = np.asarray([t == GeomType.CAPSULE for t in types], dtype=bool)
    size = model.geom_size.astype(dtype)[geoms]
    radii = jnp.take_along_axis(size, jnp.asarray(columns), axis=-1)
    # a capsule's half-length along z is its cylinder's plus the radius
    return radii.at[:, 2].add(jnp.where(jnp.asarray(capsule), size[:, 0], 0.0))


def _local_velocities(model: Model, axes, v, moves, point, rot):
    """Angular velocity and velocity relative to the wind of the points ``point`` ``(k, 3)``
    fixed to the bodies of ``moves`` ``(k, nv)``, both in the frames ``rot`` ``(k, 3, 3)``."""
    dtype = v.dtype
    body_velocity = moves @ (axes * v[:, None])  # (k, 6): [ω; v_O] world frame at the origin
    angular = body_velocity[:, :3]
    linear = body_velocity[:, 3:] + jnp.cross(angular, point) - model.options.wind.astype(dtype)
    return jnp.einsum("kji,kj->ki", rot, angular), jnp.einsum("kji,kj->ki", rot, linear)


def _generalised(axes, moves, point, rot, force, torque) -> jax.Array:
    """Generalised force ``(nv,)`` of forces and torques ``(k, 3)`` given in the frames ``rot``,
    applied at ``point`` on the bodies of ``moves``."""
    world_torque = jnp.einsum("kij,kj->ki", rot, torque)
    world_force = jnp.einsum("kij,kj->ki", rot, force)
    # force at the point: [p × f + τ; f] against the motion axes [ω; v_O]
    wrench = jnp.concatenate([jnp.cross(point, world_force) + world_torque, world_force], axis=-1)
    return jnp.sum((wrench @ axes.T) * moves, axis=0)


def _safe_sqrt(x: jax.Array) -> jax.Array:
    """``sqrt(x)`` for ``x ≥ 0`` with a zero (not infinite) derivative at ``x = 0``."""
    positive = x > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, x, 1.0)), 0.0)


def _safe_norm(x: jax.Array) -> jax.Array:
    """``|x|`` over the last axis, ``(k, 1)``, with a zero (not NaN) derivative at ``x = 0``."""
    return _safe_sqrt(jnp.sum(x ** 2, axis=-1, keepdims=True))
