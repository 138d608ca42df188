"""Host-side scene edits of a loaded model: add a floor, choose which pairs collide.

Both return a new :class:`~jaxsim_contact._model.Model` with its static collision structure rebuilt
(:mod:`.pairs`); they are meant for set-up code, never for traced code.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from ..collision._pairs import build_collision_structure
from ..collision._structure import DEFAULT_GENERIC_PAIR_BUDGET
from .._model import Model
from .._types import GeomType, JointType

__all__ = ["add_floor", "set_collision", "rebuild_collision", "set_height_field"]


def rebuild_collision(model: Model, *, exclude_body_pairs=None, exclude_geom_pairs=None,
                      generic_pair_budget: int = DEFAULT_GENERIC_PAIR_BUDGET) -> Model:
    """Recompute the static candidate pairs (and mesh hulls) from the model's geoms.

    ``exclude_body_pairs`` / ``exclude_geom_pairs`` (``(i, j)`` index pairs) replace the model's
    when given; both are stored so later rebuilds (e.g. :func:`add_floor`) keep them.
    """
    exclude = model.exclude_body_pairs if exclude_body_pairs is None else tuple(exclude_body_pairs)
    exclude_geoms = (model.exclude_geom_pairs if exclude_geom_pairs is None
                     else tuple((int(a), int(b)) for a, b in exclude_geom_pairs))
    structure = build_collision_structure(
        geom_type=model.geom_type, geom_body=model.geom_body, geom_contype=model.geom_contype,
        geom_conaffinity=model.geom_conaffinity, body_parent=model.tree.body_parent,
        body_joint_num=model.tree.body_joint_num, exclude_body_pairs=exclude,
        contact_geom_pairs=model.contact_geom_pairs, exclude_geom_pairs=exclude_geoms,
        mesh_vertices=tuple(np.asarray(v) for v in model.mesh_vertices),
        generic_pair_budget=generic_pair_budget,
        geom_hfield=model.geom_hfield, hfield_size=np.asarray(model.hfield_size, np.float64),
        hfield_shape=tuple(tuple(grid.shape) for grid in model.hfield_data),
        geom_size=np.asarray(model.geom_size, np.float64), geom_mesh=model.geom_mesh,
        geom_margin=np.asarray(model.geom_margin, np.float64),
    )
    return dataclasses.replace(model, exclude_body_pairs=exclude, exclude_geom_pairs=exclude_geoms,
                               collision=structure)


def add_floor(model: Model, *, height: float = 0.0, friction: float = 1.0,
              name: str = "floor") -> Model:
    """A copy of ``model`` with a horizontal plane (half-space ``z ≤ height``) on the world body.

    The plane collides with every geom (``contype = conaffinity = 1``), friction ``friction``.
    Useful for URDF robots, which have no floor of their own.
    """
    if not np.isfinite(friction) or friction < 0:
        raise ValueError(f"add_floor: friction must be finite and >= 0, got {friction}")
    dtype = model.dtype
    row = lambda arr, value: jnp.concatenate([arr, jnp.asarray([value], dtype)])  # noqa: E731
    out = dataclasses.replace(
        model,
        geom_size=row(model.geom_size, [10.0, 10.0, 0.1]),
        geom_pos=row(model.geom_pos, [0.0, 0.0, height]),
        geom_quat=row(model.geom_quat, [1.0, 0.0, 0.0, 0.0]),
        geom_friction=row(model.geom_friction, [friction, 0.005, 0.0001]),
        geom_margin=jnp.concatenate([model.geom_margin, jnp.zeros((1,), dtype)]),
        geom_fluid=jnp.concatenate([model.geom_fluid, jnp.zeros((1, 12), dtype)]),
        geom_names=model.geom_names + (name,),
        geom_type=model.geom_type + (GeomType.PLANE,),
        geom_body=model.geom_body + (0,),
        geom_contype=model.geom_contype + (1,),
        geom_conaffinity=model.geom_conaffinity + (1,),
        geom_mesh=model.geom_mesh + (-1,),
        geom_hfield=model.geom_hfield + (-1,),
    )
    return rebuild_collision(out)


def set_collision(model: Model, *, self_collision: bool = True, world_is_robot_base: bool = False,
                  generic_pair_budget: int = DEFAULT_GENERIC_PAIR_BUDGET) -> Model:
    """A copy with the candidate pairs rebuilt.

    Args:
      self_collision: ``False`` excludes every pair of two moving bodies of the same kinematic
        tree (robots then only touch the world and other trees), as an ``<exclude>`` per pair.
      world_is_robot_base: the model is a fixed-base robot whose jointless root link MuJoCo's
        compiler fused into the world body (a URDF loaded without ``floating_base``: the Allegro
        palm, the Panda's ``link0``). Its geoms are then *world* geoms, and MuJoCo's parent/child
        filter never applies to the world (C's ``filterparent`` rule needs both weld bodies
        non-zero), so MuJoCo C itself collides the Allegro palm with the finger and thumb bases
        at the rest pose (14 contacts, up to 3.7 cm deep). With ``self_collision=False`` and
        this flag, the world's non-plane geoms and every tree articulated to the world (root
        joint not free) form one robot: its pairs are excluded (geom pairs for the world geoms,
        so a floor or a plane on the world body still collides). Free-floating objects (a free
        root joint) keep colliding with the robot and with every world geom. Ignored when
        ``self_collision`` is ``True``.
      generic_pair_budget: narrow-phase budget of GJK/EPA groups (pairs per step).
    """
    exclude = list(model.exclude_body_pairs)
    exclude_geoms = list(model.exclude_geom_pairs)
    if not self_collision:
        parent = model.tree.body_parent
        root = [0] * model.nbody
        for b in range(1, model.nbody):
            root[b] = b if parent[b] == 0 else root[parent[b]]
        if world_is_robot_base:
            # every tree articulated to the world belongs to the one robot; a tree with a free
            # root joint is a separate object and keeps colliding with the robot and the base
            tree = model.tree
            free_root = [tree.body_joint_num[b] > 0
                         and tree.joint_type[tree.body_joint_adr[b]] == JointType.FREE
                         for b in range(model.nbody)]
            robot = [b != 0 and not free_root[root[b]] for b in range(model.nbody)]
            root = [-1 if robot[b] else root[b] for b in range(model.nbody)]
            base_geoms = [g for g, body in enumerate(model.geom_body)
                          if body == 0 and model.geom_type[g] != GeomType.PLANE]
            exclude_geoms += [(g, h) for g in base_geoms
                              for h, body in enumerate(model.geom_body) if robot[body]]
        for a in range(1, model.nbody):
            for b in range(a + 1, model.nbody):
                if root[a] == root[b]:
                    exclude.append((a, b))
    return rebuild_collision(model, exclude_body_pairs=tuple(exclude),
                             exclude_geom_pairs=tuple(exclude_geoms),
                             generic_pair_budget=generic_pair_budget)


def set_height_field(model: Model, hfield: int | str, elevation) -> Model:
    """A copy of ``model`` whose height field ``hfield`` (index or name) has the elevations
    ``elevation`` ``(nrow, ncol)`` (MuJoCo ``hfield_data`` of that field, row ``r`` along y,
    column ``c`` along x, height ``elevation · size[2]`` m; dm_control's tasks write terrain this
    way at episode start). The grid shape is static (the pairs' windows of cells), the values are
    dynamic leaves: inside ``jit`` replace ``model.hfield_data`` directly
    (``eqx.tree_at``) with an array of the same shape.

    Raises:
      ValueError: unknown field, a shape other than the field's, or non-finite values.
    """
    names = model.hfield_names
    index = names.index(hfield) if isinstance(hfield, str) and hfield in names else hfield
    if not isinstance(index, (int, np.integer)) or not 0 <= index < len(model.hfield_data):
        raise ValueError(f"set_height_field: no height field {hfield!r}; the model has {list(names)}")
    values = np.asarray(elevation, dtype=np.float64)
    shape = tuple(model.hfield_data[index].shape)
    if values.shape != shape:
        raise ValueError(f"set_height_field: height field {names[index]!r} has {shape[0]} rows and "
                         f"{shape[1]} columns; got elevations of shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"set_height_field: height field {names[index]!r}: elevations must be finite")
    grids = list(model.hfield_data)
    grids[index] = jnp.asarray(values, model.dtype)
    return dataclasses.replace(model, hfield_data=tuple(grids))
