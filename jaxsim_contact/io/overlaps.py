"""Bodies of one kinematic tree that start inside each other (issue 43, "Bad input").

Robot descriptions often have collision geometry that overlaps where two links meet — a leg's hull
reaching into the torso around the hip (example-robot-data's Solo-12: 4 mm between ``base_link``
and each ``*_UPPER_LEG``, whose parent between them has no geometry, so MuJoCo's parent–child
filter does not apply). MuJoCo's soft contacts carry such an overlap as a permanent small internal
force. A hard contact cannot: the joints between the two links often cannot change the overlap
(it is around their common axis), so the complementarity problem asks for a separation no motion
gives, and the solver runs to its cap on every step (Solo-12: 188 of 200 steps, residual 1e4,
and the robot sank to the floor). Planning stacks treat such pairs as "colliding by default" and
disable them (MoveIt's SRDF ``disable_collisions reason="Default"``); :func:`exclude_self_overlaps`
does the same, naming every pair it excludes.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from .errors import SelfOverlapWarning

__all__ = ["self_overlaps", "exclude_self_overlaps", "SELF_OVERLAP_DEPTH"]

#: a pair counts as overlapping when MuJoCo C finds it deeper than this at ``qpos0`` (m). Deeper
#: overlaps of example-robot-data's robots are design overlaps of collision meshes at a joint
#: (Solo-12 3.5 mm, Go2 7 mm, Panda link5–link7 41 mm, Talos up to 93 mm); shallower ones are
#: touching links (the Panda's closed fingers, 0.04 mm) that a contact can push apart.
SELF_OVERLAP_DEPTH = 1e-3


def self_overlaps(mj) -> list[tuple[int, int, float]]:
    """Pairs of bodies of one mechanism (one kinematic tree; or a fixed-base tree and the non-plane
    geoms welded to the world, :func:`_one_mechanism`) whose geoms overlap by more than :data:`SELF_OVERLAP_DEPTH` at the reference pose ``qpos0``, as MuJoCo C's collision detection finds them (after
    its own filters: ``contype``/``conaffinity``, parent–child, ``<exclude>``).

    Args:
      mj: a compiled ``mujoco.MjModel``.
    Returns:
      ``(body1, body2, depth)`` per body pair, ``body1 < body2`` (MuJoCo body ids), ``depth`` the
      deepest contact's penetration in metres, deepest pair first.
    """
    import mujoco

    data = mujoco.MjData(mj)
    mujoco.mj_forward(mj, data)
    deepest: dict[tuple[int, int], float] = {}
    for contact in data.contact[:data.ncon]:
        geoms = sorted((int(contact.geom1), int(contact.geom2)), key=lambda g: mj.geom_bodyid[g])
        body1, body2 = (int(mj.geom_bodyid[g]) for g in geoms)
        depth = -float(contact.dist)
        if depth <= SELF_OVERLAP_DEPTH or not _one_mechanism(mj, geoms[0], body1, body2):
            continue
        deepest[(body1, body2)] = max(depth, deepest.get((body1, body2), 0.0))
    return sorted(((a, b, d) for (a, b), d in deepest.items()), key=lambda pair: -pair[2])


def _one_mechanism(mj, geom1: int, body1: int, body2: int) -> bool:
    """Whether bodies ``body1 <= body2`` belong to one mechanism: one tree, or — for a fixed-base
    robot, whose base MuJoCo fuses into the world body (URDF roots, ``fusestatic``) — the world's
    non-plane geom ``geom1`` and a tree without a free joint (the Allegro hand's palm and
    fingers). A floor (plane) is never part of a mechanism."""
    import mujoco

    if body1 != 0:
        return bool(mj.body_rootid[body1] == mj.body_rootid[body2])
    if mj.geom_type[geom1] in (mujoco.mjtGeom.mjGEOM_PLANE, mujoco.mjtGeom.mjGEOM_HFIELD):
        return False
    root = int(mj.body_rootid[body2])
    tree = [b for b in range(1, mj.nbody) if mj.body_rootid[b] == root]
    return not any(mj.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE
                   for b in tree for j in range(mj.body_jntadr[b], mj.body_jntadr[b] + mj.body_jntnum[b]))


def _body_name(mj, body: int) -> str | None:
    import mujoco

    return mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_BODY, body) or None


def _describe(mj, pairs) -> str:
    def name(body):
        return _body_name(mj, body) or f"#{body}"

    return ", ".join(f"{name(a)!r}-{name(b)!r} {1e3 * depth:.2f} mm" for a, b, depth in pairs)


def exclude_self_overlaps(spec, mj, path: str | Path, exclude: bool = True):
    """Warn about (and, with ``exclude``, exclude from collision) the pairs of
    :func:`self_overlaps` of ``mj``, the compiled ``spec``; returns the model to simulate.

    Excluding adds ``<contact><exclude body1 body2/>`` for each pair to ``spec`` and compiles it
    again. A pair with an unnamed body cannot be named in an exclude, and one with the world body
    (a fixed base's welded geometry) would also lose the link's floor contacts: those are
    reported, not excluded. Warnings are :class:`~jaxsim_contact.io.errors.SelfOverlapWarning` and name the
    file, the bodies and the depths.
    """
    pairs = self_overlaps(mj)
    if not pairs:
        return mj
    if not exclude:
        warnings.warn(
            f"{path}: bodies of one kinematic tree overlap at the reference pose qpos0 "
            f"({_describe(mj, pairs)}); kept as asked (exclude_self_overlaps=False): a hard "
            "contact that starts inside a link it cannot move away from keeps the solver at its "
            "iteration cap", SelfOverlapWarning, stacklevel=3)
        return mj
    excluded = [(a, b, d) for a, b, d in pairs if a != 0 and _body_name(mj, a) and _body_name(mj, b)]
    for a, b, _ in excluded:
        spec.add_exclude(bodyname1=_body_name(mj, a), bodyname2=_body_name(mj, b))
    welded = [pair for pair in pairs if pair[0] == 0]
    unnamed = [pair for pair in pairs if pair not in excluded and pair not in welded]
    parts = []
    if excluded:
        parts.append("bodies of one kinematic tree overlap at the reference pose qpos0 and are "
                     f"excluded from collision with each other: {_describe(mj, excluded)}")
    if welded:
        parts.append("links overlap geometry welded to the world (a fixed base) at qpos0, not "
                     "excluded because an <exclude> with the world would also drop their floor "
                     f"contacts (give the welded geom contype/conaffinity bits the links lack): "
                     f"{_describe(mj, welded)}")
    if unnamed:
        parts.append("overlapping at qpos0 but not excluded (an unnamed body cannot be excluded): "
                     f"{_describe(mj, unnamed)}")
    message = f"{path}: " + "; ".join(parts)
    warnings.warn(message + ". A hard contact between links that start inside each other cannot "
                  "be resolved (the solver would run to its cap on every step); write the "
                  "<exclude> yourself to silence this, or pass exclude_self_overlaps=False to "
                  "keep the pairs", SelfOverlapWarning, stacklevel=3)
    return spec.compile() if excluded else mj
