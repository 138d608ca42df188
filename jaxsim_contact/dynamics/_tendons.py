"""Tendon kinematics and passive tendon forces (MuJoCo Computation chapter "Tendons",
``mj_tendon`` and the tendon part of ``mj_passive``; XML Reference ``<tendon>``).

A tendon is a scalar length ``l(q)`` with a velocity ``l̇ = J v`` (``J``: ``(ntendon, nv)``, its
moment arms, MuJoCo's ``ten_J``):

* **fixed** tendon: ``l = Σ_k coef_k q_k`` over scalar joints, so ``J`` holds the coefficients at
  the joints' dofs;
* **spatial** tendon: the length of a path through sites. Between two consecutive sites the path
  is the straight segment; a sphere or cylinder between two sites makes the path wrap around it
  when the straight segment would cross it (:mod:`._tendon_wrap`: two tangent points and an arc,
  the side chosen by the optional side site). A pulley starts a new branch: the lengths of the
  segments after it are divided by its divisor.

Each straight piece from point ``a`` on body ``A`` to point ``b`` on body ``B`` contributes
``|b − a|`` to the length and ``u · (J_B(b) − J_A(a))`` to ``J`` (``u`` the unit direction,
``J_X(p)`` the Jacobian of the point ``p`` fixed to body ``X``). A wrap's tangent points count as
points of the wrapping geom's body and its arc as a constant: the tangent points minimise the path
length, so moving them along the surface changes it only to second order (this is MuJoCo's
``ten_J`` too). All pieces of all tendons are evaluated in one batch and summed into tendons with
one matrix product.
"""

from __future__ import annotations

import typing

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._math import cross, quat_to_matrix, safe_normalize, safe_norm
from .._model import Model, WrapKind
from ._integration import integrate_positions
from ._kinematics import Kinematics, forward_kinematics, motion_axes
from ._tendon_wrap import wrap as wrap_geometry

__all__ = ["TendonKinematics", "tendon_kinematics", "tendon_forces", "site_positions",
           "tendon_armature", "spring_stretch"]


class TendonKinematics(eqx.Module):
    """Tendon lengths and moment arms at one configuration.

    Attributes:
      length: ``(ntendon,)`` lengths (m; MuJoCo ``ten_length``; rad-weighted sums for fixed
        tendons over hinges).
      jacobian: ``(ntendon, nv)`` ``∂l/∂v`` (MuJoCo ``ten_J``): ``l̇ = jacobian @ v``.
    """

    length: jax.Array
    jacobian: jax.Array

    def velocity(self, v: jax.Array) -> jax.Array:
        """``(ntendon,)`` tendon velocities ``J v`` (MuJoCo ``ten_velocity``)."""
        return self.jacobian @ v


class _Piece(typing.NamedTuple):
    """A straight piece of a spatial tendon path between two sites (static description)."""

    tendon: int
    site_a: int
    site_b: int
    pulley: int | None  # path element index of the divisor in force, None: divisor 1


class _Wrap(typing.NamedTuple):
    """A site - geom - site wrap of a spatial tendon path (static description)."""

    tendon: int
    site_a: int
    geom: int
    site_b: int
    side_site: int | None
    cylinder: bool
    pulley: int | None


def _spatial_pieces(model: Model) -> tuple[tuple[_Piece, ...], tuple[_Wrap, ...]]:
    """The straight pieces and the wraps of every spatial tendon, walking each path as
    ``mj_tendon`` does: a pulley sets the divisor of what follows; a sphere / cylinder between two
    sites is a wrap; two consecutive sites are a straight piece."""
    tendons = model.tendons
    pieces, wraps = [], []
    for t, path in enumerate(tendons.path):
        if tendons.is_fixed(t):
            continue
        address = tendons.wrap_address(t)
        pulley = None
        j = 0
        while j < len(path) - 1:
            first, second = path[j], path[j + 1]
            if first.kind is WrapKind.PULLEY or second.kind is WrapKind.PULLEY:
                if first.kind is WrapKind.PULLEY:
                    pulley = address + j
                j += 1
                continue
            if second.kind in (WrapKind.SPHERE, WrapKind.CYLINDER):
                wraps.append(_Wrap(t, first.target, second.target, path[j + 2].target,
                                   second.side_site, second.kind is WrapKind.CYLINDER, pulley))
                j += 2
            else:
                pieces.append(_Piece(t, first.target, second.target, pulley))
                j += 1
    return tuple(pieces), tuple(wraps)


def site_positions(model: Model, kin: Kinematics) -> jax.Array:
    """``(nsite, 3)`` world positions of the model's sites (MuJoCo ``site_xpos``), m."""
    body = np.asarray(model.site_body, dtype=np.int64)
    local = model.site_pos.astype(kin.body_pos.dtype)
    return kin.body_pos[body] + jnp.einsum("sij,sj->si", kin.body_rot[body], local)


def _point_rows(model: Model, axes: jax.Array, body: np.ndarray, point: jax.Array,
                direction: jax.Array) -> jax.Array:
    """``(k, nv)``: ``direction · J_body(point)`` for ``k`` points fixed to ``body`` (static
    ``(k,)``): a dof's point velocity is ``v_O + ω × p``, so the row is
    ``(p × u) · ω + u · v_O`` over the dofs that move the body."""
    moves = jnp.asarray(model.tree.dof_moves_body, dtype=axes.dtype)[body]
    coefficients = jnp.concatenate([cross(point, direction), direction], axis=-1)  # (k, 6)
    return (coefficients @ axes.T) * moves


def _divisors(model: Model, pulleys, dtype) -> jax.Array:
    """``(k,)`` divisors of ``k`` pieces: the pulley's ``wrap_coef`` (path element index), or 1
    where ``None`` (before any pulley). One gather, whatever ``k``."""
    has_pulley = np.asarray([p is not None for p in pulleys], dtype=bool)
    index = np.asarray([0 if p is None else p for p in pulleys], dtype=np.int64)
    coef = model.tendons.wrap_coef.astype(dtype)
    return jnp.where(jnp.asarray(has_pulley), coef[index], 1.0) if pulleys else jnp.zeros((0,), dtype)


def _fixed_tendons(model: Model, q: jax.Array, dtype):
    """``(length, jacobian)`` contributions of the fixed tendons (zeros for spatial ones)."""
    tendons, tree = model.tendons, model.tree
    rows, qpos, dofs, coef_index = [], [], [], []
    for t, path in enumerate(tendons.path):
        if not tendons.is_fixed(t):
            continue
        address = tendons.wrap_address(t)
        for k, element in enumerate(path):
            rows.append(t)
            qpos.append(tree.joint_qpos_adr[element.target])
            dofs.append(tree.joint_dof_adr[element.target])
            coef_index.append(address + k)
    length = jnp.zeros((tendons.ntendon,), dtype)
    jacobian = jnp.zeros((tendons.ntendon, model.nv), dtype)
    if not rows:
        return length, jacobian
    coef = tendons.wrap_coef.astype(dtype)[np.asarray(coef_index)]
    rows = np.asarray(rows)
    length = length.at[rows].add(coef * q[np.asarray(qpos)])
    jacobian = jacobian.at[rows, np.asarray(dofs)].add(coef)
    return length, jacobian


def _geom_frames(model: Model, kin: Kinematics, geoms: np.ndarray):
    """World position ``(k, 3)`` and rotation ``(k, 3, 3)`` of geoms ``geoms``."""
    body = np.asarray(model.geom_body, dtype=np.int64)[geoms]
    body_rot = kin.body_rot[body]
    pos = kin.body_pos[body] + jnp.einsum("kij,kj->ki", body_rot, model.geom_pos[geoms])
    rot = body_rot @ quat_to_matrix(model.geom_quat[geoms])
    return pos, rot


def _wrap_pieces(model: Model, kin: Kinematics, sites: jax.Array, wraps: tuple[_Wrap, ...]):
    """The straight pieces of the wraps as point pairs with weights, and their arcs.

    Each wrap gives three candidate pieces: ``a → t0`` and ``t1 → b`` (weight 1 when it wraps) and
    ``a → b`` (weight 1 when it does not), plus its arc length when it wraps.

    Returns ``(tendon, body_a, body_b)`` static ``(3w,)``, ``point_a, point_b`` ``(3w, 3)``,
    ``weight (3w,)``, ``arc (w,)``.
    """
    dtype = kin.body_pos.dtype
    site_body = np.asarray(model.site_body, dtype=np.int64)
    geoms = np.asarray([w.geom for w in wraps], dtype=np.int64)
    geom_pos, geom_rot = _geom_frames(model, kin, geoms)
    radius = model.geom_size.astype(dtype)[geoms, 0]
    end_a = sites[np.asarray([w.site_a for w in wraps])]
    end_b = sites[np.asarray([w.site_b for w in wraps])]
    to_local = lambda p: jnp.einsum("kji,kj->ki", geom_rot, p - geom_pos)  # noqa: E731
    to_world = lambda p: geom_pos + jnp.einsum("kij,kj->ki", geom_rot, p)  # noqa: E731
    side_site = np.asarray([-1 if w.side_site is None else w.side_site for w in wraps])
    side = jnp.where(jnp.asarray(side_site >= 0)[:, None], sites[np.maximum(side_site, 0)], geom_pos)
    local_a, local_b, local_side = to_local(end_a), to_local(end_b), to_local(side)
    # one vmapped wrap per (cylinder, side site) combination: the program holds at most four
    # copies of the wrap geometry, whatever the number of wraps
    tangent0 = jnp.zeros_like(end_a)
    tangent1 = jnp.zeros_like(end_a)
    arcs = jnp.zeros((len(wraps),), dtype)
    wrapped = jnp.zeros((len(wraps),), bool)
    for cylinder in (False, True):
        for has_side in (False, True):
            group = np.asarray([i for i, w in enumerate(wraps)
                                if w.cylinder == cylinder and (w.side_site is not None) == has_side])
            if not group.size:
                continue
            result = jax.vmap(lambda a, b, r, c: wrap_geometry(
                a, b, r, cylinder=cylinder, side=c, has_side=has_side))(
                local_a[group], local_b[group], radius[group], local_side[group])
            tangent0 = tangent0.at[group].set(result.tangent0)
            tangent1 = tangent1.at[group].set(result.tangent1)
            arcs = arcs.at[group].set(jnp.where(result.wraps, result.arc_length, 0.0))
            wrapped = wrapped.at[group].set(result.wraps)
    tangent0, tangent1 = to_world(tangent0), to_world(tangent1)
    wrapped = wrapped.astype(dtype)
    body_a = site_body[np.asarray([w.site_a for w in wraps])]
    body_b = site_body[np.asarray([w.site_b for w in wraps])]
    geom_body = np.asarray(model.geom_body, dtype=np.int64)[geoms]
    tendon = np.asarray([w.tendon for w in wraps], dtype=np.int64)
    point_a = jnp.concatenate([end_a, tangent1, end_a])
    point_b = jnp.concatenate([tangent0, end_b, end_b])
    weight = jnp.concatenate([wrapped, wrapped, 1.0 - wrapped])
    return ((np.tile(tendon, 3), np.concatenate([body_a, geom_body, body_a]),
             np.concatenate([geom_body, body_b, body_b])),
            point_a, point_b, weight, arcs * wrapped)


def tendon_kinematics(model: Model, q: jax.Array, kin: Kinematics, axes: jax.Array) -> TendonKinematics:
    """Lengths ``(ntendon,)`` and moment arms ``(ntendon, nv)`` of every tendon at ``q`` (module
    docstring; MuJoCo ``mj_tendon``: ``ten_length``, ``ten_J``).

    Args:
      q: ``(nq,)``; kin: :func:`~jaxsim_contact.dynamics.forward_kinematics` at ``q``; axes:
        ``(nv, 6)`` :func:`~jaxsim_contact.dynamics.motion_axes`.
    """
    dtype = q.dtype
    length, jacobian = _fixed_tendons(model, q, dtype)
    pieces, wraps = _spatial_pieces(model)
    if not pieces and not wraps:
        return TendonKinematics(length=length, jacobian=jacobian)
    sites = site_positions(model, kin)
    site_body = np.asarray(model.site_body, dtype=np.int64)
    tendon_parts, body_a_parts, body_b_parts = [], [], []
    point_a_parts, point_b_parts, weight_parts, pulleys = [], [], [], []
    if pieces:
        site_a = np.asarray([p.site_a for p in pieces])
        site_b = np.asarray([p.site_b for p in pieces])
        tendon_parts.append(np.asarray([p.tendon for p in pieces]))
        body_a_parts.append(site_body[site_a])
        body_b_parts.append(site_body[site_b])
        point_a_parts.append(sites[site_a])
        point_b_parts.append(sites[site_b])
        weight_parts.append(jnp.ones((len(pieces),), dtype))
        pulleys += [p.pulley for p in pieces]
    arc_length = jnp.zeros((model.ntendon,), dtype)
    if wraps:
        (tendon, body_a, body_b), point_a, point_b, weight, arcs = _wrap_pieces(
            model, kin, sites, wraps)
        tendon_parts.append(tendon)
        body_a_parts.append(body_a)
        body_b_parts.append(body_b)
        point_a_parts.append(point_a)
        point_b_parts.append(point_b)
        weight_parts.append(weight)
        pulleys += [w.pulley for w in wraps] * 3
        wrap_tendon = np.asarray([w.tendon for w in wraps])
        arc_length = arc_length.at[wrap_tendon].add(arcs / _divisors(model, [w.pulley for w in wraps], dtype))
    tendon = np.concatenate(tendon_parts)
    point_a, point_b = jnp.concatenate(point_a_parts), jnp.concatenate(point_b_parts)
    weight = jnp.concatenate(weight_parts) / _divisors(model, pulleys, dtype)
    difference = point_b - point_a
    piece_length = safe_norm(difference)
    direction = safe_normalize(difference)
    rows = (_point_rows(model, axes, np.concatenate(body_b_parts), point_b, direction)
            - _point_rows(model, axes, np.concatenate(body_a_parts), point_a, direction))
    # one (ntendon, pieces) incidence product sums the pieces into their tendons
    incidence = jnp.asarray(np.arange(model.ntendon)[:, None] == tendon[None, :], dtype)
    length = length + incidence @ (weight * piece_length) + arc_length
    jacobian = jacobian + incidence @ (weight[:, None] * rows)
    return TendonKinematics(length=length, jacobian=jacobian)


def spring_stretch(model: Model, length: jax.Array) -> jax.Array:
    """``(ntendon,)`` how far each length lies outside its spring's dead band ``length_spring``
    (negative below it, positive above, 0 inside), m."""
    spring = model.tendons.length_spring.astype(length.dtype)
    return jnp.minimum(length - spring[:, 0], 0.0) + jnp.maximum(length - spring[:, 1], 0.0)


def tendon_forces(model: Model, tendon: TendonKinematics, v: jax.Array) -> jax.Array:
    """``(nv,)`` passive generalised force of the tendons' springs and dampers (MuJoCo
    ``mj_passive``): along each tendon ``f = −k (l − l_s) − b l̇`` with the spring acting only
    outside the dead band ``[l_lo, l_hi]`` of ``length_spring`` (``l_s`` the nearer end), mapped by
    ``Jᵀ f``. Damping is explicit, as in MuJoCo's Euler integrator (only joint damping is
    implicit there)."""
    dtype = v.dtype
    if model.ntendon == 0:
        return jnp.zeros((model.nv,), dtype)
    tendons = model.tendons
    force = (-tendons.stiffness.astype(dtype) * spring_stretch(model, tendon.length)
             - tendons.damping.astype(dtype) * tendon.velocity(v))
    return force @ tendon.jacobian


def tendon_armature(model: Model, q: jax.Array, v: jax.Array, tendon: TendonKinematics):
    """``(mass (nv, nv), bias (nv,))`` of the tendons' armature (MuJoCo ``tendon armature``: an
    inertia ``a`` along the tendon, kinetic energy ``½ a l̇²``): ``Jᵀ a J`` joins the mass matrix
    and ``Jᵀ a J̇v`` the bias forces (the ``∂T/∂q`` terms cancel for a scalar ``l(q)``), with
    ``J̇v = d/dt [J(q ⊕ v t) v]`` at ``t = 0`` by a forward-mode derivative. Zeros for a model
    without armature tendons (``Tendons.armature_tendons``)."""
    dtype = v.dtype
    index = np.asarray(model.tendons.armature_tendons, dtype=np.int64)
    if index.size == 0:
        return jnp.zeros((model.nv, model.nv), dtype), jnp.zeros((model.nv,), dtype)
    armature = model.tendons.armature.astype(dtype)[index]
    jacobian = tendon.jacobian[index]

    def rate(t):
        moved = integrate_positions(model, q, v, t)
        kin = forward_kinematics(model, moved)
        return tendon_kinematics(model, moved, kin, motion_axes(model, kin)).jacobian[index] @ v

    jacobian_rate = jax.jvp(rate, (jnp.zeros((), dtype),), (jnp.ones((), dtype),))[1]
    mass = jacobian.T @ (armature[:, None] * jacobian)
    return mass, jacobian.T @ (armature * jacobian_rate)
