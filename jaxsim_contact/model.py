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

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .types import GeomType, JointType

__all__ = ["KinematicTree", "Options", "Model", "State", "ErrorFlag"]


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
        ``k + 1`` (children of the world are depth 1). Kinematics runs one vectorised pass per
        level, so the Python loop is over levels, never over bodies.
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


class Options(eqx.Module):
    """Simulation options (all dynamic except the integrator name).

    Attributes:
      dt: scalar time step (s).
      gravity: ``(3,)`` gravitational acceleration in the world frame (m/s²).
      integrator: ``"euler"``: semi-implicit Euler with implicit joint damping, as MuJoCo's
        ``Euler`` integrator (velocity first, then positions with the new velocity).
    """

    dt: jax.Array
    gravity: jax.Array
    integrator: str = eqx.field(static=True, default="euler")


class Model(eqx.Module):
    """A multibody scene: kinematic tree, inertias, joints, actuators, geoms, options.

    Shapes below use ``nbody`` (including the world body 0), ``njnt``, ``nq``, ``nv``, ``ngeom``,
    ``nu`` (actuators) and ``nmesh``. Units: SI (m, kg, kg·m², rad, N, N·m, s).

    Bodies:
      body_pos ``(nbody, 3)``, body_quat ``(nbody, 4)``: body frame in the parent frame at
        ``q = qpos0`` (before its joints act).
      body_mass ``(nbody,)``; body_ipos ``(nbody, 3)``, body_iquat ``(nbody, 4)``: centre of mass
        and principal inertia axes in the body frame; body_inertia ``(nbody, 3)``: principal
        moments about the centre of mass.
    Joints (position of the anchor and the axis in the body frame):
      joint_pos ``(njnt, 3)``, joint_axis ``(njnt, 3)`` (unit), joint_range ``(njnt, 2)``,
      joint_stiffness ``(njnt,)``; qpos0 ``(nq,)`` reference configuration (hinge/slide angles are
      measured from it); qpos_spring ``(nq,)`` spring rest configuration.
    Dofs:
      dof_armature, dof_damping, dof_frictionloss ``(nv,)`` (frictionloss is stored for the
      constraint stage and not applied by the contact-free dynamics).
    Actuators (MuJoCo ``general`` with fixed gain, affine bias, joint transmission):
      force = gain·ctrl + bias[0] + bias[1]·length + bias[2]·velocity, with
      length = gear·q_joint and velocity = gear·v_joint; generalised force = gear·force.
      actuator_gain ``(nu,)``, actuator_bias ``(nu, 3)``, actuator_gear ``(nu,)``,
      actuator_ctrl_range / actuator_force_range ``(nu, 2)``.
    Geoms (stored for collision; MuJoCo conventions for ``size``):
      geom_size ``(ngeom, 3)``, geom_pos ``(ngeom, 3)``, geom_quat ``(ngeom, 4)`` in the body
      frame, geom_friction ``(ngeom, 3)`` (sliding, torsional, rolling), geom_margin ``(ngeom,)``,
      mesh_vertices: tuple of ``(nvert_i, 3)`` arrays in the mesh frame used by the geom pose.
    """

    tree: KinematicTree = eqx.field(static=True)

    body_pos: jax.Array
    body_quat: jax.Array
    body_mass: jax.Array
    body_ipos: jax.Array
    body_iquat: jax.Array
    body_inertia: jax.Array

    joint_pos: jax.Array
    joint_axis: jax.Array
    joint_range: jax.Array
    joint_stiffness: jax.Array
    qpos0: jax.Array
    qpos_spring: jax.Array

    dof_armature: jax.Array
    dof_damping: jax.Array
    dof_frictionloss: jax.Array

    actuator_gain: jax.Array
    actuator_bias: jax.Array
    actuator_gear: jax.Array
    actuator_ctrl_range: jax.Array
    actuator_force_range: jax.Array

    geom_size: jax.Array
    geom_pos: jax.Array
    geom_quat: jax.Array
    geom_friction: jax.Array
    geom_margin: jax.Array
    mesh_vertices: tuple[jax.Array, ...]

    options: Options

    # --- static: names, joint limits flags, actuator wiring, geom structure -------------------
    body_names: tuple[str, ...] = eqx.field(static=True)
    joint_names: tuple[str, ...] = eqx.field(static=True)
    joint_limited: tuple[bool, ...] = eqx.field(static=True)
    actuator_names: tuple[str, ...] = eqx.field(static=True)
    actuator_joint: tuple[int, ...] = eqx.field(static=True)
    actuator_ctrl_limited: tuple[bool, ...] = eqx.field(static=True)
    actuator_force_limited: tuple[bool, ...] = eqx.field(static=True)
    geom_names: tuple[str, ...] = eqx.field(static=True)
    geom_type: tuple[GeomType, ...] = eqx.field(static=True)
    geom_body: tuple[int, ...] = eqx.field(static=True)
    geom_contype: tuple[int, ...] = eqx.field(static=True)
    geom_conaffinity: tuple[int, ...] = eqx.field(static=True)
    geom_mesh: tuple[int, ...] = eqx.field(static=True)
    exclude_body_pairs: tuple[tuple[int, int], ...] = eqx.field(static=True)
    source: str = eqx.field(static=True, default="")

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
        return len(self.actuator_joint)

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
        """A copy with ``options`` fields replaced, e.g. ``model.replace_options(dt=1e-3)``.

        Numeric values are converted to arrays of the model's dtype (dynamic leaves: changing them
        does not recompile a jitted step).
        """
        fields = {f.name for f in dataclasses.fields(self.options)}
        unknown = set(changes) - fields
        if unknown:
            raise TypeError(f"unknown option(s) {sorted(unknown)}; known: {sorted(fields)}")
        opts = self.options
        for name, value in changes.items():
            if name in ("dt", "gravity"):
                value = jnp.asarray(value, dtype=self.dtype)
            opts = eqx.tree_at(lambda o, n=name: getattr(o, n), opts, value)
        return eqx.tree_at(lambda m: m.options, self, opts)

    def astype(self, dtype) -> "Model":
        """A copy with every floating-point leaf cast to ``dtype`` (e.g. ``jnp.float32``)."""

        def cast(x):
            if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jnp.floating):
                return x.astype(dtype)
            return x

        return jax.tree_util.tree_map(cast, self)


class ErrorFlag:
    """Bits of ``State.error`` (per environment; 0 when healthy)."""

    NON_FINITE_STATE = 1
    SOLVER_NOT_CONVERGED = 2
    CONTACT_BUDGET_OVERFLOW = 4


class State(eqx.Module):
    """Dynamic state of one environment (add a leading axis to batch).

    Attributes:
      q: ``(nq,)`` generalised positions (MuJoCo ``qpos`` layout).
      v: ``(nv,)`` generalised velocities (MuJoCo ``qvel`` layout).
      time: scalar simulation time (s).
      error: int32 bitmask of :class:`ErrorFlag` bits, sticky once set.
    """

    q: jax.Array
    v: jax.Array
    time: jax.Array
    error: jax.Array
