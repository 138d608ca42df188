"""Factorisations of matrices that are block diagonal up to a static permutation.

The joint-space mass matrix couples only the dofs of one kinematic tree (seed 004 §II-C: ``M`` is
the CRBA matrix of a forest), so a scene of ``T`` free bodies has ``T`` independent ``6 × 6``
blocks. XLA:CPU's dense Cholesky and triangular inverse of the whole ``nv × nv`` matrix cost
``O(nv³)``; per block they cost ``O(Σ s³)`` (10-box tower, ``nv = 60``: 60³ against 10 · 6³).
``groups`` lists the blocks: a tuple of ``(T, s)`` integer index arrays (as nested tuples, so the
structure is hashable and static), each row the sorted dofs of one block, blocks of one size
together (see :attr:`jaxsim_contact.model.KinematicTree.dof_tree_groups`).
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
    """
    n = matrix.shape[-1]
    if _single_block(groups, n):
        chol = jnp.linalg.cholesky(matrix)
        return chol, jsl.solve_triangular(chol, jnp.eye(n, dtype=matrix.dtype), lower=True)
    chol = jnp.zeros_like(matrix)
    inverse = jnp.zeros_like(matrix)
    for group in groups:
        index = np.asarray(group)
        rows, cols = index[:, :, None], index[:, None, :]
        block_chol = jnp.linalg.cholesky(matrix[rows, cols])  # (T, s, s)
        block_inverse = _lower_inverse(block_chol)
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
