"""Joint-space mass matrix by the composite-rigid-body algorithm (CRBA).

Featherstone's CRBA (RBDA §6.2; the ``M(q)`` of seed 004 §II-C eq. (1) and of seed 001 §II-A):
the composite inertia of body ``i`` is the sum of the spatial inertias of its subtree, and

    M[a, b] = S_bᵀ I^c_{body(a)} S_a      when body(b) is body(a) or one of its ancestors,

mirrored for the upper triangle, zero otherwise. All spatial quantities are in the world frame
about the origin (:mod:`._spatial`), so the subtree sums are one product with the tree's static
ancestor matrix and the whole matrix is one dense product masked by the static sparsity pattern.
Armature is added on the diagonal (as MuJoCo's ``qM``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._model import Model
from ._kinematics import Kinematics, forward_kinematics, motion_axes
from ._spatial import motion_about, spatial_inertia
from ._tendons import tendon_armature, tendon_kinematics
from .._precision import full_precision_matmuls

__all__ = ["body_spatial_inertias", "composite_inertias", "mass_matrix", "mass_matrix_from_kinematics"]


def body_spatial_inertias(model: Model, kin: Kinematics, about: jax.Array | None = None) -> jax.Array:
    """``(nbody, 6, 6)`` spatial inertia of every body about the world origin, or about the point
    ``about`` ``(3,)`` (m) when given."""
    com = kin.com_pos if about is None else kin.com_pos - about
    return spatial_inertia(model.body_mass.astype(kin.com_pos.dtype), com, kin.inertia_com)


def composite_inertias(model: Model, inertias: jax.Array) -> jax.Array:
    """``(nbody, 6, 6)`` subtree (composite) inertias: ``Ic_i = Σ_{j in subtree(i)} I_j``."""
    in_subtree = jnp.asarray(model.tree.body_ancestor.T, dtype=inertias.dtype)  # [i, j]: j below i
    n = inertias.shape[0]
    return (in_subtree @ inertias.reshape(n, 36)).reshape(n, 6, 6)


#: dtypes with a larger epsilon form the mass matrix about the model's centre of mass
_FAR_FROM_ORIGIN_EPS = 1e-10


def _mass_centre(model: Model, kin: Kinematics) -> jax.Array:
    """``(3,)`` the mass-weighted mean of the bodies' centres of mass (m), derivative-free."""
    mass = model.body_mass.astype(kin.com_pos.dtype)
    total = jnp.sum(mass)
    centre = jnp.sum(mass[:, None] * kin.com_pos, axis=0) / jnp.where(total > 0, total, 1.0)
    return jax.lax.stop_gradient(centre)


def mass_matrix_from_kinematics(model: Model, kin: Kinematics, axes: jax.Array) -> jax.Array:
    """``(nv, nv)`` mass matrix from precomputed kinematics and dof motion axes ``(nv, 6)``.

    ``M`` does not depend on the point the spatial quantities are taken about; float64 takes the
    world origin, float32 the model's centre of mass (``v ← v − P × ω`` for the axes, inertias
    about ``c − P``): about the origin, a robot 193 m from it (a 6 s free fall) has ``m |c|²``
    terms of ~4e4 kg m² per kg that cancel to its links' ~1e-3, below float32's resolution, and
    the matrix lost positive definiteness — its Cholesky factor was NaN (issue 42, corpus
    ``simple_humanoid_classical``). The point is a constant for derivatives (``M`` is invariant)."""
    tree = model.tree
    dtype = axes.dtype
    if tree.nv == 0:
        return jnp.zeros((0, 0), dtype)
    reference = None
    if float(jnp.finfo(dtype).eps) > _FAR_FROM_ORIGIN_EPS:
        # float32: about the model's centre of mass, not the world origin (docstring)
        reference = _mass_centre(model, kin)
        axes = motion_about(axes, reference)
    composite = composite_inertias(model, body_spatial_inertias(model, kin, about=reference))
    dof_body = np.asarray(tree.dof_body, dtype=np.int64)
    momentum = jnp.einsum("dij,dj->di", composite[dof_body], axes)  # Ic_{body(a)} S_a
    products = momentum @ axes.T  # [a, b] = S_bᵀ Ic_{body(a)} S_a
    # Lower triangle (b <= a; MuJoCo orders ancestor dofs first) where body(b) is body(a) or an
    # ancestor; mirrored so that M is exactly symmetric.
    pattern = tree.dof_ancestor & np.tril(np.ones((tree.nv, tree.nv), dtype=bool))
    lower = jnp.where(jnp.asarray(pattern), products, 0.0)
    full = lower + lower.T - jnp.diag(jnp.diagonal(lower))
    return full + jnp.diag(model.dof_armature.astype(dtype))


@full_precision_matmuls
def mass_matrix(model: Model, q: jax.Array) -> jax.Array:
    """Joint-space mass matrix ``M(q)`` ``(nv, nv)`` (kg, kg·m, kg·m²), armature included.

    Equals MuJoCo's ``mj_fullM(qM)`` in MuJoCo's ``qvel`` order.
    """
    kin = forward_kinematics(model, q)
    axes = motion_axes(model, kin)
    mass = mass_matrix_from_kinematics(model, kin, axes)
    if model.tendons.armature_tendons:  # tendon armature: J^T a J (MuJoCo's qM includes it)
        tendon = tendon_kinematics(model, q, kin, axes)
        mass = mass + tendon_armature(model, q, jnp.zeros((model.nv,), q.dtype), tendon)[0]
    return mass
