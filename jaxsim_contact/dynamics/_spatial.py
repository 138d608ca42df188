"""Spatial (6D) vector algebra in Plücker coordinates, all expressed in the world frame.

Convention (Featherstone, "Rigid Body Dynamics Algorithms", ch. 2; used for the seed 004 §II-C
multibody dynamics): a motion vector is ``[ω; v_O]`` with ``v_O`` the velocity of the body point
that currently coincides with the world origin; a force vector is ``[n_O; f]`` with ``n_O`` the
moment about the world origin. Working in one frame means no per-body frame transforms: the
composite quantities of CRBA and RNEA are plain sums over subtrees, i.e. matrix products with the
tree's static incidence matrices.

Shapes: ``(..., 6)`` for vectors, ``(..., 6, 6)`` for inertias.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .._math import cross

__all__ = ["skew", "cross_motion", "cross_force", "spatial_inertia", "rotational_motion", "motion_about"]


def skew(w: jax.Array) -> jax.Array:
    """``(..., 3, 3)`` matrix ``[w]×`` with ``[w]× x = w × x``."""
    zero = jnp.zeros_like(w[..., 0])
    x, y, z = w[..., 0], w[..., 1], w[..., 2]
    return jnp.stack(
        [
            jnp.stack([zero, -z, y], -1),
            jnp.stack([z, zero, -x], -1),
            jnp.stack([-y, x, zero], -1),
        ],
        axis=-2,
    )


def cross_motion(v: jax.Array, m: jax.Array) -> jax.Array:
    """Motion cross product ``v ×ₘ m`` (the derivative of a motion vector ``m`` moving with
    velocity ``v``)."""
    w, u = v[..., :3], v[..., 3:]
    mw, mu = m[..., :3], m[..., 3:]
    return jnp.concatenate([cross(w, mw), cross(w, mu) + cross(u, mw)], axis=-1)


def cross_force(v: jax.Array, f: jax.Array) -> jax.Array:
    """Force cross product ``v ×f f`` (the derivative of a force/momentum ``f`` moving with ``v``)."""
    w, u = v[..., :3], v[..., 3:]
    n, lin = f[..., :3], f[..., 3:]
    return jnp.concatenate([cross(w, n) + cross(u, lin), cross(w, lin)], axis=-1)


def spatial_inertia(mass: jax.Array, com: jax.Array, inertia_com: jax.Array) -> jax.Array:
    """``(..., 6, 6)`` spatial inertia about the world origin.

    Args:
      mass: ``(...)`` kg.
      com: ``(..., 3)`` centre of mass in the world frame (m).
      inertia_com: ``(..., 3, 3)`` rotational inertia about the centre of mass, world axes.

    The momentum ``h = I V`` of a body moving with ``V = [ω; v_O]`` is
    ``[I_c ω + c × p; p]`` with ``p = m (v_O + ω × c)``.
    """
    m = mass[..., None, None]
    c = skew(com)
    top = jnp.concatenate([inertia_com - m * c @ c, m * c], axis=-1)
    eye = jnp.broadcast_to(jnp.eye(3, dtype=com.dtype), c.shape)
    bottom = jnp.concatenate([-m * c, m * eye], axis=-1)
    return jnp.concatenate([top, bottom], axis=-2)


def rotational_motion(axis: jax.Array, point: jax.Array) -> jax.Array:
    """Unit-rate rotation about ``axis`` through ``point`` (both ``(..., 3)``, world): ``[a; p × a]``."""
    return jnp.concatenate([axis, cross(point, axis)], axis=-1)


def motion_about(motion: jax.Array, point: jax.Array) -> jax.Array:
    """Spatial motions ``(..., 6)`` ``[ω; v_O]`` about the world origin re-expressed about
    ``point`` ``(3,)`` (m): ``[ω; v_O − point × ω]``, the velocity field's value at ``point``."""
    omega = motion[..., :3]
    return jnp.concatenate([omega, motion[..., 3:] - cross(point, omega)], axis=-1)
