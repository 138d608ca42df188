"""Simulation options (:class:`Options`, :class:`Integrator`): typed, validated when built; each
numeric field declared once with its bounds."""

from __future__ import annotations

import dataclasses
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..contact._defaults import default_step_solver
from ..contact._implicit import GRADIENTS, Gradient
from ..contact._randomized import RandomizedSmoothing
from ..contact._relaxed import RelaxedComplementarity
from ..contact._solver import ContactSolver
from .._types import Choice
from .soft import ConstraintModel


def _scalar(value) -> jax.Array:
    return jnp.asarray(value, dtype=jnp.result_type(float))


class Integrator(Choice):
    """Time integrator (MuJoCo's ``<option integrator>``, Computation chapter "Numerical
    integration"; :mod:`jaxsim_contact.dynamics._integrators`).

    ``EULER``: semi-implicit Euler with implicit joint damping (MuJoCo's ``Euler``).
    ``RK4``: fourth-order Runge–Kutta of the smooth dynamics (MuJoCo's ``RK4``), the constraint
    impulse of the hard contact stage applied as a force held constant over the step.
    ``IMPLICITFAST``: velocity-implicit in the passive and actuator forces (MuJoCo's
    ``implicitfast``). ``IMPLICIT``: velocity-implicit in every smooth force, Coriolis and
    centrifugal included (MuJoCo's ``implicit``).
    """

    EULER = "euler"
    RK4 = "rk4"
    IMPLICIT = "implicit"
    IMPLICITFAST = "implicitfast"


def _numeric(default=None, *, low=None, high=None, strict=False):
    """A dynamic numeric option field: its default (``None``: required) and its valid range
    ``[low, high]`` (``strict``: ``> low``), checked when the options are built; the one
    declaration that validation and :meth:`Model.replace_options` read."""
    # no lower bound: still checked finite (a NaN gravity or wind would poison every step)
    metadata = {"numeric": True, "bounds": (-np.inf if low is None else low, high, strict)}
    if default is None:
        return eqx.field(metadata=metadata)
    return eqx.field(default_factory=lambda: _scalar(default), metadata=metadata)


def numeric_option_names() -> tuple[str, ...]:
    """Names of the dynamic numeric fields of :class:`Options` (converted to the model's dtype)."""
    return tuple(f.name for f in dataclasses.fields(Options) if f.metadata.get("numeric"))


class Options(eqx.Module):
    """Simulation options: typed, validated when built (never strings checked in traced code).

    Dynamic (``jax.Array``; changing them never recompiles, ``vmap``/``grad`` over them works):
      dt: scalar time step (s).
      gravity: ``(3,)`` gravitational acceleration in the world frame (m/s²).
      baumgarte: dimensionless β ∈ [0, 1]; a penetration ``δ`` adds ``β δ / dt`` to the normal
        reference velocity (seed 001 §II, Baumgarte correction with ``k_B = β / Δt``).
      max_correction_speed: cap (m/s, default 0.5) on that Baumgarte push-out speed ``β δ / dt``.
        Without it a deep initial overlap is resolved explosively (``δ`` = 5 cm, β = 0.2,
        dt = 2 ms: 5 m/s); ordinary resting penetrations
        (``β δ / dt`` ≈ 0.1 m/s at 1 mm) are unaffected. Contacts only; limits have their own:
      limit_correction_speed: cap (rad/s for hinges, m/s for slides; default 10) on the push-out
        speed of a violated joint limit, apart from the contacts' so that a model starting
        outside its limits (gymnasium's ant) comes back inside within a few steps, as in MuJoCo
        (issue 43).
      restitution: Newton restitution coefficient ``e ∈ [0, 1]`` (seed 001 §II, bias ``-e c^t``).
      restitution_threshold: approach speed (m/s) below which no restitution is applied (resting
        contacts do not jitter).
      contact_margin: distance (m) below which a separated pair becomes a (speculative) contact,
        added to MuJoCo's per-geom ``margin``.
      compliance: ``R ≥ 0`` on the normal rows of contacts (seed 001 §II "compliant contacts"), in
        (m/s²)/N since problems are solved in force units.
      tangential_compliance: ``R_T ≥ 0`` on the two tangent (friction) rows of contacts, same
        units. 0 (default): exact stiction, a sticking contact does not creep. ``R_T > 0``: a
        sticking contact carrying tangential force ``λ_T`` creeps at ``Δt R_T λ_T`` (the
        compliant CCP of seed 001 §II with ``R = diag(R_T, R_T, R)``, as MuJoCo's elliptic
        cones with ``R_T = R / impratio`` and Drake's SAP). It also conditions the primal
        Newton solver: with ``R_T = 0`` its tangential curvature sits at the 1e-9 floor, so it
        takes several times more Newton iterations per step than with this and
        ``limit_compliance`` of the order of ``compliance``.
      limit_compliance: ``R ≥ 0`` on joint-limit rows, in (rad/s²)/(N·m) (hinges) or
        (m/s²)/N (slides). 0 (default): hard limits (``PrimalNewton`` raises 0 to its 1e-9
        relative floor). ``R > 0``: a soft limit, as MuJoCo's default ``solref`` for limits; a
        joint held against its limit by a torque ``τ`` settles ``R τ Δt² / β`` past it (``β`` =
        ``baumgarte``). Like ``tangential_compliance`` it conditions the primal Newton solver.
      frictionloss_compliance: ``R ≥ 0`` on dry-friction rows (joint and tendon
        ``frictionloss``), in (units of the row's acceleration) per (N or N·m). 0 (default): a
        joint under a torque below its frictionloss does not creep.
      equality_compliance: ``R ≥ 0`` on equality-constraint rows (connect, weld, joint, tendon
        equalities); 0 (default): hard.
      equality_correction: fraction ``β_eq ∈ [0, 1]`` of an equality's position error removed per
        step (the rows' reference velocity is ``−β_eq e / Δt``); 1 (default): the violation left
        after a step is the second-order drift of that step alone, it does not accumulate.
      equality_tolerance: residual (m or rad; default 1e-6) of the equality constraints' position
        projection above which ``ErrorFlag.EQUALITY_NOT_SATISFIED`` is set (incompatible
        constraints: the projection returns their least-squares compromise).
      value_limit: magnitude (SI units of each entry; default 1e10) above which an entry of ``q``,
        ``v`` or ``ctrl`` counts as diverged, like a NaN or an infinity: :func:`jaxsim_contact.step`
        then flags and freezes the environment (see :class:`ErrorFlag`). No physical state comes
        near it, while squares and cubes of it stay finite even in float32.
      fluid_density (kg/m³), fluid_viscosity (Pa·s), wind ``(3,)`` (m/s, world frame): the
        medium of MuJoCo's fluid models (``<option density viscosity wind>``;
        :mod:`jaxsim_contact.dynamics._fluid`). It acts on ``Model.fluid_bodies`` (inertia-box
        model) and ``Model.fluid_geoms`` (ellipsoid model), which between them cover every body
        with mass when the model was loaded with a nonzero density or viscosity and are empty
        otherwise (a model loaded without fluid ignores these values).
      magnetic: ``(3,)`` global magnetic flux (T, world frame; MuJoCo ``<option magnetic>``,
        default ``(0, −0.5, 0)``): read only by magnetometer sensors.
      solver: any contact solver of :mod:`jaxsim_contact.contact` (default NCP/ADMM); its
        iteration cap and formulation are static, its tolerance dynamic.

    Static (change the compiled program):
      integrator: an :class:`Integrator` (or its string): ``"euler"`` (default; semi-implicit
        Euler with implicit joint damping, as MuJoCo's ``Euler``: velocity first, then positions
        with the new velocity), ``"rk4"``, ``"implicitfast"`` or ``"implicit"`` (MuJoCo's
        integrators of those names; :mod:`jaxsim_contact.dynamics._integrators`). The loader
        takes it from the model's ``<option integrator>``.
      constraint_model: a :class:`~jaxsim_contact.ConstraintModel` (or its string): ``"hard"``
        (default; the hard NCP rows this docstring describes) or ``"mujoco"`` (MuJoCo's soft
        constraints from the model's ``solref`` / ``solimp`` / cone / ``impratio``, a step that
        matches ``mj_step``: :mod:`jaxsim_contact.constraints._soft`). In ``"mujoco"`` the
        Baumgarte, correction-speed, restitution, margin and compliance fields above are not
        read. Needs a model loaded from MJCF (``Model.soft``).
      contact_budget: number of contact slots handed to the solver per step (``None``: the
        default of :func:`jaxsim_contact.constraints.default_contact_budget`); more active contacts
        than slots sets ``ErrorFlag.CONTACT_BUDGET_OVERFLOW`` and keeps the deepest ones.
      enable_contacts, enable_joint_limits: switch the two constraint families off (MuJoCo's
        ``<flag contact="disable"/>`` and ``limit="disable"``).
      euler_damping: with ``integrator="euler"``, treat joint damping implicitly (``H = M + dt
        D``, default, MuJoCo's ``eulerdamp``); ``False`` (MuJoCo's ``<flag eulerdamp="disable"/>``):
        explicitly (``H = M``).
      project_equalities: after each step, move ``q`` by one mass-weighted Gauss–Newton step
        onto the active equality constraints (:mod:`jaxsim_contact.dynamics._projection`), so that
        their violation does not drift (default ``True``; ``False``: velocity-level rows only).
      project_limits: in the same projection, move ``q`` back onto what the solve aimed at for
        tendon limits that ended past it (their second-order drift, ``~Δt² v² / r`` per step
        along a taut string), with the displacement added to ``v`` (SHAKE); default ``True``;
        ``False``: the next step's rows correct it. Hinge and slide limits are linear in ``q``
        and never drift; ball-joint limits are not projected.
      gradient: how derivatives of the contact forces are computed when ``jax.grad`` /
        ``jax.jacfwd`` / ``jax.jvp`` / ``jax.vjp`` go through :func:`jaxsim_contact.step` or
        :func:`jaxsim_contact.rollout` (passed to :func:`jaxsim_contact.contact.solve`; the
        forward values do not depend on it, up to the solver tolerance):

        * ``"implicit"`` (default): the solver loop is not differentiated; the force carries the
          mode-aware implicit rule of seed 004 §III-B (breaking / sticking / sliding; KKT
          counterparts for CCP and LCP), a ``custom_jvp`` whose tangent is one linear solve, so
          forward and reverse mode both work. It is the derivative of the current contact mode:
          at a mode switch within the step (make/break, stick/slip) it is one of the one-sided
          derivatives. Not available for ``Raisim`` (differentiating raises
          ``NotImplementedError``).
        * ``"unrolled"``: autodiff through exactly ``solver.max_iterations`` solver iterations
          (``lax.scan``; converged iterates frozen). The forward pass then always costs
          ``max_iterations`` iterations and reverse mode stores all of them; the derivative is
          that of the iterations taken (a warm start already at the solution gives zero).
        * ``jc.contact.RelaxedComplementarity(relaxation=ρ)`` (the ``"smoothed"`` rule, seed 002
          §V-D): the forward force is still the exact solution; its derivative is that of the
          relaxed-complementarity problem ``λ ∘ σ̄ = ρ e`` (:mod:`jaxsim_contact.contact._relaxed`),
          smooth through contact make/break and stick/slip. It is stored as ``gradient =
          "smoothed"`` plus the dynamic field ``gradient_smoothing`` (``ρ`` is a traced leaf:
          changing it never recompiles). NCP / CCP solvers only.
        * ``jc.contact.RandomizedSmoothing(key, noise_scale=σ, num_samples=M)`` (the other
          ``"smoothed"`` rule: first-order randomized smoothing, seed 000 §III-A): the forward
          force is again the exact solution; its derivative is the average of the exact implicit
          derivatives at ``M`` contact problems whose free velocity is perturbed by ``σ z_j``
          (:mod:`jaxsim_contact.contact._randomized`; ``σ`` in m/s², smoothing the gap over
          ``~σ·dt²``). Stored like the relaxed rule: ``gradient = "smoothed"`` plus the module in
          ``gradient_smoothing`` (``key`` and ``σ`` are traced leaves: changing them never
          recompiles; the same key gives the same derivative). NCP / CCP / LCP solvers.

        The bare string ``"smoothed"`` raises ``ValueError`` (it needs ``ρ``, or a key and ``σ``):
        pass one of the two objects.

        Anything else raises ``ValueError`` at construction, as does ``"unrolled"`` with a solver
        that has no fixed iteration cap (a positive int ``max_iterations``).

    Dynamic, set through ``gradient``:
      gradient_smoothing: the :class:`~jaxsim_contact.contact.RelaxedComplementarity` or
        :class:`~jaxsim_contact.contact.RandomizedSmoothing` when ``gradient == "smoothed"``,
        else ``None``.
    """

    dt: jax.Array = _numeric(low=0.0, strict=True)
    gravity: jax.Array = _numeric()
    baumgarte: jax.Array = _numeric(0.2, low=0.0, high=1.0)
    max_correction_speed: jax.Array = _numeric(0.5, low=0.0, strict=True)
    limit_correction_speed: jax.Array = _numeric(10.0, low=0.0, strict=True)
    restitution: jax.Array = _numeric(0.0, low=0.0, high=1.0)
    restitution_threshold: jax.Array = _numeric(0.2, low=0.0)
    contact_margin: jax.Array = _numeric(1e-3, low=0.0)
    compliance: jax.Array = _numeric(0.0, low=0.0)
    tangential_compliance: jax.Array = _numeric(0.0, low=0.0)
    limit_compliance: jax.Array = _numeric(0.0, low=0.0)
    frictionloss_compliance: jax.Array = _numeric(0.0, low=0.0)
    equality_compliance: jax.Array = _numeric(0.0, low=0.0)
    equality_correction: jax.Array = _numeric(1.0, low=0.0, high=1.0)
    equality_tolerance: jax.Array = _numeric(1e-6, low=0.0, strict=True)
    value_limit: jax.Array = _numeric(1e10, low=0.0, strict=True)
    fluid_density: jax.Array = _numeric(0.0, low=0.0)
    fluid_viscosity: jax.Array = _numeric(0.0, low=0.0)
    wind: jax.Array = _numeric([0.0, 0.0, 0.0])
    magnetic: jax.Array = _numeric([0.0, -0.5, 0.0])
    solver: ContactSolver = eqx.field(default_factory=default_step_solver)
    integrator: Integrator = eqx.field(static=True, default=Integrator.EULER)
    constraint_model: ConstraintModel = eqx.field(static=True, default=ConstraintModel.HARD)
    contact_budget: int | None = eqx.field(static=True, default=None)
    enable_contacts: bool = eqx.field(static=True, default=True)
    enable_joint_limits: bool = eqx.field(static=True, default=True)
    euler_damping: bool = eqx.field(static=True, default=True)
    project_equalities: bool = eqx.field(static=True, default=True)
    project_limits: bool = eqx.field(static=True, default=True)
    gradient: Gradient = eqx.field(static=True, default=Gradient.IMPLICIT)
    gradient_smoothing: Any = None

    def __post_init__(self):
        self.integrator = Integrator.parse(self.integrator, "Options.integrator")
        self.constraint_model = ConstraintModel.parse(self.constraint_model,
                                                      "Options.constraint_model")
        # gradient=RelaxedComplementarity(ρ) / RandomizedSmoothing(key, σ): the static part
        # ("smoothed") and the dynamic parameters are stored apart, so a jitted step sees ρ, the
        # key and σ as traced leaves.
        if isinstance(self.gradient, (RelaxedComplementarity, RandomizedSmoothing)):
            self.gradient_smoothing = self.gradient
            self.gradient = Gradient.SMOOTHED
        else:
            if isinstance(self.gradient, str) and self.gradient in tuple(Gradient):
                self.gradient = Gradient(self.gradient)
            if self.gradient != Gradient.SMOOTHED:
                self.gradient_smoothing = None

    @property
    def contact_gradient(self):
        """What :func:`jaxsim_contact.contact.solve` receives as ``gradient``: the string, or the
        ``RelaxedComplementarity`` / ``RandomizedSmoothing`` for ``"smoothed"``."""
        return self.gradient_smoothing if self.gradient == "smoothed" else self.gradient

    def __check_init__(self):
        if not isinstance(self.solver, ContactSolver):
            raise TypeError(
                "Options.solver must be a contact solver module (e.g. jc.contact.ADMM('ncp')), "
                f"got {type(self.solver).__name__}"
            )
        if self.gradient == "smoothed":
            if not isinstance(self.gradient_smoothing, (RelaxedComplementarity, RandomizedSmoothing)):
                raise ValueError(
                    "Options.gradient='smoothed' needs its parameters: pass "
                    "gradient=jc.contact.RelaxedComplementarity(relaxation=ρ) instead of the string "
                    "(ρ > 0 in N·m/s² for the step's force-unit problems; a contact switches on over "
                    "a band of free velocity ~√(ρ/m), see jaxsim_contact.contact._relaxed), or "
                    "gradient=jc.contact.RandomizedSmoothing(key=jax.random.key(0), noise_scale=σ) "
                    "(σ > 0 in m/s², smoothing the gap over ~σ·dt², see "
                    "jaxsim_contact.contact._randomized)")
            self.gradient_smoothing.check_formulation(getattr(self.solver, "formulation", None))
        elif not isinstance(self.gradient, str) or self.gradient not in GRADIENTS:
            raise ValueError(
                f"Options.gradient must be one of {[g.value for g in GRADIENTS]} or a "
                f"jc.contact.RelaxedComplementarity / jc.contact.RandomizedSmoothing, got {self.gradient!r}")
        if self.gradient == "unrolled":
            cap = getattr(self.solver, "max_iterations", None)
            if isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < 1:
                raise ValueError(
                    "Options.gradient='unrolled' needs a solver with a fixed iteration cap "
                    f"(a positive int max_iterations); {type(self.solver).__name__} has "
                    f"max_iterations={cap!r}")
        if self.contact_budget is not None and (
            not isinstance(self.contact_budget, int) or self.contact_budget < 1
        ):
            raise ValueError(f"Options.contact_budget must be a positive int or None, got {self.contact_budget!r}")
        for field in dataclasses.fields(self):
            bounds = field.metadata.get("bounds")
            if bounds is None:
                continue
            low, high, strict = bounds
            name, value = field.name, getattr(self, field.name)
            if isinstance(value, jax.core.Tracer):
                continue  # traced (vmapped / differentiated) options are not checked
            arr = np.asarray(value, dtype=np.float64)
            bad = ~np.isfinite(arr) | (arr < low) | ((arr <= low) if strict else False)
            if high is not None:
                bad |= arr > high
            if np.any(bad):
                bounds = f"in [{low}, {high}]" if high is not None else (f"> {low}" if strict else f">= {low}")
                bounds = "" if low == -np.inf and high is None else f" and {bounds}"
                raise ValueError(f"Options.{name} must be finite{bounds}, got {arr.tolist()}")
