"""MuJoCo's soft-constraint parameters of a model (issue 45): what :class:`ConstraintModel`
``MUJOCO`` reads to build every constraint row as ``mj_step`` does.

MuJoCo Computation chapter "Soft constraints" and "Solver parameters"; XML Reference ``solref``,
``solimp``, ``solmix``, ``priority``, ``margin``, ``gap``, ``condim``, ``<option impratio cone>``.
The hard model (the default) reads none of this; the loader fills it from the compiled
``mjModel`` (:func:`jaxsim_contact.io.from_mjmodel`), so a model built by hand has none and
refuses the MuJoCo-compatible mode by name.
"""

from __future__ import annotations

import equinox as eqx
import jax

from .._types import Choice

__all__ = ["ConstraintModel", "FrictionCone", "ContactOverride", "SoftConstraints", "missing_soft_parameters"]


class ConstraintModel(Choice):
    """How constraint rows are posed (``Options.constraint_model``).

    ``HARD`` (default): the engine's hard NCP — rigid contacts and limits with Baumgarte
    push-out and the compliances of :class:`~jaxsim_contact.Options` (seed 001 §II).
    ``MUJOCO``: MuJoCo's soft constraint model — every row's regulariser ``R`` and reference
    acceleration ``a_ref`` from its ``solref`` / ``solimp`` (MuJoCo Computation chapter
    "Soft constraints"), the model's friction cone (pyramidal or elliptic) and ``impratio``, and
    the constraint force solved with the plain mass matrix as ``mj_forward`` does; one step then
    matches ``mj_step`` (:mod:`jaxsim_contact.constraints._soft`).
    """

    HARD = "hard"
    MUJOCO = "mujoco"


class FrictionCone(Choice):
    """MuJoCo's friction cone (``<option cone>``): ``PYRAMIDAL`` (MuJoCo's default: ``2(condim −
    1)`` unilateral edge rows per contact) or ``ELLIPTIC`` (one elliptic cone per contact)."""

    PYRAMIDAL = "pyramidal"
    ELLIPTIC = "elliptic"


class ContactOverride(eqx.Module):
    """MuJoCo's ``<flag override="enable">`` contact parameters (``<option o_solref o_solimp
    o_friction o_margin>``), which replace every contact's own (``mj_assignRef`` /
    ``mj_assignImp`` / ``mj_assignFriction`` / ``mj_assignMargin``): ``solref`` ``(2,)`` (also the
    friction rows' ``solreffriction``), ``solimp`` ``(5,)``, ``friction`` ``(5,)`` (sliding ×2,
    torsional, rolling ×2), ``margin`` scalar (m, the pair's margin, not a sum)."""

    solref: jax.Array
    solimp: jax.Array
    friction: jax.Array
    margin: jax.Array


class SoftConstraints(eqx.Module):
    """MuJoCo's per-element solver parameters, as the compiled ``mjModel`` holds them.

    ``solref`` rows are ``(timeconst, dampratio)`` or, both negative, ``(−stiffness,
    −damping)``; ``solimp`` rows ``(dmin, dmax, width, midpoint, power)`` (XML Reference,
    "Solver parameters"). Values are raw: MuJoCo's clamping (``solimp`` into ``[1e-4, 0.9999]``,
    ``timeconst ≥ 2 dt`` unless ``refsafe`` is off) happens when rows are built, as in
    ``mj_makeImpedance``.

    Dynamic:
      geom_solref ``(ngeom, 2)``, geom_solimp ``(ngeom, 5)``, geom_solmix ``(ngeom,)``,
      geom_gap ``(ngeom,)`` (m), geom_friction ``(ngeom, 3)`` (sliding, torsional, rolling):
        mixed per pair by MuJoCo's rule (``mj_contactParam``: the higher ``priority`` wins; equal
        priorities take the maximum ``condim`` and friction, ``solmix``-weighted ``solref`` /
        ``solimp``, the elementwise minimum of direct ``solref``).
      pair_solref ``(npair, 2)``, pair_solreffriction ``(npair, 2)``, pair_solimp ``(npair, 5)``,
      pair_friction ``(npair, 5)``, pair_margin, pair_gap ``(npair,)``: the explicit
        ``<contact><pair>`` elements' own values, which replace the mixed ones.
      body_invweight0 ``(nbody, 2)`` (translation 1/kg, rotation 1/(kg m²)), dof_invweight0
        ``(nv,)``, tendon_invweight0 ``(ntendon,)``: MuJoCo's inverse inertias at ``qpos0``
        (``mj_setConst``), the approximate Delassus diagonal of ``mj_diagApprox``.
      joint_solref ``(njnt, 2)``, joint_solimp ``(njnt, 5)``, joint_margin ``(njnt,)``: limits.
      dof_solref ``(nv, 2)``, dof_solimp ``(nv, 5)``: dof ``frictionloss`` rows.
      tendon_solref_limit, tendon_solimp_limit, tendon_margin, tendon_solref_friction,
      tendon_solimp_friction: the same per tendon.
      equality_solref ``(neq, 2)``, equality_solimp ``(neq, 5)``.
      impratio: scalar ratio of frictional to normal impedance (``<option impratio>``).
      override: :class:`ContactOverride` when the model enables ``override`` (``None``: off).
    Static:
      geom_priority, geom_condim ``(ngeom,)``; pair_geoms ``((geom1, geom2), ...)`` and
      pair_condim of the explicit pairs; cone (:class:`FrictionCone`); refsafe (MuJoCo's ``refsafe``
      flag: ``timeconst`` raised to ``2 dt``).
    """

    geom_solref: jax.Array
    geom_solimp: jax.Array
    geom_solmix: jax.Array
    geom_gap: jax.Array
    geom_friction: jax.Array
    pair_solref: jax.Array
    pair_solreffriction: jax.Array
    pair_solimp: jax.Array
    pair_friction: jax.Array
    pair_margin: jax.Array
    pair_gap: jax.Array
    body_invweight0: jax.Array
    dof_invweight0: jax.Array
    tendon_invweight0: jax.Array
    joint_solref: jax.Array
    joint_solimp: jax.Array
    joint_margin: jax.Array
    dof_solref: jax.Array
    dof_solimp: jax.Array
    tendon_solref_limit: jax.Array
    tendon_solimp_limit: jax.Array
    tendon_margin: jax.Array
    tendon_solref_friction: jax.Array
    tendon_solimp_friction: jax.Array
    equality_solref: jax.Array
    equality_solimp: jax.Array
    impratio: jax.Array
    override: ContactOverride | None
    geom_priority: tuple[int, ...] = eqx.field(static=True)
    geom_condim: tuple[int, ...] = eqx.field(static=True)
    pair_geoms: tuple[tuple[int, int], ...] = eqx.field(static=True)
    pair_condim: tuple[int, ...] = eqx.field(static=True)
    cone: FrictionCone = eqx.field(static=True, default=FrictionCone.PYRAMIDAL)
    refsafe: bool = eqx.field(static=True, default=True)


def missing_soft_parameters(source: str) -> ValueError:
    """The error of the MuJoCo-compatible model asked of a model without
    :class:`SoftConstraints` (``source``: the model's file)."""
    return ValueError(
        "Options.constraint_model='mujoco' needs MuJoCo's solref / solimp / invweight0 of the "
        "model (Model.soft), which only a model loaded from MJCF or URDF has "
        f"(source {source!r}); use jc.load / jc.io.from_mjmodel, or the hard model")
