"""Accelerations and forces of the bodies after the constraint solve (MuJoCo
``mj_rnePostConstraint``, Computation chapter "Forward dynamics"; read by the acceleration-stage
sensors, :mod:`._sensors`).

At a state ``(q, v)`` with controls, :func:`constrained_dynamics` runs the step's smooth dynamics
and constraint stage (collision, rows, solve; :func:`jaxsim_contact.step` without integration)
and returns MuJoCo's ``qacc`` for this engine's constraint forces::

    q̈ = M⁻¹ (τ_smooth + Jᵀ f)         τ_smooth = passive + actuator − bias

— MuJoCo's ``mj_forward`` acceleration, which does not depend on the integrator (explicit in
damping even under ``eulerdamp``). Without active constraints it equals MuJoCo's exactly. With
contacts the forces are the hard model's (the impulse of the step from this state over ``Δt``).

:func:`body_forces` then gives, in the world frame with torques about the world origin:

    a_i        = −g + Σ_{dofs d moving i} (Ṡ_d v_d + S_d q̈_d)          (MuJoCo cacc)
    f_ext,i    = wrench of the contact and connect / weld forces on i   (cfrc_ext)
    f_int,i    = Σ_{j in subtree(i)} (I_j a_j + V_j ×f I_j V_j − f_ext,j)  (cfrc_int)

``f_int,i`` is the wrench body ``i``'s parent exerts on it through its joint.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..collision._narrowphase import KEY_STRIDE
from ..collision._pairs import collision_structure
from ..constraints import contact_stage, slot_ranges
from ..constraints._equality_rows import equality_wrenches
from .._model import ContactData, Model, State
from ._kinematics import Kinematics
from ._rnea import body_accelerations, body_inertial_forces, body_velocities_and_axis_rates
from ._step import smooth_dynamics

__all__ = ["ConstrainedDynamics", "BodyForces", "constrained_dynamics", "body_forces",
           "contact_slot_bodies"]


class ConstrainedDynamics(eqx.Module):
    """The acceleration of a state and the constraint forces behind it.

    Attributes:
      qacc: ``(nv,)`` joint accelerations (m/s² or rad/s²; MuJoCo ``qacc``).
      contact: :class:`~jaxsim_contact._model.ContactData` of the constraint solve at the state.
      kinematics: forward kinematics at ``q``; motion_axes: ``(nv, 6)`` world dof axes.
    """

    qacc: jax.Array
    contact: ContactData
    kinematics: Kinematics
    motion_axes: jax.Array


class BodyForces(eqx.Module):
    """Per-body spatial quantities (world frame; angular part first, linear part at the world
    origin), MuJoCo's ``cacc`` / ``cfrc_ext`` / ``cfrc_int`` up to the reference point.

    Attributes:
      velocity: ``(nbody, 6)`` ``[ω; v_O]`` (rad/s; m/s).
      acceleration: ``(nbody, 6)`` ``[α; a_O]`` (rad/s²; m/s²), gravity as an upward acceleration
        of the world.
      external: ``(nbody, 6)`` ``[τ_O; f]`` (N·m; N) constraint wrench on each body.
      internal: ``(nbody, 6)`` ``[τ_O; f]`` wrench the parent exerts on each body.
    """

    velocity: jax.Array
    acceleration: jax.Array
    external: jax.Array
    internal: jax.Array


def constrained_dynamics(model: Model, state: State, ctrl: jax.Array | None) -> ConstrainedDynamics:
    """``q̈`` and constraint forces at ``state`` for controls ``ctrl`` ``(nu,)`` (module
    docstring; MuJoCo ``mj_forward`` up to ``qacc`` and ``efc_force``)."""
    dtype = state.q.dtype
    ctrl = jnp.zeros((model.nu,), dtype) if ctrl is None else jnp.asarray(ctrl, dtype)
    smooth = smooth_dynamics(model, state, ctrl)
    _, contact, _ = contact_stage(model, state, smooth, model.options.dt.astype(dtype))
    force = smooth.smooth_force + contact.generalized_force
    qacc = jnp.linalg.solve(smooth.mass_matrix, force) if model.nv else force
    return ConstrainedDynamics(qacc=qacc, contact=contact, kinematics=smooth.kinematics,
                               motion_axes=smooth.motion_axes)


def contact_slot_bodies(model: Model, contact: ContactData) -> tuple[jax.Array, jax.Array]:
    """Bodies ``(a, b)`` ``(m,)`` int of the ``m`` contact slots of ``contact`` (from each slot's
    key; an inactive slot's bodies are those of pair 0)."""
    structure = collision_structure(model)
    count = slot_ranges(model)["contacts"].stop
    if count == 0 or structure.num_pairs == 0:
        empty = jnp.zeros((count,), jnp.int32)
        return empty, empty
    pair_bodies = np.asarray(model.geom_body, dtype=np.int32)[structure.pair_geoms]
    pair = jnp.where(contact.active[:count], contact.key[:count] // KEY_STRIDE, 0)
    pair = jnp.clip(pair, 0, structure.num_pairs - 1)
    bodies = jnp.asarray(pair_bodies)[pair]
    return bodies[:, 0], bodies[:, 1]


def _contact_wrenches(model: Model, contact: ContactData, dtype) -> jax.Array:
    """``(nbody, 6)`` wrenches of the contact slots: ``+F`` on body b at the contact point,
    ``−F`` on body a (``F = frameᵀ f``: the normal points from a to b)."""
    wrenches = jnp.zeros((model.nbody, 6), dtype)
    count = slot_ranges(model)["contacts"].stop
    if count == 0:
        return wrenches
    body_a, body_b = contact_slot_bodies(model, contact)
    active = contact.active[:count]
    force = jnp.einsum("sji,sj->si", contact.frame[:count], contact.force[:count])
    force = jnp.where(active[:, None], force, 0.0)
    point = jnp.where(active[:, None], contact.point[:count], 0.0)
    wrench = jnp.concatenate([jnp.cross(point, force), force], axis=-1)
    wrenches = wrenches.at[body_b].add(wrench).at[body_a].add(-wrench)
    spin = slot_ranges(model)["contact_spin"]
    if spin.stop > spin.start:  # torsional / rolling torques of the contacts (pure torques)
        torque = jnp.einsum("sji,sj->si", contact.frame[spin], contact.force[spin])
        torque = jnp.where(contact.active[spin][:, None], torque, 0.0)
        wrench = jnp.concatenate([torque, jnp.zeros_like(torque)], axis=-1)
        wrenches = wrenches.at[body_b].add(wrench).at[body_a].add(-wrench)
    return wrenches


def body_forces(model: Model, dynamics: ConstrainedDynamics, v: jax.Array) -> BodyForces:
    """:class:`BodyForces` of a state with velocity ``v`` ``(nv,)`` and its
    :class:`ConstrainedDynamics` (module docstring; MuJoCo ``mj_rnePostConstraint``)."""
    kin, axes = dynamics.kinematics, dynamics.motion_axes
    dtype = kin.body_pos.dtype
    velocity, axes_rate = body_velocities_and_axis_rates(model, axes, v)
    acceleration = body_accelerations(model, axes, axes_rate, v, dynamics.qacc)
    external = _contact_wrenches(model, dynamics.contact, dtype)
    if model.neq:
        equality = dynamics.contact.force[slot_ranges(model)["equalities"]]
        external = external + equality_wrenches(model, kin, equality)
    own = body_inertial_forces(model, kin, velocity, acceleration) - external
    internal = jnp.asarray(model.tree.body_ancestor.T, dtype) @ own  # subtree sums
    return BodyForces(velocity=velocity, acceleration=acceleration, external=external,
                      internal=internal)
