"""Time stepping: ``init``, ``step``, ``rollout`` (MuJoCo's integrators with hard contact).

One step (DESIGN §2; seed 001 §II-A time stepping, seed 004 §II-C), as :func:`step` lists it:

    guard inputs      a stand-in for an environment with bad inputs (fault isolation)
    smooth dynamics   kinematics, tendons; M, bias at q (CRBA, RNEA);
                      τ_smooth = passive + actuators - bias;
                      v_f = v + dt H⁻¹ τ_smooth    H = M + dt·D (Euler, D = diag(dof_damping));
                      RK4, implicitfast, implicit: jaxsim_contact.dynamics._integrators
    contact stage     collision → constraint rows → solve (jaxsim_contact.constraints):
                      v⁺ = v_f + dt H⁻¹ Jᵀ f
                      (constraint_model="mujoco" with RK4: instead of the two stages above,
                      four RK4 stages, each smooth dynamics + contact stage at its state:
                      MuJoCo's soft forces are state functions; _soft_runge_kutta)
    integrate         q⁺ = q ⊕ v⁺ dt                            (manifold integration;
                      RK4: q ⊕ (v̄ + ½ (v⁺ − v_f)) dt)
    project           q⁺ onto the equality constraints          (one Gauss–Newton step)
    advance or hold   the next state, or the held one of an environment that failed

With the default ``Euler`` this is MuJoCo's ``Euler`` integrator, including its implicit
treatment of joint damping (``eulerdamp``); every integrator's contact-free trajectories equal
MuJoCo C's step by step (``tests/dynamics/test_integrators.py``). ``H`` is factorised once by
Cholesky; the contact stage reuses that factor for the Delassus matrix.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.scipy.linalg import lu_factor, lu_solve
import numpy as np

from ..constraints import contact_stage, initial_contact_data
from .._linalg import grouped_cholesky
from .._model import ConstraintModel, ErrorFlag, Integrator, Model, State, error_bit
from ._actuation import activation_rate, clamp_controls, next_activation
from ._integration import integrate_positions
from ._integrators import (integrator_matrix, integrator_matrix_is_symmetric, rk4_velocities,
                          smooth_terms, velocity_matrix_groups)
from ._kinematics import Kinematics
from ._projection import equality_velocity_bias, project_positions
from ._tendons import TendonKinematics
from .._precision import full_precision_matmuls

__all__ = ["init", "step", "rollout", "smooth_dynamics", "SmoothDynamics"]


class SmoothDynamics(eqx.Module):
    """Everything the contact stage needs from the contact-free dynamics at one state.

    Attributes:
      mass_matrix: ``(nv, nv)`` ``M(q)``, armature included.
      cholesky: ``(nv, nv)`` lower Cholesky factor ``L`` of the integrator's ``H`` (``M +
        dt·diag(damping)`` for Euler, its symmetric part when ``H`` is not symmetric;
        :mod:`._integrators`), factorised kinematic tree by kinematic tree (:func:`jaxsim_contact._linalg.grouped_cholesky`: ``M``
        has no entry between two trees, and small blocks factorise faster than the whole).
      cholesky_inverse: ``(nv, nv)`` ``L⁻¹`` (lower triangular). Every solve of the step is a
        product with it: XLA:CPU expands a batched triangular solve into a slow loop, so one solve
        with ``nv`` right-hand sides and matrix products beat a solve with the contact rows'
        ``3n`` right-hand sides.
      smooth_force: ``(nv,)`` passive + actuator - bias generalised forces.
      free_velocity: ``(nv,)`` velocity after one step without constraints, ``v_f``.
      kinematics: forward kinematics at ``q`` (reused by the contact stage).
      motion_axes: ``(nv, 6)`` world motion axes of the dofs at ``q``.
      tendon: tendon lengths and moment arms at ``q`` (:class:`~._tendons.TendonKinematics`;
        ``(0,)`` / ``(0, nv)`` arrays for a model without tendons).
      position_velocity: ``(nv,)`` RK4's weighted stage velocity ``v̄`` (positions advance by
        ``h (v̄ + ½ Δv)`` with ``Δv`` the constraint impulse, :mod:`._integrators`); ``None`` for
        the other integrators (positions advance with the new velocity).
      activation_rate: ``(na,)`` the rate ``ȧ`` of the actuator activations the step started
        from (RK4: the weighted ``Σ b_k ȧ_k``), ``None`` for a model without them.
      mass_factor: MuJoCo-compatible constraint model with an integrator whose ``H`` is not
        ``M``: ``(L_M, L_M⁻¹, v + dt M⁻¹ τ)``, what its constraint rows are posed with (MuJoCo
        solves constraint forces with the plain mass matrix and applies its integrator after:
        :mod:`jaxsim_contact.constraints._soft`); ``None`` otherwise.
      equality_velocity_bias: MuJoCo-compatible model with connect or weld equalities: ``(m,
        3)`` ``J̇ v`` of the equality slots (zero on joint / tendon couplings), which MuJoCo
        subtracts from their reference acceleration (``mj_Jdotv``); ``None`` otherwise.
      velocity_lu: MuJoCo-compatible model whose integrator's ``H`` is not symmetric
        (``implicit``; ``implicitfast`` with a lone free body): the LU factors of ``H``
        (``lu_factor``, the ones ``v_f`` was solved with), so the constraint
        force moves the velocity by ``dt H⁻¹ Jᵀ f`` as ``mj_implicit`` does, not through the
        symmetric part the Cholesky factor holds; ``None`` otherwise.
    """

    mass_matrix: jax.Array
    cholesky: jax.Array
    cholesky_inverse: jax.Array
    smooth_force: jax.Array
    free_velocity: jax.Array
    kinematics: Kinematics
    motion_axes: jax.Array
    tendon: TendonKinematics
    position_velocity: jax.Array | None = None
    activation_rate: jax.Array | None = None
    mass_factor: tuple[jax.Array, jax.Array, jax.Array] | None = None
    equality_velocity_bias: jax.Array | None = None
    velocity_lu: tuple[jax.Array, jax.Array] | None = None


@full_precision_matmuls
def init(model: Model, q: jax.Array | None = None, v: jax.Array | None = None,
         act: jax.Array | None = None) -> State:
    """Initial state: ``q = qpos0`` (MuJoCo's reference configuration), ``v = 0``, ``time = 0``,
    no contact forces (the solver starts cold), activations ``act`` ``(na,)`` (default 0;
    ``None`` for a model without any)."""
    dtype = model.dtype
    q = model.qpos0 if q is None else jnp.asarray(q, dtype)
    v = jnp.zeros((model.nv,), dtype) if v is None else jnp.asarray(v, dtype)
    if model.na:
        act = jnp.zeros((model.na,), dtype) if act is None else jnp.asarray(act, dtype)
    elif act is not None and jnp.size(act):
        raise ValueError(f"the model has no actuator activations, got act of shape {jnp.shape(act)}")
    return State(q=q, v=v, time=jnp.zeros((), dtype), error=jnp.zeros((), jnp.int32),
                 contact=initial_contact_data(model, dtype), act=act if model.na else None)


@full_precision_matmuls
def smooth_dynamics(model: Model, state: State, ctrl: jax.Array | None) -> SmoothDynamics:
    """Contact-free quantities of one step (DESIGN §2 stage 5) for the model's integrator
    (:mod:`._integrators`): ``H``, its factor and the free velocity ``v_f``."""
    q, v = state.q, state.v
    dt = model.options.dt.astype(q.dtype)
    act = _activations(model, state)
    kin, axes, tendon, mass, force = smooth_terms(model, q, v, ctrl, act)
    act_rate = None if act is None else activation_rate(model, clamp_controls(model, ctrl), act)
    integrator = model.options.integrator
    # H: M + dt D (Euler), M (RK4), M - dt ∂f/∂v (implicit, implicitfast); see .integrators
    matrix = integrator_matrix(model, q, v, ctrl, kin, axes, tendon, mass, dt, act=act)
    # block by block over the kinematic trees (H has no entry between two trees unless a tendon
    # couples them)
    groups = velocity_matrix_groups(model)
    lu = None
    if not integrator_matrix_is_symmetric(model):  # LU for v_f, the symmetric part for the rows
        chol, chol_inv = grouped_cholesky(0.5 * (matrix + matrix.T), groups)
        lu = lu_factor(matrix)
        free_velocity = v + dt * lu_solve(lu, force)
    else:
        chol, chol_inv = grouped_cholesky(matrix, groups)
        acceleration = chol_inv.T @ (chol_inv @ force)  # H⁻¹ f = L⁻ᵀ L⁻¹ f
        free_velocity = v + dt * acceleration
    soft = model.options.constraint_model is ConstraintModel.MUJOCO
    mass_factor = velocity_lu = None
    if soft and integrator not in (Integrator.EULER, Integrator.RK4):  # H ≠ M
        mass_factor = _mass_factor(mass, force, v, dt, groups)
        velocity_lu = lu
    elif soft and integrator == Integrator.EULER and model.options.euler_damping:
        mass_factor = _mass_factor(mass, force, v, dt, groups)
    equality_bias = equality_velocity_bias(model, q, v)
    position_velocity = None
    # H = M: the acceleration is RK4's stage 0. (Under the soft model step() runs every stage
    # with its constraint solve instead: _soft_runge_kutta.)
    if integrator == Integrator.RK4 and not soft:
        free_velocity, position_velocity, act_rate, _, _ = rk4_velocities(
            model, q, v, ctrl, acceleration, dt, act, act_rate)
    return SmoothDynamics(mass_matrix=mass, cholesky=chol, cholesky_inverse=chol_inv,
                          smooth_force=force, free_velocity=free_velocity, kinematics=kin,
                          motion_axes=axes, tendon=tendon, position_velocity=position_velocity,
                          activation_rate=act_rate, mass_factor=mass_factor,
                          equality_velocity_bias=equality_bias, velocity_lu=velocity_lu)


def _mass_factor(mass, force, v, dt, groups):
    """``(L_M, L_M⁻¹, v + dt M⁻¹ f)``: what MuJoCo-compatible rows are posed with."""
    mass_chol, mass_chol_inv = grouped_cholesky(mass, groups)
    return mass_chol, mass_chol_inv, v + dt * (mass_chol_inv.T @ (mass_chol_inv @ force))


def _activations(model: Model, state: State) -> jax.Array | None:
    """``state.act`` (zeros when a hand-built state has none), or ``None`` without activations."""
    if model.na == 0:
        return None
    if state.act is None:
        return jnp.zeros((model.na,), state.q.dtype)
    return state.act


def _within_limit(x: jax.Array, limit: jax.Array) -> jax.Array:
    """True iff every entry of ``x`` is finite and at most ``limit`` in magnitude (NaN compares
    False, so it fails too). A boolean: no derivative flows through it."""
    return jnp.all(jnp.abs(x) <= limit)


def _tree_where(condition: jax.Array, on_true, on_false):
    return jax.tree_util.tree_map(lambda a, b: jnp.where(condition, a, b), on_true, on_false)


def _check_contact_cache(contact, empty_contact) -> None:
    """A state's contact cache has the model's constraint slots (static shapes, checked at trace
    time): a state made for another model or other options (e.g. contacts disabled) would
    otherwise fail deep inside the step with a broadcasting error."""
    if contact is None:
        return
    got, got_tree = jax.tree_util.tree_flatten(contact)
    want, want_tree = jax.tree_util.tree_flatten(empty_contact)
    if got_tree != want_tree or [jnp.shape(x) for x in got] != [jnp.shape(x) for x in want]:
        slots = lambda c: jnp.shape(c.active)  # noqa: E731
        raise ValueError(
            f"state.contact has constraint slots of shape {slots(contact)} but this model has "
            f"{slots(empty_contact)}: the state was made for another model or other options (for "
            "example enable_contacts). Make it with jc.init(model), or pass it without its contact "
            "cache: jc.State(q=state.q, v=state.v, time=state.time, error=state.error)."
        )


@full_precision_matmuls
def step(model: Model, state: State, ctrl: jax.Array | None = None) -> State:
    """Advance one time step ``model.options.dt`` (``model.options.integrator``, hard contact).

    Args:
      model: the scene.
      state: current state.
      ctrl: ``(nu,)`` actuator controls, or ``None`` (zeros) for a model without actuators;
        cast to the model's dtype.
    Returns:
      The next state; ``contact`` holds this step's contact forces, penetration and solver
      statistics. ``error`` (sticky) gains ``SOLVER_NOT_CONVERGED`` / ``CONTACT_BUDGET_OVERFLOW``
      from the contact stage, ``EQUALITY_NOT_SATISFIED`` from the equality projection, ``NON_FINITE_STATE`` if ``q`` or ``v`` coming in or going out is
      NaN, ±inf or beyond ``Options.value_limit``, ``INVALID_CONTROL`` if ``ctrl`` is.
    Raises:
      TypeError: ``state.q`` or ``state.v`` is not of the model's dtype (while tracing).

    Fault isolation (DESIGN §4 "bad input"): an environment with a ``ErrorFlag.FREEZE`` bit (set
    now or before) is frozen. It steps a harmless stand-in (``qpos0``, ``v = 0``, ``ctrl = 0``,
    no warm start) instead of its own values — the "double where": its bad values reach no
    arithmetic, so neither values nor derivatives of any environment become NaN — and returns a
    held state under ``stop_gradient``: its input ``q, v`` when those were valid (the last valid
    state), else ``qpos0`` at rest; empty contact data. Its outputs stay finite and its derivative
    contribution is exactly zero, so a batch-mean loss stays finite and equals the loss of the
    healthy environments plus a constant; :func:`jaxsim_contact.reset_where` brings it back.
    Healthy environments are bitwise unaffected (``where`` selects their own values).
    Limitation: when a valid state diverges *inside* a step (finite input, non-finite result),
    its values are held as above, but reverse-mode derivatives of that one step for that
    environment can still be NaN (a zero cotangent times an infinite partial derivative).
    """
    dt = model.options.dt.astype(state.q.dtype)
    guard = _guard_inputs(model, state, ctrl)  # fault isolation: bad inputs step a stand-in
    if _soft_rk4(model):  # MuJoCo's RK4: a full forward pass (and constraint solve) per stage
        with jax.named_scope("runge_kutta_stages"):
            v_next, position_velocity, act_rate, contact, contact_error = _soft_runge_kutta(
                model, guard, dt)
        q_next = integrate_positions(model, guard.state.q, position_velocity, dt)
    else:
        with jax.named_scope("smooth_dynamics"):  # kinematics, M, bias, passive, actuator forces
            smooth = smooth_dynamics(model, guard.state, guard.ctrl)
        with jax.named_scope("contact_stage"):  # collision, constraint rows, solve: v⁺ from v_f
            v_next, contact, contact_error = contact_stage(model, guard.state, smooth, dt)
        q_next = integrate_positions(model, guard.state.q, _position_velocity(smooth, v_next), dt)
        # equalities and tendon limits: their position drift projected out (a bit when the
        # equalities are incompatible)
        q_next, v_next, unsatisfied = project_positions(
            model, guard.state.q, q_next, v_next, dt, smooth.cholesky_inverse, smooth.tendon)
        contact_error = contact_error | error_bit(unsatisfied, ErrorFlag.EQUALITY_NOT_SATISFIED)
        act_rate = smooth.activation_rate
    act_next = state.act if model.na == 0 else next_activation(  # MuJoCo mj_nextActivation
        model, _activations(model, guard.state), act_rate, dt)
    return _advance_or_hold(model, state, guard, q_next, v_next, contact, contact_error, act_next)


def _soft_rk4(model: Model) -> bool:
    return (model.options.integrator == Integrator.RK4
            and model.options.constraint_model is ConstraintModel.MUJOCO)


def _soft_runge_kutta(model: Model, guard: "_Guard", dt):
    """RK4 under MuJoCo's soft constraint model (``mj_RungeKutta``): every stage's acceleration is
    a full forward pass — smooth dynamics, collision, rows and the soft solve at the stage's
    ``(q_k, v_k, act_k)`` — ``a_k = M⁻¹ (f_k + Jᵀ λ_k)``. Soft forces are a function of the state,
    so the stages integrate them like any smooth force. The four stages are one ``lax.scan``
    (the contact stage is traced once); each is warm-started from the previous step's forces.

    Returns:
      ``(v_next, position_velocity, act_rate, contact, error)``: ``v + h Σ b_k a_k``, RK4's
      ``v̄``, the weighted activation rate, stage 0's :class:`ContactData` (the forces at the
      state the step starts from, MuJoCo's ``efc_force`` after ``mj_forward``) and the OR of the
      stages' error bits.
    """
    state = guard.state

    def stage_acceleration(stage_q, stage_v, stage_act):
        stage_state = State(q=stage_q, v=stage_v, time=state.time, error=state.error,
                            contact=state.contact, act=stage_act)
        smooth = smooth_dynamics(model, stage_state, guard.ctrl)
        _, contact, error = contact_stage(model, stage_state, smooth, dt)
        inverse = smooth.cholesky_inverse  # H = M for RK4
        force = smooth.smooth_force + contact.generalized_force
        return inverse.T @ (inverse @ force), error, contact

    v_next, position_velocity, act_rate, error, contacts = rk4_velocities(
        model, state.q, state.v, guard.ctrl, None, dt, _activations(model, state), None,
        stage_acceleration, include_first_stage=True)
    contact = jax.tree_util.tree_map(lambda x: x[0], contacts)
    return v_next, position_velocity, act_rate, contact, error


def _position_velocity(smooth: SmoothDynamics, v_next: jax.Array) -> jax.Array:
    """The velocity that moves ``q`` over the step: ``v⁺`` (Euler, implicit: q⁺ = q ⊕ v⁺ Δt), or
    RK4's ``v̄ + ½ (v⁺ − v_f)`` (the constraint impulse as a force held over the step)."""
    if smooth.position_velocity is None:
        return v_next
    return smooth.position_velocity + 0.5 * (v_next - smooth.free_velocity)


class _Guard(eqx.Module):
    """What :func:`_guard_inputs` found: the stand-in ``state`` and ``ctrl`` the step runs on,
    whether the environment ``runs``, and the validity of its incoming state and control."""

    state: State
    ctrl: jax.Array
    runs: jax.Array
    state_ok: jax.Array
    ctrl_ok: jax.Array


def _check_state_dtype(model: Model, state: State) -> None:
    """A state of another floating dtype than the model's is a mistake, not a conversion to guess
    (issue 42, "Bad input"): a float64 state made a float32 model's whole step float64. Raised
    while tracing, so before anything runs, under ``jit`` too."""
    for name in ("q", "v"):
        got = jnp.result_type(getattr(state, name))
        if got != model.dtype:
            raise TypeError(
                f"state.{name} is {got} but the model is {jnp.dtype(model.dtype)}: make the state "
                f"with jc.init(model, q=state.q, v=state.v) (it converts once), or convert the "
                f"model with model.astype(jnp.{got})")


def _guard_inputs(model: Model, state: State, ctrl: jax.Array | None) -> _Guard:
    """Fault isolation (see :func:`step`): an environment with bad inputs or a ``FREEZE`` bit
    steps ``qpos0`` at rest with zero control and no warm start instead of its own values, so
    that its bad values reach no arithmetic."""
    _check_state_dtype(model, state)
    dtype = state.q.dtype
    # controls follow the model's dtype (float64 actions from NumPy to a float32 model): one cast
    ctrl = jnp.zeros((model.nu,), dtype) if ctrl is None else jnp.asarray(ctrl).astype(dtype)
    limit = model.options.value_limit.astype(dtype)
    state_ok = _within_limit(state.q, limit) & _within_limit(state.v, limit)
    ctrl_ok = _within_limit(ctrl, limit)
    runs = state_ok & ctrl_ok & ((state.error & ErrorFlag.FREEZE) == 0)
    empty_contact = initial_contact_data(model, dtype)
    _check_contact_cache(state.contact, empty_contact)
    stand_in = State(
        q=jnp.where(runs, state.q, model.qpos0.astype(dtype)), v=jnp.where(runs, state.v, 0.0),
        time=state.time, error=state.error,
        contact=None if state.contact is None else _tree_where(runs, state.contact, empty_contact),
        act=None if state.act is None else jnp.where(runs, state.act, 0.0))
    return _Guard(state=stand_in, ctrl=jnp.where(runs, ctrl, 0.0), runs=runs, state_ok=state_ok,
                  ctrl_ok=ctrl_ok)


def _advance_or_hold(model: Model, state: State, guard: _Guard, q_next, v_next, contact,
                     contact_error, act_next=None) -> State:
    """The next state where the environment ran and its result is valid; else the held state under
    ``stop_gradient`` (its valid input, or ``qpos0`` at rest), with the error bits of the step."""
    dtype = state.q.dtype
    limit = model.options.value_limit.astype(dtype)
    rest_q = model.qpos0.astype(dtype)
    result_ok = _within_limit(q_next, limit) & _within_limit(v_next, limit)
    runs, state_ok = guard.runs, guard.state_ok
    advances = runs & result_ok
    held_q = jax.lax.stop_gradient(jnp.where(state_ok, state.q, rest_q))
    held_v = jax.lax.stop_gradient(jnp.where(state_ok, state.v, 0.0))
    error = (
        state.error.astype(jnp.int32)
        | jnp.where(runs, contact_error, 0)  # contact_error is int32 already
        | error_bit(~(state_ok & (result_ok | ~runs)), ErrorFlag.NON_FINITE_STATE)
        | error_bit(~guard.ctrl_ok, ErrorFlag.INVALID_CONTROL)
    )
    if act_next is not None:  # activations: held like q and v
        held_act = jax.lax.stop_gradient(jnp.where(state_ok, _activations(model, state), 0.0))
        act_next = jnp.where(advances, act_next, held_act)
    return State(q=jnp.where(advances, q_next, held_q), v=jnp.where(advances, v_next, held_v),
                 time=state.time + model.options.dt.astype(dtype), error=error,
                 contact=_tree_where(advances, contact, initial_contact_data(model, dtype)),
                 act=act_next)


@full_precision_matmuls
def rollout(model: Model, state: State, ctrls: jax.Array,
            checkpoint_every: int | None = None) -> tuple[State, State]:
    """``lax.scan`` of :func:`step` over the leading axis of ``ctrls`` ``(T, nu)`` (``nu`` may be 0).

    Args:
      model: the scene.
      state: initial state.
      ctrls: ``(T, nu)`` controls, one row per step of ``model.options.dt`` seconds.
      checkpoint_every: ``None`` (default): one ``lax.scan`` over the ``T`` steps; reverse mode
        then stores the intermediate values of every step, so the memory of ``jax.grad`` grows
        linearly in ``T``. A positive int ``k``: rematerialisation (gradient checkpointing,
        ``jax.checkpoint``): an outer ``lax.scan`` over ``⌈T/k⌉`` segments of ``k`` steps, each
        segment a checkpointed inner ``lax.scan``; when ``k`` does not divide ``T`` the last
        segment ends with steps that leave the state unchanged and are cut from the trajectory
        (``k > T`` acts as ``k = T``). Reverse mode stores only the state at segment boundaries
        and recomputes one segment at a time, so memory grows like ``T/k + k`` step-residuals —
        ``~2√T`` with ``k ≈ √T`` — for about one extra forward pass of compute. Values and
        derivatives are those of the plain scan (same operations, in the same order). Static:
        under ``jax.jit`` pass it through ``static_argnames`` or ``functools.partial``.
    Returns:
      ``(final_state, trajectory)``; ``trajectory`` stacks the state after each step (leading
      axis ``T``), with either setting of ``checkpoint_every``.
    Raises:
      ValueError: ``checkpoint_every`` is not ``None`` or a positive int.
    """

    def body(carry: State, ctrl: jax.Array):
        nxt = step(model, carry, ctrl)
        return nxt, nxt

    if checkpoint_every is None:
        return jax.lax.scan(body, state, ctrls)
    if (isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, (int, np.integer))
            or checkpoint_every < 1):
        raise ValueError(
            "rollout(checkpoint_every=...) must be None or a positive int (steps per "
            f"rematerialised segment, e.g. round(sqrt(T))), got {checkpoint_every!r}")
    horizon = ctrls.shape[0]
    # k > T would only pad: one segment of T steps is the same computation
    k = max(1, min(int(checkpoint_every), horizon))
    num_segments = -(-horizon // k)
    padded = num_segments * k

    if padded == horizon:
        segment_body = body
        inputs = ctrls
    else:
        # T is not a multiple of k: the last segment ends with padding steps whose result is
        # discarded (the state is kept). One segment program instead of a second copy of the
        # checkpointed segment for the T mod k remaining steps (much less to compile) for at
        # most k - 1 wasted steps. A select, not a lax.cond: the cond's branch residuals would
        # raise the memory planned for a long gradient far more. A padding step's derivatives
        # are multiplied by zero; like any step's, non-finite ones would still poison the
        # gradient, and they start from the final state, a state the rollout itself reached.
        def segment_body(carry: State, indexed_ctrl):
            index, ctrl = indexed_ctrl
            nxt = _tree_where(index < horizon, step(model, carry, ctrl), carry)
            return nxt, nxt

        padding = jnp.zeros((padded - horizon,) + ctrls.shape[1:], ctrls.dtype)
        inputs = (jnp.arange(padded), jnp.concatenate([ctrls, padding]))

    # prevent_cse=False: inside lax.scan the loop already keeps XLA from merging the recomputation
    # with the forward pass (JAX's recommendation for checkpointed scan bodies).
    @functools.partial(jax.checkpoint, prevent_cse=False)
    def segment(carry: State, segment_inputs):
        return jax.lax.scan(segment_body, carry, segment_inputs)

    blocks = jax.tree_util.tree_map(lambda x: x.reshape((num_segments, k) + x.shape[1:]), inputs)
    final, traj = jax.lax.scan(segment, state, blocks)
    return final, jax.tree_util.tree_map(lambda x: x.reshape((padded,) + x.shape[2:])[:horizon], traj)
