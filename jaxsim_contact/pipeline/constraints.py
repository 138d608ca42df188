"""The contact stage of a step: contact problem, solve, velocity update (DESIGN §2 stages 4, 6–8).

Given the free velocity ``v_f`` and the Cholesky factor ``L Lᵀ = M̃ = M + Δt·D`` of the
contact-free step (seed 001 eq. 2, with MuJoCo's implicit joint damping):

1. candidates from the narrow phase; the ``budget`` deepest active ones fill the contact slots
   (``lax.top_k``; more active candidates than slots sets the overflow flag); the limited joints
   follow as unilateral slots (seed 001 §II treats them like any unilateral constraint);
2. Jacobian ``J`` ``(3n, nv)`` in the slot frames, Delassus ``G = J M̃⁻¹ Jᵀ = B Bᵀ`` with
   ``B = J L⁻ᵀ`` (a product with the step's ``L⁻¹``, seed 004 §II-C), ``c^f = J v_f`` and
   ``c^t = J v^t``; when ``nv < 3n`` the problem also carries ``B`` (``G = B Bᵀ``, rank
   ``≤ nv``), which ADMM's Cholesky variant uses to factorise ``nv × nv`` instead of ``3n × 3n``;
3. reference normal velocity (seed 001 §II, after eq. 9):
   ``c*_N = −max(φ, 0)/Δt + min(β max(−φ, 0)/Δt, v_max)`` — a separated contact may close exactly
   its gap during the step (the "completed Taylor expansion" ``Φ/Δt``), a penetration is pushed
   out by the Baumgarte term ``k_B = β/Δt`` at most at ``v_max = max_correction_speed``; when
   the contact closes during the step at an approach speed above ``restitution_threshold``,
   ``c*_N = max(c*_N, −e c^t_N)`` (Newton restitution);
4. the problem in *force units* (seed 001 §II: ``g / Δt``), ``G f + (c^f − c*)/Δt``, with
   friction ``μ`` (0 for joint limits) and normal compliance ``R``, is solved by the solver of the
   options, warm-started from the previous step's forces matched by candidate key and rotated into
   the new frames (seed 001 §III-E);
5. ``v⁺ = v_f + Δt M̃⁻¹ Jᵀ f`` (seed 001 eq. 5).

Steps 2–5 sit in a ``lax.cond`` on "some slot is active": with none, ``f = 0`` and ``v⁺ = v_f``
(and the implicit derivative of an all-inactive problem is ``dλ = 0``), so an unbatched step skips
them and their derivatives; under ``vmap`` the predicate is "some slot active in some
environment" (:func:`~jaxsim_contact.batching.any_in_batch`). The derivative of the whole stage
(steps 1–5) has its own gate, a cond on "some pair near or limit active" made batch-wide, which
also skips the narrow phase's and the slot selection's derivatives, batched or not
(:func:`_gated_contact_stage_jvp`).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..batching import any_in_batch
from ..contact import ContactProblem, solve
from ..model import ContactData, ErrorFlag, Model, State, error_bit
from .jacobian import contact_jacobians, limit_rows, limited_joints
from .manifold import tangent_frame
from .narrowphase import KEY_STRIDE, any_pair_near, max_candidates, narrow_phase
from .pairs import collision_structure

__all__ = ["default_contact_budget", "contact_slots", "num_constraint_slots", "initial_contact_data",
           "contact_stage"]


def default_contact_budget(model: Model) -> int:
    """Default number of contact slots: 4 per moving body plus 4, at most the candidate count."""
    structure = collision_structure(model)
    moving = sum(1 for b in range(1, model.nbody) if model.tree.body_joint_num[b] > 0) or 1
    return min(max_candidates(structure), 4 * moving + 4)


def contact_slots(model: Model) -> int:
    """Static number of contact slots handed to the solver (0 when contacts are disabled)."""
    opts = model.options
    if not opts.enable_contacts:
        return 0
    structure = collision_structure(model)
    total = max_candidates(structure)
    if opts.contact_budget is None:
        return default_contact_budget(model)
    return min(total, opts.contact_budget)


def _limit_joints(model: Model) -> tuple[int, ...]:
    return limited_joints(model) if model.options.enable_joint_limits else ()


def num_constraint_slots(model: Model) -> int:
    """Contact slots plus one slot per limited hinge/slide joint."""
    return contact_slots(model) + len(_limit_joints(model))


def initial_contact_data(model: Model, dtype) -> ContactData:
    """Empty :class:`ContactData` with the model's static slot count."""
    return ContactData.empty(num_constraint_slots(model), dtype, model.nv)


def _select_contacts(cands, budget: int):
    """Indices of the ``budget`` deepest active candidates and the overflow flag."""
    score = jnp.where(cands.active, -cands.distance, -jnp.inf)
    _, index = jax.lax.top_k(score, budget)
    overflow = jnp.sum(cands.active) > budget
    return index, overflow


def _warm_start(previous: ContactData | None, key, active, frame):
    """Previous forces of the same candidates (matched by key), rotated into the new frames."""
    n = key.shape[0]
    dtype = frame.dtype
    if previous is None or previous.key.shape[0] != n:
        return jnp.zeros((n, 3), dtype)
    world = jnp.einsum("nij,ni->nj", previous.frame, previous.force)  # Σ_r f_r · row_r
    match = (key[:, None] == previous.key[None, :]) & previous.active[None, :] & active[:, None]
    warm_world = match.astype(dtype) @ world
    return jnp.einsum("nij,nj->ni", frame, warm_world)


def contact_stage(model: Model, state: State, smooth, dt: jax.Array):
    """Constraint forces of one step and the constrained velocity.

    Args:
      model: the scene; state: the state at the start of the step; smooth: its
        :class:`~jaxsim_contact.dynamics.SmoothDynamics`; dt: scalar step (s).
    Returns:
      ``(v_next (nv,), ContactData, error_bits int32)``.
    """
    nslots = contact_slots(model) + len(_limit_joints(model))
    if nslots == 0 or model.nv == 0:
        return (smooth.free_velocity, ContactData.empty(nslots, state.q.dtype, model.nv),
                jnp.zeros((), jnp.int32))
    return _gated_contact_stage(model, state, smooth, dt)


def _any_slot_in_reach(model: Model, state: State, smooth, dt: jax.Array) -> jax.Array:
    """Scalar bool: some pair passes culling or some limit slot is active. When false no slot is
    active, and :func:`_contact_stage` equals its ``all_far=True`` variant."""
    dtype = state.q.dtype
    margin = model.options.contact_margin.astype(dtype)
    in_reach = jnp.zeros((), bool)
    if contact_slots(model):
        in_reach = any_pair_near(model, collision_structure(model), smooth.kinematics, margin)
    joints = _limit_joints(model)
    if joints:
        limit_distance, sign, dof = limit_rows(model, state.q, joints)
        limit_approach = jnp.maximum(-sign * state.v[dof], 0.0)
        in_reach = in_reach | jnp.any(limit_distance <= margin + dt * limit_approach)
    return in_reach


@eqx.filter_custom_jvp
def _gated_contact_stage(model: Model, state: State, smooth, dt: jax.Array):
    return _contact_stage(model, state, smooth, dt, all_far=False)


@_gated_contact_stage.def_jvp
def _gated_contact_stage_jvp(primals, tangents):
    """The contact stage's derivative, skipped when nothing is in reach (values unchanged).

    With no pair near and no limit active, no slot is active: ``v⁺ = v_f`` and the implicit
    derivative of the all-inactive problem is ``dλ = 0``, so the stage's derivative is that of
    its ``all_far`` variant — bounds instead of pair functions, no solve — and exact. Both
    derivatives sit in one ``lax.cond`` on "some slot in reach" made batch-wide by
    :func:`~jaxsim_contact.batching.any_in_batch`, so that it stays a cond under ``vmap`` (a
    ``select`` would run both) and also in reverse mode, where it is transposed with its branch:
    an all-far step (a single environment, MPC) then neither linearises nor transposes the narrow
    phase, the slot selection and the solve. The ``all_far`` branch is rematerialised
    (``jax.checkpoint``) so that it adds no residuals of its own to the cond's. Measured on the
    Panda (nothing in reach; ``benchmarks/gradients.py`` probe, one core): step ``jacrev``
    0.253 -> 0.215 ms, ``jacfwd`` 0.298 -> 0.25; half-cheetah, Go2, humanoid (contacts active)
    unchanged. (The per-group ``_when_near`` conds and the solve's cond inside skip the forward
    work; without this gate their transposes' zero cotangents still flowed through the slot
    selection and the narrow phase.) Those inner conds take batch-wide predicates as well: with
    ``grad`` outside ``vmap`` (a loss over a batch of rollouts) JAX batches this rule's jaxpr
    before transposing it, and a cond on tangents with a per-environment predicate would become
    a select whose ``stop_gradient`` operands have no transpose.
    """
    def branch(all_far: bool):
        def differentiate(primals, tangents):
            out, out_tangents = eqx.filter_jvp(lambda *args: _contact_stage(*args, all_far=all_far),
                                               primals, tangents)
            # cond branches need one output structure: zeros for the tangents filter_jvp left out
            dense = jax.tree_util.tree_map(
                lambda x, dx: (jnp.zeros_like(x) if dx is None else dx) if eqx.is_inexact_array(x) else None,
                out, out_tangents)
            return out, dense
        return differentiate

    in_reach = any_in_batch(_any_slot_in_reach(*primals))
    return jax.lax.cond(in_reach, branch(False), jax.checkpoint(branch(True)), primals, tangents)


def _contact_stage(model: Model, state: State, smooth, dt: jax.Array, all_far: bool):
    """:func:`contact_stage`; ``all_far`` (static): the caller knows that nothing is in reach
    (:func:`_any_slot_in_reach` is false), so the narrow phase reports bounds and there is no
    solve — the same values in that case."""
    q, v = state.q, state.v
    dtype = q.dtype
    opts = model.options
    budget = contact_slots(model)
    joints = _limit_joints(model)
    nslots = budget + len(joints)
    kin, axes = smooth.kinematics, smooth.motion_axes
    margin = opts.contact_margin.astype(dtype)

    # ---- the slots' geometry: the budget deepest active candidates, then the limits --------------
    distance, frames, friction, keys, active, point = [], [], [], [], [], []
    overflow = jnp.zeros((), bool)
    if budget:
        with jax.named_scope("narrow_phase"):
            cands = narrow_phase(model, collision_structure(model), kin, margin, all_far)
        index, over = _select_contacts(cands, budget)
        overflow = over | cands.overflow
        take = lambda x: x[index]  # noqa: E731
        distance.append(take(cands.distance))
        frames.append(tangent_frame(take(cands.normal)))
        friction.append(take(cands.friction))
        keys.append(take(cands.key))
        active.append(take(cands.active))
        point.append(take(cands.point))
        contact_body_a, contact_body_b = take(cands.body_a), take(cands.body_b)
    if joints:
        limit_distance, sign, dof = limit_rows(model, q, joints)
        limit_approach = jnp.maximum(-sign * v[dof], 0.0)
        nlim = len(joints)
        distance.append(limit_distance)
        frames.append(jnp.broadcast_to(jnp.eye(3, dtype=dtype), (nlim, 3, 3)))
        friction.append(jnp.zeros((nlim,), dtype))
        base = KEY_STRIDE * collision_structure(model).num_pairs
        keys.append(jnp.asarray(base + np.arange(nlim), jnp.int32))
        # speculative window: the limit can be reached within the step at the current speed
        active.append(limit_distance <= margin + dt * limit_approach)
        point.append(jnp.zeros((nlim, 3), dtype))
    distance, frame = jnp.concatenate(distance), jnp.concatenate(frames)
    friction = jnp.concatenate(friction)
    key, geometric_active, point = jnp.concatenate(keys), jnp.concatenate(active), jnp.concatenate(point)
    is_contact = jnp.arange(nslots) < budget

    def solve_slots():
        """``(v_next, active, force, generalized_force, iterations, criterion, converged)``."""
        # per group of slots: its rows of B = J L⁻ᵀ (3m, nv) and of J [v_f, v] (3m, 2)
        factor_rows, velocity_rows = [], []
        inverse = smooth.cholesky_inverse
        both_velocities = jnp.stack([smooth.free_velocity, v], axis=1)
        if budget:
            contact_active = geometric_active[:budget]
            # inactive slots may hold geometry of far-away or degenerate pairs: they must not
            # reach M̃⁻¹Jᵀ. A zero frame at a finite point gives zero Jacobian rows; masking the
            # (n, 3, 3) inputs is cheaper than the (3n, nv) output.
            with jax.named_scope("contact_jacobian"):
                J = contact_jacobians(model, axes, contact_body_a, contact_body_b,
                                      jnp.where(contact_active[:, None], point[:budget], 0.0),
                                      jnp.where(contact_active[:, None, None], frame[:budget], 0.0))
            J = J.reshape(3 * budget, model.nv)
            with jax.named_scope("delassus"):
                # with B = J L⁻ᵀ (3n, nv): G = B Bᵀ, and M̃⁻¹ Jᵀ λ = L⁻ᵀ (Bᵀ λ) after the solve —
                # one matrix-vector product instead of the (nv, 3n) matrix M̃⁻¹ Jᵀ; L⁻¹ comes with
                # the smooth dynamics (products, not XLA:CPU's slow batched triangular solves with
                # 3n right-hand sides). B is formed in its row layout: as the transpose of L⁻¹ Jᵀ,
                # XLA:CPU copied the (3n, nv) array in transposed order wherever the solver read it.
                factor_rows.append(J @ inverse.T)
            velocity_rows.append(J @ both_velocities)
        if joints:
            # the Jacobian row of a limit is sign·e_dofᵀ (zero tangent rows): its row of B is
            # sign·(column dof of L⁻¹)ᵀ and its velocities sign·v[dof], gathers, not products
            row_sign = jnp.where(geometric_active[budget:], sign, 0.0)
            normal_rows = row_sign[:, None] * inverse.T[dof]
            normal_velocity = row_sign[:, None] * both_velocities[dof]
            tangent_rows = jnp.zeros_like(normal_rows)
            tangent_velocity = jnp.zeros_like(normal_velocity)
            factor_rows.append(jnp.stack([tangent_rows, tangent_rows, normal_rows], 1)
                               .reshape(3 * nlim, -1))
            velocity_rows.append(jnp.stack([tangent_velocity, tangent_velocity, normal_velocity], 1)
                                 .reshape(3 * nlim, 2))

        # ---- contact problem (force units) ------------------------------------------------------
        B = jnp.concatenate(factor_rows)
        with jax.named_scope("delassus"):
            G = B @ B.T
            G = 0.5 * (G + G.T)
        # G has rank ≤ nv: when nv < 3n the ADMM (Cholesky) solver factorises an nv × nv matrix
        # instead of 3n × 3n (Woodbury identity, see jc.contact.ADMM)
        factor = B if model.nv < 3 * nslots else None
        velocities = jnp.concatenate(velocity_rows)
        c_free, c_now = velocities[:, 0].reshape(nslots, 3), velocities[:, 1].reshape(nslots, 3)
        beta = opts.baumgarte.astype(dtype)
        gap = jnp.maximum(distance, 0.0)
        # Baumgarte push-out, capped so that a deep overlap separates at a bounded speed
        push_out = jnp.minimum(beta * jnp.maximum(-distance, 0.0) / dt,
                               opts.max_correction_speed.astype(dtype))
        reference = -gap / dt + push_out
        approach = -c_now[:, 2]
        closes = approach * dt > gap
        bounce = (approach > opts.restitution_threshold.astype(dtype)) & closes & is_contact
        reference = jnp.where(bounce, jnp.maximum(reference, opts.restitution.astype(dtype) * approach),
                              reference)
        g = (c_free.at[:, 2].add(-reference) / dt).reshape(3 * nslots)
        compliance = jnp.where(is_contact, opts.compliance.astype(dtype),
                               opts.limit_compliance.astype(dtype))
        # Joint-limit slots have zero tangent rows; μ = 0 pins their tangent force to 0 anyway, and
        # a unit-scale diagonal there keeps G + R non-singular (ADMM's (G + R + ρI)⁻¹ bounded).
        # diag(B Bᵀ) from B itself: a solver that never reads G (PrimalNewton) never forms it
        block_diag = jnp.sum(B * B, axis=1).reshape(nslots, 3)
        normal_diag = block_diag[:, 2]
        # A contact whose normal Delassus entry vanishes next to its own block (the bodies cannot
        # move relative to each other along the normal: a hinge axis along the normal, two geoms of
        # one rigid assembly) cannot be resolved by any normal force: a penetrating one makes the
        # NCP infeasible and the solver's residual grows without bound. Such rows are masked
        # (λ = 0); their penetration is still reported. The threshold is relative to the slot's
        # own block, so mass ratios between bodies never mask a real contact.
        degenerate = normal_diag <= 100.0 * jnp.finfo(dtype).eps * jnp.sum(block_diag, -1)
        active = geometric_active & ~degenerate
        tangent = jnp.where(is_contact, opts.tangential_compliance.astype(dtype),
                            jnp.maximum(normal_diag, jnp.finfo(dtype).tiny))
        compliance_rows = jnp.stack([tangent, tangent, compliance], -1)
        problem = ContactProblem(G, g, friction, compliance=compliance_rows.reshape(-1), active=active,
                                 delassus_factor=factor, num_frictionless=len(joints))
        warm = _warm_start(state.contact, key, active, frame)
        # the primal warm start Bᵀλ = L⁻¹ Jᵀλ from last step's generalized constraint force
        # (MuJoCo warm-starts its acceleration the same way); PrimalNewton starts there instead of
        # Bᵀ warm, or at 0 when that has the lower objective
        warm_primal = None
        if (factor is not None and state.contact is not None
                and state.contact.generalized_force.shape == (model.nv,)):
            warm_primal = inverse @ state.contact.generalized_force
        with jax.named_scope("contact_solve"):
            solution = solve(problem, opts.solver, warm_start=warm, gradient=opts.contact_gradient,
                             warm_primal=warm_primal)
        # Bᵀ f = L⁻¹ Jᵀ f: the velocity change is L⁻ᵀ (Bᵀ f) dt, the generalized force L (Bᵀ f)
        factor_force = solution.force.reshape(3 * nslots) @ B
        return (smooth.free_velocity + dt * (inverse.T @ factor_force), active, solution.force,
                smooth.cholesky @ factor_force, solution.iterations,
                solution.criterion.astype(dtype), solution.converged)

    def no_active_slot():
        # nothing to solve: λ = 0, so v⁺ = v_f — and the implicit derivative of an all-inactive
        # problem is dλ = 0 too, so skipping the problem changes neither values nor derivatives
        return (smooth.free_velocity, geometric_active, jnp.zeros((nslots, 3), dtype),
                jnp.zeros((model.nv,), dtype), jnp.zeros((), jnp.int32), jnp.zeros((), dtype),
                jnp.ones((), bool))

    # A cond, not a select: an unbatched step (a single environment, MPC, a step Jacobian) with no
    # slot in reach skips the Jacobians, the Delassus matrix, the solve and their (all-zero)
    # derivatives. Its predicate is batch-wide (any_in_batch): under vmap a per-environment one
    # would make the cond a select whose operands pass through stop_gradient, which has no
    # transpose inside _gated_contact_stage_jvp (grad of a vmapped step); a batch with no active
    # slot anywhere skips the solve too. When some environment has one, every environment solves
    # and those without an active slot take no_active_slot's outputs per lane (the solve of an
    # all-inactive problem gives λ = 0 as well; the select keeps its statistics out).
    # (A cond around the narrow phase too, on "some pair is near", saved little more unbatched and
    # cost the Go2 at batch 256 ~30 % under vmap.)
    def solve_where_active():
        some_active = jnp.any(geometric_active)
        return jax.tree_util.tree_map(lambda solved, skipped: jnp.where(some_active, solved, skipped),
                                      solve_slots(), no_active_slot())

    if all_far:
        v_next, active, force, generalized_force, iterations, criterion, solved = no_active_slot()
    else:
        v_next, active, force, generalized_force, iterations, criterion, solved = jax.lax.cond(
            any_in_batch(jnp.any(geometric_active)), solve_where_active, no_active_slot)
    any_active = jnp.any(active)
    converged = solved | ~any_active
    penetration = jnp.max(jnp.where(geometric_active & is_contact, -distance, 0.0), initial=0.0)
    data = ContactData(
        key=key, active=active, distance=distance, point=point, frame=frame, friction=friction,
        force=force, generalized_force=generalized_force, iterations=iterations,
        residual=jnp.where(any_active, criterion, 0.0), converged=converged,
        num_active=jnp.sum(active).astype(jnp.int32), overflow=overflow,
        penetration=jnp.maximum(penetration, 0.0),
    )
    error = (error_bit(overflow, ErrorFlag.CONTACT_BUDGET_OVERFLOW)
             | error_bit(~converged, ErrorFlag.SOLVER_NOT_CONVERGED))
    return v_next, data, error
