"""Public collision queries: signed distance with witness points, and Boolean intersection.

``distance`` runs GJK (vanilla / Polyak / Nesterov, seed 000 "GJK++" Alg. 4, 6, 7) on the pair and,
when the shapes overlap, EPA for the penetration depth. Spheres and capsules are handled as swept
spheres: GJK runs on their cores (point, segment) and the radii are added afterwards, which is
exact; EPA is needed only when the cores themselves overlap. A ``Plane`` (half-space) against any
convex shape uses the closed form ``min_{p ∈ B} n · p`` with one support query.

All arguments that are arrays are dynamic: poses, shape sizes and ``tolerance`` can change without
recompiling; ``method``, ``max_iterations`` and ``epa_max_vertices`` are static.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.custom_batching
import jax.numpy as jnp

from ..geometry._shapes import Ellipsoid, Plane, Shape, Sphere
from .._math import Transform, matrix_inverse_rotate, matrix_rotate, safe_norm, safe_normalize
from .._precision import full_precision_matmuls
from ._epa import FIRST_TIER_VERTICES, run_epa
from ._gjk import GJK_METHODS, run_gjk
from ._smoothing import (
    RuleConfig,
    Smoothing,
    attach_derivatives,
    make_rule,
    needs_key,
    smoothed_world_support,
)

__all__ = ["CollisionResult", "distance", "intersects", "default_tolerance"]


class CollisionResult(NamedTuple):
    """Result of ``distance``. All points are in the world frame, lengths in metres.

    Attributes:
      signed_distance: ``()`` > 0 separated (distance), < 0 penetrating (−depth, from EPA).
      point_a: ``(3,)`` witness point on shape a.
      point_b: ``(3,)`` witness point on shape b; ``|point_a - point_b| = |signed_distance|``.
      normal: ``(3,)`` unit contact normal pointing from a towards b.
      iterations: ``()`` int32 GJK iterations (all GJK passes).
      epa_iterations: ``()`` int32 EPA iterations (0 when separated).
      converged: ``()`` bool, the stopping criterion held (GJK and, if used, EPA).
    """

    signed_distance: jax.Array
    point_a: jax.Array
    point_b: jax.Array
    normal: jax.Array
    iterations: jax.Array
    epa_iterations: jax.Array
    converged: jax.Array


def default_tolerance(dtype) -> float:
    """Default relative GJK tolerance: 1e-9 in float64, 1e-5 in float32 (times the pair size)."""
    return 1e-9 if jnp.dtype(dtype) == jnp.float64 else 1e-5


def _default_epa_tolerance(dtype) -> float:
    # EPA converges slowly on curved shapes (one vertex per iteration): 1e-6 L bounds the depth
    # error within the default 128-vertex budget on random pairs (64 ran out on cylinders).
    return 1e-6 if jnp.dtype(dtype) == jnp.float64 else 1e-4


def _check_args(shape_a, shape_b, method, max_iterations):
    for name, shape in (("shape_a", shape_a), ("shape_b", shape_b)):
        if not isinstance(shape, Shape):
            raise TypeError(f"{name} must be a jaxsim_contact shape, got {type(shape).__name__}")
    if method not in GJK_METHODS:
        raise ValueError(f"unknown GJK method {method!r}; choose one of {GJK_METHODS}")
    if not isinstance(max_iterations, int) or max_iterations < 1:
        raise ValueError(f"max_iterations must be a positive int, got {max_iterations!r}")
    if isinstance(shape_a, Plane) and isinstance(shape_b, Plane):
        raise ValueError("plane-plane collision is not defined (both shapes are unbounded)")


def _check_epa_budget(epa_max_vertices):
    # EPA starts from a tetrahedron: fewer than 4 vertex slots cannot hold it
    valid = isinstance(epa_max_vertices, int) and not isinstance(epa_max_vertices, bool)
    if not valid or epa_max_vertices < 4:
        raise ValueError(f"epa_max_vertices must be an int >= 4, got {epa_max_vertices!r}")


def _world_support(shape: Shape, pose: Transform, core: bool):
    local_support = shape.support_core if core else shape.support
    # the rotation matrix once, outside the GJK/EPA loops that call fn (see matrix_rotate)
    rotation = pose.rotation

    def fn(direction_world):
        direction_local = matrix_inverse_rotate(rotation, direction_world)
        return matrix_rotate(rotation, local_support(direction_local)) + pose.pos

    return fn


def _minkowski_support(shape_a, pose_a, shape_b, pose_b, core: bool):
    """Support of ``D = A - B`` (max convention), returning the generating points too."""
    sup_a = _world_support(shape_a, pose_a, core and shape_a.has_inflation)
    sup_b = _world_support(shape_b, pose_b, core and shape_b.has_inflation)

    def fn(direction):
        point_a = sup_a(direction)
        point_b = sup_b(-direction)
        return point_a - point_b, point_a, point_b

    return fn


def _pair_scale_and_start(shape_a, pose_a, shape_b, pose_b, warm_start, dtype):
    """Characteristic length L (sum of bounding radii, m) and GJK's initial direction x0: the
    given warm start or the difference of the shape centres (seed 000 §IV)."""
    length = shape_a.bounding_radius().astype(dtype) + shape_b.bounding_radius().astype(dtype)
    if warm_start is not None:
        return length, jnp.asarray(warm_start, dtype)
    center_a = pose_a.apply(shape_a.center.astype(dtype))
    center_b = pose_b.apply(shape_b.center.astype(dtype))
    return length, center_a - center_b


def _normalize_nesterov(shape_a: Shape, shape_b: Shape) -> bool:
    """Alg. 7's normalisation is for non-strictly convex D; a swept sphere is strictly convex
    exactly when its core is, so one rule serves the core and the full-shape queries."""
    return not (shape_a.strictly_convex_core and shape_b.strictly_convex_core)


def _separation_normal(gjk, length, dtype):
    """Unit normal from a towards b for separated shapes.

    ``-x/|x|``, except near contact: its direction carries a relative error of machine eps·L/|x|
    (1e-5 at |x| = 1e-11 m). Below |x| = sqrt(eps)·L we return instead the support direction with
    the best distance lower bound (``GJKState.lower_direction``): along it the shapes provably
    overlap by at most ``-lower_bound``, so the witness points lie on their shapes' support
    planes to within the bracket ``|x| - lower_bound`` however small |x| is.
    """
    from_x = safe_normalize(-gjk.x, fallback=-gjk.lower_direction)
    threshold = jnp.sqrt(jnp.finfo(dtype).eps) * length
    return jnp.where(safe_norm(gjk.x) > threshold, from_x, -gjk.lower_direction)


def _plane_distance(plane_pose: Transform, shape: Shape, pose: Transform, dtype, support_fn=None):
    """Half-space ``z ≤ 0`` (plane frame) against a convex shape: one support query."""
    normal = plane_pose.rotate(jnp.array([0.0, 0.0, 1.0], dtype))
    support_fn = _world_support(shape, pose, False) if support_fn is None else support_fn
    deepest = support_fn(-normal)
    signed = jnp.dot(normal, deepest - plane_pose.pos)
    on_plane = deepest - signed * normal
    return signed, on_plane, deepest, normal


@full_precision_matmuls
def distance(
    shape_a: Shape,
    pose_a: Transform,
    shape_b: Shape,
    pose_b: Transform,
    method: str = "nesterov",
    max_iterations: int = 128,
    tolerance=None,
    warm_start: jax.Array | None = None,
    *,
    epa_max_vertices: int = 128,
    epa_tolerance=None,
    smoothing: Smoothing | None = None,
    key: jax.Array | None = None,
) -> CollisionResult:
    """Signed distance, witness points and normal between two convex shapes (world frame).

    Seed 000 "GJK++": GJK / Polyak / Nesterov (Alg. 4, 6, 7), duality-gap stopping (eqs. 16–18,
    32), warm start x₀ (§IV-D); EPA for penetration.

    Args:
      shape_a, shape_b: convex shapes (``Plane`` allowed on one side).
      pose_a, pose_b: ``Transform`` of each shape in the world.
      method: "nesterov" (default), "polyak" or "vanilla" (static).
      max_iterations: static GJK iteration cap.
      tolerance: relative accuracy ε; the distance is accurate to about ε·L, L the sum of the
        shapes' bounding radii. Default ``default_tolerance(dtype)``. The separation vector
        ``point_b - point_a`` is only accurate to ``√g ≤ √(ε L (d + L))`` (the Frank–Wolfe gap g
        bounds ``|x|² − |x*|² ≥ |x − x*|²``, seed 000 eq. 16), so the normal of a separated pair
        to about that over d — e.g. 1e-5 at ε = 1e-9, L = 2.4 m, d = 0.3 m. Pass a smaller ε
        (down to ~1e-14 in float64) when directions matter more than speed.
      warm_start: ``(3,)`` initial support direction in the world frame, e.g. the previous
        ``point_a - point_b``. Default: difference of the shape centres (the seed's choice).
      epa_max_vertices: static EPA polytope budget (int >= 4; faces: twice as many). Under
        ``vmap`` with a budget of 128 or more, EPA first grows a 32-vertex polytope and
        continues in the full one only where a lane runs out of room (same result, faster
        batches, one more compiled loop; ``jc.collision._epa.run_epa``).
      epa_tolerance: relative EPA tolerance (default 1e-6 in float64, 1e-4 in float32).
      smoothing: derivative estimator (seed 000 "Differentiable Collision Detection"). ``None``:
        the exact implicit rule (eqs. 12, 16–19, 29) with analytic support Hessians — exact for
        spheres, ellipsoids and the round parts of swept shapes; on polytopes the degenerate
        (zero) subgradient Hessian, finite but uninformative. ``jc.collision.Smoothing(order=1,
        distribution="gaussian" | "gumbel", ...)``: first-order randomized smoothing of the
        support Hessian (eqs. 26–28); ``Smoothing(order=0, ...)``: zeroth-order estimator on the
        whole query (eq. 6). Values never depend on ``smoothing``; only derivatives do. See
        ``jaxsim_contact.collision._smoothing`` for the rule.
      key: PRNG key of the stochastic estimators (required unless the estimator is exact or the
        Gumbel closed form on meshes / boxes). Derivatives are deterministic for a given key.
    Returns:
      ``CollisionResult``. Never NaN; ``converged`` False when a cap or budget was hit.
      ``signed_distance``, ``point_a``, ``point_b`` and ``normal`` are differentiable w.r.t. the
      poses and the shape parameters (forward and reverse mode, under ``jit`` and ``vmap``).
    Raises:
      TypeError: ``smoothing`` is not a ``Smoothing``, or a stochastic estimator has no ``key``.
    """
    _check_args(shape_a, shape_b, method, max_iterations)
    _check_epa_budget(epa_max_vertices)
    if smoothing is not None and not isinstance(smoothing, Smoothing):
        raise TypeError(
            f"smoothing must be a jc.collision.Smoothing or None, got {type(smoothing).__name__}"
        )
    if key is None and needs_key(smoothing, shape_a, shape_b):
        raise TypeError(
            f"distance(): the {'zeroth' if smoothing.order == 0 else 'first'}-order "
            f"{smoothing.distribution} estimator is stochastic and needs a PRNG key: pass "
            "key=jax.random.key(...)"
        )
    dtype = jnp.result_type(pose_a.pos, pose_b.pos)
    plane_pair = isinstance(shape_a, Plane) or isinstance(shape_b, Plane)
    if plane_pair and (smoothing is None or smoothing.order == 1):
        # Closed form, differentiated by plain autodiff; with first-order smoothing the shape's
        # support carries the smoothed Hessian.
        return _plane_query(shape_a, pose_a, shape_b, pose_b, dtype, smoothing, key)
    tolerance = jnp.asarray(default_tolerance(dtype) if tolerance is None else tolerance, dtype)
    epa_tolerance = jnp.asarray(
        _default_epa_tolerance(dtype) if epa_tolerance is None else epa_tolerance, dtype
    )
    config = RuleConfig(
        order=None if smoothing is None else smoothing.order,
        distribution="gaussian" if smoothing is None else smoothing.distribution,
        num_samples=1 if smoothing is None else smoothing.num_samples,
        method=method,
        max_iterations=max_iterations,
        epa_max_vertices=epa_max_vertices,
        neighborhood=None if smoothing is None else smoothing.neighborhood,
    )
    frozen = jax.lax.stop_gradient((shape_a, pose_a, shape_b, pose_b, warm_start))
    raw = _rule_query(config, *frozen[:4], tolerance, epa_tolerance, frozen[4])
    noise = jnp.zeros((), dtype) if smoothing is None else smoothing.noise.astype(dtype)
    key = jax.random.PRNGKey(0) if key is None else key
    signed, point_a, point_b, normal = attach_derivatives(
        config, shape_a, pose_a, shape_b, pose_b, noise, key, tolerance, epa_tolerance,
        raw.signed_distance, raw.point_a, raw.point_b, raw.normal,
    )
    return raw._replace(signed_distance=signed, point_a=point_a, point_b=point_b, normal=normal)


def _rule_query(config, shape_a, pose_a, shape_b, pose_b, tolerance, epa_tolerance, warm_start):
    return _query(
        shape_a, pose_a, shape_b, pose_b, config.method, config.max_iterations, tolerance,
        warm_start, config.epa_max_vertices, epa_tolerance,
    )


make_rule(_rule_query)


def _plane_query(shape_a, pose_a, shape_b, pose_b, dtype, smoothing, key):
    flip = isinstance(shape_b, Plane)
    plane_pose, shape, pose = (pose_b, shape_a, pose_a) if flip else (pose_a, shape_b, pose_b)
    support_fn = None
    if smoothing is not None:
        config = RuleConfig(
            smoothing.order, smoothing.distribution, smoothing.num_samples, "", 0, 0,
            smoothing.neighborhood,
        )
        key = jax.random.PRNGKey(0) if key is None else key
        noise = smoothing.noise.astype(dtype)
        support_fn = lambda d: smoothed_world_support(config, shape, pose, d, noise, key)  # noqa: E731
    signed, on_plane, deepest, normal = _plane_distance(plane_pose, shape, pose, dtype, support_fn)
    if flip:
        point_a, point_b, normal = deepest, on_plane, -normal
    else:
        point_a, point_b = on_plane, deepest
    zero = jnp.zeros((), jnp.int32)
    return CollisionResult(signed, point_a, point_b, normal, zero, zero, jnp.isfinite(signed))


def _query(
    shape_a, pose_a, shape_b, pose_b, method, max_iterations, tolerance, warm_start,
    epa_max_vertices, epa_tolerance,
) -> CollisionResult:
    """The GJK / EPA query behind ``distance`` (no derivative rule)."""
    _check_args(shape_a, shape_b, method, max_iterations)
    _check_epa_budget(epa_max_vertices)
    dtype = jnp.result_type(pose_a.pos, pose_b.pos)
    if isinstance(shape_a, Plane) or isinstance(shape_b, Plane):
        flip = isinstance(shape_b, Plane)
        if flip:
            signed, on_plane, deepest, normal = _plane_distance(pose_b, shape_a, pose_a, dtype)
            point_a, point_b, normal = deepest, on_plane, -normal
        else:
            signed, on_plane, deepest, normal = _plane_distance(pose_a, shape_b, pose_b, dtype)
            point_a, point_b = on_plane, deepest
        zero = jnp.zeros((), jnp.int32)
        return CollisionResult(signed, point_a, point_b, normal, zero, zero, jnp.isfinite(signed))

    tolerance = default_tolerance(dtype) if tolerance is None else tolerance
    epa_tolerance = _default_epa_tolerance(dtype) if epa_tolerance is None else epa_tolerance
    length, x0 = _pair_scale_and_start(shape_a, pose_a, shape_b, pose_b, warm_start, dtype)

    core_support = _minkowski_support(shape_a, pose_a, shape_b, pose_b, core=True)
    gjk_kwargs = dict(
        method=method, max_iterations=max_iterations, tolerance=tolerance,
        stall_tolerance=epa_tolerance,
        normalize=_normalize_nesterov(shape_a, shape_b),
    )
    gjk = run_gjk(core_support, x0, length, **gjk_kwargs)

    x = gjk.x
    x_norm = safe_norm(x)
    normal_sep = _separation_normal(gjk, length, dtype)
    point_a = gjk.barycentric @ gjk.support_a
    point_b = gjk.barycentric @ gjk.support_b
    radius_a = shape_a.inflation.astype(dtype) if shape_a.has_inflation else jnp.zeros((), dtype)
    radius_b = shape_b.inflation.astype(dtype) if shape_b.has_inflation else jnp.zeros((), dtype)
    sep_distance = x_norm - radius_a - radius_b
    sep_point_a = point_a + radius_a * normal_sep
    sep_point_b = point_b - radius_b * normal_sep

    # GJK stalled undecided at contact (|x| below sqrt(eps)·L, bracket above tolerance): the
    # direction of x is rounding noise there (origin on an edge of the simplex), so the pair is
    # resolved like a penetrating one — EPA's face normals come from O(L) vertices. EPA reports
    # the signed distance of the origin to its closest face, ≈ 0 either side.
    stalled_at_contact = ~gjk.converged & (x_norm <= jnp.sqrt(jnp.finfo(dtype).eps) * length)
    needs_epa = gjk.intersecting | stalled_at_contact
    # EPA runs on the same Minkowski difference as GJK: the cores' K for swept spheres. The full
    # difference is K ⊕ ball(r_a + r_b) and, for the origin inside convex K, its distance to the
    # boundary is exactly depth_K + r_a + r_b along the same normal — no polytope has to
    # approximate the round part (a ball of radius r needs ~r/tol vertices to reach tol).
    epa = _gated_epa(epa_max_vertices)(
        needs_epa,
        (shape_a, pose_a, shape_b, pose_b, gjk.points, gjk.support_a, gjk.support_b, gjk.mask,
         length, jnp.asarray(epa_tolerance, dtype)),
    )
    # K without 3-D extent (coincident sphere centres, a centre on a capsule axis): depth_K = 0
    # and GJK's simplex already expresses the origin.
    core_a = jnp.where(epa.degenerate, point_a, epa.point_a)
    core_b = jnp.where(epa.degenerate, point_b, epa.point_b)
    pen_point_a = core_a + radius_a * epa.normal
    pen_point_b = core_b - radius_b * epa.normal

    signed = jnp.where(needs_epa, -(epa.depth + radius_a + radius_b), sep_distance)
    normal = jnp.where(needs_epa, epa.normal, normal_sep)
    point_a = jnp.where(needs_epa, pen_point_a, sep_point_a)
    point_b = jnp.where(needs_epa, pen_point_b, sep_point_b)
    converged = jnp.where(needs_epa, epa.converged, gjk.converged)
    epa_iterations = jnp.where(needs_epa, epa.iterations, 0)
    iterations = gjk.iterations
    if isinstance(shape_a, _SMOOTH) and isinstance(shape_b, _SMOOTH):
        signed, point_a, point_b, normal = _polish_smooth(
            shape_a, pose_a, shape_b, pose_b, signed, point_a, point_b, normal, length
        )
    return CollisionResult(signed, point_a, point_b, normal, iterations, epa_iterations, converged)


def _epa_on(operands, max_vertices, skip, first_vertices):
    shape_a, pose_a, shape_b, pose_b, points, support_a, support_b, mask, length, tol = operands
    core_support = _minkowski_support(shape_a, pose_a, shape_b, pose_b, core=True)
    return run_epa(
        core_support, points, support_a, support_b, mask, length,
        max_vertices=max_vertices, tolerance=tol, skip=skip, first_vertices=first_vertices,
    )


def _batched_first_vertices(max_vertices: int) -> int:
    """Vertex slots of EPA's first polytope under ``vmap`` (``max_vertices``: no first one).

    A batched loop runs as many iterations as its slowest lane, every one over all face slots,
    so a small first polytope that most lanes finish in pays for its second compiled loop
    when it is at most a quarter of the budget: vmapped box and polyhedral hull pairs run markedly
    faster at the default 128; the narrow phase's 64 keep one polytope. A single query's loop
    cost is mostly per-kernel overhead, not width, so it keeps one polytope (and one compiled
    loop).
    """
    first = FIRST_TIER_VERTICES
    return first if 4 * first <= max_vertices else max_vertices


@functools.cache
def _gated_epa(max_vertices: int):
    """``run_epa`` only where it is needed, also across a ``vmap`` batch.

    ``needs`` is traced, so ``lax.cond`` on it would become a ``select`` under ``vmap`` and every
    lane would pay for EPA's polytope set-up (far more than a GJK iteration at the default
    128-vertex budget) even when no lane penetrates. The batching rule branches on "any lane
    needs EPA" instead: a batch of separated pairs skips EPA entirely; otherwise EPA runs on the
    whole batch with the lanes that do not need it frozen from the start (``skip``). Lanes that
    skip get an all-zero ``EPAResult``, which ``_query`` never selects.
    """

    # EPA is the largest program traced here: wrapping it in ``jit`` lets the skipped branch's
    # shapes (``eval_shape``) and the branch itself share one trace (jit's trace cache), where
    # two plain calls would trace EPA's Python twice.
    full = jax.jit(lambda o: _epa_on(o, max_vertices, False, max_vertices))

    def skipped(operands):
        return jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), jax.eval_shape(full, operands))

    @jax.custom_batching.custom_vmap
    def gated(needs, operands):
        return jax.lax.cond(needs, full, skipped, operands)

    @gated.def_vmap
    def _rule(axis_size, in_batched, needs, operands):
        needs_batched, operands_batched = in_batched
        if not needs_batched:
            needs = jnp.broadcast_to(needs, (axis_size,))
        axes = jax.tree.map(lambda batched: 0 if batched else None, operands_batched)
        first = _batched_first_vertices(max_vertices)
        run = jax.jit(jax.vmap(lambda n, o: _epa_on(o, max_vertices, ~n, first), in_axes=(0, axes)))
        zeros = jax.tree.map(
            lambda x: jnp.zeros(x.shape, x.dtype), jax.eval_shape(run, needs, operands)
        )
        out = jax.lax.cond(jnp.any(needs), run, lambda n, o: zeros, needs, operands)
        return out, jax.tree.map(lambda _: True, out)

    return gated


_SMOOTH = (Sphere, Ellipsoid)
_POLISH_STEPS = 3


def _polish_smooth(shape_a, pose_a, shape_b, pose_b, signed, point_a, point_b, normal, length):
    """Newton steps on the optimality condition of smooth, strictly convex pairs.

    GJK's witness points lie on its simplex, EPA's on its polytope: on curved shapes they are off
    the surface by O(sqrt(tolerance))·L, a noise that finite differences of the witness points and
    of the normal see. With analytic support Hessians the condition ``P (s_b(-n) - s_a(n)) = 0``
    (seed 000 "Differentiable Collision Detection" eq. 12, see ``smoothing``) is solved by Newton in
    the normal, starting at GJK/EPA's answer: quadratic convergence, ≤ 3 steps to rounding. A step
    is kept only where it reduces the residual, so the result is never worse than GJK/EPA's.
    """
    dtype = normal.dtype
    eye = jnp.eye(3, dtype=dtype)
    sup_a = _world_support(shape_a, pose_a, False)
    sup_b = _world_support(shape_b, pose_b, False)
    rot_a, rot_b = pose_a.rotation.astype(dtype), pose_b.rotation.astype(dtype)
    lam = jnp.sqrt(jnp.finfo(dtype).eps) * length

    def residual(n):
        pa, pb = sup_a(n), sup_b(-n)
        gap = pb - pa
        delta = jnp.dot(n, gap)
        return pa, pb, delta, gap - delta * n

    def step(n):
        _, _, delta, g = residual(n)
        proj = eye - jnp.outer(n, n)
        h_a = rot_a @ shape_a.support_hessian(pose_a.inverse_rotate(n)) @ rot_a.T
        h_b = rot_b @ shape_b.support_hessian(pose_b.inverse_rotate(-n)) @ rot_b.T
        system = proj @ (h_a + h_b) @ proj + delta * proj + length * jnp.outer(n, n)
        dn = jnp.linalg.solve(system @ system + lam**2 * eye, system @ g)
        return safe_normalize(n + dn, fallback=n)

    start_residual = safe_norm(residual(normal)[3])
    # a loop, not an unrolled sequence: one compiled body instead of three (compile time)
    n = jax.lax.fori_loop(0, _POLISH_STEPS, lambda _, n: step(n), normal)
    pa, pb, delta, g = residual(n)
    better = jnp.isfinite(delta) & (safe_norm(g) < start_residual)
    return (
        jnp.where(better, delta, signed),
        jnp.where(better, pa, point_a),
        jnp.where(better, pb, point_b),
        jnp.where(better, n, normal),
    )


@full_precision_matmuls
def intersects(
    shape_a: Shape,
    pose_a: Transform,
    shape_b: Shape,
    pose_b: Transform,
    method: str = "nesterov",
    max_iterations: int = 128,
    tolerance=None,
    warm_start: jax.Array | None = None,
) -> jax.Array:
    """Whether two convex shapes overlap (touching counts as overlapping): ``()`` bool.

    Seed 000 "GJK++" Alg. 2: GJK with the separating-plane early exit — it stops as soon as a
    support plane separates the Minkowski difference from the origin, usually long before the
    distance is known. Arguments as for ``distance``. If the iteration cap is hit undecided, the
    answer is False (use ``intersection_query`` to see the ``converged`` flag).
    """
    return intersection_query(
        shape_a, pose_a, shape_b, pose_b, method, max_iterations, tolerance, warm_start
    )[0]


@full_precision_matmuls
def intersection_query(
    shape_a, pose_a, shape_b, pose_b, method="nesterov", max_iterations=128, tolerance=None,
    warm_start=None,
):
    """``intersects`` plus its statistics: ``(intersecting, iterations, converged)``."""
    _check_args(shape_a, shape_b, method, max_iterations)
    dtype = jnp.result_type(pose_a.pos, pose_b.pos)
    if isinstance(shape_a, Plane) or isinstance(shape_b, Plane):
        result = distance(shape_a, pose_a, shape_b, pose_b)
        return result.signed_distance <= 0, result.iterations, result.converged
    tolerance = default_tolerance(dtype) if tolerance is None else tolerance
    length, x0 = _pair_scale_and_start(shape_a, pose_a, shape_b, pose_b, warm_start, dtype)
    # Boolean queries run on the full shapes: the separating-plane test <d, s> > 0 must see the
    # radii of swept shapes.
    support = _minkowski_support(shape_a, pose_a, shape_b, pose_b, core=False)

    gjk = run_gjk(
        support, x0, length, method=method, max_iterations=max_iterations,
        tolerance=tolerance, boolean=True,
        normalize=_normalize_nesterov(shape_a, shape_b),
    )
    # No separating plane found: the origin was enclosed, or GJK converged to a distance within
    # tolerance of zero (touching counts as intersecting).
    intersecting = ~gjk.separated & (gjk.intersecting | gjk.converged)
    return intersecting, gjk.iterations, gjk.converged | gjk.separated
