"""Derivatives of collision detection: exact implicit rule and randomized smoothing.

Seed 000, "Differentiable Collision Detection: a Randomized Smoothing Approach" (Montaut et al.).
The primal query (GJK / EPA, ``distance.py``) is never differentiated: its outputs are attached to
the inputs by a ``jax.custom_jvp`` rule whose tangent is linear in the input tangents, so
``jax.jvp``, ``jax.jacfwd``, ``jax.grad`` and ``jax.vjp`` all work, under ``jit`` and ``vmap``.

Optimality condition (eqs. 10–13, 20) in the form used here
-----------------------------------------------------------
With ``n`` the unit normal from a towards b and ``δ`` the signed distance (> 0 separated, < 0
penetrating), the witness points are support points, ``p_a = s_a(n)`` and ``p_b = s_b(-n)``
(world-frame supports), and

    s_b(-n) - s_a(n) - δ n = 0.                                                   (★)

This is eq. 12 with the separation vector ``x* = p_a - p_b = -δ n`` written through its direction
and length; unlike eq. 12 it stays regular at touching contact (x* → 0, where the support Hessian
∇²σ(x*) ~ 1/|x*| blows up). Differentiating (★) (implicit function theorem, eqs. 16–18) with
``H_a = ∇²σ_a(n)``, ``H_b = ∇²σ_b(-n)`` (world frame, eq. 19) and ``e_a, e_b`` the explicit
derivatives of the support points at fixed ``n`` (rigid motion of the witness point, change of
shape parameters, and the rotation of the local direction, eq. 19's ∂f/∂q) gives, with
``r = e_a - e_b`` and ``P = I - n nᵀ``:

    dδ  = -nᵀ r                                   (envelope theorem: no Hessian needed)
    (K + δ P) dn = -P r,   K = P (H_a + H_b) P,   nᵀ dn = 0                       (eq. 18)
    dp_a = H_a dn + e_a,   dp_b = -H_b dn + e_b                                   (eq. 29)

The 3×3 system is solved as ``M dn = -P r`` with ``M = K + δ P + L n nᵀ`` (L the pair size; the last
term fixes the normal component at 0) by a Tikhonov pseudo-inverse
``dn = -(M² + λ² I)⁻¹ M P r`` with ``λ = sqrt(eps)·L``: exact to O(λ²/w²) for every eigenvalue
w ≫ λ, and finite where M is singular — touching polytopes (K = 0, δ = 0) and coincident centres of
curvature in deep penetration (e.g. concentric spheres, K + δ P = 0), where the normal is not a
differentiable function of the inputs at all and ``dn`` is set to 0 on the singular subspace.

Hessian of the support function, by estimator (``Smoothing``)
------------------------------------------------------------
* exact (``smoothing=None``): analytic Hessians (``Shape.support_hessian``) — sphere, ellipsoid,
  the round parts of capsules, cylinders, cones. Flat and polyhedral parts (boxes, meshes, caps)
  give the degenerate subgradient Hessian 0 (eq. 25): finite, but *uninformative* — the witness
  points then move rigidly with their vertex.
* ``order=1, distribution="gaussian"`` (eq. 26), any shape: ``H ≈ 1/M Σ_j (σ'(u + ε z_j) -
  σ'(u - ε z_j)) z_jᵀ / (2ε)`` with ``z_j ~ N(0, I)`` (antithetic pairs: 2M support queries), ``u``
  the unit local direction; ``noise`` = ε is an angle-like, dimensionless perturbation of ``u``.
* ``order=1, distribution="gumbel"`` (eqs. 27–28): on ``ConvexMesh`` and ``Box`` the closed form
  ``H = Vᵀ (diag(a) - a aᵀ) V / τ`` with ``a = softmax(V u / τ)`` over all (real) vertices, the
  temperature τ = ε·R (R the shape's bounding radius, so ε is dimensionless); with
  ``neighborhood=n_l`` only the vertices within n_l hull edges of the witness vertex take part
  (seed 000 Fig. 2). Deterministic, no key needed. On other shapes, Monte Carlo eq. 26 with zero-mean Gumbel noise and its score
  ``-∇log μ(z) = 1 - exp(-(z + γ))``.
  All estimates are symmetrised and projected on the tangent plane of ``u`` (the exact Hessian
  annihilates ``u``; this keeps ``dn ⟂ n``).
* ``order=0`` (eq. 6), any shape and any pair (planes included): the whole query is re-run at M
  perturbed inputs (vmapped, warm-started at the primal separation vector) and
  ``dy ≈ 1/(M ε) Σ_j (y(θ + ε S z_j) - y(θ)) ⟨score(z_j), S⁻¹ θ̇⟩``. The perturbation acts on the
  pose twists (translations scaled by the pair size L, rotations in radians, world frame) and, only
  when shape tangents are non-zero, on every floating-point shape leaf (scaled by L).

Shape-parameter tangents (radii, half extents, mesh vertices) enter the first-order and exact
rules through ``e_a, e_b``: the derivative of the support point at a fixed direction — exact for
smooth shapes, the subgradient (the supporting vertex moves with its coordinates) for polytopes.

Quaternion tangents are interpreted as rotations (their component along the quaternion itself —
a change of norm — is ignored by the 0th-order estimator; the other rules follow ``quat_rotate``).
"""

from __future__ import annotations

import math
import typing
from functools import partial
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._autodiff import DISTRIBUTIONS, instantiate_zeros, is_symbolic_zero, sample_noise
from ..geometry._mesh import ConvexMesh
from ..geometry._shapes import Box, Plane, Shape
from .._math import Transform, quat_conj, quat_from_axis_angle, quat_mul, safe_norm

__all__ = ["Smoothing", "local_support_hessian", "needs_key", "sample_noise", "DISTRIBUTIONS"]

ORDERS = (0, 1)


@typing.final
class Smoothing(eqx.Module):
    """Selects the derivative estimator of ``jc.collision.distance`` (seed 000 "Differentiable
    Collision Detection").

    Attributes:
      order: static; 1 = first-order estimator (implicit function theorem with a smoothed support
        Hessian, eqs. 12–19, 26–29); 0 = zeroth-order estimator on the whole query (eq. 6).
      distribution: static; "gaussian" or "gumbel" (Gumbel on meshes and boxes: the softmax closed
        form of eqs. 27–28, deterministic).
      noise: dynamic ``()`` array ε > 0, dimensionless. order 1 Gaussian: standard deviation of
        the perturbation of the unit support direction; order 1 Gumbel closed form: softmax
        temperature in units of the shape's bounding radius; order 0: standard deviation of the
        pose perturbation (radians for rotations, pair size L for translations and shape sizes).
        Not the paper's ε: seed 000 eqs. 26–28 apply ε to the *unnormalised* separation vector
        x* (an angular smoothing ε/|x*| that grows without bound at contact), so its values
        (1e-3 Gaussian, 1e-4 Gumbel) do not carry over. Order 1 needs ε well below 1 in these
        units: a large ε wipes out the flat-face curvature the rule needs far from contact and
        the optimisation stalls.
      num_samples: static M > 0, Monte Carlo samples (unused by the Gumbel closed form).
      neighborhood: static depth n_l ≥ 1 of the Gumbel closed form on ``ConvexMesh`` (seed 000
        Fig. 2): the softmax runs over the vertices within n_l edges of the witness vertex
        (hull adjacency ``ConvexMesh.neighbors``, precomputed at construction). ``None``
        (default): all vertices. The neighbourhood is a mask over the static vertex array
        (n_l gathers of the (V, K) neighbour table), so shapes stay static; it changes the
        estimate (more local curvature), not the asymptotic cost.

    Raises ``ValueError`` at construction for an unknown order or distribution, a non-positive
    (or non-finite) concrete ``noise``, a non-positive ``num_samples`` or ``neighborhood``.
    Final: do not subclass.
    """

    noise: jax.Array
    order: int = eqx.field(static=True)
    distribution: str = eqx.field(static=True)
    num_samples: int = eqx.field(static=True)
    neighborhood: int | None = eqx.field(static=True)

    def __init__(
        self,
        order: int = 1,
        distribution: str = "gaussian",
        noise=1e-2,
        num_samples: int = 16,
        neighborhood: int | None = None,
    ):
        if neighborhood is not None and (
            isinstance(neighborhood, bool)
            or not isinstance(neighborhood, (int, np.integer))
            or neighborhood <= 0
        ):
            raise ValueError(
                f"Smoothing: neighborhood must be None or a positive int, got {neighborhood!r}"
            )
        self.neighborhood = None if neighborhood is None else int(neighborhood)
        if isinstance(order, bool) or order not in ORDERS:
            raise ValueError(f"Smoothing: order must be 0 or 1, got {order!r}")
        if distribution not in DISTRIBUTIONS:
            raise ValueError(
                f"Smoothing: unknown distribution {distribution!r}; choose one of {DISTRIBUTIONS}"
            )
        if (
            isinstance(num_samples, bool)
            or not isinstance(num_samples, (int, np.integer))
            or num_samples <= 0
        ):
            raise ValueError(f"Smoothing: num_samples must be a positive int, got {num_samples!r}")
        noise_arr = jnp.asarray(noise)
        if not jnp.issubdtype(noise_arr.dtype, jnp.floating):
            noise_arr = noise_arr.astype(jnp.result_type(float))
        if noise_arr.ndim != 0:
            raise ValueError(f"Smoothing: noise must be a scalar, got shape {noise_arr.shape}")
        if not isinstance(noise_arr, jax.core.Tracer):
            value = float(noise_arr)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"Smoothing: noise must be finite and positive, got {value!r}")
        self.noise = noise_arr
        self.order = int(order)
        self.distribution = distribution
        self.num_samples = int(num_samples)

    def __init_subclass__(cls, **kwargs):
        raise TypeError("Smoothing is final and cannot be subclassed")


def _closed_form_vertices(shape: Shape):
    """Vertices ``(V, 3)`` and mask ``(V,)`` of polytopes with a softmax closed form, else None."""
    if isinstance(shape, ConvexMesh):
        return shape.vertices, shape.vertex_mask
    if isinstance(shape, Box):
        signs = jnp.array(
            [[sx, sy, sz] for sx in (-1.0, 1.0) for sy in (-1.0, 1.0) for sz in (-1.0, 1.0)],
            shape.half_extents.dtype,
        )
        return signs * shape.half_extents, jnp.ones(8, bool)
    return None


def needs_key(smoothing: Smoothing | None, shape_a: Shape, shape_b: Shape) -> bool:
    """Whether the selected estimator is stochastic for this pair (then ``key`` is required)."""
    if smoothing is None:
        return False
    if smoothing.order == 0 or smoothing.distribution == "gaussian":
        return True
    return any(
        _closed_form_vertices(s) is None for s in (shape_a, shape_b) if not isinstance(s, Plane)
    )


def _project(hess: jax.Array, unit: jax.Array) -> jax.Array:
    """Symmetrise and project a 3×3 Hessian on the plane orthogonal to ``unit``."""
    proj = jnp.eye(3, dtype=hess.dtype) - jnp.outer(unit, unit)
    return proj @ (0.5 * (hess + hess.T)) @ proj


def _mc_hessian(support_fn, unit, noise, num_samples, distribution, key):
    """Eq. 26: Monte Carlo Hessian of a support function from M perturbed support queries."""
    dtype = unit.dtype
    z, score = sample_noise(key, distribution, (num_samples, 3), dtype)
    eps = noise.astype(dtype)
    plus = jax.vmap(support_fn)(unit + eps * z)
    if distribution == "gaussian":  # symmetric: antithetic pairs cancel the O(1) term
        minus = jax.vmap(support_fn)(unit - eps * z)
        diff = (plus - minus) / (2.0 * eps)
    else:
        diff = (plus - support_fn(unit)) / eps
    return diff.T @ score / num_samples


def _softmax_hessian(vertices, mask, unit, temperature):
    """Eqs. 27–28: Hessian of the Gumbel-smoothed support of a polytope (closed form)."""
    scores = vertices @ unit / temperature
    scores = jnp.where(mask, scores, -jnp.inf)
    weights = jax.nn.softmax(scores)
    weights = jnp.where(mask, weights, 0.0)
    mean = weights @ vertices
    second = (vertices * weights[:, None]).T @ vertices
    return (second - jnp.outer(mean, mean)) / temperature


def _neighborhood_mask(mesh: ConvexMesh, unit: jax.Array, depth: int) -> jax.Array:
    """Vertices within ``depth`` hull edges of the support vertex in ``unit`` (``(V,)`` bool)."""
    scores = jnp.where(mesh.vertex_mask, mesh.vertices @ unit, -jnp.inf)
    member = jax.nn.one_hot(jnp.argmax(scores), mesh.num_vertices, dtype=bool)
    for _ in range(depth):  # adjacency is symmetric: j joins when one of its neighbours is in
        member = member | jnp.any(member[mesh.neighbors], axis=-1)
    return member


def local_support_hessian(
    shape: Shape, unit: jax.Array, smoothing: Smoothing | None, key: jax.Array | None
) -> jax.Array:
    """Hessian ``(3, 3)`` (m) of ``shape``'s support function at the unit local direction ``unit``.

    ``smoothing=None`` (or order 0): the analytic / subgradient Hessian (eq. 19, 25). Order 1:
    Gaussian Monte Carlo (eq. 26) or Gumbel softmax closed form on polytopes (eqs. 27–28). The
    result is symmetric and annihilates ``unit``.
    """
    if smoothing is None or smoothing.order == 0:
        hess = shape.support_hessian(unit)
    else:
        closed = _closed_form_vertices(shape)
        if smoothing.distribution == "gumbel" and closed is not None:
            vertices, mask = closed
            if smoothing.neighborhood is not None and isinstance(shape, ConvexMesh):
                mask = mask & _neighborhood_mask(shape, unit, smoothing.neighborhood)
            temperature = smoothing.noise.astype(unit.dtype) * shape.bounding_radius().astype(unit.dtype)
            hess = _softmax_hessian(vertices.astype(unit.dtype), mask, unit, temperature)
        else:
            hess = _mc_hessian(
                shape.support, unit, smoothing.noise, smoothing.num_samples,
                smoothing.distribution, key,
            )
    return _project(hess, unit)


def _angular_velocity(quat, quat_dot):
    """World-frame angular velocity ω of a unit quaternion tangent: (0, ω) = 2 q̇ ⊗ q*."""
    return 2.0 * quat_mul(quat_dot, quat_conj(quat))[1:]


def _explicit_derivative(shape, pose, point, direction, hess_local, shape_dot, pose_dot):
    """Tangent of the support point ``s(direction)`` at a *fixed* world direction: the rigid motion
    of the witness point, the change of the shape parameters (support at fixed local direction)
    and the turn of the local direction with the body (through ``hess_local``). Linear in the
    tangents. ``point`` is the primal witness point (world)."""
    local_point = jax.lax.stop_gradient(pose.inverse_apply(point))
    local_dir = jax.lax.stop_gradient(pose.inverse_rotate(direction))
    hess_local = jax.lax.stop_gradient(hess_local)

    def witness(shape_, pose_):
        sup = shape_.support(local_dir)
        turned = pose_.inverse_rotate(direction)
        local = (
            local_point
            + (sup - jax.lax.stop_gradient(sup))
            + hess_local @ (turned - jax.lax.stop_gradient(turned))
        )
        return pose_.apply(local)

    return jax.jvp(witness, (shape, pose), (shape_dot, pose_dot))[1]


def _pair_length(shape_a, shape_b, dtype):
    """Sum of the bounding radii (m); a ``Plane`` (unbounded) counts 0."""
    return sum(
        (s.bounding_radius().astype(dtype) for s in (shape_a, shape_b) if not isinstance(s, Plane)),
        jnp.zeros((), dtype),
    )


# -- the rule -----------------------------------------------------------------------------------


class RuleConfig(NamedTuple):
    """Static configuration of the derivative rule (hashable)."""

    order: int | None  # None: exact rule
    distribution: str
    num_samples: int
    method: str
    max_iterations: int
    epa_max_vertices: int
    neighborhood: int | None = None


def _smoothing_from(config: RuleConfig, noise) -> Smoothing | None:
    if config.order is None:
        return None
    smoothing = object.__new__(Smoothing)
    object.__setattr__(smoothing, "noise", noise)
    object.__setattr__(smoothing, "order", config.order)
    object.__setattr__(smoothing, "distribution", config.distribution)
    object.__setattr__(smoothing, "num_samples", config.num_samples)
    object.__setattr__(smoothing, "neighborhood", config.neighborhood)
    return smoothing


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def attach_derivatives(
    config, shape_a, pose_a, shape_b, pose_b, noise, key, tolerance, epa_tolerance,
    signed, point_a, point_b, normal,
):
    """Identity on ``(signed, point_a, point_b, normal)`` (computed by GJK/EPA from the same inputs)
    carrying the derivative rule selected by ``config`` w.r.t. shapes and poses."""
    return signed, point_a, point_b, normal


def _first_order_tangents(config, primals, tangents):
    shape_a, pose_a, shape_b, pose_b, noise, key, _, _, signed, point_a, point_b, normal = primals
    shape_a_dot, pose_a_dot, shape_b_dot, pose_b_dot = (
        instantiate_zeros(t, p) for t, p in zip(tangents[:4], primals[:4])
    )
    dtype = normal.dtype
    smoothing = _smoothing_from(config, noise)
    key_a, key_b = jax.random.split(key)
    normal = jax.lax.stop_gradient(normal)
    signed = jax.lax.stop_gradient(signed)
    u_a = pose_a.inverse_rotate(normal)
    u_b = pose_b.inverse_rotate(-normal)
    h_a = local_support_hessian(shape_a, u_a, smoothing, key_a)
    h_b = local_support_hessian(shape_b, u_b, smoothing, key_b)
    rot_a, rot_b = pose_a.rotation.astype(dtype), pose_b.rotation.astype(dtype)
    hess_a = rot_a @ h_a @ rot_a.T
    hess_b = rot_b @ h_b @ rot_b.T
    e_a = _explicit_derivative(shape_a, pose_a, point_a, normal, h_a, shape_a_dot, pose_a_dot)
    e_b = _explicit_derivative(shape_b, pose_b, point_b, -normal, h_b, shape_b_dot, pose_b_dot)
    return _solve_tangents(shape_a, shape_b, signed, normal, hess_a, hess_b, e_a, e_b)


def _regularized_inverse(system, length):
    """Tikhonov pseudo-inverse ``V diag(w / (w² + λ²)) Vᵀ`` of a symmetric 3×3 matrix, λ =
    max(sqrt(eps), 1e-6)·L, computed on primal values (an explicit symmetric matrix, so forward
    and reverse mode apply exactly transposed maps). Eigenvalues far above λ are inverted to
    O(λ²/w²); those at rounding level (a singular system: coincident centres of curvature, touching
    polytopes) give 0 instead of amplified rounding noise."""
    dtype = system.dtype
    system = jax.lax.stop_gradient(0.5 * (system + system.T))
    lam = max(float(np.sqrt(np.finfo(dtype).eps)), 1e-6) * length
    w, v = jnp.linalg.eigh(system)
    inverse = (v * (w / (w * w + lam * lam))) @ v.T
    return jax.lax.stop_gradient(0.5 * (inverse + inverse.T))


def _solve_tangents(shape_a, shape_b, signed, normal, hess_a, hess_b, e_a, e_b):
    """The linear algebra of the rule (module docstring): tangents of (δ, p_a, p_b, n)."""
    dtype = normal.dtype
    eye = jnp.eye(3, dtype=dtype)
    proj = eye - jnp.outer(normal, normal)
    length = _pair_length(shape_a, shape_b, dtype)
    r = e_a - e_b
    d_signed = -jnp.dot(normal, r)
    curvature = proj @ (hess_a + hess_b) @ proj
    system = curvature + signed * proj + length * jnp.outer(normal, normal)
    d_normal = -_regularized_inverse(system, length) @ (proj @ r)
    d_point_a = hess_a @ d_normal + e_a
    d_point_b = -hess_b @ d_normal + e_b
    return d_signed, d_point_a, d_point_b, d_normal


# -- zeroth order -------------------------------------------------------------------------------


def _flat_float_leaves(tree):
    leaves = [leaf for leaf in jax.tree_util.tree_leaves(tree) if jnp.issubdtype(jnp.asarray(leaf).dtype, jnp.inexact)]
    return leaves


def _perturb_tree(tree, flat_offset):
    """Add consecutive slices of ``flat_offset`` to the floating-point leaves of ``tree``."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    out, start = [], 0
    for leaf in leaves:
        leaf = jnp.asarray(leaf)
        if jnp.issubdtype(leaf.dtype, jnp.inexact):
            size = leaf.size
            out.append(leaf + flat_offset[start:start + size].reshape(leaf.shape).astype(leaf.dtype))
            start += size
        else:
            out.append(leaf)
    return jax.tree_util.tree_unflatten(treedef, out)


def _flatten_tangent(tangent, primal):
    flat = [
        jnp.ravel(t) for t, p in zip(jax.tree_util.tree_leaves(tangent), jax.tree_util.tree_leaves(primal))
        if jnp.issubdtype(jnp.asarray(p).dtype, jnp.inexact)
    ]
    return jnp.concatenate(flat) if flat else jnp.zeros((0,))


def _perturb_pose(pose: Transform, twist, length):
    """Pose moved by a world-frame twist: translation ``L·twist[:3]``, rotation ``exp(twist[3:])``."""
    angle = safe_norm(twist[3:])
    rot = quat_from_axis_angle(twist[3:], angle)
    return Transform(pose.pos + length * twist[:3], quat_mul(rot, pose.quat))


def _zeroth_order_tangents(config, primals, tangents, query):
    shape_a, pose_a, shape_b, pose_b, noise, key, tolerance, epa_tolerance, signed, point_a, point_b, normal = primals
    dtype = normal.dtype
    eps = noise.astype(dtype)
    length = jax.lax.stop_gradient(_pair_length(shape_a, shape_b, dtype))
    with_shapes = not (is_symbolic_zero(tangents[0]) and is_symbolic_zero(tangents[2]))
    shape_a_dot, pose_a_dot, shape_b_dot, pose_b_dot = (
        instantiate_zeros(t, p) for t, p in zip(tangents[:4], primals[:4])
    )
    # Tangent in the scaled coordinates c of the perturbation θ = θ₀ + S c.
    coords = [
        pose_a_dot.pos / length, _angular_velocity(pose_a.quat, pose_a_dot.quat),
        pose_b_dot.pos / length, _angular_velocity(pose_b.quat, pose_b_dot.quat),
    ]
    size_a = sum(leaf.size for leaf in _flat_float_leaves(shape_a)) if with_shapes else 0
    size_b = sum(leaf.size for leaf in _flat_float_leaves(shape_b)) if with_shapes else 0
    if with_shapes:
        coords += [
            _flatten_tangent(shape_a_dot, shape_a).astype(dtype) / length,
            _flatten_tangent(shape_b_dot, shape_b).astype(dtype) / length,
        ]
    coord_dot = jnp.concatenate([c.astype(dtype) for c in coords])
    dim = coord_dot.shape[0]
    z, score = sample_noise(key, config.distribution, (config.num_samples, dim), dtype)
    z = jax.lax.stop_gradient(z)
    warm = jax.lax.stop_gradient(point_a - point_b)

    def perturbed(zj):
        c = eps * zj
        pa = _perturb_pose(pose_a, c[0:6], length)
        pb = _perturb_pose(pose_b, c[6:12], length)
        sa, sb = shape_a, shape_b
        if with_shapes:
            sa = _perturb_tree(shape_a, length * c[12:12 + size_a])
            sb = _perturb_tree(shape_b, length * c[12 + size_a:12 + size_a + size_b])
        r = query(sa, pa, sb, pb, tolerance, epa_tolerance, warm)
        return jnp.concatenate([r.signed_distance[None], r.point_a, r.point_b, r.normal])

    base = jnp.concatenate([signed[None], point_a, point_b, normal])
    outputs = jax.lax.stop_gradient(jax.vmap(perturbed)(z)) - jax.lax.stop_gradient(base)
    jac = outputs.T @ score / (config.num_samples * eps)  # (10, dim): eq. 6
    dy = jac @ coord_dot
    return dy[0], dy[1:4], dy[4:7], dy[7:10]


def make_rule(query):
    """Register the jvp rule; ``query(config, shape_a, pose_a, shape_b, pose_b, tol, epa_tol,
    warm)`` is the primal GJK/EPA query (used by the zeroth-order estimator)."""

    def rule(config, primals, tangents):
        outs = attach_derivatives(config, *primals)
        if config.order == 0:
            tans = _zeroth_order_tangents(config, primals, tangents, partial(query, config))
        else:
            tans = _first_order_tangents(config, primals, tangents)
        tans = tuple(t.astype(o.dtype) for t, o in zip(tans, outs))
        return outs, tans

    attach_derivatives.defjvp(rule, symbolic_zeros=True)


# -- support point with a smoothed Hessian (plane pairs) ----------------------------------------


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def smoothed_world_support(config, shape, pose, direction, noise, key):
    """World support point of ``shape`` along the unit world ``direction`` whose derivative w.r.t.
    the direction uses the selected support Hessian (exact, eq. 26 or eqs. 27–28)."""
    return pose.apply(shape.support(pose.inverse_rotate(direction)))


@smoothed_world_support.defjvp
def _smoothed_world_support_jvp(config, primals, tangents):
    shape, pose, direction, noise, key = primals
    shape_dot, pose_dot, direction_dot = tangents[:3]
    point = smoothed_world_support(config, shape, pose, direction, noise, key)
    smoothing = _smoothing_from(config, noise)
    unit = pose.inverse_rotate(direction)
    h = local_support_hessian(shape, unit, smoothing, key)
    rot = pose.rotation.astype(point.dtype)
    explicit = _explicit_derivative(shape, pose, point, direction, h, shape_dot, pose_dot)
    return point, explicit + rot @ h @ rot.T @ direction_dot
