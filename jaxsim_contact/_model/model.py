"""The :class:`Model` pytree: a multibody scene laid out like MuJoCo's compiled ``mjModel``."""

from __future__ import annotations

import dataclasses
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

from .._types import GeomType
from .elements import ActuatorStates, Equalities, Sensors, Tendons
from .options import Options, numeric_option_names
from .soft import SoftConstraints, missing_soft_parameters
from .tree import KinematicTree


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
      ``frictionloss > 0`` when the model was built; :mod:`jaxsim_contact.constraints._friction_rows`).
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
      (:func:`jaxsim_contact.dynamics._rnea.multi_dof_joint_transmissions`).
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
      Height fields (MuJoCo ``hfield``; :mod:`jaxsim_contact.collision._hfield`): hfield_size
      ``(nhfield, 4)`` = (x half-size, y half-size, elevation scale, base depth) m; hfield_data:
      tuple of ``(nrow, ncol)`` elevations normalised to [0, 1] (MuJoCo ``hfield_data``: row
      ``r`` at ``y = -size[1] + 2 size[1] r / (nrow - 1)``, column ``c`` likewise along x, height
      ``data · size[2]`` in the geom frame). Static: ``geom_mesh`` (mesh index or -1) and
      ``geom_hfield`` (height-field index or -1) per geom; ``mesh_faces`` per mesh, its triangles'
      vertex indices into ``mesh_vertices[m]`` flattened (MuJoCo ``mesh_face``; cast at by rays,
      :mod:`jaxsim_contact.collision._ray`); ``transparent_geoms``: the geoms MuJoCo's ray casting
      skips (rgba alpha 0, or their material's).
      geom_fluid ``(ngeom, 12)``: MuJoCo's ``geom_fluid`` for the ellipsoid fluid model of the
        geoms of the static ``fluid_geoms`` (:mod:`jaxsim_contact.dynamics._fluid`): interaction
        coefficient (1 with ``fluidshape="ellipsoid"``, else 0), the five ``fluidcoef`` (blunt
        drag, slender drag, angular drag, Kutta lift, Magnus lift; dimensionless), the virtual
        mass ``(3,)`` (m³) and virtual inertia ``(3,)`` (m⁵) per unit fluid density, along the
        geom's axes, as MuJoCo's compiler computed them from the geom's size.
    Sites (points and frames on bodies: tendon paths, equality constraints, sensors):
      site_pos ``(nsite, 3)``, site_quat ``(nsite, 4)`` in the body frame; site_size ``(nsite,
      3)`` (m, MuJoCo ``site_size`` with ``site_type``'s geom conventions: the zone of a touch
      sensor); site_body, site_type (:class:`~jaxsim_contact._types.GeomType`), site_names
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
    #: MuJoCo's soft-constraint parameters (:class:`~.soft.SoftConstraints`), read only by
    #: ``Options.constraint_model = "mujoco"``; ``None`` for a model not loaded from MuJoCo
    soft: SoftConstraints | None = None

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
        if opts.constraint_model == "mujoco" and self.soft is None:
            raise missing_soft_parameters(self.source)
        return eqx.tree_at(lambda m: m.options, self, opts)

    def astype(self, dtype) -> "Model":
        """A copy with every floating-point leaf cast to ``dtype`` (e.g. ``jnp.float32``)."""

        def cast(x):
            if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jnp.floating):
                return x.astype(dtype)
            return x

        return jax.tree_util.tree_map(cast, self)
