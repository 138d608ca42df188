"""The assembler: every producer's row block stacked into one contact problem, and the solved force
split back per block (DESIGN §2 stages 4–5; MuJoCo's ``efc_*`` row space).

:data:`PRODUCERS` lists the constraint kinds in slot order — cones, spin, unilateral, box, bilateral
(:data:`~._rows.KIND_ORDER`), as :class:`~jaxsim_contact.contact.ContactProblem`'s slot layout
requires. Adding a constraint kind is one producer module (a
:class:`~._rows.RowBlock` subclass, a ``slots(model)`` count, an ``in_reach`` test and a ``rows``
function) and one line here.

The problem is posed in force units (seed 001 §II: ``g / Δt``): ``G f + (c^f − c*)/Δt`` with the
Delassus matrix ``G = J M̃⁻¹ Jᵀ = B Bᵀ``, ``B = J L⁻ᵀ`` (seed 004 §II-C), and the reference normal
velocity (seed 001 §II, after eq. 9)
``c*_N = −max(φ, 0)/Δt + min(β max(−φ, 0)/Δt, v_max)``: a separated slot may close exactly its
gap during the step (the "completed Taylor expansion" ``Φ/Δt``), a violated one is pushed out by
the Baumgarte term ``k_B = β/Δt`` at most at the block's ``v_max`` (``max_correction_speed`` for
contacts, ``limit_correction_speed`` for joint limits: ``RowBlock.correction_speed``); where the block
allows restitution and the slot closes during the step at an approach speed above
``restitution_threshold``, ``c*_N = max(c*_N, −e c^t_N)`` (Newton restitution).
"""

from __future__ import annotations

import typing

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..collision._narrowphase import KEY_STRIDE
from ..collision._pairs import collision_structure
from ..contact import ContactProblem
from .._model import Model, Options, State
from . import (_ball_limit_rows as ball_limit_rows, _contact_rows as contact_rows, _equality_rows as equality_rows, _friction_rows as friction_rows, _limit_rows as limit_rows,
               _spin_rows as spin_rows, _tendon_limit_rows as tendon_limit_rows)
from ._rows import KIND_ORDER, RowBlock, RowKind, SlotGeometry
from ._soft import is_mujoco

__all__ = ["PRODUCERS", "Producer", "num_constraint_slots", "slot_ranges", "constraint_rows", "any_row_in_reach",
           "stack", "contact_problem", "split_forces", "gap_or_push_out", "round_off_terms", "DEGENERATE_NORMAL_RATIO"]

#: a contact or limit slot whose normal Delassus entry is at most this fraction of its block's
#: trace is masked (no normal force moves it; :func:`contact_problem`)
DEGENERATE_NORMAL_RATIO = 1e-8

#: round-off terms of a single-precision hard model (:func:`round_off_terms`), in units of ε
ROUND_OFF_COMPLIANCE = 1000.0
ROUND_OFF_SLOP = 8.0
#: a slot within this many slops (or closing its gap during the step) can carry a force
TOUCHING_SLOPS = 100.0
#: dtypes with a larger machine ε get the round-off terms (float32: 1.2e-7; float64: 2.2e-16)
_ROUND_OFF_EPS = 1e-10


def round_off_terms(dtype) -> tuple[float, float]:
    """``(C, s)``: the hard model's normal-row compliance floor ``R ≥ C G_nn`` (``C``
    dimensionless) and push-out slop ``s`` (m, rad) of a statically indeterminate contact set
    (touching slots sharing a body pair, or on a kinematic tree with more touching rows than dofs:
    :func:`_indeterminate_slots`) in ``dtype``; ``(0, 0)`` in float64.

    Why (issue 42): the float32-rounded problem of a face resting on several corners has no exact
    solution — its ``g`` is not in the range of the rank-deficient ``G`` to better than ε — so the
    solver drifts along ``G``'s near-null space until its cap. A compliance ``C ε G_nn`` (seed 001
    §II's compliant contact) bounds that drift; the small sink it allows under load is left to the
    compliance below the slop instead of being pushed out, and recovered above it
    (:func:`gap_or_push_out`). Determinate contacts (a quadruped on its point feet) stay hard: a
    floored point foot sinks at touch-down and its push-out would lift the robot back, a gain of
    energy the rigid contact does not have."""
    eps = float(jnp.finfo(dtype).eps)
    if eps <= _ROUND_OFF_EPS:
        return 0.0, 0.0
    return ROUND_OFF_COMPLIANCE * eps, ROUND_OFF_SLOP * eps


class Producer(typing.NamedTuple):
    """One constraint kind: its static slot count, a scalar "some slot may be active" test and the
    row block of a state (``all_far``: the caller knows that nothing is in reach). A producer
    with ``derived`` set makes its block from the blocks before it instead (``derived(model,
    previous_blocks)``; spin rows extend the contacts' cones) and has no ``in_reach`` or
    ``rows`` of its own; its slots' keys are those of the contacts they extend."""

    name: str
    slots: typing.Callable
    in_reach: typing.Callable | None
    rows: typing.Callable | None
    derived: typing.Callable | None = None


PRODUCERS: tuple[Producer, ...] = (
    Producer("contacts", contact_rows.contact_slots,
             lambda model, state, smooth, dt, margin: contact_rows.contacts_in_reach(
                 model, smooth.kinematics, margin),
             lambda model, state, smooth, dt, margin, all_far: contact_rows.contact_rows(
                 model, smooth.kinematics, margin, all_far)),
    Producer("contact_spin", spin_rows.spin_slots, None, None,
             derived=lambda model, previous: spin_rows.spin_rows(model, previous[0])),
    Producer("limits", lambda model: len(limit_rows.limited_joints(model)),
             lambda model, state, smooth, dt, margin: limit_rows.limits_in_reach(
                 model, state.q, state.v, dt, margin),
             lambda model, state, smooth, dt, margin, all_far: (
                 limit_rows.limit_rows(model, state.q, state.v, dt, margin), jnp.zeros((), bool))),
    Producer("ball_limits", lambda model: len(ball_limit_rows.limited_ball_joints(model)),
             lambda model, state, smooth, dt, margin: ball_limit_rows.ball_limits_in_reach(
                 model, state.q, state.v, dt, margin),
             lambda model, state, smooth, dt, margin, all_far: (
                 ball_limit_rows.ball_limit_rows(model, state.q, state.v, dt, margin),
                 jnp.zeros((), bool))),
    Producer("tendon_limits", lambda model: len(tendon_limit_rows.limited_tendons(model)),
             lambda model, state, smooth, dt, margin: tendon_limit_rows.tendon_limits_in_reach(
                 model, smooth, state.v, dt, margin),
             lambda model, state, smooth, dt, margin, all_far: (
                 tendon_limit_rows.tendon_limit_rows(model, smooth, state.v, dt, margin),
                 jnp.zeros((), bool))),
    Producer("friction", friction_rows.friction_slots,
             lambda model, state, smooth, dt, margin: jnp.ones((), bool),
             lambda model, state, smooth, dt, margin, all_far: (
                 friction_rows.friction_rows(model, smooth), jnp.zeros((), bool))),
    Producer("equalities", equality_rows.equality_slots,
             lambda model, state, smooth, dt, margin: jnp.any(model.equalities.is_active()),
             lambda model, state, smooth, dt, margin, all_far: (
                 equality_rows.equality_rows(model, state.q, smooth), jnp.zeros((), bool))),
)


def _producers(model: Model) -> tuple[Producer, ...]:
    return tuple(p for p in PRODUCERS if p.slots(model) > 0)


def num_constraint_slots(model: Model) -> int:
    """Static number of constraint slots of a step (every producer's slots)."""
    return sum(p.slots(model) for p in PRODUCERS)


def slot_ranges(model: Model) -> dict[str, slice]:
    """Static slot range of every producer (by :attr:`Producer.name`) in the constraint slots of
    a step (``ContactData`` order), empty ranges included."""
    ranges, start = {}, 0
    for producer in PRODUCERS:
        stop = start + producer.slots(model)
        ranges[producer.name] = slice(start, stop)
        start = stop
    return ranges


def any_row_in_reach(model: Model, state: State, smooth, dt: jax.Array) -> jax.Array:
    """Scalar bool: some producer may have an active slot. When false no slot is active, and
    :func:`constraint_rows` equals its ``all_far=True`` variant."""
    margin = model.options.contact_margin.astype(state.q.dtype)
    in_reach = jnp.zeros((), bool)
    for producer in _producers(model):
        if producer.derived is None:  # a derived block is active only where its sources are
            in_reach = in_reach | producer.in_reach(model, state, smooth, dt, margin)
    return in_reach


def constraint_rows(model: Model, state: State, smooth, dt: jax.Array, all_far: bool):
    """``(blocks, overflow)``: the row block of every producer with slots, in slot order, and
    whether some producer had more active candidates than slots."""
    margin = model.options.contact_margin.astype(state.q.dtype)
    blocks, overflow = [], jnp.zeros((), bool)
    contact_keys = KEY_STRIDE * collision_structure(model).num_pairs
    key_offset = contact_keys  # past every contact key
    for producer in _producers(model):
        if producer.derived is not None:  # the contacts' keys, past every key so far
            block, block_overflow = producer.derived(model, tuple(blocks)), jnp.zeros((), bool)
            block = eqx.tree_at(lambda b: b.key, block, block.key + key_offset)
            key_offset += contact_keys
        else:
            block, block_overflow = producer.rows(model, state, smooth, dt, margin, all_far)
            if producer.name != "contacts":  # block-local keys, made model-wide
                block = eqx.tree_at(lambda b: b.key, block, block.key + key_offset)
                key_offset += block.num_slots
        blocks.append(block)
        overflow = overflow | block_overflow
    order = [KIND_ORDER.index(b.kind) for b in blocks]
    if order != sorted(order):
        raise AssertionError(f"PRODUCERS must list their kinds in the order {KIND_ORDER}")
    return tuple(blocks), overflow


def stack(blocks: tuple[RowBlock, ...]) -> SlotGeometry:
    """The blocks' slot geometry concatenated in the row space's slot order (``n`` slots)."""
    cat = lambda name: jnp.concatenate([getattr(b, name) for b in blocks])  # noqa: E731
    return SlotGeometry(distance=cat("distance"), frame=cat("frame"), friction=cat("friction"),
                   key=cat("key"), active=cat("active"), point=cat("point"))


def gap_or_push_out(distance: jax.Array, baumgarte: jax.Array, cap: jax.Array, dt,
                    slop: jax.Array | None = None) -> jax.Array:
    """The reference normal velocity before restitution (module docstring), per slot: close the
    gap ``−max(φ, 0)/Δt``, or push a violated slot out at ``min(β δ/Δt, cap)`` with ``δ =
    max(−φ, 0)`` (``distance`` φ, ``cap`` ``v_max`` in the slot's units; ``dt`` s). Also the
    target of the tendon limits' position projection (:mod:`jaxsim_contact.dynamics._projection`).

    ``slop`` (per slot, ≥ 0; :func:`round_off_terms`): an overlap ``δ ≤ s`` is not pushed out, one
    between ``s`` and ``10 s`` by ``δ − s (10 s − δ)/(9 s)`` (continuous, slope 10/9) and a deeper
    one in full, so a real overlap's push-out (and the step's derivative) is the plain rule's; a
    gentle slope keeps resting contacts near ``s`` from a stiff response. ``s = 0`` is the plain
    rule."""
    depth = jnp.maximum(-distance, 0.0)
    if slop is not None:
        safe = jnp.maximum(slop, jnp.finfo(depth.dtype).tiny)
        short = slop * jnp.clip((10.0 * slop - depth) / (9.0 * safe), 0.0, 1.0)
        depth = jnp.where(depth > slop, depth - short, 0.0)
    push_out = jnp.minimum(baumgarte * depth / dt, cap)
    return -jnp.maximum(distance, 0.0) / dt + push_out


def _reference_velocity(blocks, options: Options, distance, c_now, dt, slop=None):
    """``(n,)`` reference normal velocity ``c*_N`` (module docstring; ``slop`` per slot:
    :func:`gap_or_push_out`)."""
    dtype = distance.dtype
    gap = jnp.maximum(distance, 0.0)
    # Baumgarte push-out, capped so that a deep overlap separates at a bounded speed; each kind
    # has its own cap (a contact's in m/s, a hinge limit's in rad/s: issue 43's ant)
    cap = jnp.concatenate([jnp.broadcast_to(b.correction_speed(options, dtype), (b.num_slots,))
                           for b in blocks])
    reference = gap_or_push_out(distance, options.baumgarte.astype(dtype), cap, dt, slop)
    approach = -c_now[:, 2]
    closes = approach * dt > gap
    bounces_kind = jnp.asarray(np.concatenate([np.full(b.num_slots, b.restitution) for b in blocks]))
    bounce = (approach > options.restitution_threshold.astype(dtype)) & closes & bounces_kind
    return jnp.where(bounce, jnp.maximum(reference, options.restitution.astype(dtype) * approach),
                     reference)


def contact_problem(model: Model, blocks, rows: SlotGeometry, smooth, velocity, dt):
    """``(problem, B)``: the contact problem of the stacked blocks (force units, module docstring)
    and its Delassus factor ``B`` ``(3n, nv)``."""
    factor_rows, velocity_rows = zip(*(b.factor_and_velocity_rows(model, smooth, velocity)
                                       for b in blocks))
    B = jnp.concatenate(factor_rows)
    with jax.named_scope("delassus"):
        G = B @ B.T
        G = 0.5 * (G + G.T)
    n = rows.distance.shape[0]
    velocities = jnp.concatenate(velocity_rows)
    c_free, c_now = velocities[:, 0].reshape(n, 3), velocities[:, 1].reshape(n, 3)
    soft = is_mujoco(model)
    if soft:  # MuJoCo: a₀ − a_ref with a₀ = J M⁻¹ τ = (c_free − c_now)/dt (module _soft)
        soft_compliance, aref = _soft_rows(model, blocks, c_now, dt)
        g = ((c_free - c_now) / dt - aref).reshape(3 * n)
    else:
        floor, slop = round_off_terms(B.dtype)
        indeterminate = (_indeterminate_slots(blocks, rows, c_now, dt, slop, model) if floor
                         else None)
        reference = _row_references(blocks, model.options, rows.distance, c_now, dt,
                                    jnp.where(indeterminate, slop, 0.0).astype(B.dtype) if floor
                                    else None)
        g = ((c_free - reference) / dt).reshape(3 * n)
    # diag(B Bᵀ) from B itself: a solver that never reads G (PrimalNewton) never forms it
    block_diag = jnp.sum(B * B, axis=1).reshape(n, 3)
    normal_diag = block_diag[:, 2]
    # A slot whose normal Delassus entry vanishes next to its own block (the bodies cannot move
    # relative to each other along the normal: a hinge axis along the normal, two geoms of one
    # rigid assembly) cannot be resolved by any normal force: a violated one makes the NCP
    # infeasible. Such rows are masked (λ = 0); their distance is still reported. The threshold
    # is relative to the slot's own block, so mass ratios between bodies never mask a real one.
    # It is not only round-off (100 ε): a UR3's shoulder 1 µm inside its welded base, yawing
    # about the contact normal, has normal / block ratios 1e-12 to 6e-11 (the mesh normal is not
    # exactly its axis), a push-out no force achieves, and the solve sat at its cap on 176 of 200
    # steps. Below 1e-8 (the normal moving 10⁴ times less than the slot's tangents) a normal force
    # changes no velocity to within the solver's tolerance, so masking it changes no motion.
    # (A bilateral slot is never masked this way: its three rows are constraints of their own,
    # and a row no dof can move only leaves the equality unsatisfied, which the solver reports.)
    relative_floor = max(100.0 * float(jnp.finfo(B.dtype).eps), DEGENERATE_NORMAL_RATIO)
    degenerate = normal_diag <= relative_floor * jnp.sum(block_diag, -1)
    if soft:  # a soft row is never infeasible (R > 0): MuJoCo keeps every row some dof moves
        degenerate = jnp.sum(block_diag, -1) == 0
    bilateral = np.concatenate([np.full(b.num_slots, b.kind is RowKind.BILATERAL) for b in blocks])
    active = rows.active & ~(degenerate & ~jnp.asarray(bilateral))
    if soft:
        compliance = soft_compliance.reshape(-1)
    else:
        compliance = _compliance_rows(blocks, model.options, normal_diag)
        if floor:  # round_off_terms: the floor on the normal rows of indeterminate sets
            normal_floor = jnp.where(indeterminate, floor * normal_diag, 0.0)
            compliance = compliance.reshape(n, 3)
            compliance = compliance.at[:, 2].set(jnp.maximum(compliance[:, 2], normal_floor)).reshape(-1)
    count = lambda kind: sum(b.num_slots for b in blocks if b.kind is kind)  # noqa: E731
    bound = jnp.concatenate([b.force_bound(B.dtype) for b in blocks])
    spin = [b for b in blocks if b.kind is RowKind.SPIN]
    # G has rank ≤ nv: when nv < 3n the ADMM (Cholesky) solver factorises an nv × nv matrix
    # instead of 3n × 3n (Woodbury identity, see jc.contact.ADMM)
    factor = B if model.nv < 3 * n else None
    problem = ContactProblem(G, g, rows.friction, compliance=compliance, active=active,
                             delassus_factor=factor, num_frictionless=count(RowKind.UNILATERAL),
                             num_box=count(RowKind.BOX), num_bilateral=count(RowKind.BILATERAL),
                             bound=bound, num_spin=count(RowKind.SPIN),
                             spin_friction=spin[0].spin_friction if spin else None)
    return problem, B


def _indeterminate_slots(blocks, rows: SlotGeometry, c_now, dt, slop, model: Model):
    """``(n,)`` bool: slots of statically indeterminate contact sets (:func:`round_off_terms`).
    Only slots that can carry a force this step count — touching to within ``TOUCHING_SLOPS s``
    (9.5e-5 m in float32: a resting foot's slots a few µm apart count, a link's mesh a
    millimetre above the floor, in the margin, does not) or closing their gap during the step. Two
    kinds: contact slots sharing their body pair with another touching slot (a face on 4
    corners), and every touching slot — contact or joint limit — on a kinematic tree whose
    touching rows (3 per frictional contact, 1 per frictionless contact or limit) outnumber its
    dofs: its rows' Jacobian has rank at most its dof count (a quadruped collapsed on its belly
    with 4 joints at their limits: 19 rows on 18 dofs)."""
    approach = jnp.maximum(-c_now[:, 2], 0.0)
    touching = rows.active & (rows.distance <= approach * dt + TOUCHING_SLOPS * slop)
    parts, start = [], 0
    for block in blocks:
        parts.append(block.shares_body_pair(touching[start:start + block.num_slots]))
        start += block.num_slots
    shared = jnp.concatenate(parts)
    tree_of_body, tree_dofs = model.tree.moving_trees
    if not tree_dofs.size:
        return shared
    trees = jnp.concatenate([b.slot_trees(model, tree_of_body) for b in blocks])  # (n, 2)
    is_contact = jnp.asarray(np.concatenate([np.full(b.num_slots, b.is_contact) for b in blocks]))
    weight = jnp.where(touching, jnp.where(is_contact & (rows.friction > 0), 3, 1), 0)
    first, second = trees[:, 0], trees[:, 1]
    count = (jnp.zeros(tree_dofs.size, jnp.int32)
             .at[jnp.maximum(first, 0)].add(jnp.where(first >= 0, weight, 0))
             .at[jnp.maximum(second, 0)].add(jnp.where((second >= 0) & (second != first), weight, 0)))
    redundant_tree = count > jnp.asarray(tree_dofs)
    on_redundant = ((first >= 0) & redundant_tree[jnp.maximum(first, 0)]) | (
        (second >= 0) & redundant_tree[jnp.maximum(second, 0)])
    return shared | (on_redundant & touching)


def _soft_rows(model: Model, blocks, c_now, dt):
    """``(R (n, 3), a_ref (n, 3))`` of every row under MuJoCo's soft model (:mod:`._soft`)."""
    parts, start = [], 0
    for block in blocks:
        parts.append(block.soft_rows(model, c_now[start:start + block.num_slots], dt))
        start += block.num_slots
    return tuple(jnp.concatenate(p) for p in zip(*parts))


def _row_references(blocks, options: Options, distance, c_now, dt, slop=None):
    """``(n, 3)`` reference velocity ``c*`` of every row: the normal rows' gap / push-out /
    restitution rule (:func:`_reference_velocity`) and zero tangent rows, except for blocks that
    give all three rows their own (``RowBlock.reference_velocity``: equality constraints)."""
    normal = _reference_velocity(blocks, options, distance, c_now, dt, slop)
    reference = jnp.zeros_like(c_now).at[:, 2].set(normal)
    start = 0
    for block in blocks:
        own = block.reference_velocity(options, dt)
        if own is not None:
            reference = reference.at[start:start + block.num_slots].set(own)
        start += block.num_slots
    return reference


def _compliance_rows(blocks, options: Options, normal_diag) -> jax.Array:
    """``(3n,)`` compliance of every row, ``(R_T, R_T, R)`` per slot, from each block's kind."""
    dtype = normal_diag.dtype
    parts, start = [], 0
    for block in blocks:
        diag = normal_diag[start:start + block.num_slots]
        normal = jnp.broadcast_to(block.normal_compliance(options, dtype), diag.shape)
        tangent = block.tangent_compliance(options, diag)
        parts.append(jnp.stack([tangent, tangent, normal], -1))
        start += block.num_slots
    return jnp.concatenate(parts).reshape(-1)


def split_forces(blocks: tuple[RowBlock, ...], force: jax.Array) -> tuple[jax.Array, ...]:
    """The solved ``(n, 3)`` slot forces split per block, in block order."""
    bounds = np.cumsum([0] + [b.num_slots for b in blocks])
    return tuple(force[start:end] for start, end in zip(bounds[:-1], bounds[1:]))
