"""Factorisations of matrices that are block diagonal up to a static permutation.

The joint-space mass matrix couples only the dofs of one kinematic tree (seed 004 §II-C: ``M`` is
the CRBA matrix of a forest), so a scene of ``T`` free bodies has ``T`` independent ``6 × 6``
blocks. XLA:CPU's dense Cholesky and triangular inverse of the whole ``nv × nv`` matrix cost
``O(nv³)``; per block they cost ``O(Σ s³)`` (10-box tower, ``nv = 60``: 60³ against 10 · 6³).
``groups`` lists the blocks: a tuple of ``(T, s)`` integer index arrays (as nested tuples, so the
structure is hashable and static), each row the sorted dofs of one block, blocks of one size
together (see :attr:`jaxsim_contact._model.KinematicTree.dof_tree_groups`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

__all__ = ["grouped_cholesky"]


def _single_block(groups, n: int) -> bool:
    return len(groups) == 1 and len(groups[0]) == 1 and len(groups[0][0]) == n


def grouped_cholesky(matrix: jax.Array, groups) -> tuple[jax.Array, jax.Array]:
    """``(L, L⁻¹)`` of a symmetric positive definite ``matrix`` ``(n, n)`` whose entries between
    different blocks of ``groups`` are zero (they are not read).

    Each block's rows are sorted, so scattering the blocks' lower Cholesky factors gives a lower
    triangular ``L`` with ``L Lᵀ = matrix``: by uniqueness, the Cholesky factor itself, equal to
    the dense factorisation to rounding; ``L⁻¹`` likewise. One block covering everything falls
    back to the dense factorisation.

    Derivatives (forward and reverse mode) are matrix products only (:func:`_cholesky_tangents`).
    """
    n = matrix.shape[-1]
    if _single_block(groups, n):
        return _dense_cholesky_and_inverse(matrix)
    chol = jnp.zeros_like(matrix)
    inverse = jnp.zeros_like(matrix)
    for group in groups:
        index = np.asarray(group)
        rows, cols = index[:, :, None], index[:, None, :]
        block_chol, block_inverse = _block_cholesky_and_inverse(matrix[rows, cols])  # (T, s, s)
        chol = chol.at[rows, cols].set(block_chol, unique_indices=True)
        inverse = inverse.at[rows, cols].set(block_inverse, unique_indices=True)
    return chol, inverse


def _lower_inverse(lower: jax.Array) -> jax.Array:
    """Inverse of lower-triangular ``(T, s, s)`` blocks by forward substitution, one row at a
    time (``s`` small: XLA:CPU expands a batched triangular solve into a slow loop)."""
    s = lower.shape[-1]
    eye = jnp.eye(s, dtype=lower.dtype)
    rows = []
    for i in range(s):
        # row i of L⁻¹: (e_i − Σ_{j<i} L_ij row_j) / L_ii
        acc = jnp.broadcast_to(eye[i], lower.shape[:-2] + (s,))
        for j in range(i):
            acc = acc - lower[..., i, j, None] * rows[j]
        rows.append(acc / lower[..., i, i, None])
    return jnp.stack(rows, axis=-2)


def _cholesky_tangents(chol, inverse, matrix_dot):
    """Tangents of ``(L, L⁻¹)`` for a tangent ``Ȧ`` of ``A = L Lᵀ`` (``(..., s, s)``).

    With ``X = L⁻¹ sym(Ȧ) L⁻ᵀ`` and ``Φ(X)`` its lower triangle with the diagonal halved,
    ``L̇ = L Φ(X)`` and ``(L⁻¹)˙ = −L⁻¹ L̇ L⁻¹ = −Φ(X) L⁻¹`` (Murray 2016, "Differentiation of the
    Cholesky decomposition", eq. 8). JAX's own rule for ``cholesky`` takes ``L⁻¹`` by triangular
    solves, and those become batched triangular solves under ``jacfwd`` / ``jacrev`` (a vmap over
    tangents or cotangents) or a batch of environments, which XLA:CPU expands into a slow loop;
    with ``L⁻¹`` at hand they are four matrix products (batch-friendly), linear in ``Ȧ`` and so
    transposed by JAX for reverse mode.
    """
    sym = 0.5 * (matrix_dot + jnp.swapaxes(matrix_dot, -1, -2))
    x = inverse @ sym @ jnp.swapaxes(inverse, -1, -2)
    s = x.shape[-1]
    phi = jnp.tril(x) - 0.5 * x * jnp.eye(s, dtype=x.dtype)
    return chol @ phi, -(phi @ inverse)


@jax.custom_jvp
def _dense_cholesky_and_inverse(matrix):
    """``(L, L⁻¹)`` of one SPD ``(n, n)`` matrix (LAPACK factor, one triangular solve)."""
    chol = jnp.linalg.cholesky(matrix)
    n = matrix.shape[-1]
    return chol, jsl.solve_triangular(chol, jnp.eye(n, dtype=matrix.dtype), lower=True)


@jax.custom_jvp
def _block_cholesky_and_inverse(blocks):
    """``(L, L⁻¹)`` of SPD blocks ``(T, s, s)`` (``L⁻¹`` by :func:`_lower_inverse`)."""
    chol = jnp.linalg.cholesky(blocks)
    return chol, _lower_inverse(chol)


def _factor_jvp(factor, primals, tangents):
    (matrix,), (matrix_dot,) = primals, tangents
    chol, inverse = factor(matrix)
    return (chol, inverse), _cholesky_tangents(chol, inverse, matrix_dot)


_dense_cholesky_and_inverse.defjvp(lambda p, t: _factor_jvp(_dense_cholesky_and_inverse, p, t))
_block_cholesky_and_inverse.defjvp(lambda p, t: _factor_jvp(_block_cholesky_and_inverse, p, t))
