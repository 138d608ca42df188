"""Type-II Anderson acceleration of a fixed-point iteration ``x ← T(x)`` with a fixed memory.

Walker & Ni, "Anderson acceleration for fixed-point iterations" (SIAM J. Numer. Anal. 2011),
Alg. AA with the differences form of Fang & Saad (2009); the same scheme accelerates the ADMM of
SCS 3 (O'Donoghue 2021) and of Zhang et al., "Globally convergent type-I Anderson acceleration"
(2020). With ``f_k = T(x_k)``, ``g_k = f_k − x_k`` and the last ``m`` differences
``ΔF = [f_{j+1} − f_j]``, ``ΔG = [g_{j+1} − g_j]``::

    θ_k     = argmin_θ ‖g_k − ΔG θ‖² + r‖θ‖²      (an m × m regularised normal equation)
    x_{k+1} = f_k − ΔF θ_k

i.e. the combination of the last ``m + 1`` images whose residuals cancel best. Everything is a
fixed-size array (``m`` static, unfilled columns masked), so it runs unchanged under ``jit`` and
``vmap``. A non-finite extrapolation falls back to the plain image ``f_k``.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

__all__ = ["AndersonHistory", "anderson_init", "anderson_step", "anderson_reset"]

#: Tikhonov weight of the normal equation, relative to the mean squared column norm of ΔG:
#: keeps θ bounded when the residual differences become collinear near convergence. Never below
#: ``RIDGE_EPS_FACTOR`` machine epsilons of the dtype (:func:`ridge_weight`): the Gram matrix is
#: only known to about ε relative, and in float32 a 1e-10 ridge is below that — a vmapped float32
#: step then extrapolated from a numerically singular system and ADMM stalled at its cap (issue 42)
REGULARIZATION = 1e-10
RIDGE_EPS_FACTOR = 10.0


def ridge_weight(dtype) -> float:
    """The relative Tikhonov weight for ``dtype``: ``max(REGULARIZATION, RIDGE_EPS_FACTOR · ε)``
    (1e-10 in float64, 1.2e-6 in float32)."""
    return max(REGULARIZATION, RIDGE_EPS_FACTOR * float(jnp.finfo(dtype).eps))


class AndersonHistory(eqx.Module):
    """Memory of :func:`anderson_step`: ``delta_f``, ``delta_g`` ``(m, d)`` circular buffers of
    image and residual differences, ``f_prev``, ``g_prev`` ``(d,)`` the last image and residual,
    ``count`` the number of images seen since the last reset (int32), ``extrapolated`` whether
    the last returned iterate was an extrapolation (not a plain image)."""

    delta_f: jax.Array
    delta_g: jax.Array
    f_prev: jax.Array
    g_prev: jax.Array
    count: jax.Array
    extrapolated: jax.Array


def anderson_init(memory: int, size: int, dtype) -> AndersonHistory:
    """Empty history for ``memory`` (``m ≥ 1``, static) differences of ``size``-vectors."""
    return AndersonHistory(jnp.zeros((memory, size), dtype), jnp.zeros((memory, size), dtype),
                           jnp.zeros(size, dtype), jnp.zeros(size, dtype),
                           jnp.zeros((), jnp.int32), jnp.zeros((), bool))


def anderson_reset(history: AndersonHistory, reset: jax.Array) -> AndersonHistory:
    """``history`` emptied where ``reset`` (a traced bool) holds, e.g. after the map changed."""
    return eqx.tree_at(lambda h: (h.count, h.extrapolated), history,
                       (jnp.where(reset, 0, history.count), history.extrapolated & ~reset))


def anderson_step(history: AndersonHistory, x: jax.Array, f: jax.Array):
    """The next iterate from ``x`` and its image ``f = T(x)`` (``(d,)`` each).

    Returns ``(x_next (d,), history)``. With an empty history ``x_next = f`` (a plain step).
    Safeguard (as SCS's, O'Donoghue 2021 §3.3): when ``x`` was an extrapolation and its residual
    ``‖f − x‖`` exceeds the previous iterate's, the extrapolation is rejected: the history is
    cleared and the iteration resumes from the previous iterate's plain image.
    """
    memory = history.delta_f.shape[0]
    dtype = f.dtype
    g = f - x
    rejected = history.extrapolated & (jnp.sum(g * g) > jnp.sum(history.g_prev * history.g_prev))
    has_previous = history.count > 0
    slot = jnp.mod(history.count - 1, memory)
    write = (jnp.arange(memory) == slot) & has_previous
    delta_f = jnp.where(write[:, None], f - history.f_prev, history.delta_f)
    delta_g = jnp.where(write[:, None], g - history.g_prev, history.delta_g)
    valid = jnp.arange(memory) < jnp.minimum(history.count, memory)
    delta_g_valid = jnp.where(valid[:, None], delta_g, 0.0)
    gram = delta_g_valid @ delta_g_valid.T
    scale = jnp.sum(jnp.diagonal(gram)) / jnp.maximum(jnp.sum(valid), 1)
    ridge = ridge_weight(dtype) * scale + jnp.finfo(dtype).tiny
    # unfilled columns: identity rows and zero right-hand side, so their θ is exactly 0
    gram = gram + jnp.diag(jnp.where(valid, ridge, 1.0))
    theta = jnp.linalg.solve(gram, delta_g_valid @ g)
    x_next = f - theta @ jnp.where(valid[:, None], delta_f, 0.0)
    finite = jnp.all(jnp.isfinite(x_next))
    accelerated = AndersonHistory(delta_f, delta_g, f, g, history.count + 1,
                                  jnp.any(valid) & finite)
    x_next = jnp.where(finite, x_next, f)
    # rejected: restart from the previous plain image, keeping its residual as the reference
    restart = AndersonHistory(history.delta_f, history.delta_g, history.f_prev, history.g_prev,
                              jnp.zeros((), jnp.int32), jnp.zeros((), bool))
    x_next = jnp.where(rejected, history.f_prev, x_next)
    history = jax.tree_util.tree_map(lambda a, b: jnp.where(rejected, a, b), restart, accelerated)
    return x_next, history
