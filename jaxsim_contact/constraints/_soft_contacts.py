"""Contacts under MuJoCo's soft model (``Options.constraint_model = "mujoco"``, issue 45):
per-pair parameters, MuJoCo's contact frame, and the pyramidal cone's edge rows.

* Parameters (``mj_contactParam``, ``getMargin``): for a geom pair, the geom of higher
  ``priority`` gives ``condim``, ``solref``, ``solimp`` and friction; equal priorities take the
  larger ``condim`` and friction, ``solmix``-weighted ``solref`` (both standard) or their
  elementwise minimum (direct) and weighted ``solimp``. The margin is the sum of the two geoms'
  (``<pair>``: its own values). A contact has rows only while ``dist < margin``; friction is at
  least ``1e-5`` (``mjMINMU``).
* Frame (``mju_makeFrame``): ``x`` = the normal, ``y`` = the collider's tangent hint (the capsule
  axis for plane–capsule pairs) or else world ``y`` (world ``z`` when ``|n_y| ≥ ½``)
  orthogonalised, ``z = x × y``. The pyramid's edges depend on it; the elliptic cone does not.
* Friction (``mj_contactParam``, ``mj_assignFriction``): five coefficients per contact, MuJoCo's
  ``contact.friction`` — sliding along ``t1``, ``t2``, torsional about ``n``, rolling about
  ``t1``, ``t2`` — from the geoms' ``(sliding, torsional, rolling)`` as ``(s, s, τ, ρ, ρ)``, or a
  ``<pair>``'s own five; each at least ``1e-5`` (``mjMINMU``).
* Pyramid (``mj_instantiateContact``): ``2(condim − 1)`` unilateral rows ``J_n ± μ_j J_j`` with
  the contact's distance, ``J_j`` the frame's rows of the relative linear velocity (``t1``,
  ``t2``) and, for ``condim`` 4 and 6, of the relative angular velocity (``n``: torsion; ``t1``,
  ``t2``: rolling); a ``condim = 1`` contact keeps one frictionless row ``J_n``. Reported per edge
  slot as the edge's force in the contact frame, ``p (±μ, 0, 1)`` or ``p (0, ±μ, 1)``, and ``p (0,
  0, 1)`` for a torsional or rolling edge (its torque ``±μ p`` is not in ``ContactData.force``);
  sums of slots give the contact's force and normal force.

The elliptic cone has one sliding coefficient on its two tangent rows; ``condim`` 4 and 6 add the
torsional and rolling rows as spin slots (:mod:`._spin_rows`). A ``<pair>`` with two different
sliding coefficients under it is refused by name.
"""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._math import cross, quat_rotate, safe_normalize
from .._model import FrictionCone, Model
from .._types import GeomType
from ..collision._geoms import geom_world_frames
from ..collision._narrowphase import KEY_STRIDE
from ..collision._pairs import collision_structure
from ._jacobian import contact_jacobians
from ._rows import NormalRowBlock, RowKind
from ._soft import (MIN_VALUE, clamp_solimp, clamp_solref, impedance, reference_acceleration,
                    regulariser, require_soft)

__all__ = ["ContactSoftParameters", "contact_soft_parameters", "pair_condim", "mujoco_frame",
           "PyramidRows", "pyramid_rows", "edges_per_contact"]

#: MuJoCo's ``mjMINMU``
MIN_FRICTION = 1e-5


class ContactSoftParameters(eqx.Module):
    """Per contact slot ``(m, ...)``: ``solref``, ``solreffriction`` (zero: none), ``solimp``
    (clamped), ``friction`` ``(m, 5)`` (MuJoCo's five coefficients, module docstring, each ``≥
    1e-5``), ``margin`` (m), ``condim`` (int32), ``translation_weight`` (``invweight0`` of the two
    bodies, 1/kg)."""

    solref: jax.Array
    solreffriction: jax.Array
    solimp: jax.Array
    friction: jax.Array
    margin: jax.Array
    condim: jax.Array
    translation_weight: jax.Array


def _tables(model: Model):
    """Static per candidate pair: whose parameters win (0 mixed, 1 geom a, 2 geom b), ``condim``,
    and the explicit ``<pair>`` index (-1: none)."""
    soft = require_soft(model)
    geoms = collision_structure(model).pair_geoms
    prio, cond = np.asarray(soft.geom_priority), np.asarray(soft.geom_condim)
    a, b = geoms[:, 0], geoms[:, 1]
    winner = np.where(prio[a] > prio[b], 1, np.where(prio[a] < prio[b], 2, 0))
    condim = np.where(winner == 1, cond[a],
                      np.where(winner == 2, cond[b], np.maximum(cond[a], cond[b])))
    explicit = np.full(len(geoms), -1)
    lookup = {frozenset(p): i for i, p in enumerate(soft.pair_geoms)}
    for k, (ga, gb) in enumerate(geoms.tolist()):
        i = lookup.get(frozenset((ga, gb)))
        if i is not None:
            explicit[k], condim[k] = i, soft.pair_condim[i]
    return winner, condim, explicit


def pair_condim(model: Model) -> np.ndarray:
    """Static ``(num_pairs,)`` ``condim`` of every candidate pair (MuJoCo's rule, module
    docstring). Under the elliptic cone, raises ``NotImplementedError`` naming the geoms of a
    ``<pair>`` with two different sliding coefficients (an anisotropic cone)."""
    _, condim, explicit = _tables(model)
    if model.soft.cone is FrictionCone.PYRAMIDAL:
        return condim
    geoms = collision_structure(model).pair_geoms
    names = lambda k: [model.geom_names[int(g)] or f"#{int(g)}" for g in geoms[k]]  # noqa: E731
    if isinstance(model.soft.pair_friction, jax.core.Tracer):  # checked at load, when concrete
        return condim
    sliding = np.asarray(model.soft.pair_friction)[:, :2]
    anisotropic = [k for k in np.flatnonzero(explicit >= 0) if sliding[explicit[k], 0] != sliding[explicit[k], 1]]
    if anisotropic:
        a, b = names(anisotropic[0])
        raise NotImplementedError(
            f"{model.source}: the <pair> of geoms {a!r} and {b!r} has two sliding friction "
            f"coefficients {sliding[explicit[anisotropic[0]]].tolist()}, which the "
            "MuJoCo-compatible elliptic cone does not support (the pyramidal cone does)")
    return condim


def edges_per_contact(model: Model) -> int:
    """Static pyramid edge slots per contact: ``2 (condim − 1)`` for the model's largest
    ``condim``, at least 4 (``+t1, −t1, +t2, −t2``; a ``condim = 1`` contact uses the first)."""
    condim = pair_condim(model)
    return max(4, 2 * (int(condim.max(initial=1)) - 1))


def _mixed(model: Model, dtype):
    """Per candidate pair ``(P, ...)``: mixed ``solref``, ``solimp`` and friction (module
    docstring), before the explicit pairs."""
    soft = model.soft
    geoms = collision_structure(model).pair_geoms
    a, b = geoms[:, 0], geoms[:, 1]
    winner, _, _ = _tables(model)
    mix_a, mix_b = soft.geom_solmix.astype(dtype)[a], soft.geom_solmix.astype(dtype)[b]
    mix = jnp.where((mix_a >= MIN_VALUE) & (mix_b >= MIN_VALUE), mix_a / (mix_a + mix_b),
                    jnp.where((mix_a < MIN_VALUE) & (mix_b < MIN_VALUE), 0.5,
                              jnp.where(mix_a < MIN_VALUE, 0.0, 1.0)))[:, None]
    ref_a, ref_b = soft.geom_solref.astype(dtype)[a], soft.geom_solref.astype(dtype)[b]
    standard = ((ref_a[:, 0] > 0) & (ref_b[:, 0] > 0))[:, None]
    solref = jnp.where(standard, mix * ref_a + (1 - mix) * ref_b, jnp.minimum(ref_a, ref_b))
    imp_a, imp_b = soft.geom_solimp.astype(dtype)[a], soft.geom_solimp.astype(dtype)[b]
    solimp = mix * imp_a + (1 - mix) * imp_b
    # (sliding, torsional, rolling) of each geom as MuJoCo's five: (s, s, τ, ρ, ρ)
    five = soft.geom_friction.astype(dtype)[:, jnp.array([0, 0, 1, 2, 2])]
    fri_a, fri_b = five[a], five[b]
    friction = jnp.maximum(fri_a, fri_b)
    pick = lambda x_a, x_b, mixed: jnp.where(  # noqa: E731
        (winner == 1).reshape((-1,) + (1,) * (mixed.ndim - 1)), x_a,
        jnp.where((winner == 2).reshape((-1,) + (1,) * (mixed.ndim - 1)), x_b, mixed))
    return pick(ref_a, ref_b, solref), pick(imp_a, imp_b, solimp), pick(fri_a, fri_b, friction)


def contact_soft_parameters(model: Model, key: jax.Array, body_a, body_b, dt) -> ContactSoftParameters:
    """The soft parameters of contact slots with keys ``key`` ``(m,)`` (their candidate pair is
    ``key // KEY_STRIDE``) between bodies ``body_a``, ``body_b`` ``(m,)``; ``dt`` (s) for
    ``refsafe``."""
    soft = require_soft(model)
    dtype = dt.dtype
    num_pairs = collision_structure(model).num_pairs
    _, condim, explicit = _tables(model)
    if soft.override is not None:  # <flag override>: the option's values for every contact
        o = soft.override
        solref = jnp.broadcast_to(o.solref.astype(dtype), (num_pairs, 2))
        solreffriction = solref
        solimp = jnp.broadcast_to(o.solimp.astype(dtype), (num_pairs, 5))
        friction = jnp.broadcast_to(o.friction.astype(dtype), (num_pairs, 5))
    else:
        solref, solimp, friction = _mixed(model, dtype)
        solreffriction = jnp.zeros_like(solref)
        has = explicit >= 0
        if has.any():
            rows, index = np.flatnonzero(has), explicit[has]
            solref = solref.at[rows].set(soft.pair_solref.astype(dtype)[index])
            solreffriction = solreffriction.at[rows].set(soft.pair_solreffriction.astype(dtype)[index])
            solimp = solimp.at[rows].set(soft.pair_solimp.astype(dtype)[index])
            friction = friction.at[rows].set(soft.pair_friction.astype(dtype)[index])
    pair = jnp.clip(key // KEY_STRIDE, 0, num_pairs - 1)
    weight = soft.body_invweight0.astype(dtype)[:, 0]
    return ContactSoftParameters(
        solref=clamp_solref(solref[pair], dt, soft.refsafe),
        solreffriction=clamp_solref(solreffriction[pair], dt, soft.refsafe, zero_default=True),
        solimp=clamp_solimp(solimp[pair]), friction=jnp.maximum(MIN_FRICTION, friction[pair]),
        margin=_pair_margin_table(model, dtype)[pair], condim=jnp.asarray(condim, jnp.int32)[pair],
        translation_weight=weight[body_a] + weight[body_b])


def mujoco_frame(normal: jax.Array, hint: jax.Array) -> jax.Array:
    """``(..., 3, 3)`` rows ``(t1, t2, n)``: MuJoCo's contact frame (``mju_makeFrame``) of unit
    ``normal`` ``(..., 3)`` with tangent hint ``hint`` (zero: none)."""
    dtype = normal.dtype
    default = jnp.where(jnp.abs(normal[..., 1:2]) < 0.5, jnp.array([0.0, 1.0, 0.0], dtype),
                        jnp.array([0.0, 0.0, 1.0], dtype))
    y = jnp.where(jnp.sum(hint * hint, -1, keepdims=True) < 0.25, default, hint)
    y = safe_normalize(y - normal * jnp.sum(normal * y, -1, keepdims=True),
                       fallback=jnp.array([1.0, 0.0, 0.0], dtype))
    return jnp.stack([y, cross(normal, y), normal], axis=-2)


def tangent_hints(model: Model, key, kinematics) -> jax.Array:
    """``(m, 3)`` MuJoCo's collider tangent of contact slots: the capsule's world axis for a
    plane–capsule pair, zero otherwise."""
    geoms = collision_structure(model).pair_geoms
    types = np.asarray([int(t) for t in model.geom_type])
    plane_capsule = ((types[geoms[:, 0]] == int(GeomType.PLANE)) & (types[geoms[:, 1]] == int(GeomType.CAPSULE))) | \
                    ((types[geoms[:, 1]] == int(GeomType.PLANE)) & (types[geoms[:, 0]] == int(GeomType.CAPSULE)))
    dtype = kinematics.body_pos.dtype
    if not plane_capsule.any():
        return jnp.zeros(key.shape + (3,), dtype)
    capsule = np.where(types[geoms[:, 0]] == int(GeomType.CAPSULE), geoms[:, 0], geoms[:, 1])
    _, quat = geom_world_frames(model, kinematics.body_pos, kinematics.body_quat)
    axis = quat_rotate(quat, jnp.broadcast_to(jnp.array([0.0, 0.0, 1.0], dtype), quat.shape[:-1] + (3,)))
    pair = jnp.clip(key // KEY_STRIDE, 0, len(geoms) - 1)
    hint = axis[jnp.asarray(capsule)[pair]]
    return jnp.where(jnp.asarray(plane_capsule)[pair][:, None], hint, 0.0)


def _pair_margin_table(model: Model, dtype) -> jax.Array:
    """``(P,)`` MuJoCo margin (m) of every candidate pair: the sum of the two geoms' margins, or
    an explicit ``<pair>``'s own (``o_margin`` under ``override``)."""
    _, _, explicit = _tables(model)
    geoms = collision_structure(model).pair_geoms
    if model.soft.override is not None:
        return jnp.broadcast_to(model.soft.override.margin.astype(dtype), (len(geoms),))
    margin = model.geom_margin.astype(dtype)[geoms[:, 0]] + model.geom_margin.astype(dtype)[geoms[:, 1]]
    has = explicit >= 0
    if has.any():
        margin = margin.at[np.flatnonzero(has)].set(model.soft.pair_margin.astype(dtype)[explicit[has]])
    return margin


def pair_margins(model: Model, key: jax.Array, dtype) -> jax.Array:
    """``(N,)`` MuJoCo margin (m) of the candidate pairs of contact keys ``key``."""
    num_pairs = collision_structure(model).num_pairs
    return _pair_margin_table(model, dtype)[jnp.clip(key // KEY_STRIDE, 0, num_pairs - 1)]


#: per edge ``e``: the sign ``±1`` and the friction direction ``j`` (0, 1: sliding along t1, t2;
#: 2: torsion; 3, 4: rolling) of edge row ``J_n ± μ_j J_j``, MuJoCo's edge order
def _edge_directions(edges: int) -> np.ndarray:
    """``(edges, 5)``: row ``e`` is ``±1`` at its direction ``j = e // 2`` (``+`` for even ``e``)."""
    table = np.zeros((edges, 5))
    table[np.arange(edges), np.arange(edges) // 2] = np.where(np.arange(edges) % 2 == 0, 1.0, -1.0)
    return table


class PyramidRows(NormalRowBlock):
    """MuJoCo's pyramidal contacts: :func:`edges_per_contact` unilateral slots per contact
    (module docstring), consecutive. ``frame`` holds each contact's frame (MuJoCo's), ``edge``
    ``(E m, 5)`` the coefficients ``±μ_j`` of each edge row over the five friction directions;
    ``body_a``, ``body_b``, ``soft`` repeat the contact's per edge."""

    body_a: jax.Array
    body_b: jax.Array
    edge: jax.Array
    soft: ContactSoftParameters

    kind: ClassVar[RowKind] = RowKind.UNILATERAL
    restitution: ClassVar[bool] = False
    is_contact: ClassVar[bool] = True

    def normal_compliance(self, options, dtype):
        return options.compliance.astype(dtype)  # the hard model's (never read: soft rows)

    def correction_speed(self, options, dtype):
        return options.max_correction_speed.astype(dtype)

    def soft_rows(self, model, velocity_now, dt):
        """Edge rows (``mj_makeImpedance``): ``R = 2 μ̄² R₀`` with ``R₀`` from ``A_ii = t (1 +
        μ²)`` and ``μ̄ = μ / √impratio``; a frictionless contact's single row ``R₀(t)``."""
        p = self.soft
        imp = impedance(p.solimp, self.distance, p.margin)
        mu = p.friction[:, 0]  # R of every edge follows the first (mj_makeImpedance)
        first = regulariser(imp, p.translation_weight * (1.0 + mu * mu))
        scaled_mu2 = mu * mu / jnp.maximum(model.soft.impratio.astype(mu.dtype), MIN_VALUE)
        R = jnp.where(p.condim > 1, 2.0 * scaled_mu2 * first,
                      regulariser(imp, p.translation_weight))
        aref = reference_acceleration(p.solref, p.solimp, imp, self.distance, p.margin,
                                      velocity_now[:, 2])
        zeros = jnp.zeros_like(aref)
        return jnp.stack([R, R, R], axis=-1), jnp.stack([zeros, zeros, aref], axis=-1)

    def reported_force(self, force):
        """The edge force ``p`` as ``p (μ c₁, μ c₂, 1)`` in the contact frame."""
        p = force[:, 2]
        return jnp.stack([self.edge[:, 0] * p, self.edge[:, 1] * p, p], axis=-1)

    def factor_and_velocity_rows(self, model, smooth, velocity):
        edges = edges_per_contact(model)
        contacts = self.num_slots // edges
        pick = lambda x: x.reshape((contacts, edges) + x.shape[1:])[:, 0]  # noqa: E731
        active = jnp.any(self.active.reshape(contacts, edges), axis=1)
        body_a, body_b = pick(self.body_a), pick(self.body_b)
        frame = jnp.where(active[:, None, None], pick(self.frame), 0.0)
        linear = contact_jacobians(model, smooth.motion_axes, body_a, body_b,
                                   jnp.where(active[:, None], pick(self.point), 0.0), frame)
        # the five friction directions' rows (m, 5, nv): t1, t2, then the angular n, t1, t2
        directions = [linear[:, 0], linear[:, 1]]
        if edges > 4:  # torsional / rolling edges: the relative angular velocity's rows
            angular = contact_rotation_jacobians(model, smooth.motion_axes, body_a, body_b, frame)
            directions += [angular[:, 2], angular[:, 0], angular[:, 1]]
        directions = jnp.stack(directions, axis=1)
        edge = self.edge.reshape(contacts, edges, 5)[..., :directions.shape[1]]
        rows = (linear[:, None, 2] + jnp.einsum("cej,cjd->ced", edge, directions)
                ).reshape(self.num_slots, model.nv)
        rows = jnp.where(self.active[:, None], rows, 0.0)
        return self.normal_rows(rows, smooth, velocity)


def contact_rotation_jacobians(model: Model, axes, body_a, body_b, frame) -> jax.Array:
    """``(m, 3, nv)``: the frame rows ``(t1, t2, n)`` of the relative angular velocity ``ω_b −
    ω_a`` of contact slots (MuJoCo's rotated ``jacdifr``)."""
    moves = jnp.asarray(model.tree.dof_moves_body, dtype=axes.dtype)
    relative = moves[body_b] - moves[body_a]  # (m, nv)
    return jnp.einsum("crk,dk->crd", frame, axes[:, :3]) * relative[:, None, :]


def pyramid_rows(model: Model, contacts) -> PyramidRows:
    """The :class:`PyramidRows` of MuJoCo-compatible contact slots (``ContactRows`` with their
    ``soft`` parameters and MuJoCo frames): edges ``2 (condim − 1)`` of each contact, one for
    ``condim = 1``."""
    edges = edges_per_contact(model)
    repeat = lambda x: jnp.repeat(x, edges, axis=0)  # noqa: E731
    dtype = contacts.distance.dtype
    condim = contacts.soft.condim
    edge = contacts.soft.friction[:, None, :] * jnp.asarray(_edge_directions(edges), dtype)[None]
    # a frictionless contact keeps edge 0 alone, as MuJoCo's single frictionless row
    index = jnp.arange(edges)[None]
    used = jnp.where(condim[:, None] > 1, index < 2 * (condim[:, None] - 1), index == 0)
    edge = jnp.where((condim[:, None] > 1)[..., None], edge, 0.0)
    return PyramidRows(
        distance=repeat(contacts.distance), frame=repeat(contacts.frame),
        friction=jnp.zeros((contacts.num_slots * edges,), dtype), key=repeat(contacts.key),
        active=(contacts.active[:, None] & used).reshape(-1), point=repeat(contacts.point),
        body_a=repeat(contacts.body_a), body_b=repeat(contacts.body_b),
        edge=edge.reshape(-1, 5), soft=jax.tree_util.tree_map(repeat, contacts.soft))
