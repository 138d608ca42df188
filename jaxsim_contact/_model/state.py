"""What a step carries: :class:`State`, the constraint data of the last step (:class:`ContactData`)
and the error bits (:class:`ErrorFlag`)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp


class ErrorFlag:
    """Bits of ``State.error`` (per environment; 0 when healthy; sticky once set).

    * ``NON_FINITE_STATE``: ``q`` or ``v`` entering or leaving a step is NaN, ±inf or larger in
      magnitude than ``Options.value_limit``.
    * ``SOLVER_NOT_CONVERGED``: the contact solver hit its iteration cap above its tolerance and
      above what its dtype can resolve (the default ADMM stops at its round-off floor: in float32
      that is what makes the bit single out a stuck environment).
    * ``CONTACT_BUDGET_OVERFLOW``: more active contacts than contact slots (deepest ones kept).
    * ``INVALID_CONTROL``: ``ctrl`` handed to the step is NaN, ±inf or beyond ``value_limit``.
    * ``EQUALITY_NOT_SATISFIED``: the active equality constraints cannot all hold (e.g. two welds
      of one body to different poses): the step's position projection left a least-squares
      residual above ``Options.equality_tolerance``.

    The bits in ``FREEZE`` (non-finite state, invalid control) freeze the environment: from the
    step that sets one of them, :func:`jaxsim_contact.step` returns a held, finite state that
    carries no derivative (the last valid ``q, v`` of the environment, or ``qpos0`` at rest when
    the bad values came in with the state) until :func:`jaxsim_contact.reset_where` re-initialises
    it. The other bits are warnings: the environment keeps running.
    """

    NON_FINITE_STATE = 1
    SOLVER_NOT_CONVERGED = 2
    CONTACT_BUDGET_OVERFLOW = 4
    INVALID_CONTROL = 8
    EQUALITY_NOT_SATISFIED = 16
    #: bits that freeze an environment until it is reset
    FREEZE = NON_FINITE_STATE | INVALID_CONTROL


def error_bit(raised: jax.Array, bit: int) -> jax.Array:
    """``bit`` where ``raised`` (bool, any shape), else 0 — an int32 :class:`ErrorFlag` mask.

    Explicitly int32: with x64 enabled a bare ``jnp.where(raised, bit, 0)`` is a weak int64 array,
    and XLA:CPU (jaxlib 0.10.2) segfaults while compiling ``int32 array | weak int64 array`` —
    the op-by-op program of an un-jitted ``vmap`` of a step.
    """
    return jnp.where(raised, jnp.int32(bit), jnp.int32(0))

class ContactData(eqx.Module):
    """Constraint data of the last step, per solver slot: contacts, joint limits, tendon limits,
    dry friction (frictionloss), equality constraints — in that order
    (:data:`jaxsim_contact.constraints.PRODUCERS`).

    ``nc`` is the static number of slots (``contact budget + limited joints + limited tendons +
    frictionloss dofs and tendons + equality slots`` — a weld has two). Slots with ``active =
    False`` carry zero force. Forces are in newtons (the problem is solved in force units, seed
    001 §II), in the slot's frame ``(t1, t2, n)``; limit and dry-friction slots use only the normal
    component (N or N·m along the joint or tendon), equality slots all three (world axes of a
    connect or weld, the normal row of a joint or tendon coupling). For those slots ``distance``
    is the limit distance, 0 (dry friction) or minus the norm of the slot's position error
    (equalities). Under ``constraint_model="mujoco"`` with the elliptic cone and ``condim`` 4 / 6
    contacts, one spin slot per contact slot follows the contacts (``slot_ranges(model)
    ["contact_spin"]``): frame rows ``(n, t1, t2)`` and force the contact's torsional and rolling
    torques about them (N·m; MuJoCo's ``efc_force`` rows 3–5 of the contact).

    Attributes:
      key: ``(nc,)`` int32 identity of the candidate that filled the slot (stable over steps; used
        to warm-start the solver from the previous step's forces).
      active: ``(nc,)`` bool.
      distance: ``(nc,)`` signed distance (m; < 0 penetration) or distance to the joint limit.
      point: ``(nc, 3)`` world contact point (midway between the witness points).
      frame: ``(nc, 3, 3)`` rows ``(t1, t2, n)``, ``n`` from geom a towards geom b.
      friction: ``(nc,)`` Coulomb coefficient.
      force: ``(nc, 3)`` contact force in the slot's frame (N).
      generalized_force: ``(nv,)`` ``Jᵀ f``, the generalized force of all constraint forces
        (N or N·m per dof; MuJoCo's ``qfrc_constraint``). The next step's ``PrimalNewton`` starts
        from it (the ``warm_primal`` of :func:`jaxsim_contact.contact.solve`).
      iterations: int32 solver iterations; residual: solver criterion (seed 001 eq. 15);
      converged: bool; num_active: int32 active slots; overflow: bool, more active candidates
      than contact slots; penetration: max penetration depth over active contacts (m, ≥ 0).
    """

    key: jax.Array
    active: jax.Array
    distance: jax.Array
    point: jax.Array
    frame: jax.Array
    friction: jax.Array
    force: jax.Array
    generalized_force: jax.Array
    iterations: jax.Array
    residual: jax.Array
    converged: jax.Array
    num_active: jax.Array
    overflow: jax.Array
    penetration: jax.Array

    @classmethod
    def empty(cls, num_slots: int, dtype, nv: int) -> "ContactData":
        """All slots inactive, zero forces; ``nv`` sizes ``generalized_force``."""
        n = num_slots
        return cls(
            key=-jnp.ones((n,), jnp.int32),
            active=jnp.zeros((n,), bool),
            distance=jnp.zeros((n,), dtype),
            point=jnp.zeros((n, 3), dtype),
            frame=jnp.broadcast_to(jnp.eye(3, dtype=dtype), (n, 3, 3)),
            friction=jnp.zeros((n,), dtype),
            force=jnp.zeros((n, 3), dtype),
            generalized_force=jnp.zeros((nv,), dtype),
            iterations=jnp.zeros((), jnp.int32),
            residual=jnp.zeros((), dtype),
            converged=jnp.ones((), bool),
            num_active=jnp.zeros((), jnp.int32),
            overflow=jnp.zeros((), bool),
            penetration=jnp.zeros((), dtype),
        )


class State(eqx.Module):
    """Dynamic state of one environment (add a leading axis to batch).

    Attributes:
      q: ``(nq,)`` generalised positions (MuJoCo ``qpos`` layout).
      v: ``(nv,)`` generalised velocities (MuJoCo ``qvel`` layout).
      time: scalar simulation time (s).
      error: int32 bitmask of :class:`ErrorFlag` bits, sticky once set.
      contact: :class:`ContactData` of the last step (forces, penetration, solver statistics);
        ``None`` only for states built by hand (``jc.init`` always fills it).
      act: ``(na,)`` actuator activations (MuJoCo ``act``; :class:`ActuatorStates`); ``None`` in
        a state built by hand counts as zeros (and stays ``None`` for a model without them).
    """

    q: jax.Array
    v: jax.Array
    time: jax.Array
    error: jax.Array
    contact: ContactData | None = None
    act: jax.Array | None = None
