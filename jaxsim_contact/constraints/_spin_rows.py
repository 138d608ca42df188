"""Spin rows: MuJoCo's torsional and rolling friction under its elliptic cone (``condim`` 4 and 6,
``Options.constraint_model = "mujoco"``, issue 45).

MuJoCo gives an elliptic contact of dimension ``condim`` the rows ``(n, t1, t2)`` of the
relative linear velocity and, for ``condim`` 4, the relative angular velocity about ``n``
(torsion), for ``condim`` 6 also about ``t1`` and ``t2`` (rolling), all in one cone
``Σ_j (f_j / μ_j)² ≤ f_n²`` over MuJoCo's five friction coefficients (Computation chapter,
"Contact"; ``mj_instantiateContact``). Here a contact slot keeps its three rows and a *spin
slot* — one per contact slot, in this block, directly after the contacts — holds the three
angular rows (torsion, rolling about ``t1``, ``t2``; N·m), which
:class:`~jaxsim_contact.contact.ContactProblem` joins to its cone (``num_spin``). Rows that a
contact's ``condim`` does not have get zero Jacobian rows and a zero coefficient (no force).

Regulariser (``mj_makeImpedance``): the contact's first friction row has ``R₁ = R₀ / impratio``
and spin row ``j`` gets ``R_j = R₁ μ₁² / μ_j²``; ``a_ref`` is the friction rows' damping
(``solreffriction`` when set, else ``solref``; no stiffness).
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .._model import FrictionCone, Model
from ._contact_rows import ContactRows, contact_budget, elliptic_friction_rows
from ._rows import RowBlock, RowKind
from ._soft import is_mujoco
from ._soft_contacts import ContactSoftParameters, contact_rotation_jacobians, pair_condim

__all__ = ["ContactSpinRows", "has_spin_rows", "spin_slots", "spin_rows"]


def has_spin_rows(model: Model) -> bool:
    """Static: the model's contacts have spin rows (MuJoCo-compatible model, elliptic cone, some
    candidate pair with ``condim`` 4 or 6)."""
    if not is_mujoco(model) or model.soft is None or model.soft.cone is not FrictionCone.ELLIPTIC:
        return False
    return bool(np.max(pair_condim(model), initial=1) > 3)


def spin_slots(model: Model) -> int:
    """Static number of spin slots: one per contact slot when :func:`has_spin_rows`, else 0."""
    return contact_budget(model) if has_spin_rows(model) else 0


class ContactSpinRows(RowBlock):
    """The spin slots of the contact slots (module docstring). ``frame`` rows ``(n, t1, t2)`` of
    each contact (the axes of its three rows), ``spin_friction`` ``(m, 3)`` the coefficients
    ``μ_j`` (m) of torsion and rolling — zero on rows the contact's ``condim`` lacks —,
    ``body_a``, ``body_b`` and ``soft`` those of the contact."""

    body_a: jax.Array
    body_b: jax.Array
    spin_friction: jax.Array
    soft: ContactSoftParameters

    kind: ClassVar[RowKind] = RowKind.SPIN
    restitution: ClassVar[bool] = False

    def normal_compliance(self, options, dtype):
        return options.compliance.astype(dtype)  # the hard model's (never read: soft rows)

    def correction_speed(self, options, dtype):
        return options.max_correction_speed.astype(dtype)  # never read: soft rows

    def soft_rows(self, model, velocity_now, dt):
        """``R_j = R₁ μ₁² / μ_j²`` (``R₁`` the contact's friction rows') on the rows it has, ``R₁``
        on the others (no force lives there); the friction rows' damping ``a_ref``."""
        friction_r, friction_aref = elliptic_friction_rows(model, self.soft, self.distance, velocity_now)
        mu = self.soft.friction[:, :1]
        used = self.spin_friction > 0
        ratio2 = jnp.where(used, mu * mu / jnp.where(used, self.spin_friction, 1.0) ** 2, 1.0)
        return friction_r[:, None] * ratio2, friction_aref

    def factor_and_velocity_rows(self, model, smooth, velocity):
        frame = jnp.where(self.active[:, None, None], self.frame, 0.0)
        rows = contact_rotation_jacobians(model, smooth.motion_axes, self.body_a, self.body_b, frame)
        rows = jnp.where((self.spin_friction > 0)[..., None], rows, 0.0).reshape(-1, model.nv)
        both_velocities = jnp.stack([smooth.free_velocity, velocity], axis=1)
        return rows @ smooth.cholesky_inverse.T, rows @ both_velocities


def spin_rows(model: Model, contacts: ContactRows) -> ContactSpinRows:
    """The :class:`ContactSpinRows` of MuJoCo-compatible elliptic contact slots ``contacts``: keys
    are the contacts' (the assembler makes them model-wide), torsion on ``condim ≥ 4``, rolling
    on ``condim 6``."""
    p = contacts.soft
    condim = p.condim[:, None]
    spin_friction = jnp.where(jnp.concatenate([condim >= 4, condim >= 6, condim >= 6], axis=1),
                              p.friction[:, 2:], 0.0)
    active = contacts.active & (p.condim > 3)
    frame = contacts.frame[:, jnp.array([2, 0, 1])]  # rows (n, t1, t2): torsion, rolling
    return ContactSpinRows(
        distance=contacts.distance, frame=frame, friction=jnp.zeros_like(contacts.distance),
        key=contacts.key, active=active, point=contacts.point, body_a=contacts.body_a,
        body_b=contacts.body_b, spin_friction=jnp.where(active[:, None], spin_friction, 0.0),
        soft=p)
