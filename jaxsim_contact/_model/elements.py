"""Model elements beyond the kinematic tree, laid out like MuJoCo's model arrays: tendons
(:class:`Tendons`), stateful actuators (:class:`ActuatorStates`), sensors (:class:`Sensors`) and
equality constraints (:class:`Equalities`)."""

from __future__ import annotations

import typing

import equinox as eqx
import jax
import jax.numpy as jnp

from .._types import Choice


class WrapKind(Choice):
    """What one element of a tendon's path is (MuJoCo ``mjtWrap``; MuJoCo XML Reference
    ``<tendon>``): a joint of a fixed tendon, a site or a pulley of a spatial tendon, or a sphere /
    cylinder geom the path wraps around."""

    JOINT = "joint"
    SITE = "site"
    PULLEY = "pulley"
    SPHERE = "sphere"
    CYLINDER = "cylinder"


class TendonPathElement(typing.NamedTuple):
    """One element of a tendon path (static): its :class:`WrapKind`, the index of the joint, site
    or geom it refers to (``-1`` for a pulley, which refers to nothing), and the side site of a
    wrapping geom (``None``: no side site)."""

    kind: WrapKind
    target: int
    side_site: int | None = None


class Tendons(eqx.Module):
    """Tendons of a model (MuJoCo Computation chapter "Tendons"; XML Reference ``<tendon>``).

    A *fixed* tendon's length is a linear combination of joint positions, ``Σ coef_k q_k``; a
    *spatial* tendon's is the length of a path through sites that may wrap around spheres and
    cylinders and branch at pulleys (each branch after a pulley is divided by its divisor).
    ``ntendon`` tendons, ``nwrap`` path elements in all.

    Dynamic (``jax.Array``, differentiable, never recompile):
      stiffness, damping ``(ntendon,)``: spring stiffness (N/m) and damping (N·s/m) along the
        tendon; the spring acts only outside ``length_spring`` ``(ntendon, 2)`` (m; a dead band,
        one length when both entries are equal).
      range ``(ntendon, 2)``: length limits (m) of ``limited`` tendons (unilateral rows).
      wrap_coef ``(nwrap,)``: the coefficient of a fixed tendon's joint, the divisor of a pulley,
        0 otherwise (MuJoCo ``wrap_prm``).
      actuator_force_range ``(ntendon, 2)``: range of the summed force of the actuators driving
        the tendon, where ``actuator_force_limited`` (MuJoCo ``actuatorfrcrange``), N.
      frictionloss ``(ntendon,)``: dry friction along the tendon (N), a box row for each tendon
        of ``frictionloss_tendons``.
      length0 ``(ntendon,)``: lengths at ``qpos0`` (m; the reference of tendon equalities).
      armature ``(ntendon,)``: inertia along the tendon (kg), in the mass matrix and bias forces
        of the tendons of the static ``armature_tendons`` (nonzero when the model was built).
    Static:
      names, limited, actuator_force_limited, frictionloss_tendons (the tendons with
      ``frictionloss > 0`` when the model was built), path (per tendon a tuple of
      :class:`TendonPathElement`), multi_tree_tendons (the tendons whose path spans more than one
      kinematic tree: their armature, damping or velocity-dependent actuators couple the trees'
      dofs). Sites are the model's (``Model.site_pos``, ``site_body``).
    """

    stiffness: jax.Array
    damping: jax.Array
    length_spring: jax.Array
    range: jax.Array
    wrap_coef: jax.Array
    actuator_force_range: jax.Array
    frictionloss: jax.Array
    length0: jax.Array
    armature: jax.Array
    names: tuple[str, ...] = eqx.field(static=True)
    limited: tuple[bool, ...] = eqx.field(static=True)
    actuator_force_limited: tuple[bool, ...] = eqx.field(static=True)
    frictionloss_tendons: tuple[int, ...] = eqx.field(static=True)
    armature_tendons: tuple[int, ...] = eqx.field(static=True)
    path: tuple[tuple[TendonPathElement, ...], ...] = eqx.field(static=True)
    multi_tree_tendons: tuple[int, ...] = eqx.field(static=True, default=())

    @property
    def ntendon(self) -> int:
        return len(self.names)

    def is_fixed(self, tendon: int) -> bool:
        """True when ``tendon`` is a fixed (joint) tendon."""
        path = self.path[tendon]
        return bool(path) and path[0].kind is WrapKind.JOINT

    def wrap_address(self, tendon: int) -> int:
        """Index of ``tendon``'s first path element in ``wrap_coef``."""
        return sum(len(p) for p in self.path[:tendon])

    @classmethod
    def empty(cls, dtype=jnp.float64) -> "Tendons":
        """No tendon."""
        zeros = lambda *shape: jnp.zeros(shape, dtype)  # noqa: E731
        return cls(stiffness=zeros(0), damping=zeros(0), length_spring=zeros(0, 2),
                   range=zeros(0, 2), wrap_coef=zeros(0),
                   actuator_force_range=zeros(0, 2), frictionloss=zeros(0), length0=zeros(0),
                   armature=zeros(0), names=(), limited=(),
                   actuator_force_limited=(), frictionloss_tendons=(), armature_tendons=(), path=())


class ActuatorDynamics(Choice):
    """An actuator's activation dynamics (MuJoCo ``mjtDyn``, Computation chapter "Actuation
    model"): ``NONE`` (the force uses ``ctrl``), ``INTEGRATOR`` (``ȧ = u``), ``FILTER``
    (``ȧ = (u − a)/τ``, Euler), ``FILTEREXACT`` (the same filter integrated exactly) and
    ``MUSCLE`` (MuJoCo's muscle activation, time constants ``τ_act``, ``τ_deact``)."""

    NONE = "none"
    INTEGRATOR = "integrator"
    FILTER = "filter"
    FILTEREXACT = "filterexact"
    MUSCLE = "muscle"


class ActuatorStates(eqx.Module):
    """Activation dynamics and muscle curves of a model's actuators (MuJoCo ``actuator_dyn*``,
    ``actuator_act*``, muscle ``gainprm`` / ``biasprm``; Computation chapter "Actuation model").

    Actuator ``k`` with ``dynamics[k] != NONE`` owns one activation ``State.act[act_index[k]]``;
    its force uses the activation (or, with ``act_early``, the activation after this step) in
    place of ``ctrl``.

    Dynamic (``jax.Array``):
      dynamics_prm ``(nu, 3)``: ``τ`` (s) of a filter; ``(τ_act, τ_deact, smoothing width)`` of a
        muscle.
      act_range ``(nu, 2)``: activation range of the ``act_limited`` actuators.
      muscle_gain_prm, muscle_bias_prm ``(nu, 9)``: MuJoCo's muscle parameters ``(range₀, range₁,
        force, scale, lmin, lmax, vmax, fpmax, fvmax)`` of the actuators whose gain / bias is a
        muscle's (``muscle_gain``, ``muscle_bias``).
      length_range ``(nu, 2)``: actuator lengths (m) at which a muscle is shortest / longest
        (MuJoCo ``actuator_lengthrange``); acc0 ``(nu,)``: acceleration of a unit force (MuJoCo
        ``actuator_acc0``; scales a muscle of negative ``force``).
    Static:
      dynamics (per actuator an :class:`ActuatorDynamics`), act_limited, act_early, muscle_gain,
      muscle_bias (per actuator bools).
    """

    dynamics_prm: jax.Array
    act_range: jax.Array
    muscle_gain_prm: jax.Array
    muscle_bias_prm: jax.Array
    length_range: jax.Array
    acc0: jax.Array
    dynamics: tuple[ActuatorDynamics, ...] = eqx.field(static=True)
    act_limited: tuple[bool, ...] = eqx.field(static=True)
    act_early: tuple[bool, ...] = eqx.field(static=True)
    muscle_gain: tuple[bool, ...] = eqx.field(static=True)
    muscle_bias: tuple[bool, ...] = eqx.field(static=True)

    @property
    def stateful(self) -> tuple[int, ...]:
        """The actuators with an activation, in ``State.act`` order."""
        return tuple(k for k, kind in enumerate(self.dynamics) if kind != ActuatorDynamics.NONE)

    @property
    def na(self) -> int:
        """Number of activations (MuJoCo ``na``)."""
        return len(self.stateful)

    @classmethod
    def stateless(cls, nu: int, dtype=jnp.float64) -> "ActuatorStates":
        """``nu`` actuators without activation dynamics or muscles."""
        zeros = lambda *shape: jnp.zeros(shape, dtype)  # noqa: E731
        return cls(dynamics_prm=zeros(nu, 3), act_range=zeros(nu, 2), muscle_gain_prm=zeros(nu, 9),
                   muscle_bias_prm=zeros(nu, 9), length_range=zeros(nu, 2), acc0=zeros(nu),
                   dynamics=(ActuatorDynamics.NONE,) * nu, act_limited=(False,) * nu,
                   act_early=(False,) * nu, muscle_gain=(False,) * nu, muscle_bias=(False,) * nu)


class Sensors(eqx.Module):
    """A model's sensors (MuJoCo ``sensor_*``; XML Reference ``<sensor>``), read by
    :func:`jaxsim_contact.sensors` into MuJoCo's ``sensordata`` layout.

    Dynamic: cutoff ``(nsensor,)`` (MuJoCo clamps a real sensor to ``±cutoff``, a positive one to
    ``cutoff``, when ``cutoff > 0``).
    Static, per sensor: kind (MuJoCo's type name without prefix, lower case, e.g. ``"framepos"``),
    object_type / reference_type (MuJoCo ``mjtObj`` values; reference ``-1`` id: none),
    object_id, reference_id, address and dimension in ``sensordata``, data_type (``"real"``,
    ``"positive"``, ``"axis"``, ``"quaternion"``), names.
    """

    cutoff: jax.Array
    kind: tuple[str, ...] = eqx.field(static=True)
    object_type: tuple[int, ...] = eqx.field(static=True)
    object_id: tuple[int, ...] = eqx.field(static=True)
    reference_type: tuple[int, ...] = eqx.field(static=True)
    reference_id: tuple[int, ...] = eqx.field(static=True)
    address: tuple[int, ...] = eqx.field(static=True)
    dimension: tuple[int, ...] = eqx.field(static=True)
    data_type: tuple[str, ...] = eqx.field(static=True)
    names: tuple[str, ...] = eqx.field(static=True)

    @property
    def nsensor(self) -> int:
        return len(self.kind)

    @property
    def nsensordata(self) -> int:
        return int(sum(self.dimension))

    @classmethod
    def empty(cls, dtype=jnp.float64) -> "Sensors":
        """No sensor."""
        return cls(cutoff=jnp.zeros((0,), dtype), kind=(), object_type=(), object_id=(),
                   reference_type=(), reference_id=(), address=(), dimension=(), data_type=(),
                   names=())


class EqualityKind(Choice):
    """An equality constraint's kind (MuJoCo ``mjtEq``; XML Reference ``<equality>``)."""

    CONNECT = "connect"
    WELD = "weld"
    JOINT = "joint"
    TENDON = "tendon"


class Equalities(eqx.Module):
    """Equality constraints of a model (MuJoCo Computation chapter "Equality", XML Reference
    ``<equality>``), hard bilateral rows of the constraint stage
    (:mod:`jaxsim_contact.constraints._equality_rows`). ``neq`` constraints.

    Dynamic:
      data ``(neq, 11)``: MuJoCo's ``eq_data``. connect: the anchor in object 1's frame and in
        object 2's (m); weld: the anchor on object 2 (m), object 2's position in object 1's frame
        (m), the relative orientation quaternion and the torque scale; joint / tendon: the
        coefficients ``c0..c4`` of ``x1 − x1_ref = Σ c_k (x2 − x2_ref)^k``.
      active ``(neq,)``: 1 where the constraint holds, 0 where it is off (MuJoCo ``eq_active``);
        switch them at run time with ``eqx.tree_at(lambda m: m.equalities.active, model,
        new_mask.astype(model.dtype))`` — a dynamic mask, no recompilation. Stored in the model's
        floating dtype rather than as bools so that ``jax.grad`` with respect to a whole model
        works (its derivative is zero); :meth:`is_active` reads it.
    Static:
      names, kind (:class:`EqualityKind`), object1, object2: the bodies (world: 0), sites,
      joints or tendons constrained (``object2`` ``None`` for a joint / tendon constraint on one
      object), on_sites: connect / weld between two sites instead of two bodies.
    """

    data: jax.Array
    active: jax.Array
    names: tuple[str, ...] = eqx.field(static=True)
    kind: tuple[EqualityKind, ...] = eqx.field(static=True)
    object1: tuple[int, ...] = eqx.field(static=True)
    object2: tuple[int | None, ...] = eqx.field(static=True)
    on_sites: tuple[bool, ...] = eqx.field(static=True)

    @property
    def neq(self) -> int:
        return len(self.kind)

    def is_active(self) -> jax.Array:
        """``(neq,)`` bool: the constraints switched on (``active > 0.5``)."""
        return self.active > 0.5

    @classmethod
    def empty(cls, dtype=jnp.float64) -> "Equalities":
        """No equality constraint."""
        return cls(data=jnp.zeros((0, 11), dtype), active=jnp.zeros((0,), dtype), names=(),
                   kind=(), object1=(), object2=(), on_sites=())
