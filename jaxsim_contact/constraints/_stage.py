"""The constraint stage of a step: rows → problem → solve → constrained velocity (DESIGN §2
stages 4–5; seed 001 §II, seed 004 §II-C).

Given the free velocity ``v_f`` and the Cholesky factor ``L Lᵀ = M̃ = M + Δt·D`` of the
contact-free step (seed 001 eq. 2, with MuJoCo's implicit joint damping):

1. every producer yields its row block (:mod:`._assembler`: contacts, joint limits, tendon
   limits);
2. the blocks are stacked into one contact problem in force units and solved by the options'
   solver, warm-started from the previous step's forces matched by slot key and rotated into the
   new frames (seed 001 §III-E); PrimalNewton starts from the previous generalized force;
3. ``v⁺ = v_f + Δt M̃⁻¹ Jᵀ f = v_f + Δt L⁻ᵀ (Bᵀ f)`` (seed 001 eq. 5).

**Gating, in one place.** Two conds skip work that cannot matter, both on *batch-wide* predicates
(:func:`~jaxsim_contact._batching.any_in_batch`): under ``vmap`` a per-environment predicate turns
a cond into a select that runs both branches, and inside a derivative rule a select on tangents
passes its operands through ``stop_gradient``, which has no transpose (``grad`` of a vmapped
step). (The narrow phase's per-group conds in :mod:`jaxsim_contact.collision._narrowphase` follow
the same rule.)

* *The solve* (:func:`_solve_or_skip`): with no active slot, ``f = 0`` and ``v⁺ = v_f`` — and the
  implicit derivative of an all-inactive problem is ``dλ = 0`` — so the Jacobians, the Delassus
  matrix and the solve are skipped. When some environment of a batch has an active slot, every
  environment solves and those without take the skipped outputs per lane.
* *The derivative* (:func:`_gated_stage_jvp`): with nothing in reach (no pair near, no limit
  within its window) the stage's derivative is that of its ``all_far`` variant — culling bounds
  instead of pair functions, no solve — and exact; the cond then also skips linearising and
  transposing the narrow phase and the slot selection (an all-far step: a single arm in free
  space, MPC).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.scipy.linalg import lu_solve
import numpy as np

from .._batching import any_in_batch
from ..contact import solve
from .._model import ContactData, ErrorFlag, Model, State, error_bit
from ._assembler import (
    any_row_in_reach,
    constraint_rows,
    contact_problem,
    num_constraint_slots,
    split_forces,
    stack,
)
from ._contact_rows import contact_slots, default_contact_budget

__all__ = ["default_contact_budget", "contact_slots", "num_constraint_slots", "initial_contact_data",
           "contact_stage"]


def initial_contact_data(model: Model, dtype) -> ContactData:
    """Empty :class:`ContactData` with the model's static slot count."""
    return ContactData.empty(num_constraint_slots(model), dtype, model.nv)


def contact_stage(model: Model, state: State, smooth, dt: jax.Array):
    """Constraint forces of one step and the constrained velocity.

    Args:
      model: the scene; state: the state at the start of the step; smooth: its
        :class:`~jaxsim_contact.dynamics.SmoothDynamics`; dt: scalar step (s).
    Returns:
      ``(v_next (nv,), ContactData, error_bits int32)``.
    """
    nslots = num_constraint_slots(model)
    if nslots == 0 or model.nv == 0:
        return (smooth.free_velocity, ContactData.empty(nslots, state.q.dtype, model.nv),
                jnp.zeros((), jnp.int32))
    return _gated_stage(model, state, smooth, dt)


@eqx.filter_custom_jvp
def _gated_stage(model: Model, state: State, smooth, dt: jax.Array):
    return _stage(model, state, smooth, dt, all_far=False)


@_gated_stage.def_jvp
def _gated_stage_jvp(primals, tangents):
    """The stage's derivative, skipped when nothing is in reach (module docstring, "Gating").
    The ``all_far`` branch is rematerialised (``jax.checkpoint``) so that it adds no residuals of
    its own to the cond's."""
    def branch(all_far: bool):
        def differentiate(primals, tangents):
            out, out_tangents = eqx.filter_jvp(lambda *args: _stage(*args, all_far=all_far),
                                               primals, tangents)
            # cond branches need one output structure: zeros for the tangents filter_jvp left out
            dense = jax.tree_util.tree_map(
                lambda x, dx: (jnp.zeros_like(x) if dx is None else dx) if eqx.is_inexact_array(x) else None,
                out, out_tangents)
            return out, dense
        return differentiate

    in_reach = any_in_batch(any_row_in_reach(*primals))
    return jax.lax.cond(in_reach, branch(False), jax.checkpoint(branch(True)), primals, tangents)


def _stage(model: Model, state: State, smooth, dt: jax.Array, all_far: bool):
    """:func:`contact_stage`; ``all_far`` (static): the caller knows that nothing is in reach, so
    the rows report culling bounds and there is no solve — the same values in that case."""
    blocks, overflow = constraint_rows(model, state, smooth, dt, all_far)
    rows = stack(blocks)
    if all_far:
        solved = _no_active_slot(model, rows, smooth)
    else:
        solved = _solve_or_skip(model, state, smooth, dt, blocks, rows)
    v_next, active, force, generalized_force, iterations, criterion, converged = solved
    any_active = jnp.any(active)
    converged = converged | ~any_active
    # penetration is a contact quantity: the cone slots' (a limit's violation is an angle), of
    # the slots the solve saw — not of masked ones no force can move (a link overlapping the
    # world around its own hinge reported 13 mm with no active slot: issue 43)
    is_contact = np.concatenate([np.full(b.num_slots, b.is_contact) for b in blocks])
    penetration = jnp.max(jnp.where(active & is_contact, -rows.distance, 0.0), initial=0.0)
    data = ContactData(
        key=rows.key, active=active, distance=rows.distance, point=rows.point, frame=rows.frame,
        friction=rows.friction, force=force, generalized_force=generalized_force,
        iterations=iterations, residual=jnp.where(any_active, criterion, 0.0), converged=converged,
        num_active=jnp.sum(active).astype(jnp.int32), overflow=overflow,
        penetration=jnp.maximum(penetration, 0.0),
    )
    error = (error_bit(overflow, ErrorFlag.CONTACT_BUDGET_OVERFLOW)
             | error_bit(~converged, ErrorFlag.SOLVER_NOT_CONVERGED))
    return v_next, data, error


def _solve_or_skip(model, state, smooth, dt, blocks, rows):
    """The solve's outputs, or :func:`_no_active_slot`'s when no slot is active in the batch
    (module docstring, "Gating"); per lane, environments without an active slot take the latter
    (the solve of an all-inactive problem gives λ = 0 too; the select keeps its statistics out)."""
    some_active = jnp.any(rows.active)

    def solve_where_active():
        return jax.tree_util.tree_map(lambda solved, skipped: jnp.where(some_active, solved, skipped),
                                      _solve(model, state, smooth, dt, blocks, rows),
                                      _no_active_slot(model, rows, smooth))

    return jax.lax.cond(any_in_batch(some_active), solve_where_active,
                        lambda: _no_active_slot(model, rows, smooth))


def _no_active_slot(model, rows, smooth):
    """Nothing to solve: ``λ = 0``, so ``v⁺ = v_f`` (the implicit derivative is ``dλ = 0`` too)."""
    dtype = rows.distance.dtype
    n = rows.distance.shape[0]
    return (smooth.free_velocity, rows.active, jnp.zeros((n, 3), dtype),
            jnp.zeros((model.nv,), dtype), jnp.zeros((), jnp.int32), jnp.zeros((), dtype),
            jnp.ones((), bool))


def _rows_dynamics(smooth):
    """The dynamics the rows are posed with: the step's ``H`` factor and free velocity, or ``M``'s
    (MuJoCo-compatible model with an ``H ≠ M`` integrator: ``smooth.mass_factor``)."""
    if smooth.mass_factor is None:
        return smooth
    return eqx.tree_at(lambda s: (s.cholesky, s.cholesky_inverse, s.free_velocity), smooth,
                       smooth.mass_factor)


def _solve(model, state, smooth, dt, blocks, rows):
    """``(v_next, active, force, generalized_force, iterations, criterion, converged)``."""
    rows_smooth = _rows_dynamics(smooth)
    problem, B = contact_problem(model, blocks, rows, rows_smooth, state.v, dt)
    warm = _warm_start(state.contact, rows.key, problem.active, rows.frame)
    # the primal warm start Bᵀλ = L⁻¹ Jᵀλ from last step's generalized constraint force (MuJoCo
    # warm-starts its acceleration the same way)
    warm_primal = None
    if (problem.delassus_factor is not None and state.contact is not None
            and state.contact.generalized_force.shape == (model.nv,)):
        warm_primal = rows_smooth.cholesky_inverse @ state.contact.generalized_force
    options = model.options
    with jax.named_scope("contact_solve"):
        solution = solve(problem, options.solver, warm_start=warm, gradient=options.contact_gradient,
                         warm_primal=warm_primal)
    # Bᵀ f = L⁻¹ Jᵀ f: the velocity change is L⁻ᵀ (Bᵀ f) dt, the generalized force L (Bᵀ f)
    factor_force = solution.force.reshape(-1) @ B
    generalized_force = rows_smooth.cholesky @ factor_force
    if rows_smooth is smooth:
        v_next = smooth.free_velocity + dt * (smooth.cholesky_inverse.T @ factor_force)
    elif smooth.velocity_lu is not None:  # a non-symmetric H: by its LU, as mj_implicit
        v_next = smooth.free_velocity + dt * lu_solve(smooth.velocity_lu,
                                                                       generalized_force)
    else:  # rows posed with M, the velocity moved with the integrator's H
        v_next = smooth.free_velocity + dt * (
            smooth.cholesky_inverse.T @ (smooth.cholesky_inverse @ generalized_force))
    force = jnp.concatenate([b.reported_force(f) for b, f in zip(blocks, split_forces(blocks, solution.force))])
    return (v_next, problem.active, force, generalized_force,
            solution.iterations, solution.criterion.astype(rows.distance.dtype), solution.converged)


def _warm_start(previous: ContactData | None, key, active, frame):
    """Previous forces of the same slots (matched by key), rotated into the new frames."""
    n = key.shape[0]
    dtype = frame.dtype
    if previous is None or previous.key.shape[0] != n:
        return jnp.zeros((n, 3), dtype)
    world = jnp.einsum("nij,ni->nj", previous.frame, previous.force)  # Σ_r f_r · row_r
    match = (key[:, None] == previous.key[None, :]) & previous.active[None, :] & active[:, None]
    warm_world = match.astype(dtype) @ world
    return jnp.einsum("nij,nj->ni", frame, warm_world)
