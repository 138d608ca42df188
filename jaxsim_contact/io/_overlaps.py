"""Bodies of one kinematic tree that start inside each other (issue 43, "Bad input").

Robot descriptions often have collision geometry that overlaps where two links meet — a leg's hull
reaching into the torso around the hip (example-robot-data's Solo-12: 4 mm between ``base_link``
and each ``*_UPPER_LEG``, whose parent between them has no geometry, so MuJoCo's parent–child
filter does not apply). MuJoCo's soft contacts carry such an overlap as a permanent small internal
force. A hard contact cannot: the joints between the two links often cannot change the overlap
(it is around their common axis), so the complementarity problem asks for a separation no motion
gives, and the solver runs to its cap on every step. Planning stacks treat such pairs as "colliding by default" and
disable them (MoveIt's SRDF ``disable_collisions reason="Default"``); :func:`exclude_self_overlaps`
does the same, naming every pair it excludes.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from ._errors import ModelError, SelfOverlapWarning

__all__ = ["self_overlaps", "welded_overlap_geom_pairs", "exclude_self_overlaps",
           "reference_pose_contacts", "one_mechanism", "excluded_geom_pairs", "SELF_OVERLAP_DEPTH",
           "EXCLUDED_GEOM_PAIRS"]

#: a pair counts as overlapping when MuJoCo C finds it deeper than this at ``qpos0`` (m). It was
#: 1 mm, meant to keep touching links that a contact can push apart; but Talos' chest
#: (``torso_2_link``) starts 0.07 mm inside its pelvis, a contact whose normal row is 40 times less
#: mobile than its tangent row, and the frictional NCP of that pair has no solution (the solver
#: stalls at the cap with the slot's whole approach velocity as residual, from step 0, in the
#: air). 10 µm stays above numerical touching (UR3's shoulder on its base: 1 µm). In the corpus
#: the pairs between 10 µm and 1 mm are Talos' chest, the Panda's closed fingers (0.04 mm, also
#: stopped by their joint limits) and SO-100's upper arm in its welded base (0.3 mm).
SELF_OVERLAP_DEPTH = 1e-5

#: name of the ``<custom><numeric>`` that carries geom-pair exclusions through a compiled
#: ``MjModel`` (MuJoCo's ``<exclude>`` names bodies only): flat ``geom1 geom2 geom1 geom2 ...``
#: ids, read by :func:`excluded_geom_pairs`. MuJoCo C ignores it; a file may also declare it.
EXCLUDED_GEOM_PAIRS = "jaxsim_contact/exclude_geom_pairs"


def self_overlaps(mj) -> list[tuple[int, int, float]]:
    """Pairs of bodies of one mechanism (:func:`one_mechanism`) whose geoms overlap by more than
    :data:`SELF_OVERLAP_DEPTH` at the reference pose ``qpos0``, as MuJoCo C's collision detection
    finds them (after its own filters: ``contype``/``conaffinity``, parent–child, ``<exclude>``).

    Args:
      mj: a compiled ``mujoco.MjModel``.
    Returns:
      ``(body1, body2, depth)`` per body pair, ``body1 < body2`` (MuJoCo body ids), ``depth`` the
      deepest contact's penetration in metres, deepest pair first.
    """
    deepest: dict[tuple[int, int], float] = {}
    for geom1, geom2, depth, _ in reference_pose_contacts(mj):
        if depth <= SELF_OVERLAP_DEPTH or not one_mechanism(mj, geom1, geom2):
            continue
        body1, body2 = sorted((int(mj.geom_bodyid[geom1]), int(mj.geom_bodyid[geom2])))
        deepest[(body1, body2)] = max(depth, deepest.get((body1, body2), 0.0))
    return sorted(((a, b, d) for (a, b), d in deepest.items()), key=lambda pair: -pair[2])


def welded_overlap_geom_pairs(mj) -> list[tuple[int, int]]:
    """Geom pairs ``(geom1, geom2)`` (``geom1 < geom2``) of a link and geometry welded to the world
    (a fixed base fused into the world body, :func:`one_mechanism`) that overlap by more than
    :data:`SELF_OVERLAP_DEPTH` at ``qpos0`` (MuJoCo C's collision detection). An ``<exclude>``
    of the two bodies would also drop the link's floor contacts; these pairs are excluded one by
    one instead (:data:`EXCLUDED_GEOM_PAIRS`)."""
    pairs = set()
    for geom1, geom2, depth, _ in reference_pose_contacts(mj):
        if (depth > SELF_OVERLAP_DEPTH and one_mechanism(mj, geom1, geom2)
                and 0 in (int(mj.geom_bodyid[geom1]), int(mj.geom_bodyid[geom2]))):
            pairs.add((min(geom1, geom2), max(geom1, geom2)))
    return sorted(pairs)


def excluded_geom_pairs(mj, source: str | Path = "<model>") -> tuple[tuple[int, int], ...]:
    """The geom pairs the compiled model ``mj`` excludes through :data:`EXCLUDED_GEOM_PAIRS`
    (empty when it declares none).

    Raises:
      ModelError: naming ``source``: the numeric's size is odd or it names a geom ``mj`` does not
        have.
    """
    import mujoco

    index = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_NUMERIC, EXCLUDED_GEOM_PAIRS)
    if index < 0:
        return ()
    start, size = int(mj.numeric_adr[index]), int(mj.numeric_size[index])
    values = [float(v) for v in mj.numeric_data[start:start + size]]
    if size % 2 or any(v != int(v) or not 0 <= v < mj.ngeom for v in values):
        raise ModelError(f"{source}: <numeric name={EXCLUDED_GEOM_PAIRS!r}> must list pairs of "
                         f"geom ids in [0, {mj.ngeom}), got {values}")
    return tuple((int(a), int(b)) for a, b in zip(values[::2], values[1::2]))


def reference_pose_contacts(mj) -> list[tuple[int, int, float, bool]]:
    """MuJoCo C's contacts at ``qpos0``: ``(geom1, geom2, depth, excluded)`` each, ``depth`` the
    penetration in metres (negative: separated within the margin), ``excluded`` MuJoCo's flag
    for a contact it leaves out of the constraints."""
    import mujoco

    data = mujoco.MjData(mj)
    mujoco.mj_forward(mj, data)
    return [(int(c.geom1), int(c.geom2), -float(c.dist), c.exclude != 0)
            for c in data.contact[:data.ncon]]


def one_mechanism(mj, geom1: int, geom2: int) -> bool:
    """Whether geoms ``geom1`` and ``geom2`` belong to one mechanism: bodies of one tree, or — for
    a fixed-base robot, whose base MuJoCo fuses into the world body (URDF roots, ``fusestatic``) —
    a non-plane geom of the world and a tree without a free joint (the Allegro hand's palm and
    fingers). A floor (plane or height field) is never part of a mechanism."""
    import mujoco

    geom1, geom2 = sorted((geom1, geom2), key=lambda g: mj.geom_bodyid[g])
    body1, body2 = int(mj.geom_bodyid[geom1]), int(mj.geom_bodyid[geom2])
    if body1 != 0:
        return bool(mj.body_rootid[body1] == mj.body_rootid[body2])
    # ints on both sides: `np.int32 in (enum, ...)` compares enum == np.int32, which is False
    if int(mj.geom_type[geom1]) in (int(mujoco.mjtGeom.mjGEOM_PLANE), int(mujoco.mjtGeom.mjGEOM_HFIELD)):
        return False
    # MuJoCo allows a free joint only on a top-level body: a floating tree's root has one
    root = int(mj.body_rootid[body2])
    floating = (mj.body_jntnum[root] > 0
                and int(mj.jnt_type[mj.body_jntadr[root]]) == int(mujoco.mjtJoint.mjJNT_FREE))
    return not floating


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
    again. A pair with the world body (a fixed base's welded geometry) would also lose the link's
    floor contacts: its overlapping geom pairs (:func:`welded_overlap_geom_pairs`) are excluded
    one by one instead, through :data:`EXCLUDED_GEOM_PAIRS` (the link keeps its other contacts).
    A pair with an unnamed body cannot be named in an exclude: it is reported only. Warnings are :class:`~jaxsim_contact.io._errors.SelfOverlapWarning`
    and name the file, the bodies and the depths.
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
    # a spec compiled again (a benchmark moving its floor) already declares some geom pairs
    declared = next((n for n in spec.numerics if n.name == EXCLUDED_GEOM_PAIRS), None)
    already = set(excluded_geom_pairs(mj, path))
    welded_geoms = [p for p in (welded_overlap_geom_pairs(mj) if welded else []) if p not in already]
    new_bodies = {tuple(sorted((int(mj.geom_bodyid[a]), int(mj.geom_bodyid[b])))) for a, b in welded_geoms}
    unnamed = [pair for pair in pairs if pair not in excluded and pair not in welded]
    welded = [pair for pair in welded if pair[:2] in new_bodies]
    if not (excluded or welded or unnamed):
        return mj
    if welded_geoms:
        data = [float(g) for pair in sorted(already | set(welded_geoms)) for g in pair]
        if declared is None:
            spec.add_numeric(name=EXCLUDED_GEOM_PAIRS, data=data)
        else:
            declared.size, declared.data = len(data), data
    parts = []
    if excluded:
        parts.append("bodies of one kinematic tree overlap at the reference pose qpos0 and are "
                     f"excluded from collision with each other: {_describe(mj, excluded)}")
    if welded:
        parts.append("links overlap geometry welded to the world (a fixed base) at qpos0; "
                     f"the {len(welded_geoms)} overlapping geom pairs are excluded from collision "
                     "(not the bodies: the links keep their floor contacts): "
                     f"{_describe(mj, welded)}")
    if unnamed:
        parts.append("overlapping at qpos0 but not excluded (an unnamed body cannot be excluded): "
                     f"{_describe(mj, unnamed)}")
    message = f"{path}: " + "; ".join(parts)
    warnings.warn(message + ". A hard contact between links that start inside each other cannot "
                  "be resolved (the solver would run to its cap on every step); write the "
                  "<exclude> yourself to silence this, or pass exclude_self_overlaps=False to "
                  "keep the pairs", SelfOverlapWarning, stacklevel=3)
    return spec.compile() if excluded or welded_geoms else mj
