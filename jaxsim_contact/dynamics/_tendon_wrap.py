"""Tendon wrapping around a sphere or an infinite cylinder: MuJoCo's ``mju_wrap`` in pure JAX.

A spatial tendon segment ``site - wrap geom - site`` is the shortest path between the two sites
that does not pass through the geom (MuJoCo `mju_wrap`, Computation chapter, tendon wrapping;
the XML reference describes the same rules for ``spatial/geom`` and its ``sidesite``). The
reference implementation is ``mju_wrap`` with its helpers ``wrap_circle`` and ``wrap_inside`` in
MuJoCo's ``src/engine/engine_util_misc.c``. This module reproduces what the MuJoCo 4.0.0 library
computes, which differs from the latest public source available when it was written (3.12.1
development version) in two places: the side-site rules of the circle wrap and the variable of
the inside wrap's Newton iteration (see "Side site"). Both were established by comparison with
the 4.0.0 binaries on tens of thousands of random configurations (exact agreement of every wrap
decision, points to 1e-15). Everything here works in the geom's local frame, lengths in metres.

Geometry
--------
**Sphere.** The shortest path lies in the plane through the sphere's centre and both end points.
A 2-D frame of that plane is built: first axis along ``end0``, second axis in the plane,
perpendicular to the first, towards ``end1``. When ``end0`` and ``end1`` are parallel (collinear
with the centre) the plane is not defined and MuJoCo picks one: its normal is ``end0 x h`` where
the helper ``h`` has a 0 at the largest component of ``end0`` and 1 elsewhere.

**Cylinder** (axis = local z, infinite length). The wrap is solved in the xy projection; the z
coordinates of the two tangent points then follow by sharing the height difference of the end
points in proportion to the projected lengths ``straight0 : arc : straight1`` (the cylinder
unrolled into a plane), and the arc length becomes the helix length ``sqrt(arc_xy^2 + height^2)``.

**2-D circle wrap.** With the end points ``d0``, ``d1`` outside the circle of radius ``r``, each
has two tangent points ``(r^2 d +- r sqrt(|d|^2 - r^2) perp(d)) / |d|^2``; they pair into two
candidate paths, one going clockwise round the centre (candidate 0) and one counter-clockwise
(candidate 1). A candidate whose two straight pieces cross each other is penalised. Without a
side site the candidate with the shorter chord between its tangent points wins. The arc length is
``r`` times the angle between the tangent points, the long way round (``2 pi - angle``) when the
chosen direction requires it.

**Side site.** The side site is projected into the wrap plane (for the cylinder: onto xy) and
scaled to the radius. MuJoCo 4.0.0 picks the candidate whose direction round the centre matches
the winding of the polyline ``d0 -> side -> d1`` (the sum of the two signed angles seen from the
centre; positive = counter-clockwise). When the straight segment misses the circle the tendon
still wraps if that winding exceeds ``pi`` in magnitude, i.e. the ray from the centre away from
the side site crosses the segment: the side site is behind the geom, and the tendon is pulled
round the side site's side. (The older source instead compared arc midpoints with the side site,
and wrapped a missing segment whenever its nearest point was on the far side.)

If the side site is inside the geom (its 3-D distance to the geom origin below the radius, also
for cylinders) the tendon is instead constrained to pass *through* the geom ("inside" wrap,
``wrap_inside``): the path touches the circle at one point, where the angles of incidence and
reflection are equal. With ``A = r/|d0|``, ``B = r/|d1|`` and ``G`` the angle between ``d0`` and
``d1``, the angle of incidence ``phi`` solves ``asin(A sin phi) + asin(B sin phi) - 2 phi + G = 0``.
As in MuJoCo 4.0.0, Newton's method starts at ``phi = pi/2`` and stops once the residual is at
most ``1e-6`` (the older source iterated on ``z = sin phi`` from ``1 - 1e-7``, which stops at
other points); at most 20 iterations; the function is concave and decreasing, so the iterates
descend monotonically onto the root. Both tangent points are that point and the arc length is 0.
Where the iteration is not used (end points on one ray from the centre) or fails, MuJoCo returns
the radius-scaled direction of the midpoint of the end points, and so does this module.

**No wrap** (MuJoCo returns -1; here ``wraps`` is False) when: an end point is within ``1e-15`` of
the centre; the radius is below ``1e-15``; circle wrap: an end point is inside the (projected)
circle, the projected end points are within ``sqrt(1e-15)`` of each other, the segment misses the
circle (and no side site pulls it round, see above), or the chosen candidate's straight pieces
cross; inside wrap: an end point is inside or on the circle, the segment crosses the circle, or
the end points are on opposite rays from the centre.

Degenerate inputs are handled as MuJoCo does (normalising a vector shorter than ``1e-15`` gives
``(1, 0, ...)``, ties go to candidate 1). Deliberate difference, only where MuJoCo's result would
be NaN: the cosine of the arc angle is clipped to ``[-1, 1]`` before ``acos`` (round-off can push
it just outside when both tangent points nearly coincide).

Differentiability: every square root, division, ``acos`` and ``asin`` has its input replaced by a
harmless value (``jnp.where`` on the input, not only on the output) wherever it would be singular,
so values and forward/reverse derivatives are finite for any finite input, including where
``wraps`` is False. Discrete choices (wrap or not, which candidate, Newton's stopping) have zero
derivative. The inside-wrap iteration carries its own derivative (forward mode through the
iterates, exact for the returned iterate), so neither ``jacfwd`` nor ``jacrev`` differentiates the
loop. The arc angle's derivative comes from an ``atan2`` form that stays accurate for nearly
coincident tangent points, while its value is MuJoCo's ``acos`` form.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["WrapResult", "wrap"]

#: MuJoCo's ``mjMINVAL``: smallest norm, denominator or radius treated as non-zero
MIN_VALUE = 1e-15
#: inside wrap: Newton iteration cap and tolerance on the residual (MuJoCo's values)
INSIDE_MAX_ITERATIONS = 20
INSIDE_TOLERANCE = 1e-6
#: circle wrap: goodness given to a candidate whose two straight pieces cross
CROSSING_PENALTY = -10000.0

Flag = bool | jax.Array


class WrapResult(NamedTuple):
    """Result of :func:`wrap`, all in the wrap geom's local frame.

    Attributes:
      wraps: ``()`` bool; False where MuJoCo's ``mju_wrap`` returns -1 (straight segment).
      arc_length: ``()`` path length along the geom between the tangent points (m); helical for
        cylinders; 0 for an inside wrap and where ``wraps`` is False.
      tangent0: ``(3,)`` point where the straight piece from ``end0`` meets the geom (m); zeros
        where ``wraps`` is False.
      tangent1: ``(3,)`` point where the straight piece to ``end1`` leaves the geom (m); zeros
        where ``wraps`` is False.
    """

    wraps: jax.Array
    arc_length: jax.Array
    tangent0: jax.Array
    tangent1: jax.Array


# --------------------------------------------------------------------------------------------
# helpers. Vectors are tuples of scalars (XLA:CPU is slow on size-2/3 reductions); the two
# circle-wrap candidates share one trailing axis of size 2.


def _pick(flag: Flag, if_true: Callable, if_false: Callable):
    """``if_true()`` or ``if_false()`` for a Python bool; both, selected by ``jnp.where``, for a
    traced bool (pytrees of equal structure)."""
    if isinstance(flag, (bool, np.bool_)):
        return if_true() if flag else if_false()
    return jax.tree.map(lambda a, b: jnp.where(flag, a, b), if_true(), if_false())


def _safe_sqrt(square: jax.Array) -> jax.Array:
    """``sqrt(max(square, 0))``, value and derivative 0 where ``square <= 0``."""
    positive = square > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, square, 1.0)), 0.0)


def _safe_denominator(denominator: jax.Array, usable: jax.Array) -> jax.Array:
    """``denominator`` where ``usable`` (the caller guarantees it is non-zero there), else 1."""
    return jnp.where(usable, denominator, 1.0)


def _safe_asin(x: jax.Array) -> jax.Array:
    """``asin(x)`` for ``|x| < 1``; ``+-pi/2`` (derivative 0) outside."""
    inside = jnp.abs(x) < 1
    return jnp.where(inside, jnp.arcsin(jnp.where(inside, x, 0.0)), jnp.sign(x) * (jnp.pi / 2))


def _safe_acos(x: jax.Array) -> jax.Array:
    """``acos(x)`` for ``|x| < 1``; ``acos(clip(x, -1, 1))`` (derivative 0) outside."""
    inside = jnp.abs(x) < 1
    return jnp.where(inside, jnp.arccos(jnp.where(inside, x, 0.0)), jnp.where(x > 0, 0.0, jnp.pi))


def _normalize(vector: tuple) -> tuple[tuple, jax.Array]:
    """MuJoCo's ``mju_normalize``: ``(unit vector, norm)``; the unit vector is ``(1, 0, ...)``
    where the norm is below ``MIN_VALUE``."""
    norm = _safe_sqrt(sum(component * component for component in vector))
    tiny = norm < MIN_VALUE
    inverse = 1.0 / _safe_denominator(norm, ~tiny)
    unit = tuple(
        jnp.where(tiny, 1.0 if index == 0 else 0.0, component * inverse)
        for index, component in enumerate(vector)
    )
    return unit, norm


def _dot(a: tuple, b: tuple) -> jax.Array:
    return sum(x * y for x, y in zip(a, b))


def _cross(a: tuple, b: tuple) -> tuple:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _cross2(a: tuple, b: tuple) -> jax.Array:
    return a[0] * b[1] - a[1] * b[0]


def _segments_cross(start0: tuple, stop0: tuple, start1: tuple, stop1: tuple) -> jax.Array:
    """Whether the 2-D segments ``start0-stop0`` and ``start1-stop1`` intersect (MuJoCo's
    ``is_intersect``: parallel segments, ``|det| < MIN_VALUE``, never do). Boolean."""
    start0, stop0, start1, stop1 = jax.lax.stop_gradient((start0, stop0, start1, stop1))
    span0 = (stop0[0] - start0[0], stop0[1] - start0[1])
    span1 = (stop1[0] - start1[0], stop1[1] - start1[1])
    offset = (start0[0] - start1[0], start0[1] - start1[1])
    det = span1[1] * span0[0] - span1[0] * span0[1]
    parallel = jnp.abs(det) < MIN_VALUE
    det = _safe_denominator(det, ~parallel)
    along0 = (span1[0] * offset[1] - span1[1] * offset[0]) / det
    along1 = (span0[0] * offset[1] - span0[1] * offset[0]) / det
    return ~parallel & (along0 >= 0) & (along0 <= 1) & (along1 >= 0) & (along1 <= 1)


def _arc_length(tangent0: tuple, tangent1: tuple, second: jax.Array, radius) -> jax.Array:
    """MuJoCo's ``length_circle``: ``radius`` times the angle between the 2-D tangent points,
    ``2 pi - angle`` when their turn direction disagrees with the candidate (``second``). Value
    from ``acos`` of the normalised dot product (as MuJoCo); derivative from ``atan2``."""
    unit0, _ = _normalize(tangent0)
    unit1, _ = _normalize(tangent1)
    cosine = _dot(unit0, unit1)
    sine = jnp.abs(_cross2(unit0, unit1))
    degenerate = (sine == 0) & (cosine == 0)
    smooth_angle = jnp.arctan2(sine, jnp.where(degenerate, 1.0, cosine))
    angle = smooth_angle + jax.lax.stop_gradient(_safe_acos(cosine) - smooth_angle)
    turn = tangent0[1] * tangent1[0] - tangent0[0] * tangent1[1]
    long_way = ((turn > 0) & second) | ((turn < 0) & ~second)
    return radius * jnp.where(long_way, 2 * jnp.pi - angle, angle)


# --------------------------------------------------------------------------------------------
# 2-D circle wrap


def _circle_wrap(end0: tuple, end1: tuple, radius, side_point: tuple | None, use_side: Flag):
    """MuJoCo 4.0.0's ``wrap_circle``. ``end0``, ``end1``: 2-D end points; ``side_point``: 2-D
    side site (any length; None when there is none), used where ``use_side``.
    Returns ``(wraps, tangent0, tangent1, arc_length)``."""
    sqlen0 = end0[0] * end0[0] + end0[1] * end0[1]
    sqlen1 = end1[0] * end1[0] + end1[1] * end1[1]
    sqrad = radius * radius
    outside = ~((sqlen0 < sqrad) | (sqlen1 < sqrad) | (radius < MIN_VALUE))

    difference = (end1[0] - end0[0], end1[1] - end0[1])
    sqdistance = difference[0] * difference[0] + difference[1] * difference[1]
    apart = sqdistance >= MIN_VALUE

    # does the straight segment miss the circle? (nearest point of the segment to the centre)
    along = -_dot(difference, end0) / _safe_denominator(sqdistance, apart)
    along = jnp.clip(along, 0.0, 1.0)
    nearest = (along * difference[0] + end0[0], along * difference[1] + end0[1])
    misses = jax.lax.stop_gradient(_dot(nearest, nearest) > sqrad)

    # side site: winding of end0 -> side -> end1 round the centre (> 0: counter-clockwise)
    if side_point is not None:
        ends, side = jax.lax.stop_gradient((end0, end1)), jax.lax.stop_gradient(side_point)
        winding = jnp.arctan2(_cross2(ends[0], side), _dot(ends[0], side)) + jnp.arctan2(
            _cross2(side, ends[1]), _dot(side, ends[1])
        )
        pulled_round = jnp.abs(winding) > jnp.pi
        counterclockwise_side = winding > 0
        misses = misses & ~_pick(use_side, lambda: pulled_round, lambda: False)

    # the two candidates (axis of size 2): 0 = clockwise round the centre, 1 = counter-clockwise
    sign = jnp.asarray([1.0, -1.0], sqlen0.dtype)
    root0 = _safe_sqrt(sqlen0 - sqrad) * sign * radius
    root1 = _safe_sqrt(sqlen1 - sqrad) * sign * radius
    denominator0 = _safe_denominator(sqlen0, outside & (sqlen0 > 0))
    denominator1 = _safe_denominator(sqlen1, outside & (sqlen1 > 0))
    tangent0 = (
        (end0[0] * sqrad + end0[1] * root0) / denominator0,
        (end0[1] * sqrad - end0[0] * root0) / denominator0,
    )
    tangent1 = (
        (end1[0] * sqrad - end1[1] * root1) / denominator1,
        (end1[1] * sqrad + end1[0] * root1) / denominator1,
    )
    crossing = _segments_cross(end0, tangent0, end1, tangent1)

    def by_chord():
        chord = jax.lax.stop_gradient((tangent0[0] - tangent1[0], tangent0[1] - tangent1[1]))
        return -(chord[0] * chord[0] + chord[1] * chord[1])

    def by_side():
        return jnp.where(counterclockwise_side == (sign < 0), 1.0, 0.0)

    goodness = by_chord() if side_point is None else _pick(use_side, by_side, by_chord)
    goodness = jnp.where(crossing, CROSSING_PENALTY, goodness)
    second = ~(goodness[0] > goodness[1])

    def choose(pair):
        return jnp.where(second, pair[1], pair[0])

    chosen0 = (choose(tangent0[0]), choose(tangent0[1]))
    chosen1 = (choose(tangent1[0]), choose(tangent1[1]))
    wraps = outside & apart & ~misses & ~choose(crossing)
    return wraps, chosen0, chosen1, _arc_length(chosen0, chosen1, second, radius)


# --------------------------------------------------------------------------------------------
# 2-D inside wrap


def _inside_residual(phi: jax.Array, params: jax.Array) -> jax.Array:
    """``asin(A sin phi) + asin(B sin phi) - 2 phi + G`` for ``params = (A, B, G)``."""
    sine = jnp.sin(phi)
    return _safe_asin(params[0] * sine) + _safe_asin(params[1] * sine) - 2 * phi + params[2]


def _inside_newton_iterate(params: jax.Array, with_sensitivity: bool):
    """Newton's iteration of the inside wrap for ``params = (A, B, G)`` (``(3,)``; the caller
    guarantees ``0 < A, B < 1`` and ``0 < G < pi``). Returns ``phi``, ``converged`` (1.0 or 0.0:
    MuJoCo falls back to the midpoint direction otherwise) and, if ``with_sensitivity``,
    ``d phi / d params`` ``(3,)``: the derivative of the returned iterate, carried through the
    iterations in forward mode (else None)."""
    dtype = params.dtype
    ratio0, ratio1 = params[0], params[1]
    phi = jnp.asarray(jnp.pi / 2, dtype)
    residual = _inside_residual(phi, params)
    failed = residual > 0  # start already past the root: MuJoCo keeps the fallback
    sensitivity = jnp.zeros(3, dtype) if with_sensitivity else None

    def newton_step(carry, _):
        phi, residual, failed, sensitivity = carry
        active = ~failed & (jnp.abs(residual) > INSIDE_TOLERANCE)
        sine, cosine = jnp.sin(phi), jnp.cos(phi)
        # 1 / sqrt(1 - ratio^2 sin^2 phi): >= 1 and finite here (ratio < 1); guarded anyway
        secant0 = 1.0 / jnp.maximum(MIN_VALUE, _safe_sqrt(1 - (ratio0 * sine) ** 2))
        secant1 = 1.0 / jnp.maximum(MIN_VALUE, _safe_sqrt(1 - (ratio1 * sine) ** 2))
        slope = (ratio0 * secant0 + ratio1 * secant1) * cosine - 2  # <= A + B - 2 < 0
        inverse_slope = 1.0 / jnp.where(slope > -MIN_VALUE, -1.0, slope)
        phi_next = phi - residual * inverse_slope
        # MuJoCo's safeguards (never met for this concave, decreasing function): a step to the
        # right or a residual that turns positive abandons the iteration
        moved_right = phi_next > phi
        proceed = active & ~moved_right
        phi_next = jnp.where(proceed, phi_next, phi)
        residual_next = _inside_residual(phi_next, params)
        failed = failed | (active & (moved_right | (residual_next > INSIDE_TOLERANCE)))
        if with_sensitivity:
            # derivatives of the update phi - F / F' (F' = slope, F'' = curvature), written out:
            # d/dA asin(A sin phi) = sin phi * secant0, d/dA F' = cos phi * secant0^3, ...
            cubed0, cubed1 = secant0**3, secant1**3
            curvature = sine * (
                ratio0 * cubed0 * (ratio0**2 - 1) + ratio1 * cubed1 * (ratio1**2 - 1)
            )
            scaled_residual = residual * inverse_slope * inverse_slope
            d_update_dphi = scaled_residual * curvature
            d_update_dparams = jnp.stack(
                [
                    -sine * secant0 * inverse_slope + scaled_residual * cosine * cubed0,
                    -sine * secant1 * inverse_slope + scaled_residual * cosine * cubed1,
                    -inverse_slope,
                ]
            )
            sensitivity = jnp.where(
                proceed, d_update_dphi * sensitivity + d_update_dparams, sensitivity
            )
        return (phi_next, jnp.where(proceed, residual_next, residual), failed, sensitivity), None

    # MuJoCo counts the loop's updates and gives up when the 20th one was needed
    (phi, residual, failed, sensitivity), _ = jax.lax.scan(
        newton_step, (phi, residual, failed, sensitivity), None, INSIDE_MAX_ITERATIONS - 1
    )
    converged = ~failed & (jnp.abs(residual) <= INSIDE_TOLERANCE)
    return phi, converged.astype(dtype), sensitivity


@jax.custom_jvp
def _inside_newton(params: jax.Array):
    """``(phi, converged)`` of :func:`_inside_newton_iterate`. Its derivative is the carried
    sensitivity, so neither jacfwd nor jacrev differentiates the loop itself (higher derivatives
    do, through the sensitivity)."""
    phi, converged, _ = _inside_newton_iterate(params, with_sensitivity=False)
    return phi, converged


@_inside_newton.defjvp
def _inside_newton_jvp(primals, tangents):
    (params,), (params_tangent,) = primals, tangents
    phi, converged, sensitivity = _inside_newton_iterate(params, with_sensitivity=True)
    phi_tangent = _dot(tuple(sensitivity), tuple(params_tangent))
    return (phi, converged), (phi_tangent, jnp.zeros_like(converged))


def _inside_wrap(end0: tuple, end1: tuple, radius):
    """MuJoCo 4.0.0's ``wrap_inside``: the one point where the path through the circle touches
    it. ``end0``, ``end1``: 2-D end points. Returns ``(wraps, point)`` (arc length 0)."""
    len0 = _safe_sqrt(end0[0] * end0[0] + end0[1] * end0[1])
    len1 = _safe_sqrt(end1[0] * end1[0] + end1[1] * end1[1])
    difference = (end1[0] - end0[0], end1[1] - end0[1])
    sqdistance = difference[0] * difference[0] + difference[1] * difference[1]
    outside = ~(
        (len0 <= radius)
        | (len1 <= radius)
        | (radius < MIN_VALUE)
        | (len0 < MIN_VALUE)
        | (len1 < MIN_VALUE)
    )

    # the straight segment crosses the circle: no wrap
    apart = sqdistance > MIN_VALUE
    along = -_dot(difference, end0) / _safe_denominator(sqdistance, apart)
    nearest = (end0[0] + along * difference[0], end0[1] + along * difference[1])
    nearest_norm = _safe_sqrt(_dot(nearest, nearest))
    crosses = apart & (along > 0) & (along < 1) & (nearest_norm <= radius)

    # fallback where the iteration is not used or fails: midpoint direction at the radius
    middle, _ = _normalize((0.5 * (end0[0] + end1[0]), 0.5 * (end0[1] + end1[1])))
    fallback = (radius * middle[0], radius * middle[1])

    ratio0 = radius / _safe_denominator(len0, outside)
    ratio1 = radius / _safe_denominator(len1, outside)
    cos_angle = (len0 * len0 + len1 * len1 - sqdistance) / _safe_denominator(
        2 * len0 * len1, outside
    )
    opposite = cos_angle < -1 + MIN_VALUE
    same_ray = cos_angle > 1 - MIN_VALUE
    solvable = outside & ~opposite & ~same_ray
    # lanes that do not iterate get harmless parameters (their result is discarded)
    params = jnp.stack(
        [
            jnp.where(solvable, ratio0, 0.5),
            jnp.where(solvable, ratio1, 0.5),
            jnp.where(solvable, _safe_acos(cos_angle), 1.0),
        ]
    )
    phi, converged = _inside_newton(params)
    converged = (converged > 0.5) & solvable

    # rotate the direction of one end point by the reflection angle, towards the other
    counterclockwise = _cross2(end0, end1) > 0
    reference, _ = _normalize(
        tuple(jnp.where(counterclockwise, a, b) for a, b in zip(end0, end1))
    )
    rotation = phi - _safe_asin(jnp.where(counterclockwise, params[0], params[1]) * jnp.sin(phi))
    cos_rotation, sin_rotation = jnp.cos(rotation), jnp.sin(rotation)
    solved = (
        radius * (cos_rotation * reference[0] - sin_rotation * reference[1]),
        radius * (sin_rotation * reference[0] + cos_rotation * reference[1]),
    )
    point = tuple(jnp.where(converged, s, f) for s, f in zip(solved, fallback))
    return outside & ~crosses & ~opposite, point


# --------------------------------------------------------------------------------------------
# 3-D wrap


def _sphere_plane_axes(end0: tuple, end1: tuple) -> tuple[tuple, tuple]:
    """Orthonormal axes (3-D tuples) of the plane through the centre and both end points."""
    axis0, _ = _normalize(end0)
    normal, normal_norm = _normalize(_cross(end0, end1))
    # end points parallel: MuJoCo's helper axis, 0 at the largest |component| of axis0
    magnitude = [jnp.abs(component) for component in axis0]
    largest1 = (magnitude[1] > magnitude[0]) & (magnitude[1] > magnitude[2])
    largest2 = (magnitude[2] > magnitude[0]) & (magnitude[2] > magnitude[1])
    helper = (
        jnp.where(largest1 | largest2, 1.0, 0.0),
        jnp.where(largest1, 0.0, 1.0),
        jnp.where(largest2, 0.0, 1.0),
    )
    helper_normal, _ = _normalize(_cross(axis0, helper))
    parallel = normal_norm < MIN_VALUE
    normal = tuple(jnp.where(parallel, h, n) for h, n in zip(helper_normal, normal))
    axis1, _ = _normalize(_cross(normal, axis0))
    return axis0, axis1


def wrap(
    end0: jax.Array,
    end1: jax.Array,
    radius: jax.Array,
    *,
    cylinder: Flag,
    side: jax.Array | None,
    has_side: Flag,
) -> WrapResult:
    """Wrap a tendon segment around a sphere or an infinite cylinder, as MuJoCo's ``mju_wrap``.

    All points are in the wrap geom's local frame (origin at the geom centre; cylinder axis along
    local z). One instance; ``jax.vmap`` for batches. Float32 or float64 (the inputs' type).

    Args:
      end0: ``(3,)`` path point (site) before the geom (m).
      end1: ``(3,)`` path point (site) after the geom (m).
      radius: ``()`` geom radius (m).
      cylinder: True for a cylinder (axis = local z), False for a sphere. Normally a static
        Python bool; a traced ``()`` bool array is accepted too (both geometries are then
        computed and selected).
      side: ``(3,)`` side site position (m); ignored unless ``has_side`` (may then be None).
      has_side: whether the wrap has a side site (static Python bool, or a traced ``()`` bool
        array as for ``cylinder``). A side site inside the geom (distance to the origin below
        ``radius``) makes the tendon pass through the geom instead of round it.
    Returns:
      :class:`WrapResult`: ``wraps`` (bool), ``arc_length`` (m; helical for cylinders, 0 for an
      inside wrap), ``tangent0``/``tangent1`` ``(3,)`` (m). Where ``wraps`` is False the tendon is
      the straight segment and the other fields are 0. The tendon length of this segment is
      ``|end0 - tangent0| + arc_length + |tangent1 - end1|`` where it wraps, else
      ``|end0 - end1|``.
    """
    static_no_side = isinstance(has_side, (bool, np.bool_)) and not has_side
    arrays = [end0, end1, radius] + ([] if static_no_side or side is None else [side])
    dtype = jnp.result_type(*arrays)
    if not jnp.issubdtype(dtype, jnp.inexact):
        dtype = jnp.result_type(float)
    end0 = jnp.asarray(end0, dtype)
    end1 = jnp.asarray(end1, dtype)
    radius = jnp.asarray(radius, dtype)
    point0 = (end0[0], end0[1], end0[2])
    point1 = (end1[0], end1[1], end1[2])

    at_centre = (_normalize(point0)[1] < MIN_VALUE) | (_normalize(point1)[1] < MIN_VALUE)

    def cylinder_axes():
        zero, one = jnp.zeros((), dtype), jnp.ones((), dtype)
        return (one, zero, zero), (zero, one, zero)

    axis0, axis1 = _pick(cylinder, cylinder_axes, lambda: _sphere_plane_axes(point0, point1))
    planar0 = (_dot(point0, axis0), _dot(point0, axis1))
    planar1 = (_dot(point1, axis0), _dot(point1, axis1))

    if static_no_side:
        plane_wraps, tangent0_2d, tangent1_2d, arc = _circle_wrap(
            planar0, planar1, radius, None, False
        )
    else:
        if side is None:
            raise ValueError("wrap: side is required unless has_side is the Python bool False")
        side = jnp.asarray(side, dtype)
        side_point = (side[0], side[1], side[2])
        side_planar, _ = _normalize((_dot(side_point, axis0), _dot(side_point, axis1)))
        side_planar = (radius * side_planar[0], radius * side_planar[1])
        circle_wraps, circle0, circle1, circle_arc = _circle_wrap(
            planar0, planar1, radius, side_planar, has_side
        )
        inside_wraps, inside_point = _inside_wrap(planar0, planar1, radius)
        side_inside = _normalize(side_point)[1] < radius
        if not isinstance(has_side, (bool, np.bool_)):
            side_inside = side_inside & has_side
        plane_wraps = jnp.where(side_inside, inside_wraps, circle_wraps)
        tangent0_2d = tuple(jnp.where(side_inside, i, c) for i, c in zip(inside_point, circle0))
        tangent1_2d = tuple(jnp.where(side_inside, i, c) for i, c in zip(inside_point, circle1))
        arc = jnp.where(side_inside, 0.0, circle_arc)

    tangent0 = [a * tangent0_2d[0] + b * tangent0_2d[1] for a, b in zip(axis0, axis1)]
    tangent1 = [a * tangent1_2d[0] + b * tangent1_2d[1] for a, b in zip(axis0, axis1)]

    def helical():
        # unroll the cylinder: share the height difference in proportion to the xy lengths
        straight0 = _safe_sqrt((point0[0] - tangent0[0]) ** 2 + (point0[1] - tangent0[1]) ** 2)
        straight1 = _safe_sqrt((point1[0] - tangent1[0]) ** 2 + (point1[1] - tangent1[1]) ** 2)
        total = straight0 + arc + straight1
        total = _safe_denominator(total, total > 0)
        rise = point1[2] - point0[2]
        height0 = point0[2] + rise * straight0 / total
        height1 = point0[2] + rise * (straight0 + arc) / total
        height = jnp.abs(height1 - height0)
        return height0, height1, _safe_sqrt(arc * arc + height * height)

    height0, height1, arc = _pick(cylinder, helical, lambda: (tangent0[2], tangent1[2], arc))
    tangent0[2], tangent1[2] = height0, height1

    wraps = ~at_centre & plane_wraps
    return WrapResult(
        wraps=wraps,
        arc_length=jnp.where(wraps, arc, 0.0),
        tangent0=jnp.where(wraps, jnp.stack(tangent0), 0.0),
        tangent1=jnp.where(wraps, jnp.stack(tangent1), 0.0),
    )
