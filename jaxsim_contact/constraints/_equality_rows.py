"""Equality-constraint rows: hard bilateral slots (MuJoCo Computation chapter "Equality
constraints", ``mj_instantiateEquality``; DESIGN §2 stage 4).

Each constraint has a position error ``e(q)`` (MuJoCo's ``efc_pos``, same sign) and its Jacobian
``∂e/∂v`` (``efc_J``):

* **connect** (3 rows): ``e = p1 − p2``, the anchor points on object 1 and on object 2 in the
  world (a ball joint closing a loop); ``J = J_1(p1) − J_2(p2)``;
* **weld** (6 rows, two slots): the same for the points ``p1 = x1 + R1 r`` (``r`` object 2's
  position in object 1's frame) and ``p2 = x2 + R2 a`` (``a`` the anchor on object 2), then the
  orientation error ``s · Im(q2⁻¹ ⊗ q1 ⊗ q_rel)`` with torque scale ``s``, whose Jacobian column
  for a dof with angular-velocity difference ``w = ω1 − ω2`` is ``½ s Im(q2⁻¹ ⊗ (0, w) ⊗ q1 ⊗ q_rel)``;
  between two sites the sites' frames are welded (``r = a = 0``, ``q_rel = 1``);
* **joint** / **tendon** (1 row): ``e = (x1 − x1_0) − Σ_k c_k (x2 − x2_0)^k`` for joint positions
  (reference ``qpos0``) or tendon lengths (reference: the length at ``qpos0``), ``x2`` absent
  reading as ``x2 = x2_0``; ``J = J_x1 − P'(x2 − x2_0) J_x2``.

The rows are bilateral (``RowKind.BILATERAL``): ``J v⁺ = −β_eq e / Δt`` with any force, ``β_eq`` =
``Options.equality_correction``. A 1-row constraint uses the slot's normal row and leaves its
tangent rows empty. ``Equalities.active`` masks constraints at run time.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .._math import quat_conj, quat_mul, quat_rotate, safe_norm, safe_sqrt
from .._model import EqualityKind, Model, Options
from ._jacobian import point_jacobian, rotation_jacobian, site_frames
from ._rows import RowBlock, RowKind
from ._soft import (clamp_solimp, clamp_solref, impedance, reference_acceleration, regulariser,
                    require_soft)

__all__ = ["EqualityRows", "equality_slots", "equality_rows", "equality_errors", "equality_wrenches",
           "slot_equality"]

_SLOTS = {EqualityKind.CONNECT: 1, EqualityKind.WELD: 2, EqualityKind.JOINT: 1,
          EqualityKind.TENDON: 1}


def equality_slots(model: Model) -> int:
    """Static number of equality slots (connect 1, weld 2, joint 1, tendon 1)."""
    return sum(_SLOTS[k] for k in model.equalities.kind)


class EqualityRows(RowBlock):
    """Equality slots (:class:`~._rows.RowBlock`): ``jacobian`` ``(m, 3, nv)`` the rows of each
    slot and ``error`` ``(m, 3)`` their position errors (zeros on unused rows)."""

    jacobian: jax.Array
    error: jax.Array
    #: MuJoCo-compatible model: ``J̇ v`` ``(m, 3)`` of the connect / weld slots, else ``None``
    velocity_bias: jax.Array | None = None

    kind: ClassVar[RowKind] = RowKind.BILATERAL
    restitution: ClassVar[bool] = False

    def normal_compliance(self, options: Options, dtype) -> jax.Array:
        return options.equality_compliance.astype(dtype)

    def correction_speed(self, options: Options, dtype) -> jax.Array:
        return jnp.ones((), dtype)  # unused: reference_velocity gives every row its own

    def tangent_compliance(self, options: Options, normal_diag: jax.Array) -> jax.Array:
        return jnp.broadcast_to(options.equality_compliance.astype(normal_diag.dtype), normal_diag.shape)

    def reference_velocity(self, options: Options, dt: jax.Array):
        return -options.equality_correction.astype(self.error.dtype) * self.error / dt

    def soft_rows(self, model, velocity_now, dt):
        """MuJoCo's equality rows (``getposdim``, ``mj_diagApprox``): the impedance of a
        connect's or weld's rows from the norm of its whole error (3 or 6 entries), of a joint
        or tendon coupling from its signed error; ``A_ii`` the bodies' translational (weld
        rotation rows: rotational) ``invweight0``, or the joints' / tendons'."""
        soft = require_soft(model)
        dtype = self.error.dtype
        slots = slot_equality(model)
        solref = clamp_solref(soft.equality_solref.astype(dtype)[slots], dt, soft.refsafe)
        solimp = clamp_solimp(soft.equality_solimp.astype(dtype)[slots])
        kinds = [model.equalities.kind[e] for e in slots]
        pos = _soft_positions(self.error, slots, kinds)
        imp = impedance(solimp, pos, jnp.zeros_like(pos))
        R = regulariser(imp[:, None], _soft_diagonal(model, soft, slots, kinds, dtype))
        aref = reference_acceleration(solref[:, None], solimp[:, None], imp[:, None], self.error,
                                      0.0, velocity_now)
        if self.velocity_bias is not None:  # MuJoCo's mj_Jdotv on connect / weld rows
            aref = aref - self.velocity_bias
        return R, aref

    def factor_and_velocity_rows(self, model, smooth, velocity):
        m, nv = self.num_slots, model.nv
        rows = jnp.where(self.active[:, None, None], self.jacobian, 0.0).reshape(3 * m, nv)
        both_velocities = jnp.stack([smooth.free_velocity, velocity], axis=1)  # (nv, 2)
        return rows @ smooth.cholesky_inverse.T, rows @ both_velocities


def _object_frames(model: Model, kin, objects: np.ndarray, on_sites: bool):
    """World position ``(k, 3)``, orientation ``(k, 4)`` and body ``(k,)`` of bodies or sites."""
    if not on_sites:
        return kin.body_pos[objects], kin.body_quat[objects], objects
    return site_frames(model, kin, objects)


def _left_matrix(q):
    """``(k, 4, 4)`` ``L(q)`` with ``q ⊗ x = L(q) x``."""
    w, x, y, z = (q[:, i] for i in range(4))
    return jnp.stack([jnp.stack([w, -x, -y, -z], -1), jnp.stack([x, w, -z, y], -1),
                      jnp.stack([y, z, w, -x], -1), jnp.stack([z, -y, x, w], -1)], axis=1)


def _right_matrix(q):
    """``(k, 4, 4)`` ``R(q)`` with ``x ⊗ q = R(q) x``."""
    w, x, y, z = (q[:, i] for i in range(4))
    return jnp.stack([jnp.stack([w, -x, -y, -z], -1), jnp.stack([x, w, z, -y], -1),
                      jnp.stack([y, -z, w, x], -1), jnp.stack([z, y, -x, w], -1)], axis=1)


def _anchors(model, kin, index, kind, on_sites):
    """World anchor points ``p1``, ``p2`` ``(k, 3)``, orientations ``(k, 4)`` and bodies
    ``(k,)`` of objects 1 and 2 of the connect or weld equalities ``index`` (module docstring)."""
    equalities = model.equalities
    data = equalities.data.astype(kin.body_pos.dtype)[np.asarray(index)]
    obj1 = np.asarray([equalities.object1[i] for i in index], dtype=np.int64)
    obj2 = np.asarray([equalities.object2[i] for i in index], dtype=np.int64)
    if on_sites:
        first = second = jnp.zeros_like(data[:, :3])
    elif kind is EqualityKind.CONNECT:
        first, second = data[:, 0:3], data[:, 3:6]
    else:  # weld: object 2's position in object 1's frame, the anchor on object 2
        first, second = data[:, 3:6], data[:, 0:3]
    pos1, quat1, body1 = _object_frames(model, kin, obj1, on_sites)
    pos2, quat2, body2 = _object_frames(model, kin, obj2, on_sites)
    point1 = pos1 + quat_rotate(quat1, first)
    point2 = pos2 + quat_rotate(quat2, second)
    return point1, point2, quat1, quat2, body1, body2


def _point_pair(model, kin, axes, index, kind, on_sites):
    """Errors ``p1 − p2`` ``(k, 3)`` and Jacobians ``(k, 3, nv)`` of the anchor pairs of the
    connect or weld equalities ``index``."""
    point1, point2, quat1, quat2, body1, body2 = _anchors(model, kin, index, kind, on_sites)
    jacobian = (point_jacobian(model, axes, body1, point1)
                - point_jacobian(model, axes, body2, point2))
    return point1 - point2, jacobian, (quat1, quat2, body1, body2)


def _connect(model, kin, axes, index, on_sites):
    error, jacobian, _ = _point_pair(model, kin, axes, index, EqualityKind.CONNECT, on_sites)
    return error[:, None, :], jacobian[:, None]


def _weld_rotation(model, index, on_sites, quat1, quat2):
    """Scaled orientation errors ``(k, 3)`` and the ``(k, 3, 3)`` operator ``½ s P`` of the weld
    equalities ``index``: their orientation rows are ``½ s P (J_ω1 − J_ω2)``."""
    data = model.equalities.data.astype(quat1.dtype)[np.asarray(index)]
    identity = jnp.zeros_like(data[:, 6:10]).at[:, 0].set(1.0)
    relative = identity if on_sites else data[:, 6:10]
    scale = data[:, 10]
    target = quat_mul(quat1, relative)
    rotation_error = quat_mul(quat_conj(quat2), target)[:, 1:] * scale[:, None]
    # column by column: ½ s Im(q2⁻¹ ⊗ (0, w) ⊗ q1 ⊗ q_rel), linear in w
    operator = (_left_matrix(quat_conj(quat2)) @ _right_matrix(target))[:, 1:, 1:]
    return rotation_error, 0.5 * scale[:, None, None] * operator


def _weld(model, kin, axes, index, on_sites):
    error, jacobian, (quat1, quat2, body1, body2) = _point_pair(
        model, kin, axes, index, EqualityKind.WELD, on_sites)
    rotation_error, operator = _weld_rotation(model, index, on_sites, quat1, quat2)
    angular = (rotation_jacobian(model, axes, body1) - rotation_jacobian(model, axes, body2))
    errors = jnp.stack([error, rotation_error], axis=1)  # (k, 2, 3)
    return errors, jnp.stack([jacobian, operator @ angular], axis=1)


def _polynomial(coefficients, x):
    """``(Σ c_k x^k, Σ k c_k x^(k−1))`` for ``coefficients`` ``(k, 5)``."""
    value = coefficients[:, 4]
    slope = jnp.zeros_like(value)
    for k in (3, 2, 1, 0):
        slope = slope * x + value
        value = value * x + coefficients[:, k]
    return value, slope


def _scalar_coupling(model, index, value, reference, jacobian):
    """Joint / tendon equalities: ``value``, ``reference`` ``(count,)`` and ``jacobian``
    ``(count, nv)`` of the scalar coordinates; returns errors ``(k, 1, 3)`` and rows
    ``(k, 1, 3, nv)`` with the constraint on the normal row."""
    equalities = model.equalities
    dtype = value.dtype
    data = equalities.data.astype(dtype)[np.asarray(index)]
    first = np.asarray([equalities.object1[i] for i in index], dtype=np.int64)
    has_second = np.asarray([equalities.object2[i] is not None for i in index])
    second = np.asarray([equalities.object2[i] or 0 for i in index], dtype=np.int64)
    offset = jnp.where(jnp.asarray(has_second), value[second] - reference[second], 0.0)
    poly, slope = _polynomial(data[:, :5], offset)
    error = value[first] - reference[first] - poly
    rows = jacobian[first] - jnp.where(jnp.asarray(has_second)[:, None],
                                       slope[:, None] * jacobian[second], 0.0)
    zeros_error = jnp.zeros_like(error)
    errors = jnp.stack([zeros_error, zeros_error, error], axis=-1)[:, None, :]
    zeros_rows = jnp.zeros_like(rows)
    return errors, jnp.stack([zeros_rows, zeros_rows, rows], axis=1)[:, None]


def _joint(model, kin, q, index):
    tree = model.tree
    dtype = q.dtype
    qpos = np.asarray(tree.joint_qpos_adr, dtype=np.int64)
    dof = np.asarray(tree.joint_dof_adr, dtype=np.int64)
    value = q[qpos]
    reference = model.qpos0.astype(dtype)[qpos]
    jacobian = jnp.asarray(np.eye(model.nv)[dof] if model.nv else np.zeros((tree.njnt, 0)), dtype)
    return _scalar_coupling(model, index, value, reference, jacobian)


def _tendon(model, tendon, index):
    return _scalar_coupling(model, index, tendon.length,
                            model.tendons.length0.astype(tendon.length.dtype), tendon.jacobian)


def equality_errors(model: Model, q: jax.Array, kin, axes, tendon) -> tuple[jax.Array, jax.Array]:
    """Position errors ``(m, 3)`` and Jacobian rows ``(m, 3, nv)`` of every equality slot, in
    constraint order (a weld's translation slot, then its rotation slot); MuJoCo's ``efc_pos`` /
    ``efc_J`` rows of the equalities (module docstring).

    Args:
      q: ``(nq,)``; kin, axes: forward kinematics and ``(nv, 6)`` motion axes at ``q``; tendon:
        the :class:`~jaxsim_contact.dynamics._tendons.TendonKinematics` at ``q`` (read only by
        tendon equalities; ``None`` when there are none).
    """
    equalities = model.equalities
    errors, jacobians = [None] * equalities.neq, [None] * equalities.neq
    groups: dict = {}
    for i, (kind, on_sites) in enumerate(zip(equalities.kind, equalities.on_sites)):
        groups.setdefault((kind, on_sites), []).append(i)
    for (kind, on_sites), index in groups.items():
        if kind is EqualityKind.CONNECT:
            error, jacobian = _connect(model, kin, axes, index, on_sites)
        elif kind is EqualityKind.WELD:
            error, jacobian = _weld(model, kin, axes, index, on_sites)
        elif kind is EqualityKind.JOINT:
            error, jacobian = _joint(model, kin, q, index)
        else:
            error, jacobian = _tendon(model, tendon, index)
        for k, i in enumerate(index):
            errors[i], jacobians[i] = error[k], jacobian[k]
    return jnp.concatenate(errors), jnp.concatenate(jacobians)


def equality_wrenches(model: Model, kin, force: jax.Array) -> jax.Array:
    """``(nbody, 6)`` world wrenches ``[τ_O; f]`` (N·m about the world origin; N) that the
    connect and weld slots' forces ``force`` ``(m, 3)`` (N, world axes; a weld's rotation slot in
    its orientation-row units) exert on their bodies: ``+f`` at ``p1`` on body 1, ``−f`` at ``p2``
    on body 2, and a weld's torque ``±(½ s P)ᵀ f_rot`` — what ``Jᵀ f`` applies to each body
    (MuJoCo's equality part of ``cfrc_ext``, mj_rnePostConstraint, which instead reads a weld's
    rotation force as the torque itself). Joint and tendon equalities act inside the tree: none."""
    equalities = model.equalities
    wrenches = jnp.zeros((model.nbody, 6), kin.body_pos.dtype)
    first_slot = np.cumsum([0] + [_SLOTS[k] for k in equalities.kind])[:-1]
    groups: dict = {}
    for i, (kind, on_sites) in enumerate(zip(equalities.kind, equalities.on_sites)):
        if kind in (EqualityKind.CONNECT, EqualityKind.WELD):
            groups.setdefault((kind, on_sites), []).append(i)
    for (kind, on_sites), index in groups.items():
        point1, point2, quat1, quat2, body1, body2 = _anchors(model, kin, index, kind, on_sites)
        slots = first_slot[np.asarray(index)]
        linear = force[slots]
        torque1, torque2 = jnp.cross(point1, linear), jnp.cross(point2, linear)
        if kind is EqualityKind.WELD:
            _, operator = _weld_rotation(model, index, on_sites, quat1, quat2)
            torque = jnp.einsum("kji,kj->ki", operator, force[slots + 1])
            torque1, torque2 = torque1 + torque, torque2 + torque
        wrenches = wrenches.at[body1].add(jnp.concatenate([torque1, linear], axis=-1))
        wrenches = wrenches.at[body2].add(-jnp.concatenate([torque2, linear], axis=-1))
    return wrenches


def _soft_positions(error, slots, kinds):
    """``(m,)`` the position MuJoCo's impedance reads for each slot: the norm of a connect's 3
    or a weld's 6 errors, a joint / tendon coupling's signed error (its normal row)."""
    norms = safe_norm(error)
    weld = np.asarray([k is EqualityKind.WELD for k in kinds])
    if weld.any():  # both slots of a weld: the norm of its 6 errors
        sums = jnp.zeros(int(slots.max()) + 1, error.dtype).at[slots].add(norms ** 2)
        norms = jnp.where(jnp.asarray(weld), safe_sqrt(sums[slots]), norms)
    scalar = np.asarray([k in (EqualityKind.JOINT, EqualityKind.TENDON) for k in kinds])
    return jnp.where(jnp.asarray(scalar), error[:, 2], norms)


def _soft_diagonal(model, soft, slots, kinds, dtype):
    """``(m, 3)`` MuJoCo's ``A_ii`` of every row of the equality slots (``mj_diagApprox``)."""
    eq = model.equalities
    weight = soft.body_invweight0.astype(dtype)
    dof_weight, tendon_weight = soft.dof_invweight0.astype(dtype), soft.tendon_invweight0.astype(dtype)
    rows, seen = [], set()
    for e, kind in zip(slots.tolist(), kinds):
        second = e in seen
        seen.add(e)
        if kind in (EqualityKind.CONNECT, EqualityKind.WELD):
            bodies = [eq.object1[e], eq.object2[e]]
            if eq.on_sites[e]:
                bodies = [model.site_body[b] for b in bodies]
            column = 1 if (kind is EqualityKind.WELD and second) else 0
            value = weight[bodies[0], column] + weight[bodies[1], column]
        else:
            objects = [o for o in (eq.object1[e], eq.object2[e]) if o is not None]
            if kind is EqualityKind.JOINT:
                value = sum(dof_weight[model.tree.joint_dof_adr[o]] for o in objects)
            else:
                value = sum(tendon_weight[o] for o in objects)
        rows.append(jnp.broadcast_to(value, (3,)))
    return jnp.stack(rows)


def slot_equality(model: Model) -> np.ndarray:
    """Static ``(m,)``: the equality constraint of each slot."""
    return np.repeat(np.arange(model.neq), [_SLOTS[k] for k in model.equalities.kind]).astype(np.int64)


def equality_rows(model: Model, q: jax.Array, smooth) -> EqualityRows:
    """The equality slots of a step at ``q`` (``smooth``: its
    :class:`~jaxsim_contact.dynamics.SmoothDynamics`); block-local keys
    (the assembler offsets them)."""
    error, jacobian = equality_errors(model, q, smooth.kinematics, smooth.motion_axes, smooth.tendon)
    count = error.shape[0]
    dtype = q.dtype
    active = model.equalities.is_active()[slot_equality(model)]
    return EqualityRows(
        distance=-safe_norm(error), frame=jnp.broadcast_to(jnp.eye(3, dtype=dtype), (count, 3, 3)),
        friction=jnp.zeros((count,), dtype), key=jnp.arange(count, dtype=jnp.int32),
        active=active, point=jnp.zeros((count, 3), dtype), jacobian=jacobian, error=error,
        velocity_bias=getattr(smooth, "equality_velocity_bias", None))
