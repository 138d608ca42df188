"""Helpers shared by the package's custom derivative rules: symbolic-zero tangents and the noise of
randomized smoothing (seed 000 "Differentiable Collision Detection", eqs. 3–6 and 26).

They sit below both ``collision`` (the smoothed distance rules) and ``contact`` (the randomized
contact-force rule), which use them alike.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

__all__ = ["DISTRIBUTIONS", "sample_noise", "is_symbolic_zero", "instantiate_zeros"]

#: noise distributions of the smoothing estimators
DISTRIBUTIONS = ("gaussian", "gumbel")
_EULER_GAMMA = 0.5772156649015329


def sample_noise(key, distribution: str, shape, dtype):
    """Zero-mean noise ``z`` of ``shape`` and its score ``-∇log μ(z)`` (seed 000 eqs. 3–6, 26).

    ``distribution``: ``"gaussian"`` (standard normal; score ``z``) or ``"gumbel"`` (standard
    Gumbel shifted by the Euler–Mascheroni constant to zero mean; score ``1 - exp(-(z + γ))``).
    Dimensionless; callers scale ``z`` by their noise level. Shared by the collision estimators and
    :class:`jaxsim_contact.contact.RandomizedSmoothing` (which only needs ``z``).
    """
    if distribution == "gaussian":
        z = jax.random.normal(key, shape, dtype)
        return z, z
    g = jax.random.gumbel(key, shape, dtype)
    return g - _EULER_GAMMA, 1.0 - jnp.exp(-g)


def is_symbolic_zero(tangent) -> bool:
    """Every leaf of ``tangent`` is a ``SymbolicZero`` (rules registered with ``symbolic_zeros=True``)."""
    return all(isinstance(t, SymbolicZero) for t in jax.tree_util.tree_leaves(
        tangent, is_leaf=lambda x: isinstance(x, SymbolicZero)))


def instantiate_zeros(tangent, primal):
    """Replace symbolic zeros by concrete zeros (float0 for integer / boolean leaves)."""

    def fix(t, p):
        if not isinstance(t, SymbolicZero):
            return t
        p = jnp.asarray(p)
        if jnp.issubdtype(p.dtype, jnp.inexact):
            return jnp.zeros(p.shape, p.dtype)
        return np.zeros(p.shape, jax.dtypes.float0)

    return jax.tree_util.tree_map(fix, tangent, primal, is_leaf=lambda x: isinstance(x, SymbolicZero))
