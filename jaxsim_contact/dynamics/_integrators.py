"""MuJoCo's integrators for the smooth (contact-free) part of a step.

MuJoCo Computation chapter, "Numerical integration". With ``f(q, v)`` the smooth generalised
force (passive + actuator - bias), ``M(q)`` the mass matrix and ``h`` the time step, each
integrator gives the *free velocity* ``v_f`` the contact stage starts from, and the matrix ``H``
through which constraint impulses change the velocity (``v⁺ = v_f + H⁻¹ Jᵀ λ h``):

    euler          H = M + h D                    v_f = v + h H⁻¹ f      (D = joint damping)
    implicitfast   H = M − h ∂(passive + actuator)/∂v                v_f = v + h H⁻¹ f
    implicit       H = M − h ∂f/∂v   (Coriolis and centrifugal terms included; not symmetric)
    rk4            H = M             v_f = v + h Σ_k b_k a_k         (a_k = M⁻¹ f at stage k)

``implicit``'s ``H`` is factorised by LU for ``v_f``; the contact stage, which needs a symmetric
positive definite metric, uses its symmetric part ``(H + Hᵀ)/2``. MuJoCo 4.0.0's
``implicitfast`` also keeps the bias derivative (gyroscopic term) of a free body that is a whole
kinematic tree — measured against ``mj_step``, not documented — so with such a body its ``H`` is
not symmetric either and is treated the same way. The ellipsoid fluid model's ``∂f/∂v`` is not
symmetric (added mass, Magnus and Kutta lift): ``implicitfast`` uses its symmetric part except on
those lone free bodies, as MuJoCo does (``mjd_ellipsoidFluid``). ``∂f/∂v`` is the exact
forward-mode derivative of the engine's own forces (MuJoCo's ``mjd_smooth_vel`` computes the
same derivatives analytically), restricted to MuJoCo's tree sparsity pattern: the entries between
two dofs neither of whose bodies is an ancestor of the other's — which a tendon's damping or an
actuator on a tendon or site spanning two branches or trees puts there — are dropped, as MuJoCo's
``qDeriv`` has no room for them. ``D`` is the integrator's choice (any ``D`` integrates to first
order), so this costs no accuracy and keeps every step equal to ``mj_step``; the mass matrix ``M``
is physics and keeps all its entries (``tests/dynamics/test_tendons.py``, tendon armature).

RK4 follows MuJoCo's ``mj_RungeKutta``: stages ``k = 1..3`` at ``q_k = q ⊕ c_k h v_{k-1}``,
``v_k = v + c_k h a_{k-1}`` (``c = ½, ½, 1``), weights ``b = ⅙, ⅓, ⅓, ⅙``; positions advance by
the weighted stage velocities ``v̄ = Σ b_k v_k``. The hard contact stage then changes the final
velocity by an impulse ``Δv = v⁺ − v_f``; it is applied as a generalised force held constant over
the step, so positions move by ``h (v̄ + ½ Δv)``: a body resting on the floor stays exactly at
rest (``v̄ = ½ h g`` and ``Δv = −h g`` cancel), and without constraints the step is MuJoCo's RK4.
(MuJoCo re-solves its soft constraints at every stage; a hard impulse is one event per step. Under
``constraint_model="mujoco"`` the step re-solves them too: ``rk4_velocities``' ``stage_acceleration``,
:func:`jaxsim_contact.dynamics._step._soft_runge_kutta`.)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._linalg import grouped_cholesky
from .._model import Integrator, Model
from .._types import JointType
from ._actuation import activation_rate, clamp_controls
from ._crba import mass_matrix_from_kinematics
from ._integration import integrate_positions
from ._kinematics import forward_kinematics, motion_axes
from ._rnea import actuator_forces, bias_forces_from_kinematics, passive_forces
from ._tendons import tendon_armature, tendon_kinematics

__all__ = ["smooth_terms", "integrator_matrix", "integrator_matrix_is_symmetric",
           "velocity_matrix_groups", "force_velocity_derivative", "rk4_velocities",
           "tree_sparsity_pattern", "RK4_STAGE_FRACTIONS", "RK4_WEIGHTS"]

#: ``c_k`` of stages 1..3 (each stage uses only the previous one's slope: MuJoCo's tableau)
RK4_STAGE_FRACTIONS = (0.5, 0.5, 1.0)
#: ``b_k`` of stages 0..3
RK4_WEIGHTS = (1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0)


def velocity_matrix_groups(model: Model):
    """Blocks of ``H`` for :func:`jaxsim_contact._linalg.grouped_cholesky`: one per kinematic tree,
    or one dense block when a tendon with armature spanning several trees couples them in ``M``
    (``∂f/∂v`` never couples two trees, whatever the integrator: module docstring)."""
    if set(model.tendons.multi_tree_tendons) & set(model.tendons.armature_tendons):
        return ((tuple(range(model.nv)),),)
    return model.tree.dof_tree_groups


def _smooth_force(model: Model, q, v, ctrl, kin, axes, tendon, include_bias: bool,
                  act=None) -> jax.Array:
    """``passive + actuator (- bias)`` at ``(q, v)`` with the kinematics of ``q`` given."""
    force = (passive_forces(model, q, v, tendon, kin, axes)
             + actuator_forces(model, q, v, ctrl, tendon, kin, axes, act=act))
    if include_bias:
        force = force - bias_forces_from_kinematics(model, kin, axes, v)
        if model.tendons.armature_tendons:
            force = force - tendon_armature(model, q, v, tendon)[1]
    return force


def force_velocity_derivative(model: Model, q, v, ctrl, kin, axes, tendon,
                              include_bias: bool, act=None) -> jax.Array:
    """``∂f/∂v`` ``(nv, nv)`` (N·s/m or N·m·s/rad) of the smooth force: passive and actuator
    forces, and with ``include_bias`` the bias forces too (MuJoCo's ``qDeriv`` of
    ``mjd_smooth_vel``, ``implicitfast`` without and ``implicit`` with the RNE terms). Exact
    forward-mode derivative (``jax.jacfwd``); ``kin``, ``axes``, ``tendon``: at ``q``; ``act``:
    the activations, held fixed. (MuJoCo's ``mjd_actuator_vel`` multiplies an affine gain's
    velocity term by the *unclamped* control of a stateless actuator; here the clamped one, the
    one the force uses: the two differ only for controls outside ``ctrlrange``.)"""
    derivative = jax.jacfwd(lambda w: _smooth_force(model, q, w, ctrl, kin, axes, tendon,
                                                    include_bias, act=act))(v)
    # only tendons and site transmissions put entries outside the pattern (module docstring)
    if model.ntendon or any(model.actuator_on_site):
        outside = ~tree_sparsity_pattern(model)
        if outside.any():  # MuJoCo's qDeriv has no room for them
            derivative = jnp.where(jnp.asarray(outside), 0.0, derivative)
    return derivative


def tree_sparsity_pattern(model: Model) -> np.ndarray:
    """Static ``(nv, nv)`` bool: dof pairs one of whose bodies is the other's or an ancestor of it
    (MuJoCo's sparsity of ``qM`` and ``qDeriv``)."""
    ancestor = np.asarray(model.tree.dof_ancestor, dtype=bool)
    return ancestor | ancestor.T


def smooth_terms(model: Model, q: jax.Array, v: jax.Array, ctrl: jax.Array, act):
    """``(kinematics, motion axes, tendon kinematics, M, f)`` at ``(q, v)``: the mass matrix
    (tendon armature included) and the smooth force ``passive + actuator − bias`` ``(nv,)``."""
    kin = forward_kinematics(model, q)
    axes = motion_axes(model, kin)
    mass = mass_matrix_from_kinematics(model, kin, axes)
    bias = bias_forces_from_kinematics(model, kin, axes, v)
    tendon = tendon_kinematics(model, q, kin, axes)
    if model.tendons.armature_tendons:  # inertia along tendons: in M and in the bias
        armature_mass, armature_bias = tendon_armature(model, q, v, tendon)
        mass, bias = mass + armature_mass, bias + armature_bias
    force = (passive_forces(model, q, v, tendon, kin, axes)
             + actuator_forces(model, q, v, ctrl, tendon, kin, axes, act=act) - bias)
    return kin, axes, tendon, mass, force


def _smooth_acceleration(model: Model, q: jax.Array, v: jax.Array, ctrl: jax.Array,
                         act) -> jax.Array:
    """``M(q)⁻¹ f(q, v)`` ``(nv,)``: the explicit acceleration of one RK4 stage."""
    _, _, _, mass, force = smooth_terms(model, q, v, ctrl, act)
    _, chol_inv = grouped_cholesky(mass, velocity_matrix_groups(model))
    return chol_inv.T @ (chol_inv @ force)


def _rotation_dofs(model: Model) -> np.ndarray:
    """``(k, 3)`` dof indices of the body-frame angular velocities of ball and free joints."""
    tree = model.tree
    rows = []
    for j, joint_type in enumerate(tree.joint_type):
        dof = tree.joint_dof_adr[j]
        if joint_type == JointType.BALL:
            rows.append(np.arange(dof, dof + 3))
        elif joint_type == JointType.FREE:
            rows.append(np.arange(dof + 3, dof + 6))
    return np.asarray(rows, dtype=np.int64).reshape(-1, 3)


def _dexp_inverse(theta: jax.Array, omega: jax.Array) -> jax.Array:
    """``dexp⁻¹_θ(ω)`` on SO(3), rows ``(k, 3)``: the rate of the rotation vector ``θ`` of
    ``R = R₀ exp(θ)`` under the body angular velocity ``ω``:
    ``ω + ½ θ×ω + c(|θ|) θ×(θ×ω)``, ``c(t) = (1 − (t/2) cot(t/2)) / t²`` (series near 0, so
    values and derivatives stay finite at ``θ = 0``)."""
    angle_sq = jnp.sum(theta * theta, axis=-1, keepdims=True)
    small = angle_sq < 1e-6
    safe_sq = jnp.where(small, 1.0, angle_sq)
    safe_angle = jnp.sqrt(safe_sq)
    exact = (1.0 - 0.5 * safe_angle / jnp.tan(0.5 * safe_angle)) / safe_sq
    series = 1.0 / 12.0 + angle_sq / 720.0 + angle_sq * angle_sq / 30240.0
    coefficient = jnp.where(small, series, exact)
    cross = jnp.cross(theta, omega)
    return omega + 0.5 * cross + coefficient * jnp.cross(theta, cross)


def _tangent_rate(rotation_dofs: np.ndarray, theta: jax.Array, v: jax.Array) -> jax.Array:
    """``K = dexp⁻¹_θ(v)`` dof-wise: the identity on hinge, slide and free-translation dofs."""
    if rotation_dofs.size == 0:
        return v
    return v.at[rotation_dofs].set(_dexp_inverse(theta[rotation_dofs], v[rotation_dofs]))


def rk4_velocities(model: Model, q: jax.Array, v: jax.Array, ctrl: jax.Array,
                   acceleration: jax.Array | None, dt: jax.Array, act=None, act_rate=None,
                   stage_acceleration=None, include_first_stage: bool = False):
    """MuJoCo's RK4 of the smooth dynamics from ``(q, v)`` (module docstring).

    Ball and free-joint rotations advance as Runge–Kutta–Munthe-Kaas on SO(3) (as MuJoCo 4.0.0's
    ``mj_RungeKutta``, measured: stage and final quaternions equal to rounding): stage ``k`` sits
    at ``q ⊕ θ_k`` with ``θ_k = c_k h K_{k-1}``, ``K_k = dexp⁻¹_{θ_k}(v_k)``, and the step ends
    at ``q ⊕ h Σ b_k K_k``; on the other dofs ``K_k = v_k`` (classical RK4).

    Args:
      q, v: ``(nq,)``, ``(nv,)`` state at the start of the step.
      ctrl: ``(nu,)`` controls (held over the step).
      acceleration: ``(nv,)`` ``M⁻¹ f`` at ``(q, v)`` (stage 0, already computed by the step).
      dt: scalar step (s).
      act, act_rate: ``(na,)`` activations and their rate at ``(q, v)`` (``None`` without
        activations); the activations are RK4 states too (MuJoCo's ``X`` holds ``act``).
      stage_acceleration: ``(q_k, v_k, act_k) -> (a_k (nv,), error bits int32, aux)``, the
        acceleration of stages 1..3 (0..3 with ``include_first_stage``); default the smooth ``M⁻¹ f`` (no error, no aux). The
        MuJoCo-compatible constraint model passes one that re-solves its soft constraints at the
        stage, as ``mj_RungeKutta`` does (its ``mj_forwardSkip`` per stage).
      include_first_stage: static; stage 0 is one more iteration of the same scan (its
        ``acceleration`` and ``act_rate`` are then computed, not given: pass ``None``), so a
        costly ``stage_acceleration`` is traced once.
    Returns:
      ``(free_velocity, position_velocity, act_rate, error, aux)``: ``v + h Σ b_k a_k`` and ``v̄ =
      Σ b_k K_k`` ``(nv,)`` (``q`` advances by ``q ⊕ h v̄`` when no constraint acts), the weighted
      activation rate ``Σ b_k ȧ_k`` ``(na,)`` (or ``None``), the OR of the stages' error bits, and
      the stages' ``aux`` stacked on a leading axis (stage 0 first when included).
    """
    weights = jnp.asarray(RK4_WEIGHTS, v.dtype)
    rotation_dofs = _rotation_dofs(model)

    has_act = act is not None and model.na > 0
    act = act if has_act else jnp.zeros((0,), v.dtype)
    act_rate = act_rate if has_act else jnp.zeros((0,), v.dtype)
    clamped_ctrl = clamp_controls(model, ctrl) if has_act else ctrl
    if stage_acceleration is None:
        def stage_acceleration(stage_q, stage_v, stage_act):
            return (_smooth_acceleration(model, stage_q, stage_v, ctrl, stage_act),
                    jnp.zeros((), jnp.int32), None)

    def stage(carry, inputs):
        (previous_rate, previous_acceleration, previous_act_rate, rate_sum, acceleration_sum,
         act_rate_sum, error) = carry
        fraction, weight = inputs
        theta = fraction * dt * previous_rate
        stage_q = integrate_positions(model, q, theta, jnp.ones((), v.dtype))
        if include_first_stage:  # stage 0 at q itself (no renormalisation of its quaternions)
            stage_q = jnp.where(fraction == 0, q, stage_q)
        stage_v = v + fraction * dt * previous_acceleration
        stage_act = act + fraction * dt * previous_act_rate
        stage_a, stage_error, aux = stage_acceleration(stage_q, stage_v, stage_act if has_act else None)
        stage_act_rate = (activation_rate(model, clamped_ctrl, stage_act) if has_act
                          else previous_act_rate)
        stage_rate = _tangent_rate(rotation_dofs, theta, stage_v)
        carry = (stage_rate, stage_a, stage_act_rate, rate_sum + weight * stage_rate,
                 acceleration_sum + weight * stage_a, act_rate_sum + weight * stage_act_rate,
                 error | stage_error)
        return carry, aux

    # one traced copy of the stage for the three stages (compile time), reverse mode through scan
    no_error = jnp.zeros((), jnp.int32)
    if include_first_stage:
        zeros = jnp.zeros_like(v)
        init = (zeros, zeros, jnp.zeros_like(act), zeros, zeros, jnp.zeros_like(act), no_error)
        stages = (jnp.asarray((0.0,) + RK4_STAGE_FRACTIONS, v.dtype), weights)
    else:
        init = (v, acceleration, act_rate, weights[0] * v, weights[0] * acceleration,
                weights[0] * act_rate, no_error)
        stages = (jnp.asarray(RK4_STAGE_FRACTIONS, v.dtype), weights[1:])
    (_, _, _, rate_sum, acceleration_sum, act_rate_sum, error), aux = jax.lax.scan(stage, init, stages)
    return v + dt * acceleration_sum, rate_sum, (act_rate_sum if has_act else None), error, aux


def integrator_matrix_is_symmetric(model: Model) -> bool:
    """Whether ``H`` is symmetric (static): not for ``implicit``, nor for ``implicitfast`` with a
    lone free body (its gyroscopic derivative is not symmetric)."""
    integrator = model.options.integrator
    if integrator == Integrator.IMPLICIT:
        return False
    return not (integrator == Integrator.IMPLICITFAST and _lone_free_body_dofs(model).size)


def integrator_matrix(model: Model, q, v, ctrl, kin, axes, tendon, mass, dt, act=None) -> jax.Array:
    """``H`` of the model's integrator (module docstring), ``(nv, nv)``."""
    integrator = model.options.integrator
    if integrator == Integrator.EULER and model.options.euler_damping:
        return mass + dt * jnp.diag(model.dof_damping.astype(mass.dtype))
    if integrator in (Integrator.RK4, Integrator.EULER):  # RK4, or Euler without eulerdamp
        return mass
    derivative = force_velocity_derivative(model, q, v, ctrl, kin, axes, tendon,
                                           include_bias=integrator == Integrator.IMPLICIT, act=act)
    if integrator == Integrator.IMPLICITFAST:
        symmetrised = _fluid_symmetrised_dofs(model)
        if symmetrised.size:
            # MuJoCo's implicitfast symmetrises each ellipsoid-fluid geom's velocity derivative
            # except on a lone free body (_fluid_symmetrised_dofs)
            mask = np.zeros(model.nv, dtype=bool)
            mask[symmetrised] = True
            derivative = jnp.where(jnp.asarray(np.outer(mask, mask)),
                                   0.5 * (derivative + derivative.T), derivative)
    lone_free_dofs = _lone_free_body_dofs(model)
    if integrator == Integrator.IMPLICITFAST and lone_free_dofs.size:
        # MuJoCo 4.0.0's implicitfast keeps the bias derivative of a free body that is a whole
        # tree (its gyroscopic term; measured against mj_step), not of articulated trees
        mask = np.zeros(model.nv, dtype=bool)
        mask[lone_free_dofs] = True
        bias_derivative = jax.jacfwd(lambda w: -bias_forces_from_kinematics(model, kin, axes, w))(v)
        derivative = derivative + jnp.where(jnp.asarray(np.outer(mask, mask)), bias_derivative, 0.0)
    return mass - dt * derivative


def _fluid_symmetrised_dofs(model: Model) -> np.ndarray:
    """Dofs on which ``implicitfast`` symmetrises ``∂f/∂v`` when the model has ellipsoid-fluid
    geoms (``Model.fluid_geoms``): MuJoCo symmetrises each such geom's 6×6 velocity derivative
    (``mjd_ellipsoidFluid``) except on a free body. In MuJoCo 4.0.0 that exception covers every
    kinematic tree that is a lone free body, welded children with mass and their geoms included
    (measured against ``mj_step``; the newer source's ``mj_isFreeBody`` excludes such trees), i.e.
    the trees of :func:`_lone_free_body_dofs`; every other velocity derivative of the other
    trees is symmetric already."""
    if not model.fluid_geoms:
        return np.zeros(0, dtype=np.int64)
    return np.setdiff1d(np.arange(model.nv, dtype=np.int64), _lone_free_body_dofs(model))


def _lone_free_body_dofs(model: Model) -> np.ndarray:
    """Dofs of the kinematic trees whose only joint is one free joint (a rigid free body, welded
    children included)."""
    tree = model.tree
    root_of = list(range(tree.nbody))
    for body in range(1, tree.nbody):
        parent = tree.body_parent[body]
        root_of[body] = body if parent == 0 else root_of[parent]
    joints_per_tree: dict[int, list[int]] = {}
    for body in range(1, tree.nbody):
        first = tree.body_joint_adr[body]
        joints = list(range(first, first + tree.body_joint_num[body]))
        joints_per_tree.setdefault(root_of[body], []).extend(joints)
    dofs = []
    for joints in joints_per_tree.values():
        if len(joints) == 1 and tree.joint_type[joints[0]] == JointType.FREE:
            dofs.extend(range(tree.joint_dof_adr[joints[0]], tree.joint_dof_adr[joints[0]] + 6))
    return np.asarray(sorted(dofs), dtype=np.int64)
