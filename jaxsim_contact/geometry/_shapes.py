"""Convex shapes and their support functions (seed 000 "GJK++" §II, eq. 8 and eq. 11).

Every shape is an ``equinox.Module`` whose numeric parameters are dynamic ``jax.Array`` leaves, so
changing a size never recompiles and ``jax.grad`` with respect to sizes works. Each shape lives in
its own local frame, centred at the shape's centre (``ConvexMesh`` keeps the frame of the points
it was built from and records an interior ``center``).

Support functions follow the *max* convention: ``support(shape, d) ∈ argmax_{p ∈ shape} <d, p>``
in the shape's local frame. Spheres and capsules are represented as a *core* (a point, a segment)
swept by a sphere of radius ``inflation``; GJK runs on the cores and adds the radii afterwards,
which makes those pairs exact and fast (as in coal / HPP-FCL).

Sizes are validated on the host when the values are concrete (``ValueError`` naming the shape and
the value); inside traced code nothing raises.
"""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._math import safe_norm, safe_normalize
from .._types import GeomType

__all__ = [
    "Shape",
    "Sphere",
    "Ellipsoid",
    "Box",
    "Capsule",
    "Cylinder",
    "Cone",
    "Plane",
    "support",
    "support_hessian",
]


def _float_array(value, name: str, shape_name: str, shape: tuple[int, ...] = ()) -> jax.Array:
    """Convert to a float array of trailing shape ``shape``; validate it when it is concrete."""
    arr = jnp.asarray(value)
    if not jnp.issubdtype(arr.dtype, jnp.floating):
        arr = arr.astype(jnp.result_type(float))
    if shape and arr.shape[-len(shape):] != shape:
        raise ValueError(f"{shape_name}: {name} must have trailing shape {shape}, got {arr.shape}")
    return arr


def _check_sizes(shape_name: str, name: str, arr: jax.Array, allow_zero: bool = False) -> None:
    """Host-side check that sizes are finite and positive (skipped for traced values)."""
    if isinstance(arr, jax.core.Tracer):
        return
    values = np.asarray(arr)
    bad = ~np.isfinite(values) | ((values < 0) if allow_zero else (values <= 0))
    if np.any(bad):
        kind = "non-negative" if allow_zero else "positive"
        raise ValueError(
            f"{shape_name}: {name} must be finite and {kind}, got {values.tolist()}"
        )


class Shape(eqx.Module):
    """Base class of convex shapes.

    Subclasses define ``geom_type``, ``support_core`` (support of the core shape, local frame) and
    ``inflation`` (radius of the sphere swept over the core; 0 for most shapes).
    """

    geom_type: ClassVar[GeomType]
    #: whether the shape is a swept sphere over a lower-dimensional core (sphere, capsule)
    has_inflation: ClassVar[bool] = False
    #: whether the shape GJK runs on (the core for swept spheres) is strictly convex: its support
    #: point is unique in every direction (seed 000 §III-C; Alg. 7 is for the other shapes)
    strictly_convex_core: ClassVar[bool] = False

    def support_core(self, direction: jax.Array) -> jax.Array:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def inflation(self) -> jax.Array:
        """Radius swept over the core (m); 0 for shapes without a swept-sphere representation."""
        return jnp.zeros((), self.dtype)

    @property
    def dtype(self):
        return jax.tree_util.tree_leaves(self)[0].dtype

    @property
    def center(self) -> jax.Array:
        """An interior point in the local frame (used for GJK's default warm start)."""
        return jnp.zeros(3, self.dtype)

    def bounding_radius(self) -> jax.Array:  # pragma: no cover - abstract
        """Radius of a sphere about ``center`` that contains the shape (m)."""
        raise NotImplementedError

    def support(self, direction: jax.Array) -> jax.Array:
        """Support point of the full shape in ``direction`` ``(3,)``, local frame (m)."""
        if not self.has_inflation:
            return self.support_core(direction)
        return self.support_core(direction) + self.inflation * safe_normalize(direction)

    def support_core_hessian(self, direction: jax.Array) -> jax.Array:
        """Hessian ``(3, 3)`` of the core's support function at ``direction`` (m / |direction|).

        Default: zero — the (degenerate) subgradient Hessian of a polytope-like core, exact almost
        everywhere for flat or polyhedral pieces and *uninformative* (seed 000 "Differentiable
        Collision Detection" eq. 25). Smooth shapes override it.
        """
        return jnp.zeros(direction.shape[:-1] + (3, 3), direction.dtype)

    def support_hessian(self, direction: jax.Array) -> jax.Array:
        """Hessian ``∂²σ/∂d²`` ``(3, 3)`` of the support function ``σ(d) = max_p <d, p>`` (local
        frame), i.e. the Jacobian of ``support`` w.r.t. the direction (seed 000 "Differentiable
        Collision Detection" eq. 19). Symmetric PSD, homogeneous of degree −1 in ``direction``,
        annihilates ``direction``; units m per unit of |direction|. Zero at a zero direction
        (never NaN). Polytopes (boxes, meshes) return the degenerate Hessian 0.
        """
        hess = self.support_core_hessian(direction)
        if not self.has_inflation:
            return hess
        return hess + self.inflation * _sphere_hessian(direction)


def _sphere_hessian(direction: jax.Array) -> jax.Array:
    """Hessian of ``|d|`` (the unit ball's support function): ``(I - û ûᵀ) / |d|``; 0 at d = 0."""
    norm = safe_norm(direction, keepdims=True)
    unit = safe_normalize(direction)
    inv = jnp.where(norm > 0, 1.0 / jnp.where(norm > 0, norm, 1.0), 0.0)[..., None]
    eye = jnp.eye(3, dtype=direction.dtype)
    proj = eye - unit[..., :, None] * unit[..., None, :]
    return jnp.where(norm[..., None] > 0, proj * inv, 0.0)


def _disk_hessian(direction: jax.Array, radius: jax.Array) -> jax.Array:
    """Hessian of ``radius·|P_xy d|`` (support of a disk in the xy plane); 0 on the z axis."""
    radial = direction * jnp.array([1.0, 1.0, 0.0], direction.dtype)
    flat = jnp.array([1.0, 1.0, 0.0], direction.dtype)
    return radius * flat[:, None] * _sphere_hessian(radial) * flat[None, :]


def support_hessian(shape: Shape, direction: jax.Array) -> jax.Array:
    """Hessian ``(3, 3)`` of ``shape``'s support function at ``direction`` (local frame, m).

    Analytic for spheres, ellipsoids and the round parts of capsules, cylinders and cones; the
    degenerate (zero) subgradient Hessian on flat and polyhedral parts — finite but uninformative
    there; use ``jc.collision.Smoothing`` for curvature-aware estimates (seed 000 "Differentiable
    Collision Detection" eqs. 19, 25–28).
    """
    return shape.support_hessian(direction)


def support(shape: Shape, direction: jax.Array) -> jax.Array:
    """Support point ``argmax_{p ∈ shape} <direction, p>`` in the shape's local frame.

    Args:
      shape: any convex shape except ``Plane`` (unbounded).
      direction: ``(3,)`` direction in the shape's local frame; need not be unit. At a zero
        direction an interior-or-boundary point of the shape is returned (never NaN).
    Returns:
      ``(3,)`` point in metres, local frame. Seed 000 "GJK++" eq. 8.
    """
    return shape.support(direction)


class Sphere(Shape):
    """Ball of radius ``radius`` (m), centred at the origin. Core: the centre point."""

    radius: jax.Array
    geom_type: ClassVar[GeomType] = GeomType.SPHERE
    has_inflation: ClassVar[bool] = True
    strictly_convex_core: ClassVar[bool] = True  # a point

    def __init__(self, radius):
        self.radius = _float_array(radius, "radius", "Sphere")
        _check_sizes("Sphere", "radius", self.radius)

    @property
    def inflation(self):
        return self.radius

    def support_core(self, direction):
        return jnp.zeros_like(direction)

    def bounding_radius(self):
        return self.radius


class Capsule(Shape):
    """Segment from ``(0, 0, -half_length)`` to ``(0, 0, half_length)`` swept by ``radius`` (m)."""

    radius: jax.Array
    half_length: jax.Array
    geom_type: ClassVar[GeomType] = GeomType.CAPSULE
    has_inflation: ClassVar[bool] = True

    def __init__(self, radius, half_length):
        self.radius = _float_array(radius, "radius", "Capsule")
        self.half_length = _float_array(half_length, "half_length", "Capsule")
        _check_sizes("Capsule", "radius", self.radius)
        _check_sizes("Capsule", "half_length", self.half_length, allow_zero=True)

    @property
    def inflation(self):
        return self.radius

    def support_core(self, direction):
        z = self.half_length * jnp.sign(direction[..., 2])
        return jnp.stack([jnp.zeros_like(z), jnp.zeros_like(z), z], axis=-1)

    def bounding_radius(self):
        return self.radius + self.half_length


class Ellipsoid(Shape):
    """Axis-aligned ellipsoid with semi-axes ``radii`` ``(3,)`` (m)."""

    radii: jax.Array
    geom_type: ClassVar[GeomType] = GeomType.ELLIPSOID
    strictly_convex_core: ClassVar[bool] = True

    def __init__(self, radii):
        self.radii = _float_array(radii, "radii", "Ellipsoid", (3,))
        _check_sizes("Ellipsoid", "radii", self.radii)

    def support_core(self, direction):
        # argmax_{|A^-1 p| ≤ 1} <d, p> = A² d / |A d| with A = diag(radii).
        return self.radii * safe_normalize(self.radii * direction)

    def support_core_hessian(self, direction):
        # σ(d) = |A d|: ∇²σ = A (I - ŵŵᵀ) A / |A d| with w = A d.
        scaled = self.radii * direction
        hess = _sphere_hessian(scaled)
        return self.radii[..., :, None] * hess * self.radii[..., None, :]

    def bounding_radius(self):
        return jnp.max(self.radii, axis=-1)


class Box(Shape):
    """Axis-aligned box ``[-h, h]`` with half extents ``half_extents`` ``(3,)`` (m)."""

    half_extents: jax.Array
    geom_type: ClassVar[GeomType] = GeomType.BOX

    def __init__(self, half_extents):
        self.half_extents = _float_array(half_extents, "half_extents", "Box", (3,))
        _check_sizes("Box", "half_extents", self.half_extents)

    def support_core(self, direction):
        return self.half_extents * jnp.sign(direction)

    def bounding_radius(self):
        return safe_norm(self.half_extents)


class Cylinder(Shape):
    """Cylinder of ``radius`` about z, from ``z = -half_length`` to ``z = half_length`` (m)."""

    radius: jax.Array
    half_length: jax.Array
    geom_type: ClassVar[GeomType] = GeomType.CYLINDER

    def __init__(self, radius, half_length):
        self.radius = _float_array(radius, "radius", "Cylinder")
        self.half_length = _float_array(half_length, "half_length", "Cylinder")
        _check_sizes("Cylinder", "radius", self.radius)
        _check_sizes("Cylinder", "half_length", self.half_length)

    def support_core(self, direction):
        radial = direction * jnp.array([1.0, 1.0, 0.0], direction.dtype)
        rim = self.radius * safe_normalize(radial)
        z = self.half_length * jnp.sign(direction[..., 2])
        return rim + jnp.stack([jnp.zeros_like(z), jnp.zeros_like(z), z], axis=-1)

    def support_core_hessian(self, direction):
        # The rim circle is curved; the caps and the axial direction are flat (zero).
        return _disk_hessian(direction, self.radius)

    def bounding_radius(self):
        return jnp.sqrt(self.radius**2 + self.half_length**2)


class Cone(Shape):
    """Cone about z: base disk of ``radius`` at ``z = -half_length``, apex at ``z = +half_length``.

    The local origin is the midpoint of the axis (coal's convention), which lies inside the cone.
    """

    radius: jax.Array
    half_length: jax.Array
    geom_type: ClassVar[GeomType] = GeomType.CONE

    def __init__(self, radius, half_length):
        self.radius = _float_array(radius, "radius", "Cone")
        self.half_length = _float_array(half_length, "half_length", "Cone")
        _check_sizes("Cone", "radius", self.radius)
        _check_sizes("Cone", "half_length", self.half_length)

    def support_core(self, direction):
        radial = direction * jnp.array([1.0, 1.0, 0.0], direction.dtype)
        rim = self.radius * safe_normalize(radial) - jnp.array([0.0, 0.0, 1.0], direction.dtype) * self.half_length
        apex = jnp.array([0.0, 0.0, 1.0], direction.dtype) * self.half_length
        apex_wins = jnp.dot(apex, direction) >= jnp.dot(rim, direction)
        return jnp.where(apex_wins, apex, rim)

    def support_core_hessian(self, direction):
        rim = self.radius * safe_normalize(direction * jnp.array([1.0, 1.0, 0.0], direction.dtype))
        rim = rim - jnp.array([0.0, 0.0, 1.0], direction.dtype) * self.half_length
        apex = jnp.array([0.0, 0.0, 1.0], direction.dtype) * self.half_length
        apex_wins = jnp.dot(apex, direction) >= jnp.dot(rim, direction)
        return jnp.where(apex_wins, 0.0, _disk_hessian(direction, self.radius))

    def bounding_radius(self):
        return jnp.sqrt(self.radius**2 + self.half_length**2)


class Plane(Shape):
    """The half-space ``z ≤ 0`` of its local frame (outward normal +z). Unbounded: no support.

    Collisions against a plane use the closed form ``signed distance = min_{p ∈ B} n · p``.
    """

    geom_type: ClassVar[GeomType] = GeomType.PLANE

    @property
    def dtype(self):
        return jnp.result_type(float)

    def support_core(self, direction):
        raise TypeError("Plane is unbounded and has no support function")

    def bounding_radius(self):
        return jnp.asarray(jnp.inf, self.dtype)
