"""GJK as fully-corrective Frank–Wolfe, with Polyak and Nesterov acceleration.

Seed 000 "GJK++": vanilla GJK (Alg. 4), Polyak- and Nesterov-accelerated GJK (Alg. 6) with the
support-direction normalisation of Alg. 7 for Nesterov, the switch back to vanilla when the
fixed-point condition (eq. 31/32) holds, the Frank–Wolfe duality-gap stopping rule (eqs. 16–18),
and the separating-plane early exit for Boolean queries (Alg. 2).

All loops run at most ``max_iterations`` times; the carry holds ``done`` so that, under ``vmap``,
finished lanes freeze while the others continue. Nothing here raises or produces NaN.

Deviation from Alg. 6, documented: when the accelerated direction meets the fixed-point test
(line 5), the seed computes a second support in the direction ∇f(x_k) in the same iteration
(line 7). We instead keep the support already computed (it lies in the Minkowski difference, so
adding it to the simplex is valid) and switch to vanilla GJK from the next iteration. This keeps
one support call per iteration — a fixed cost per loop body, which is what vectorised hardware
wants — at the price of at most one iteration.

Second deviation, from experiment: Alg. 5 lists the momentum δ_k = (k+1)/(k+3) for both
accelerations. With that schedule Polyak's stale momentum dominates near contact (on penetrating
random ellipsoid pairs it takes several times vanilla's iterations). Polyak here uses the decaying
momentum δ_k = 1/(k+1), which gives what the seed reports for Polyak in Fig. 7 — a little fewer
iterations than vanilla at every distance. Nesterov keeps (k+1)/(k+3), with the normalisation of
Alg. 7 on non-strictly convex pairs only (as the seed intends it; see ``normalize``).

Third, the scale of the gradient term, matching the seed authors' reference implementation:
eq. 28b reads d_k = δ_k d_{k-1} + (1 - δ_k) ∇f(y_k) with ∇f(y) = 2y for f = |x|², but its
initialisation d_{-1} = x_0 is a point of D, not a gradient, and the implementation that produced
the seed's figures (hpp-fcl / coal ``GJK::evaluate``) uses y itself (and x_k for Polyak), so d_k
stays a convex combination of points of D. The factor 2 doubles the weight of the gradient
against the momentum at every step; without it Nesterov and Polyak take fewer iterations on
random ellipsoid pairs at and near contact.

Stopping is certified: besides the seed's g(x_k) we keep the best lower bound on the distance
given by any support plane seen, max_k <d_k, s_k>/|d_k|, and stop when |x_{k+1}| minus that bound
is within εL. This is eq. 18 in bracket form; it stays meaningful as |x| → 0 (touching contact)
where g/|x| is dominated by rounding, and it lets accelerated runs stop without a vanilla step.

Momentum is also dropped as soon as an accelerated step fails to decrease |x| (the numerical form
of the fixed-point condition eq. 31: x_k ∈ conv(W_k) ⊂ conv(W_k ∪ {s_k}), so |x| never increases
and "no decrease" means s_k added nothing).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from .._math import safe_norm, safe_normalize
from ._simplex import project_origin

__all__ = ["GJK_METHODS", "GJKState", "run_gjk"]

GJK_METHODS = ("vanilla", "polyak", "nesterov")

SupportFn = Callable[[jax.Array], tuple[jax.Array, jax.Array, jax.Array]]


class GJKState(NamedTuple):
    """Carry of the GJK loop (also its result).

    points / support_a / support_b: ``(4, 3)`` simplex vertices in the Minkowski difference
    ``D = A - B`` and the shape points generating them (world frame); mask ``(4,)``; barycentric
    ``(4,)``; ``x`` the current iterate (closest point of D to the origin found so far);
    ``direction`` / ``previous_support`` the momentum terms of Alg. 6; ``gap`` the last evaluated
    g(x_k) of eq. 32. ``lower_bound`` is the best certified lower bound on the distance found so
    far, ``max_k <d_k, s_k> / |d_k|`` (s_k minimises <d_k, ·> over D, so D lies on the far side of
    that plane), and ``lower_direction`` its unit ``d_k``: ``-lower_direction`` is a normal from a
    towards b along which the shapes overlap by at most ``-lower_bound``.
    """

    points: jax.Array
    support_a: jax.Array
    support_b: jax.Array
    mask: jax.Array
    barycentric: jax.Array
    x: jax.Array
    direction: jax.Array
    previous_support: jax.Array
    gap: jax.Array
    lower_bound: jax.Array
    lower_direction: jax.Array
    accelerated: jax.Array
    iterations: jax.Array
    done: jax.Array
    converged: jax.Array
    intersecting: jax.Array
    separated: jax.Array


def _initial_state(x0: jax.Array, method: str) -> GJKState:
    dtype = x0.dtype
    zeros43 = jnp.zeros((4, 3), dtype)
    return GJKState(
        points=zeros43,
        support_a=zeros43,
        support_b=zeros43,
        mask=jnp.zeros(4, bool),
        barycentric=jnp.zeros(4, dtype),
        x=x0,
        direction=x0,
        previous_support=x0,
        gap=jnp.asarray(jnp.inf, dtype),
        lower_bound=jnp.asarray(-jnp.inf, dtype),
        lower_direction=safe_normalize(x0, fallback=jnp.array([1.0, 0.0, 0.0], dtype)),
        accelerated=jnp.asarray(method != "vanilla"),
        iterations=jnp.zeros((), jnp.int32),
        done=jnp.zeros((), bool),
        converged=jnp.zeros((), bool),
        intersecting=jnp.zeros((), bool),
        separated=jnp.zeros((), bool),
    )


def run_gjk(
    support_fn: SupportFn,
    x0: jax.Array,
    length_scale: jax.Array,
    *,
    method: str,
    max_iterations: int,
    tolerance: jax.Array,
    boolean: bool = False,
    skip: jax.Array | bool = False,
    stall_tolerance: jax.Array | float = 0.0,
    normalize: bool = True,
) -> GJKState:
    """Minimum-norm point of the Minkowski difference ``D = A - B`` (seed 000 Alg. 4 / 6 / 7).

    Args:
      support_fn: ``u ↦ (s, s_a, s_b)`` with ``s = s_a - s_b ∈ argmax_{s ∈ D} <u, s>``, world frame.
      x0: ``(3,)`` initial iterate, a point of D (e.g. difference of the shape centres).
      length_scale: characteristic length L of the pair (m); tolerances are relative to it.
      method: "vanilla" | "polyak" | "nesterov" (static).
      max_iterations: static iteration cap.
      tolerance: relative accuracy ε: stop when the duality gap g(x) ≤ εL (|x| + εL), which bounds
        the distance error by ≈ εL (eq. 18).
      boolean: Alg. 2 — stop as soon as a separating plane is found (``separated``) or the origin
        is enclosed (``intersecting``).
      skip: traced flag; when True the loop does not run (its result is then meaningless). Lets a
        batch skip work for lanes that do not need it without a Python branch.
      normalize: static; Nesterov uses the normalised directions of Alg. 7, which the seed
        introduces for non-strictly convex D. For strictly convex D (ellipsoids, spheres) eq. 28b
        as is converges faster (fewer iterations on random ellipsoid pairs, most of all near
        contact).
      stall_tolerance: relative accuracy accepted when GJK stalls in floating point. Near
        contact (|x| of order sqrt(machine eps)·L) an added support point can improve |x| by less
        than rounding while the duality gap still exceeds the tolerance; the distance is then
        bracketed by [``lower_bound``, |x|] and counts as converged when that bracket is within
        ``stall_tolerance · L`` (``distance`` passes its EPA tolerance: the accuracy contract of
        touching pairs is the one of penetrating pairs).
    Returns:
      The final ``GJKState``. ``converged`` is True when the stopping rule held (or, for Boolean
      queries, when the answer is certain).
    """
    if method not in GJK_METHODS:
        raise ValueError(f"unknown GJK method {method!r}; choose one of {GJK_METHODS}")
    dtype = x0.dtype
    tol = jnp.asarray(tolerance, dtype) * length_scale
    # |x| below this is numerically the origin: D contains it (up to rounding).
    tiny = jnp.asarray(256 * jnp.finfo(dtype).eps, dtype) * length_scale
    # Rounding floor of g = 2<x, x - s>: below it the gap carries no information.
    gap_floor = jnp.asarray(16 * jnp.finfo(dtype).eps, dtype) * length_scale**2
    stall_tol = jnp.asarray(stall_tolerance, dtype) * length_scale
    # Rounding floor of |x| - <d, s>/|d|, both computed from O(L) points.
    bracket_floor = jnp.asarray(16 * jnp.finfo(dtype).eps, dtype) * length_scale
    # A zero initial direction has no information; any unit vector does.
    fallback = jnp.array([1.0, 0.0, 0.0], dtype)
    x0 = jnp.where(safe_norm(x0) > tiny, x0, fallback * length_scale)

    def body(state: GJKState) -> GJKState:
        k = state.iterations.astype(dtype)
        delta = (k + 1) / (k + 3)
        x = state.x
        if method == "nesterov":
            y = delta * x + (1 - delta) * state.previous_support
            if normalize:
                # Alg. 7: normalised momentum and gradient directions.
                accel_dir = delta * safe_normalize(state.direction) + (1 - delta) * safe_normalize(y)
            else:  # eq. 28b (strictly convex D, where the seed's Alg. 7 is not needed), with
                # the reference implementation's gradient scale y (see the module docstring)
                accel_dir = delta * state.direction + (1 - delta) * y
        else:  # polyak (eq. 26a / 28b with y = x); unused for vanilla
            # Decaying momentum 1/(k+1) (see the module docstring) instead of (k+1)/(k+3), and
            # the gradient term x_k at the reference implementation's scale.
            polyak_momentum = 1.0 / (k + 1)
            accel_dir = polyak_momentum * state.direction + (1 - polyak_momentum) * x
        direction = jnp.where(state.accelerated, accel_dir, x)
        # Frank–Wolfe: s ∈ argmin_{s ∈ D} <d, s>  =  support of D in -d.
        s, s_a, s_b = support_fn(-direction)
        gap = 2.0 * jnp.dot(x, x - s)  # eq. 32 (= duality gap eq. 16 when d = x)
        unit_direction = safe_normalize(direction, fallback=state.lower_direction)
        plane = jnp.dot(unit_direction, s)
        better = plane > state.lower_bound
        lower_bound = jnp.where(better, plane, state.lower_bound)
        lower_direction = jnp.where(better, unit_direction, state.lower_direction)
        # Momentum stops on the seed's fixed-point test g ≤ ε (Alg. 6 line 5), with ε on the
        # scale of squared distances (the seed uses 1e-8 m² for shapes of ~1 m): ε = εL·(|x| + L).
        # The stopping rule below is far tighter near contact (|x| → 0), where momentum would
        # otherwise keep a stale direction for hundreds of iterations.
        switch = gap <= tol * (safe_norm(x) + length_scale) + gap_floor
        separated_now = jnp.asarray(boolean) & (jnp.dot(direction, s) > 0)  # Alg. 2
        # Momentum is a speed-up and must never cost convergence: at touching contact the
        # extrapolation y_k is dominated by the stale support s_{k-1} (|x_k| → 0) and accelerated
        # runs creep like O(1/k). After half the budget the run continues as vanilla GJK.
        in_budget = state.iterations < max_iterations // 2
        accelerated = state.accelerated & ~switch & in_budget

        # Augment the simplex in a free slot and project the origin (Alg. 4 lines 4-5, 11).
        slot = jnp.argmin(state.mask)
        points = state.points.at[slot].set(s)
        support_a = state.support_a.at[slot].set(s_a)
        support_b = state.support_b.at[slot].set(s_b)
        mask = state.mask.at[slot].set(True)
        x_new, bary, new_mask, inside = project_origin(points, mask)
        intersecting = inside | (safe_norm(x_new) <= tiny)
        # x_k ∈ conv(W_k) ⊂ conv(W_k ∪ {s_k}), so |x| never increases. No strict decrease means
        # s_k added nothing (eq. 31): an accelerated run has hit the cycle the seed describes and
        # falls back to vanilla GJK; a vanilla run is at the optimum attainable in floating point.
        no_progress = (jnp.dot(x_new, x_new) >= jnp.dot(x, x)) & ~intersecting
        stalled = ~state.accelerated & no_progress
        accelerated = accelerated & ~no_progress
        # Stopping rule (eq. 32) as a certified bracket: the distance lies in
        # [lower_bound, |x_{k+1}|]. For |x| ≫ εL this is the seed's g ≤ 2εL|x|; unlike a test on g
        # itself it remains a certificate as |x| → 0, where g/(2|x|) amplifies rounding in g. It
        # certifies in any mode, so an accelerated run needs no vanilla step to stop.
        bracket = safe_norm(x_new) - lower_bound
        certified = bracket <= tol + bracket_floor

        stop_before_update = separated_now
        new_state = GJKState(
            points=points,
            support_a=support_a,
            support_b=support_b,
            mask=new_mask,
            barycentric=bary,
            x=x_new,
            direction=direction,
            previous_support=s,
            gap=gap,
            lower_bound=lower_bound,
            lower_direction=lower_direction,
            accelerated=accelerated,
            iterations=state.iterations + 1,
            done=intersecting | stalled | certified,
            converged=intersecting
            | certified
            | (stalled & (bracket <= jnp.maximum(4 * (tol + bracket_floor), stall_tol))),
            intersecting=intersecting,
            separated=jnp.zeros((), bool),
        )
        # A separating plane answers a Boolean query: keep x_k and its simplex (no update).
        kept = state._replace(
            gap=gap,
            lower_bound=lower_bound,
            lower_direction=lower_direction,
            iterations=state.iterations + 1,
            done=jnp.ones((), bool),
            converged=jnp.ones((), bool),
            separated=separated_now,
        )
        return jax.tree_util.tree_map(
            lambda keep, new: jnp.where(stop_before_update, keep, new), kept, new_state
        )

    def cond(state: GJKState):
        return ~state.done & (state.iterations < max_iterations)

    state = _initial_state(x0, method)
    # The first iteration has an empty simplex: its "current iterate" x0 is not yet supported by
    # any simplex vertex, so it must not be kept by the stopping rule.
    first = _first_iteration(support_fn, state, tiny)
    first = first._replace(done=first.done | skip)
    return jax.lax.while_loop(cond, body, first)


def _first_iteration(support_fn: SupportFn, state: GJKState, tiny) -> GJKState:
    """k = 0 of Alg. 4 / 6: W_0 = ∅, d_0 = x_0, s_0 = S_D(d_0), x_1 = s_0."""
    x0 = state.x
    s, s_a, s_b = support_fn(-x0)
    mask = jnp.zeros(4, bool).at[0].set(True)
    intersecting = safe_norm(s) <= tiny
    return state._replace(
        points=state.points.at[0].set(s),
        support_a=state.support_a.at[0].set(s_a),
        support_b=state.support_b.at[0].set(s_b),
        mask=mask,
        barycentric=jnp.zeros_like(state.barycentric).at[0].set(1.0),
        x=s,
        direction=x0,
        previous_support=s,
        lower_bound=jnp.dot(state.lower_direction, s),
        iterations=jnp.ones((), jnp.int32),
        done=intersecting,
        converged=intersecting,
        intersecting=intersecting,
    )
