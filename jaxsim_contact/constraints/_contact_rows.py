"""Contact rows: the ``budget`` deepest active narrow-phase candidates as Coulomb-cone slots
(DESIGN §2 stage 4; seed 001 §II eqs. 4–7).

The slots are filled by ``lax.top_k`` on depth among the active candidates; more active candidates
than slots sets the overflow flag (static budget + mask, no sentinel). A slot's Jacobian rows are
``F (J_b(p) − J_a(p))`` (:func:`~._jacobian.contact_jacobians`), formed only inside the solve.
"""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp

from ..collision._manifold import tangent_frame
from ..collision._narrowphase import any_pair_near, far_candidates, max_candidates, narrow_phase
from ..collision._pairs import collision_structure
from .._model import FrictionCone, Model, Options
from ._jacobian import contact_jacobians
from ._rows import RowBlock, RowKind
from ._soft import MIN_VALUE, impedance, is_mujoco, reference_acceleration, regulariser
from ._soft_contacts import (ContactSoftParameters, contact_soft_parameters, edges_per_contact,
                             pair_condim, pair_margins, pyramid_rows, tangent_hints, mujoco_frame)

__all__ = ["ContactRows", "contact_rows", "contacts_in_reach", "contact_slots", "contact_budget",
           "default_contact_budget", "elliptic_friction_rows"]


def default_contact_budget(model: Model) -> int:
    """Default number of contact slots: 4 per moving body plus 4, at most the candidate count."""
    structure = collision_structure(model)
    moving = sum(1 for b in range(1, model.nbody) if model.tree.body_joint_num[b] > 0) or 1
    return min(max_candidates(structure), 4 * moving + 4)


def contact_budget(model: Model) -> int:
    """Static number of contacts handed to the solver (0 when contacts are disabled)."""
    opts = model.options
    if not opts.enable_contacts:
        return 0
    total = max_candidates(collision_structure(model))
    if opts.contact_budget is None:
        return default_contact_budget(model)
    return min(total, opts.contact_budget)


def _pyramidal(model: Model) -> bool:
    """Static: contacts are MuJoCo pyramids (MuJoCo-compatible model with a pyramidal cone)."""
    return is_mujoco(model) and model.soft is not None and model.soft.cone is FrictionCone.PYRAMIDAL


def contact_slots(model: Model) -> int:
    """Static number of contact slots of the row space: one per contact, or
    :func:`~._soft_contacts.edges_per_contact` per contact for MuJoCo's pyramidal cone."""
    return contact_budget(model) * (edges_per_contact(model) if _pyramidal(model) else 1)


class ContactRows(RowBlock):
    """Contact slots (:class:`~._rows.RowBlock`) with the bodies ``body_a``, ``body_b`` ``(m,)``
    int32 of each slot (normal from a to b)."""

    body_a: jax.Array
    body_b: jax.Array

    #: MuJoCo-compatible model: the slots' MuJoCo parameters (``None`` in the hard model)
    soft: ContactSoftParameters | None = None

    kind: ClassVar[RowKind] = RowKind.CONE
    restitution: ClassVar[bool] = True
    is_contact: ClassVar[bool] = True

    def normal_compliance(self, options: Options, dtype) -> jax.Array:
        return options.compliance.astype(dtype)

    def correction_speed(self, options: Options, dtype) -> jax.Array:
        return options.max_correction_speed.astype(dtype)

    def tangent_compliance(self, options: Options, normal_diag: jax.Array) -> jax.Array:
        """``(m,)`` compliance ``R_T`` of the two friction rows."""
        return jnp.broadcast_to(options.tangential_compliance.astype(normal_diag.dtype),
                                normal_diag.shape)

    def shares_body_pair(self, touching: jax.Array) -> jax.Array:
        touching = touching & self.active
        low = jnp.minimum(self.body_a, self.body_b)
        high = jnp.maximum(self.body_a, self.body_b)
        same_pair = (low[:, None] == low[None, :]) & (high[:, None] == high[None, :])
        return touching & (jnp.sum(same_pair & touching[None, :], axis=1) > 1)

    def slot_trees(self, model, tree_of_body):
        trees = jnp.asarray(tree_of_body, jnp.int32)
        return jnp.stack([trees[self.body_a], trees[self.body_b]], axis=-1)

    def soft_rows(self, model, velocity_now, dt):
        """MuJoCo's elliptic cone (:mod:`._soft`): normal ``R₀`` from the two bodies'
        translational ``invweight0``, friction rows ``R₀ / impratio`` damped by
        ``solreffriction`` when it is set (:func:`elliptic_friction_rows`)."""
        p = self.soft
        imp = impedance(p.solimp, self.distance, p.margin)
        normal = regulariser(imp, p.translation_weight)
        tangent, aref_tangent = elliptic_friction_rows(model, p, self.distance, velocity_now[:, :2])
        aref_normal = reference_acceleration(p.solref, p.solimp, imp, self.distance, p.margin,
                                             velocity_now[:, 2])
        R = jnp.stack([tangent, tangent, normal], axis=-1)
        return R, jnp.concatenate([aref_tangent, aref_normal[:, None]], axis=-1)

    def factor_and_velocity_rows(self, model, smooth, velocity):
        # inactive slots may hold geometry of far-away or degenerate pairs: they must not reach
        # M̃⁻¹Jᵀ. A zero frame at a finite point gives zero Jacobian rows; masking the (m, 3, 3)
        # inputs is cheaper than the (3m, nv) output.
        with jax.named_scope("contact_jacobian"):
            jacobian = contact_jacobians(
                model, smooth.motion_axes, self.body_a, self.body_b,
                jnp.where(self.active[:, None], self.point, 0.0),
                jnp.where(self.active[:, None, None], self.frame, 0.0))
        jacobian = jacobian.reshape(3 * self.num_slots, model.nv)
        with jax.named_scope("delassus"):
            # B in its row layout: as the transpose of L⁻¹ Jᵀ, XLA:CPU copied the (3m, nv) array
            # in transposed order wherever the solver read it
            factor_rows = jacobian @ smooth.cholesky_inverse.T
        both_velocities = jnp.stack([smooth.free_velocity, velocity], axis=1)
        return factor_rows, jacobian @ both_velocities


def elliptic_friction_rows(model: Model, soft: ContactSoftParameters, distance, velocity_now):
    """``(R₁ (m,), a_ref (m, k))`` of elliptic friction rows (``mj_makeImpedance``,
    ``mj_referenceConstraint``): the first friction row's regulariser ``R₀ / impratio``
    (``R₀`` the normal row's) and the damping ``a_ref = −b v`` of rows with velocities
    ``velocity_now`` ``(m, k)`` (``solreffriction`` when it is set, else ``solref``; no
    stiffness), all at the contact's impedance."""
    imp = impedance(soft.solimp, distance, soft.margin)
    normal = regulariser(imp, soft.translation_weight)
    tangent = normal / jnp.maximum(model.soft.impratio.astype(normal.dtype), MIN_VALUE)
    friction_ref = jnp.where(jnp.any(soft.solreffriction != 0, axis=-1, keepdims=True),
                             soft.solreffriction, soft.solref)
    aref = reference_acceleration(friction_ref[:, None], soft.solimp[:, None], imp[:, None], 0.0,
                                  0.0, velocity_now, stiff=False)
    return tangent, aref


def contacts_in_reach(model: Model, kinematics, margin: jax.Array) -> jax.Array:
    """Scalar bool: some candidate pair passes culling (else no contact slot can be active)."""
    return any_pair_near(model, collision_structure(model), kinematics.body_pos,
                         kinematics.body_quat, margin)


def contact_rows(model: Model, kinematics, margin: jax.Array, all_far: bool = False):
    """``(ContactRows, overflow)`` of the configuration whose forward kinematics is ``kinematics``.

    ``margin``: scalar contact margin (m). ``all_far`` (static): the caller knows that no pair
    is near (:func:`contacts_in_reach` is false); the candidates then report their culling bounds
    without running a pair function — the same values in that case.
    """
    structure = collision_structure(model)
    candidates_of = far_candidates if all_far else narrow_phase
    soft = is_mujoco(model)
    if soft:  # culling must reach MuJoCo's margins, the sum of the two geoms' (not their maximum)
        margin = margin + jnp.max(model.geom_margin.astype(margin.dtype), initial=0.0)
    with jax.named_scope("narrow_phase"):
        cands = candidates_of(model, structure, kinematics.body_pos, kinematics.body_quat, margin)
    active = cands.active
    if soft:  # MuJoCo: rows only while dist < margin
        active = active & (cands.distance < pair_margins(model, cands.key, margin.dtype))
    budget = contact_budget(model)
    score = jnp.where(active, -cands.distance, -jnp.inf)
    _, index = jax.lax.top_k(score, budget)
    overflow = (jnp.sum(active) > budget) | cands.overflow
    rows = ContactRows(
        distance=cands.distance[index], frame=tangent_frame(cands.normal[index]),
        friction=cands.friction[index], key=cands.key[index], active=active[index],
        point=cands.point[index], body_a=cands.body_a[index], body_b=cands.body_b[index])
    if soft:
        rows = _mujoco_contacts(model, kinematics, rows, cands.normal[index])
    return rows, overflow


def _mujoco_contacts(model: Model, kinematics, rows: ContactRows, normal):
    """The contact slots of the MuJoCo-compatible model: MuJoCo's parameters and frame, and the
    pyramid's edge slots for a pyramidal cone (:mod:`._soft_contacts`)."""
    pair_condim(model)  # refuses what the elliptic cone cannot take, by name
    dt = model.options.dt.astype(rows.distance.dtype)
    params = contact_soft_parameters(model, rows.key, rows.body_a, rows.body_b, dt)
    frame = mujoco_frame(normal, tangent_hints(model, rows.key, kinematics))
    friction = jnp.where(params.condim > 1, params.friction[:, 0], 0.0)
    rows = eqx.tree_at(lambda r: (r.frame, r.friction, r.soft), rows, (frame, friction, params),
                       is_leaf=lambda x: x is None)
    return pyramid_rows(model, rows) if _pyramidal(model) else rows
