"""Model, Options and State pytrees of a multibody scene (DESIGN §4–5).

Layout follows MuJoCo's compiled ``mjModel`` so that a model loaded from MJCF/URDF can be compared
with MuJoCo C entry by entry:

* bodies in MuJoCo's body order; body 0 is the world; ``parent < child`` always;
* joints in MuJoCo's joint order, several joints per body allowed (applied in order);
* ``q`` / ``v`` follow MuJoCo's ``qpos`` / ``qvel`` layout (see :class:`~jaxsim_contact.types.JointType`).

Everything that fixes a shape, a loop trip count or a Python dispatch (counts, parent indices,
joint types, address tables, the grouping of bodies by tree depth, geom types and collision
bitmasks) lives in the hashable, static :class:`KinematicTree` and in static fields. Every physical
parameter (masses, inertias, offsets, axes, damping, armature, gravity, dt, geom sizes, friction,
actuator gains) is a dynamic ``jax.Array`` leaf: changing it never recompiles, and ``jax.grad``
or ``jax.vmap`` over it works (domain randomisation).
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .contact.defaults import default_step_solver
from .contact.implicit import GRADIENTS, Gradient
from .contact.randomized import RandomizedSmoothing
from .contact.relaxed import RelaxedComplementarity
from .contact.solver import ContactSolver
from .types import Choice, GeomType, JointType

__all__ = ["KinematicTree", "Options", "Integrator", "ActuatorDynamics", "ActuatorStates", "Sensors", "Model", "State", "ContactData", "ErrorFlag",
           "Tendons", "TendonPathElement", "WrapKind", "Equalities", "EqualityKind"]


@dataclasses.dataclass(frozen=True, eq=True)
class KinematicTree:
    """Static structure of the kinematic tree (hashable; no arrays).

    All tuples are indexed like MuJoCo's model arrays. Derived numpy incidence matrices are
    computed once per structure (cached on the instance) and enter traced code as constants.

    Attributes:
      body_parent: ``(nbody,)`` parent body index; ``body_parent[0] == 0`` (the world).
      body_joint_adr, body_joint_num: first joint index and number of joints of each body.
      joint_type: ``(njnt,)`` :class:`JointType`.
      joint_body: ``(njnt,)`` body that each joint moves.
      joint_qpos_adr, joint_dof_adr: start of each joint in ``q`` and in ``v``.
      dof_body, dof_joint: ``(nv,)`` body and joint of each degree of freedom.
      levels: bodies grouped by depth in the tree: ``levels[k]`` holds the bodies at depth
        ``k + 1`` (children of the world are depth 1); forward kinematics composes poses in
        this order.
    """

    body_parent: tuple[int, ...]
    body_joint_adr: tuple[int, ...]
    body_joint_num: tuple[int, ...]
    joint_type: tuple[JointType, ...]
    joint_body: tuple[int, ...]
    joint_qpos_adr: tuple[int, ...]
    joint_dof_adr: tuple[int, ...]
    dof_body: tuple[int, ...]
    dof_joint: tuple[int, ...]
    levels: tuple[tuple[int, ...], ...]

    @property
    def nbody(self) -> int:
        return len(self.body_parent)

    @property
    def njnt(self) -> int:
        return len(self.joint_type)

    @property
    def nv(self) -> int:
        return len(self.dof_body)

    @property
    def nq(self) -> int:
        return sum(JointType(t).nq for t in self.joint_type)

    @property
    def max_joints_per_body(self) -> int:
        return max(self.body_joint_num, default=0)

    @functools.cached_property
    def body_ancestor(self) -> np.ndarray:
        """``(nbody, nbody)`` bool: ``A[i, j]`` iff body ``j`` is ``i`` or an ancestor of ``i``."""
        n = self.nbody
        anc = np.zeros((n, n), dtype=bool)
        for i in range(n):
            j = i
            anc[i, j] = True
            while j != 0:
                j = self.body_parent[j]
                anc[i, j] = True
        return anc

    @functools.cached_property
    def dof_moves_body(self) -> np.ndarray:
        """``(nbody, nv)`` 0/1: dof ``d`` moves body ``i`` (its body is ``i`` or an ancestor)."""
        return self.body_ancestor[:, np.asarray(self.dof_body, dtype=int)].astype(np.float64) if self.nv else np.zeros((self.nbody, 0))

    @functools.cached_property
    def dof_ancestor(self) -> np.ndarray:
        """``(nv, nv)`` bool: ``D[a, b]`` iff the body of dof ``b`` is the body of ``a`` or an
        ancestor of it (the sparsity pattern of the mass matrix's lower-and-diagonal part)."""
        body = np.asarray(self.dof_body, dtype=int)
        return self.body_ancestor[body][:, body] if self.nv else np.zeros((0, 0), bool)

    @functools.cached_property
    def dof_tree_groups(self) -> tuple[tuple[tuple[int, ...], ...], ...]:
        """The dofs of each kinematic tree (the bodies below one child of the world), trees of
        equal dof count grouped: a tuple of groups, each a tuple of sorted dof-index tuples of
        one length (groups by increasing length, trees by first dof). The mass matrix has no
        entry between two trees, so it factorises block by block
        (:func:`jaxsim_contact.linalg.grouped_cholesky`)."""
        trees: dict[int, list[int]] = {}
        for dof, body in enumerate(self.dof_body):
            root = body
            while self.body_parent[root] != 0:
                root = self.body_parent[root]
            trees.setdefault(root, []).append(dof)
        by_size: dict[int, list[tuple[int, ...]]] = {}
        for dofs in sorted(trees.values()):
            by_size.setdefault(len(dofs), []).append(tuple(sorted(dofs)))
        return tuple(tuple(by_size[size]) for size in sorted(by_size))

    @functools.cached_property
    def dof_frame_velocity(self) -> np.ndarray:
        """``(nv, nv)`` 0/1: which dofs of the same body add to the velocity of the frame in which
        dof ``a``'s motion axis is fixed (the rest comes from the parent body).

        A hinge/slide axis is fixed in the frame just after its joint; the three axes of a ball and
        the rotational axes of a free joint are fixed in the body frame after the whole joint; the
        translational axes of a free joint are world axes. MuJoCo's ``cdof_dot`` uses the same
        frames (mj_comVel), which this reproduces.
        """
        nv = self.nv
        mat = np.zeros((nv, nv))
        for a in range(nv):
            jnt = self.dof_joint[a]
            jtype = JointType(self.joint_type[jnt])
            body = self.dof_body[a]
            first_dof_of_body = self.joint_dof_adr[self.body_joint_adr[body]]
            joint_start = self.joint_dof_adr[jnt]
            joint_end = joint_start + jtype.nv
            if jtype == JointType.FREE and a < joint_start + 3:
                last = joint_start  # world-fixed translation axes: parent (world) velocity only
            elif jtype in (JointType.FREE, JointType.BALL):
                last = joint_end
            else:
                last = a + 1
            mat[a, first_dof_of_body:last] = 1.0
        return mat

    @functools.cached_property
    def joint_slots(self) -> np.ndarray:
        """``(nbody, max_joints_per_body)`` joint index per body slot, ``-1`` for empty slots."""
        slots = -np.ones((self.nbody, max(self.max_joints_per_body, 1)), dtype=np.int64)
        for b in range(self.nbody):
            for k in range(self.body_joint_num[b]):
                slots[b, k] = self.body_joint_adr[b] + k
        return slots


def _scalar(value) -> jax.Array:
    return jnp.asarray(value, dtype=jnp.result_type(float))


class Integrator(Choice):
    """Time integrator (MuJoCo's ``<option integrator>``, Computation chapter "Numerical
    integration"; :mod:`jaxsim_contact.dynamics.integrators`).

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
        :mod:`jaxsim_contact.dynamics.fluid`). It acts on ``Model.fluid_bodies`` (inertia-box
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
        integrators of those names; :mod:`jaxsim_contact.dynamics.integrators`). The loader
        takes it from the model's ``<option integrator>``.
      contact_budget: number of contact slots handed to the solver per step (``None``: the
        default of :func:`jaxsim_contact.constraints.default_contact_budget`); more active contacts
        than slots sets ``ErrorFlag.CONTACT_BUDGET_OVERFLOW`` and keeps the deepest ones.
      enable_contacts, enable_joint_limits: switch the two constraint families off (MuJoCo's
        ``<flag contact="disable"/>`` and ``limit="disable"``).
      euler_damping: with ``integrator="euler"``, treat joint damping implicitly (``H = M + dt
        D``, default, MuJoCo's ``eulerdamp``); ``False`` (MuJoCo's ``<flag eulerdamp="disable"/>``):
        explicitly (``H = M``).
      project_equalities: after each step, move ``q`` by one mass-weighted Gauss–Newton step
        onto the active equality constraints (:mod:`jaxsim_contact.dynamics.projection`), so that
        their violation does not drift (default ``True``; ``False``: velocity-level rows only).
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
          relaxed-complementarity problem ``λ ∘ σ̄ = ρ e`` (:mod:`jaxsim_contact.contact.relaxed`),
          smooth through contact make/break and stick/slip. It is stored as ``gradient =
          "smoothed"`` plus the dynamic field ``gradient_smoothing`` (``ρ`` is a traced leaf:
          changing it never recompiles). NCP / CCP solvers only.
        * ``jc.contact.RandomizedSmoothing(key, noise_scale=σ, num_samples=M)`` (the other
          ``"smoothed"`` rule: first-order randomized smoothing, seed 000 §III-A): the forward
          force is again the exact solution; its derivative is the average of the exact implicit
          derivatives at ``M`` contact problems whose free velocity is perturbed by ``σ z_j``
          (:mod:`jaxsim_contact.contact.randomized`; ``σ`` in m/s², smoothing the gap over
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
    contact_budget: int | None = eqx.field(static=True, default=None)
    enable_contacts: bool = eqx.field(static=True, default=True)
    enable_joint_limits: bool = eqx.field(static=True, default=True)
    euler_damping: bool = eqx.field(static=True, default=True)
    project_equalities: bool = eqx.field(static=True, default=True)
    gradient: Gradient = eqx.field(static=True, default=Gradient.IMPLICIT)
    gradient_smoothing: Any = None

    def __post_init__(self):
        self.integrator = Integrator.parse(self.integrator, "Options.integrator")
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
                    "a band of free velocity ~√(ρ/m), see jaxsim_contact.contact.relaxed), or "
                    "gradient=jc.contact.RandomizedSmoothing(key=jax.random.key(0), noise_scale=σ) "
                    "(σ > 0 in m/s², smoothing the gap over ~σ·dt², see "
                    "jaxsim_contact.contact.randomized)")
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
    (:mod:`jaxsim_contact.constraints.equality_rows`). ``neq`` constraints.

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


class Model(eqx.Module):
    """A multibody scene: kinematic tree, inertias, joints, actuators, geoms, options.

    Shapes below use ``nbody`` (including the world body 0), ``njnt``, ``nq``, ``nv``, ``ngeom``,
    ``nu`` (actuators) and ``nmesh``. Units: SI (m, kg, kg·m², rad, N, N·m, s).

    Bodies:
      body_pos ``(nbody, 3)``, body_quat ``(nbody, 4)``: body frame in the parent frame at
        ``q = qpos0`` (before its joints act).
      body_mass ``(nbody,)``; body_ipos ``(nbody, 3)``, body_iquat ``(nbody, 4)``: centre of mass
        and principal inertia axes in the body frame; body_inertia ``(nbody, 3)``: principal
        moments about the centre of mass; body_gravcomp ``(nbody,)``: MuJoCo's gravity
        compensation, an upward force of that fraction of the body's weight at its centre of
        mass, for the bodies of the static ``gravcomp_bodies`` (those with a nonzero value when
        the model was built); it is a passive force, or an actuator force on the joints of
        ``joint_actuator_gravcomp`` (MuJoCo ``actuatorgravcomp``).
    Joints (position of the anchor and the axis in the body frame):
      joint_pos ``(njnt, 3)``, joint_axis ``(njnt, 3)`` (unit), joint_range ``(njnt, 2)``,
      joint_stiffness ``(njnt,)`` (on free and ball joints a spring towards ``qpos_spring`` on the
      position and on the orientation, for the static ``rotational_spring_joints``); joint_actuator_force_range ``(njnt, 2)``: range of the total
        actuator force on the hinge / slide joints of the static ``joint_actuator_force_limited``
        (MuJoCo ``actuatorfrcrange``; a URDF ``effort`` limit becomes one), N·m or N; qpos0 ``(nq,)`` reference configuration (hinge/slide angles are
      measured from it); qpos_spring ``(nq,)`` spring rest configuration.
    Dofs:
      dof_armature, dof_damping, dof_frictionloss ``(nv,)``; dry friction is a box row of the
      constraint stage for each dof of the static ``frictionloss_dofs`` (those with
      ``frictionloss > 0`` when the model was built; :mod:`jaxsim_contact.constraints.friction_rows`).
    Actuators (MuJoCo ``general`` with fixed gain, affine bias, joint, tendon or site transmission):
      force = (gain[0] + gain[1]·length + gain[2]·velocity)·ctrl
              + bias[0] + bias[1]·length + bias[2]·velocity, with
      length = gear·q_joint and velocity = gear·v_joint (joint), or gear times the tendon's
      length and velocity (tendon); generalised force = gear·force on the joint's dof, or
      gear·force·J_tendon. ``actuator_target`` (static) is the joint or, where
      ``actuator_on_tendon``, the tendon, or, where ``actuator_on_site``, the site.
      Site transmission (MuJoCo ``mjTRN_SITE``), with the full gear ``g = actuator_site_gear``
      ``(nu, 6)`` (MuJoCo ``actuator_gear``; only read for site actuators and joint actuators on ball and
      free joints): without a reference
      site (``actuator_refsite`` ``-1``) length 0 and moment ``J_pᵀ R_s g[:3] + J_rᵀ R_s g[3:]``
      (site Jacobians, site orientation ``R_s``); with one, length
      ``(R_refᵀ (p_s − p_ref))·g[:3] + subQuat(q_s, q_ref)·g[3:]`` and moment the Jacobian
      difference site − reference (columns of the dofs moving both zeroed) projected on
      ``R_ref g`` (as MuJoCo: not exactly the length's derivative); velocity = moment·v,
      generalised force = moment·force.
      Joint transmission on a ball or free joint (MuJoCo ``mjTRN_JOINT``, or
      ``mjTRN_JOINTINPARENT`` where ``actuator_in_parent``), with the full gear ``g =
      actuator_site_gear``: a ball joint's length is its rotation vector · ``a``, its moment ``a``
      on the joint's dofs, ``a = g[:3]`` (or ``R(q)ᵀ g[:3]`` in the parent frame); a free joint's
      length is 0 and its moment ``(g[:3], g[3:])`` (or ``R(q)ᵀ g[3:]`` in the parent frame)
      (:func:`jaxsim_contact.dynamics.rnea.multi_dof_joint_transmissions`).
      actuator_gain ``(nu, 3)``, actuator_bias ``(nu, 3)``, actuator_gear ``(nu,)`` (first
      gear component: joint and tendon transmissions),
      actuator_ctrl_range / actuator_force_range ``(nu, 2)``. Activation dynamics and muscles:
      ``actuator_states`` (:class:`ActuatorStates`); an actuator with dynamics uses its
      activation ``State.act`` in place of ``ctrl``, a muscle's gain / bias replace the affine
      ones.
    Tendons: ``tendons`` (:class:`Tendons`; empty when the model has none).
    Equality constraints: ``equalities`` (:class:`Equalities`; empty when none).
    Geoms (stored for collision; MuJoCo conventions for ``size``):
      geom_size ``(ngeom, 3)``, geom_pos ``(ngeom, 3)``, geom_quat ``(ngeom, 4)`` in the body
      frame, geom_friction ``(ngeom, 3)`` (sliding, torsional, rolling), geom_margin ``(ngeom,)``,
      mesh_vertices: tuple of ``(nvert_i, 3)`` arrays in the mesh frame used by the geom pose.
      Height fields (MuJoCo ``hfield``; :mod:`jaxsim_contact.collision.hfield`): hfield_size
      ``(nhfield, 4)`` = (x half-size, y half-size, elevation scale, base depth) m; hfield_data:
      tuple of ``(nrow, ncol)`` elevations normalised to [0, 1] (MuJoCo ``hfield_data``: row
      ``r`` at ``y = -size[1] + 2 size[1] r / (nrow - 1)``, column ``c`` likewise along x, height
      ``data · size[2]`` in the geom frame). Static: ``geom_mesh`` (mesh index or -1) and
      ``geom_hfield`` (height-field index or -1) per geom; ``mesh_faces`` per mesh, its triangles'
      vertex indices into ``mesh_vertices[m]`` flattened (MuJoCo ``mesh_face``; cast at by rays,
      :mod:`jaxsim_contact.collision.ray`); ``transparent_geoms``: the geoms MuJoCo's ray casting
      skips (rgba alpha 0, or their material's).
      geom_fluid ``(ngeom, 12)``: MuJoCo's ``geom_fluid`` for the ellipsoid fluid model of the
        geoms of the static ``fluid_geoms`` (:mod:`jaxsim_contact.dynamics.fluid`): interaction
        coefficient (1 with ``fluidshape="ellipsoid"``, else 0), the five ``fluidcoef`` (blunt
        drag, slender drag, angular drag, Kutta lift, Magnus lift; dimensionless), the virtual
        mass ``(3,)`` (m³) and virtual inertia ``(3,)`` (m⁵) per unit fluid density, along the
        geom's axes, as MuJoCo's compiler computed them from the geom's size.
    Sites (points and frames on bodies: tendon paths, equality constraints, sensors):
      site_pos ``(nsite, 3)``, site_quat ``(nsite, 4)`` in the body frame; site_size ``(nsite,
      3)`` (m, MuJoCo ``site_size`` with ``site_type``'s geom conventions: the zone of a touch
      sensor); site_body, site_type (:class:`~jaxsim_contact.types.GeomType`), site_names
      (static).
    """

    tree: KinematicTree = eqx.field(static=True)

    body_pos: jax.Array
    body_quat: jax.Array
    body_mass: jax.Array
    body_ipos: jax.Array
    body_iquat: jax.Array
    body_inertia: jax.Array
    body_gravcomp: jax.Array

    joint_pos: jax.Array
    joint_axis: jax.Array
    joint_range: jax.Array
    joint_stiffness: jax.Array
    joint_actuator_force_range: jax.Array
    qpos0: jax.Array
    qpos_spring: jax.Array

    dof_armature: jax.Array
    dof_damping: jax.Array
    dof_frictionloss: jax.Array

    actuator_gain: jax.Array
    actuator_bias: jax.Array
    actuator_gear: jax.Array
    actuator_site_gear: jax.Array
    actuator_ctrl_range: jax.Array
    actuator_force_range: jax.Array

    geom_size: jax.Array
    geom_pos: jax.Array
    geom_quat: jax.Array
    geom_friction: jax.Array
    geom_margin: jax.Array
    geom_fluid: jax.Array
    mesh_vertices: tuple[jax.Array, ...]
    hfield_size: jax.Array
    hfield_data: tuple[jax.Array, ...]
    site_pos: jax.Array
    site_quat: jax.Array
    site_size: jax.Array

    options: Options
    tendons: Tendons
    equalities: Equalities
    actuator_states: ActuatorStates
    sensors: Sensors

    # --- static: names, joint limits flags, actuator wiring, geom structure -------------------
    body_names: tuple[str, ...] = eqx.field(static=True)
    joint_names: tuple[str, ...] = eqx.field(static=True)
    joint_limited: tuple[bool, ...] = eqx.field(static=True)
    actuator_names: tuple[str, ...] = eqx.field(static=True)
    actuator_target: tuple[int, ...] = eqx.field(static=True)
    actuator_on_tendon: tuple[bool, ...] = eqx.field(static=True)
    actuator_ctrl_limited: tuple[bool, ...] = eqx.field(static=True)
    actuator_force_limited: tuple[bool, ...] = eqx.field(static=True)
    geom_names: tuple[str, ...] = eqx.field(static=True)
    geom_type: tuple[GeomType, ...] = eqx.field(static=True)
    geom_body: tuple[int, ...] = eqx.field(static=True)
    geom_contype: tuple[int, ...] = eqx.field(static=True)
    geom_conaffinity: tuple[int, ...] = eqx.field(static=True)
    geom_mesh: tuple[int, ...] = eqx.field(static=True)
    geom_hfield: tuple[int, ...] = eqx.field(static=True)
    hfield_names: tuple[str, ...] = eqx.field(static=True)
    site_body: tuple[int, ...] = eqx.field(static=True)
    site_names: tuple[str, ...] = eqx.field(static=True)
    site_type: tuple[GeomType, ...] = eqx.field(static=True)
    exclude_body_pairs: tuple[tuple[int, int], ...] = eqx.field(static=True)
    source: str = eqx.field(static=True, default="")
    #: explicit geom pairs (MuJoCo ``<contact><pair>``): candidates whatever their contype /
    #: conaffinity / exclusions, ``(geom1, geom2)`` indices
    contact_geom_pairs: tuple[tuple[int, int], ...] = eqx.field(static=True, default=())
    #: explicit geom-pair exclusions ``(geom1, geom2)`` (finer than :attr:`exclude_body_pairs`:
    #: the world body may carry both a floor and a fixed-base robot's fused root link)
    exclude_geom_pairs: tuple[tuple[int, int], ...] = eqx.field(static=True, default=())
    #: static candidate collision pairs (:class:`jaxsim_contact.collision.CollisionStructure`),
    #: built at load time; ``None`` means "derive from the static geom fields when stepping"
    collision: Any = eqx.field(static=True, default=None)
    #: dofs with a dry-friction row (``dof_frictionloss > 0`` when the model was built)
    frictionloss_dofs: tuple[int, ...] = eqx.field(static=True, default=())
    #: free and ball joints with a spring (``joint_stiffness != 0`` when the model was built)
    rotational_spring_joints: tuple[int, ...] = eqx.field(static=True, default=())
    #: bodies with gravity compensation (``body_gravcomp != 0`` when the model was built)
    gravcomp_bodies: tuple[int, ...] = eqx.field(static=True, default=())
    #: hinge / slide joints whose total actuator force is clamped (MuJoCo ``actuatorfrclimited``)
    joint_actuator_force_limited: tuple[int, ...] = eqx.field(static=True, default=())
    #: joints whose gravity compensation is an actuator force (MuJoCo ``actuatorgravcomp``)
    joint_actuator_gravcomp: tuple[int, ...] = eqx.field(static=True, default=())
    #: per actuator: a site transmission (MuJoCo ``mjTRN_SITE``; ``actuator_target`` is then the
    #: site); empty: none
    actuator_on_site: tuple[bool, ...] = eqx.field(static=True, default=())
    #: per actuator: a joint transmission whose gear is in the joint's parent frame (MuJoCo
    #: ``mjTRN_JOINTINPARENT``; the same as a joint transmission on hinge and slide joints);
    #: empty: none
    actuator_in_parent: tuple[bool, ...] = eqx.field(static=True, default=())
    #: per actuator: the reference site of a site transmission (MuJoCo ``refsite``), ``-1``
    #: where none (or not a site transmission); empty: none
    actuator_refsite: tuple[int, ...] = eqx.field(static=True, default=())
    #: bodies of MuJoCo's inertia-box fluid model (when the model has fluid forces: every body
    #: with mass none of whose geoms has ``fluidshape="ellipsoid"``)
    fluid_bodies: tuple[int, ...] = eqx.field(static=True, default=())
    #: geoms of MuJoCo's ellipsoid fluid model (when the model has fluid forces: the geoms with a
    #: nonzero ``geom_fluid[:, 0]`` of the bodies with mass that have such a geom)
    fluid_geoms: tuple[int, ...] = eqx.field(static=True, default=())
    #: per mesh, the vertex indices of its triangles, flattened ``(3 · nface,)`` (MuJoCo
    #: ``mesh_face``); empty: not recorded (rays cannot be cast at meshes)
    mesh_faces: tuple[tuple[int, ...], ...] = eqx.field(static=True, default=())
    #: geoms that rays pass through (MuJoCo ``mj_ray``: rgba alpha 0, or their material's)
    transparent_geoms: tuple[int, ...] = eqx.field(static=True, default=())

    # --- counts -----------------------------------------------------------------------------
    @property
    def nbody(self) -> int:
        return self.tree.nbody

    @property
    def njnt(self) -> int:
        return self.tree.njnt

    @property
    def nq(self) -> int:
        return self.tree.nq

    @property
    def nv(self) -> int:
        return self.tree.nv

    @property
    def nu(self) -> int:
        return len(self.actuator_target)

    @property
    def na(self) -> int:
        """Number of actuator activations (``State.act``)."""
        return self.actuator_states.na

    @property
    def ntendon(self) -> int:
        return self.tendons.ntendon

    @property
    def neq(self) -> int:
        return self.equalities.neq

    @property
    def ngeom(self) -> int:
        return len(self.geom_type)

    @property
    def dtype(self):
        return self.body_mass.dtype

    @property
    def dt(self) -> jax.Array:
        return self.options.dt

    @property
    def gravity(self) -> jax.Array:
        return self.options.gravity

    def replace_options(self, **changes) -> "Model":
        """A copy with ``options`` fields replaced, e.g. ``model.replace_options(dt=1e-3)`` or
        ``model.replace_options(solver=jc.contact.PGS("ncp"))``.

        Numeric values are converted to arrays of the model's dtype (dynamic leaves: changing them
        does not recompile a jitted step). The new options are validated (``ValueError`` /
        ``TypeError`` naming the option and the value).
        """
        fields = {f.name for f in dataclasses.fields(self.options)}
        unknown = set(changes) - fields
        if unknown:
            raise TypeError(f"unknown option(s) {sorted(unknown)}; known: {sorted(fields)}")
        numeric = numeric_option_names()
        converted = {
            name: (jnp.asarray(value, dtype=self.dtype) if name in numeric else value)
            for name, value in changes.items()
        }
        opts = dataclasses.replace(self.options, **converted)
        return eqx.tree_at(lambda m: m.options, self, opts)

    def astype(self, dtype) -> "Model":
        """A copy with every floating-point leaf cast to ``dtype`` (e.g. ``jnp.float32``)."""

        def cast(x):
            if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jnp.floating):
                return x.astype(dtype)
            return x

        return jax.tree_util.tree_map(cast, self)


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
    (equalities).

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
