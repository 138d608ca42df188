"""``to_html(model, trajectory, path=None, env_ids=None, initial=None)``: a self-contained HTML replay.

The page draws every geom of the model (plane, sphere, ellipsoid, box, capsule, cylinder, cone,
mesh hulls) with three.js r160 — embedded in the page from this package's data (MIT licence,
``static/three.LICENSE``), so the replay needs no network and no server — and animates the world
pose of every body, frame by frame, for one or several environments of a batched trajectory, laid
out side by side (``layout="grid"``) or on top of each other (``layout="overlay"``). Active contact
points are drawn as red dots (with a legend) when the trajectory carries contact data; frame 0 is the
``initial`` state when given (t = 0 for ``jc.init``); the camera fits everything that moves.

Host-side only (NumPy + one jitted ``jc.body_poses`` over all frames). The returned
:class:`HTMLReplay` is the HTML text (a ``str``) and shows inline in Jupyter / Colab.
"""

from __future__ import annotations

import base64
import html as html_escape
import json
import math
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

import jax
import numpy as np

from ..constraints import contact_slots
from ..dynamics import body_poses
from .._types import GeomType

__all__ = ["to_html", "HTMLReplay", "MAX_ENVIRONMENTS", "LAYOUTS"]

#: most environments one replay draws (each adds every body of the model to the page)
MAX_ENVIRONMENTS = 64
#: ``"grid"``: environments side by side; ``"overlay"``: on top of each other (ghosts after the first)
LAYOUTS = ("grid", "overlay")
# Tableau 10: distinguishable colours, one per body (grid) or per environment (overlay)
_PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
            "#ff9da7", "#9c755f", "#bab0ac"]
_PLACEHOLDER = re.compile(r"__(TITLE|DATA|THREE)__")


class HTMLReplay(str):
    """The HTML text of a replay (a ``str``: write it to a file, or compare it), which Jupyter and
    Colab display inline: ``_repr_html_`` wraps the page in an ``<iframe srcdoc=...>`` so that its
    scripts run isolated from the notebook. ``repr`` stays short (the page embeds ~0.7 MB of
    three.js)."""

    summary: str
    height: int

    def __new__(cls, text: str, summary: str = "", height: int = 480):
        obj = super().__new__(cls, text)
        obj.summary = summary
        obj.height = int(height)
        return obj

    def _repr_html_(self) -> str:
        return (f'<iframe srcdoc="{html_escape.escape(str(self), quote=True)}" '
                f'style="width:100%;height:{self.height}px;border:1px solid #ccc" '
                'title="jaxsim_contact replay"></iframe>')

    def __repr__(self) -> str:
        return f"<HTMLReplay {self.summary}, {len(self) / 1e6:.2f} MB>"

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))

    def save(self, path) -> Path:
        """Write the page to ``path`` (UTF-8); returns the path."""
        path = Path(path)
        path.write_text(str(self), encoding="utf-8")
        return path


@lru_cache(maxsize=None)
def _static(name: str) -> str:
    return resources.files(__package__).joinpath("static").joinpath(name).read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def _batched_body_poses():
    # one compilation per model structure and frame count (the model is a traced argument)
    return jax.jit(jax.vmap(body_poses, in_axes=(None, 0)))


def _as_trajectory_arrays(model, trajectory, batch_axis: int):
    """``q (B, T, nq)``, ``time (B, T)`` or None, contact points ``(B, T, nc, 3)`` / active
    ``(B, T, nc)`` or None, and whether the input was batched; raises ValueError on bad shapes."""
    q_raw = getattr(trajectory, "q", trajectory)
    if q_raw is None:
        raise ValueError("trajectory has no positions q (pass the stacked states of jc.rollout)")
    q = np.asarray(q_raw)
    if q.dtype == object or not np.issubdtype(q.dtype, np.number):
        raise ValueError(f"trajectory.q must be a numeric array; got dtype {q.dtype}")
    if q.ndim not in (2, 3):
        raise ValueError(
            f"trajectory.q must have shape (T, nq) or (B, T, nq) with nq={model.nq}; got {q.shape}. "
            "A single state has no time axis: pass the stacked states returned by jc.rollout.")
    if q.shape[-1] != model.nq:
        raise ValueError(
            f"trajectory.q has {q.shape[-1]} coordinates per frame but the model has nq={model.nq}: "
            "is this the trajectory of another model?")
    batched = q.ndim == 3
    if batched and batch_axis not in (0, 1):
        raise ValueError(f"batch_axis must be 0 (B, T, nq) or 1 (T, B, nq); got {batch_axis}")
    swap = batched and batch_axis == 1

    def to_batch_time(x, trailing: int, name: str):
        """Leading axes of ``x`` as (B, T), checked against q's."""
        x = np.asarray(x)
        expected_lead = q.shape[:-1]
        if x.ndim != len(expected_lead) + trailing or x.shape[:len(expected_lead)] != expected_lead:
            raise ValueError(
                f"trajectory.{name} has shape {x.shape} but trajectory.q has shape {q.shape}: the "
                f"leading (batch, time) axes must agree")
        if swap:
            x = np.swapaxes(x, 0, 1)
        return x if batched else x[None]

    time_raw = getattr(trajectory, "time", None)
    times = None if time_raw is None else to_batch_time(time_raw, 0, "time").astype(np.float64)
    points = active = None
    contact = getattr(trajectory, "contact", None)
    if contact is not None and getattr(contact, "point", None) is not None:
        points = to_batch_time(contact.point, 2, "contact.point")
        active = to_batch_time(contact.active, 1, "contact.active")
    q = np.swapaxes(q, 0, 1) if swap else (q if batched else q[None])
    if q.shape[0] == 0:
        raise ValueError(f"trajectory is empty: its batch has 0 environments (q shape {q.shape})")
    if q.shape[1] == 0:
        raise ValueError(f"trajectory is empty: it has 0 frames (q shape {q.shape})")
    return q, times, points, active, batched


def _prepend_initial(model, initial, q, times, points, active):
    """The arrays of :func:`_as_trajectory_arrays` with the state ``initial`` as frame 0 of every
    environment (``q (nq,)`` or ``(B, nq)``; its time and contact points when it has them, else
    ``t = first time - dt`` and no contact point)."""
    q0 = np.asarray(getattr(initial, "q", initial), np.float64)
    num_envs = q.shape[0]
    if q0.shape not in ((model.nq,), (num_envs, model.nq)):
        raise ValueError(f"initial.q has shape {q0.shape}; expected ({model.nq},) or ({num_envs}, "
                         f"{model.nq}) for a trajectory of {num_envs} environment(s)")

    def first(x, trailing: tuple[int, ...]):
        x = np.asarray(x)
        return np.broadcast_to(x, (num_envs, *trailing)) if x.shape == trailing else x

    q = np.concatenate([first(q0, (model.nq,))[:, None].astype(q.dtype), q], axis=1)
    if times is not None:
        t0 = getattr(initial, "time", None)
        t0 = times[:, :1] - float(model.options.dt) if t0 is None else first(t0, ())[:, None]
        times = np.concatenate([np.asarray(t0, np.float64), times], axis=1)
    if points is not None:
        contact = getattr(initial, "contact", None)
        if contact is not None and getattr(contact, "point", None) is not None:
            p0 = first(contact.point, points.shape[2:])
            a0 = first(contact.active, active.shape[2:])
        else:
            p0 = np.zeros((num_envs, *points.shape[2:]))
            a0 = np.zeros((num_envs, *active.shape[2:]), bool)
        points = np.concatenate([np.asarray(p0, points.dtype)[:, None], points], axis=1)
        active = np.concatenate([np.asarray(a0, active.dtype)[:, None], active], axis=1)
    return q, times, points, active


def _select_environments(env_ids, num_envs: int, batched: bool) -> list[int]:
    if env_ids is None:
        ids = list(range(num_envs))
    else:
        flat = np.atleast_1d(np.asarray(env_ids))
        if flat.ndim != 1 or (flat.size and not np.issubdtype(flat.dtype, np.integer)):
            raise ValueError(f"env_ids must be an int or a 1-D sequence of ints; got {env_ids!r}")
        ids = [int(i) for i in flat]
        if not ids:
            raise ValueError("env_ids is empty: select at least one environment")
        bad = [i for i in ids if not 0 <= i < num_envs]
        if bad:
            what = (f"the trajectory has {num_envs} environments (valid ids 0..{num_envs - 1})"
                    if batched else "the trajectory is not batched (only env 0 exists)")
            raise ValueError(f"env_ids {bad} out of range: {what}")
        if len(set(ids)) != len(ids):
            raise ValueError(f"env_ids has repeated ids: {ids}")
    if len(ids) > MAX_ENVIRONMENTS:
        raise ValueError(
            f"{len(ids)} environments selected; a replay draws at most {MAX_ENVIRONMENTS}: pass "
            f"env_ids=... (e.g. env_ids=range(16))")
    return ids


def _forward_fill(poses: np.ndarray, env_ids: list[int]) -> tuple[np.ndarray, list[str]]:
    """Hold the last finite pose of an environment once its state became non-finite (a diverged
    environment stops moving instead of vanishing); frame 0 must be finite."""
    notes = []
    finite = np.isfinite(poses).all(axis=(2, 3))  # (E, F)
    for e in range(poses.shape[0]):
        if finite[e].all():
            continue
        if not finite[e, 0]:
            raise ValueError(f"environment {env_ids[e]}: the first frame of the trajectory is not finite")
        first_bad = int(np.argmin(finite[e]))
        index = np.maximum.accumulate(np.where(finite[e], np.arange(poses.shape[1]), 0))
        poses[e] = poses[e, index]
        notes.append(f"env {env_ids[e]} non-finite from frame {first_bad}")
    return poses, notes


def _geom_radius(gtype: GeomType, size: np.ndarray, vertices) -> float:
    """Radius of a sphere about the geom origin that bounds it (framing only)."""
    if gtype == GeomType.SPHERE:
        return float(size[0])
    if gtype == GeomType.CAPSULE:
        return float(size[0] + size[1])
    if gtype in (GeomType.CYLINDER, GeomType.CONE):
        return float(math.hypot(size[0], size[1]))
    if gtype == GeomType.ELLIPSOID:
        return float(np.max(size))
    if gtype == GeomType.BOX:
        return float(np.linalg.norm(size))
    if gtype == GeomType.MESH:
        return float(np.max(np.linalg.norm(vertices, axis=1)))
    return 0.0


def _hull(vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Convex hull (vertices, outward triangles) of a mesh: what the collision pipeline uses."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        hull = ConvexHull(vertices)
    except QhullError:  # flat or degenerate point sets: joggle (drawn only)
        hull = ConvexHull(vertices, qhull_options="QJ")
    used = np.unique(hull.simplices)
    remap = -np.ones(len(vertices), dtype=np.int64)
    remap[used] = np.arange(len(used))
    faces = remap[hull.simplices]
    points = vertices[used]
    # orient every triangle outwards (Qhull's facet order is not consistent)
    centroid = points.mean(axis=0)
    a, b, c = points[faces[:, 0]], points[faces[:, 1]], points[faces[:, 2]]
    inward = np.einsum("ij,ij->i", np.cross(b - a, c - a), a - centroid) < 0
    faces[inward] = faces[inward][:, [0, 2, 1]]
    return points, faces


#: a height field drawn with more rows or columns than this is subsampled (drawn only)
MAX_HFIELD_SAMPLES = 129


def _hfield_solid(elevation: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (geom frame, m) and outward triangles of a height field drawn as MuJoCo shows it:
    the elevation surface (``z = data · size[2]``, grid spanning ``±size[0] × ±size[1]``) on a
    solid base down to ``z = -size[3]`` (MuJoCo ``hfield``; ``collision/_hfield.py``). Grids larger
    than :data:`MAX_HFIELD_SAMPLES` per side are subsampled, keeping the border rows/columns."""
    nrow, ncol = elevation.shape
    rows = np.unique(np.linspace(0, nrow - 1, min(nrow, MAX_HFIELD_SAMPLES)).round().astype(int))
    cols = np.unique(np.linspace(0, ncol - 1, min(ncol, MAX_HFIELD_SAMPLES)).round().astype(int))
    x = -size[0] + 2.0 * size[0] * cols / (ncol - 1)
    y = -size[1] + 2.0 * size[1] * rows / (nrow - 1)
    z = elevation[np.ix_(rows, cols)] * size[2]
    n_r, n_c = len(rows), len(cols)
    top = np.stack(np.broadcast_arrays(x[None, :], y[:, None], z), axis=-1).reshape(-1, 3)
    bottom = top.copy()
    bottom[:, 2] = -size[3]
    vertices = np.concatenate([top, bottom])
    index = np.arange(n_r * n_c).reshape(n_r, n_c)
    a, b, c, d = index[:-1, :-1], index[:-1, 1:], index[1:, :-1], index[1:, 1:]
    faces = [np.stack([a, b, d], -1).reshape(-1, 3), np.stack([a, d, c], -1).reshape(-1, 3)]
    base = n_r * n_c
    faces += [np.array([[index[0, 0] + base, index[-1, -1] + base, index[0, -1] + base],
                        [index[0, 0] + base, index[-1, 0] + base, index[-1, -1] + base]])]
    # four side walls, each a strip of quads from the surface edge down to the base
    for edge, outward_flip in ((index[0, :], False), (index[-1, :], True),
                               (index[:, 0], True), (index[:, -1], False)):
        p, q = edge[:-1], edge[1:]
        strip = np.concatenate([np.stack([p, p + base, q + base], -1), np.stack([p, q + base, q], -1)])
        faces.append(strip[:, [0, 2, 1]] if outward_flip else strip)
    return vertices, np.concatenate(faces)


def _encode(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array, dtype="<f4").tobytes()).decode("ascii")


def to_html(model, trajectory, path=None, env_ids=None, *, initial=None, layout: str = "grid",
            batch_axis: int = 0, max_frames: int = 600, show_contacts: bool = True,
            height: int = 480, title: str | None = None) -> HTMLReplay:
    """A self-contained HTML replay (three.js, embedded; no network) of a trajectory.

    Args:
      model: the :class:`~jaxsim_contact.Model` the trajectory was simulated with.
      trajectory: stacked states as returned by ``jc.rollout`` — a ``State`` with ``q (T, nq)``
        and ``time (T,)`` — or a batch of them, ``q (B, T, nq)`` as from
        ``jax.vmap(jc.rollout, in_axes=(None, 0, 0))`` (``batch_axis=1`` for time-major
        ``(T, B, nq)``, as from a ``lax.scan`` over a vmapped step). A plain array ``q`` also
        works (frames are then ``model.dt`` apart). ``trajectory.contact`` (optional) adds the
        active contact points.
      path: file to write the page to (optional).
      initial: the state the trajectory started from (e.g. ``jc.init(model)``; batched like the
        trajectory, or one state for every environment), drawn as frame 0 at its own time
        (t = 0 for ``jc.init``): ``jc.rollout`` returns the states *after* each step, so without
        it the first frame is the state at ``t = dt``.
      env_ids: environment index or indices of a batched trajectory to draw (default: all, at most
        :data:`MAX_ENVIRONMENTS`); for an unbatched trajectory only ``0``.
      layout: ``"grid"`` (side by side, row by row, in the order of ``env_ids``) or ``"overlay"``
        (same place; one colour per environment, environments after the first translucent).
      batch_axis: axis of the environments in a 3-D ``q``: 0 for ``(B, T, nq)``, 1 for
        ``(T, B, nq)``.
      max_frames: frames kept, evenly subsampled (the last frame is always kept).
      show_contacts: draw active contact points (red dots) when the trajectory has contact data.
      height: height in pixels of the inline notebook view.
      title: page title.

    Returns:
      :class:`HTMLReplay`, the page's HTML text (a ``str``); shown inline by Jupyter / Colab.

    Raises:
      ValueError: empty trajectory, ``q`` that does not fit the model (wrong ``nq``, no time
        axis), ``time`` / ``contact`` whose batch/time axes disagree with ``q``, ``env_ids`` out of
        range / repeated / empty, unknown ``layout``, or a non-finite first frame.

    Poses are ``jc.body_poses`` (MuJoCo's ``xpos`` / ``xquat``) of every kept frame; geoms use
    MuJoCo's size conventions (DESIGN §5; ``collision/_geoms.py``); meshes are drawn as their convex
    hull, which is what the collision pipeline uses. Once an environment's state becomes
    non-finite its bodies hold their last finite pose (noted in the page's caption).
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}; got {layout!r}")
    if int(max_frames) < 1:
        raise ValueError(f"max_frames must be >= 1; got {max_frames}")
    q, times, points, active, batched = _as_trajectory_arrays(model, trajectory, batch_axis)
    if initial is not None:
        q, times, points, active = _prepend_initial(model, initial, q, times, points, active)
    ids = _select_environments(env_ids, q.shape[0], batched)
    num_steps = q.shape[1]
    stride = max(1, math.ceil(num_steps / int(max_frames)))
    frames = np.arange(0, num_steps, stride)
    if frames[-1] != num_steps - 1:
        frames = np.append(frames[:-1] if len(frames) >= int(max_frames) else frames, num_steps - 1)
    q = q[ids][:, frames]
    num_envs, num_frames = q.shape[:2]

    dtype = np.asarray(model.qpos0).dtype
    transforms = _batched_body_poses()(model, q.reshape(-1, model.nq).astype(dtype))
    poses = np.concatenate([np.asarray(transforms.pos, np.float64), np.asarray(transforms.quat, np.float64)],
                           axis=-1).reshape(num_envs, num_frames, model.nbody, 7)
    poses, notes = _forward_fill(poses, ids)

    if times is not None:
        frame_times = times[ids[0], frames]
    else:
        frame_times = np.arange(num_steps, dtype=np.float64)[frames] * float(model.options.dt)
    steps = np.diff(frame_times)
    frame_dt = float(np.median(steps)) if steps.size and np.isfinite(steps).all() else 0.0
    if not frame_dt > 0:
        frame_dt = float(model.options.dt) * stride

    # --- geoms and the extent of everything that moves (for framing and the grid pitch) ---
    geoms, lows, highs, reaches = [], [], [], []
    positions = poses[..., :3]  # (E, F, nbody, 3)
    body_colour = {b: k for k, b in enumerate(sorted({int(b) for b in model.geom_body if b != 0}))}
    for g in range(model.ngeom):
        gtype = GeomType(model.geom_type[g])
        body = int(model.geom_body[g])
        size = np.asarray(model.geom_size[g], np.float64)
        local = np.asarray(model.geom_pos[g], np.float64)
        entry = dict(type=gtype.name.lower(), body=body, size=size.round(6).tolist(),
                     pos=local.round(6).tolist(),
                     quat=np.asarray(model.geom_quat[g], np.float64).round(6).tolist(),
                     color=body_colour.get(body, 0))
        vertices = None
        if gtype == GeomType.MESH:
            vertices, faces = _hull(np.asarray(model.mesh_vertices[model.geom_mesh[g]], np.float64))
            entry.update(vertices=vertices.round(6).tolist(), faces=faces.tolist())
        if gtype == GeomType.HFIELD:
            field = model.geom_hfield[g]
            solid, faces = _hfield_solid(np.asarray(model.hfield_data[field], np.float64),
                                         np.asarray(model.hfield_size[field], np.float64))
            entry.update(vertices=solid.round(6).tolist(), faces=faces.tolist())
        if gtype not in (GeomType.PLANE, GeomType.HFIELD):  # terrain does not set the framing
            reach = np.linalg.norm(local) + _geom_radius(gtype, size, vertices)
            centres = positions[:, :, body].reshape(-1, 3)
            lows.append(centres.min(axis=0) - reach)
            highs.append(centres.max(axis=0) + reach)
            reaches.append((body, reach))
        geoms.append(entry)
    if lows:
        low, high = np.min(lows, axis=0), np.max(highs, axis=0)
    else:
        low, high = -np.ones(3) * 0.5, np.ones(3) * 0.5
    span = np.maximum(high - low, 1e-3)
    cell = 1.3 * float(max(span[0], span[1]))
    if layout == "grid":
        columns = math.ceil(math.sqrt(num_envs))
        rows = math.ceil(num_envs / columns)
        offsets = np.array([[(k % columns - (columns - 1) / 2) * cell,
                             -(k // columns - (rows - 1) / 2) * cell, 0.0] for k in range(num_envs)])
    else:
        columns = rows = 1
        offsets = np.zeros((num_envs, 3))
    centre = (low + high) / 2
    centre[2] = max(centre[2], low[2])
    layout_half = np.array([columns * cell / 2, rows * cell / 2, span[2] / 2])
    radius = float(max(np.linalg.norm(layout_half), 0.05))
    plane_half = [cell / 2 if layout == "grid" else 1.5 * cell] * 2
    for entry in geoms:
        if entry["type"] == "plane":
            # MuJoCo: size[0:2] are the drawn half extents, 0 means infinite
            entry["extent"] = [s if s > 0 else h for s, h in zip(entry["size"][:2], plane_half)]
            entry["extent"] = [min(s, h) for s, h in zip(entry["extent"], plane_half)]

    framing = _framing_points(positions, reaches, offsets, low, high)

    # --- contact points of the active contact slots (joint-limit slots carry no point) ---
    num_contact_slots = 0
    contact_points = ""
    if show_contacts and points is not None:
        num_contact_slots = min(contact_slots(model), points.shape[2])
        selected = points[ids][:, frames, :num_contact_slots].astype(np.float64)
        mask = active[ids][:, frames, :num_contact_slots].astype(bool) & np.isfinite(selected).all(-1)
        selected = np.where(mask[..., None], selected, np.nan)
        contact_points = _encode(selected)

    env_text = (f"env {ids[0]}" if num_envs == 1 else
                f"envs {', '.join(map(str, ids))} ({'left to right, top to bottom' if layout == 'grid' else 'overlaid'})")
    info = f"{Path(model.source).name or 'scene'} · {env_text}" + (f" · {'; '.join(notes)}" if notes else "")
    data = dict(
        env_ids=ids, layout=layout, num_frames=int(num_frames), num_bodies=int(model.nbody),
        poses=_encode(poses), times=frame_times.round(6).tolist(), frame_dt=frame_dt,
        geoms=geoms, palette=_PALETTE, offsets=offsets.round(6).tolist(),
        center=(centre + (offsets.mean(axis=0) if num_envs else 0)).round(6).tolist(),
        radius=radius,
        framing=framing.round(5).tolist(),
        grid_divisions=int(min(40, max(4, round(2 * plane_half[0] / _nice_step(span))))),
        num_contact_slots=int(num_contact_slots), contact_points=contact_points,
        contact_marker=float(max(2e-3, 0.012 * float(np.max(span)))), info=info,
    )
    data_text = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    fill = {"TITLE": html_escape.escape(title or f"jaxsim_contact replay: {env_text}"),
            "DATA": data_text, "THREE": _static("three.module.min.js")}
    text = _PLACEHOLDER.sub(lambda m: fill[m.group(1)], _static("replay.html"))
    summary = f"{num_envs} env{'s' if num_envs > 1 else ''} × {num_frames} frames, {model.nbody - 1} bodies"
    replay = HTMLReplay(text, summary=summary, height=height)
    if path is not None:
        replay.save(path)
    return replay


#: frames sampled per environment for the camera's framing points
FRAMING_SAMPLES = 32


def _framing_points(positions: np.ndarray, reaches: list, offsets: np.ndarray, low: np.ndarray,
                    high: np.ndarray) -> np.ndarray:
    """Points (world frame, laid out) whose view the camera fits: for every moving geom, at up to
    :data:`FRAMING_SAMPLES` frames of every environment, its body's position ± its reach along the
    three axes; reduced to their convex hull's vertices (the box ``[low, high]``'s corners when
    nothing moves or the points are flat)."""
    from scipy.spatial import ConvexHull, QhullError

    num_frames = positions.shape[1]
    frames = np.unique(np.linspace(0, num_frames - 1, min(num_frames, FRAMING_SAMPLES)).round().astype(int))
    axes = np.concatenate([np.eye(3), -np.eye(3)])
    points = [positions[:, frames, body][:, :, None] + offsets[:, None, None] + reach * axes
              for body, reach in reaches]  # each (E, S, 6, 3)
    corners = np.array([[x, y, z] for x in (low[0], high[0]) for y in (low[1], high[1])
                        for z in (low[2], high[2])]) + offsets[:, None]
    if not points:
        return corners.reshape(-1, 3)
    cloud = np.concatenate([p.reshape(-1, 3) for p in points])
    cloud = cloud[np.isfinite(cloud).all(axis=1)]
    try:
        return cloud[ConvexHull(cloud).vertices]
    except (QhullError, ValueError):
        return corners.reshape(-1, 3)


def _nice_step(span: np.ndarray) -> float:
    """Grid line spacing: 1, 2 or 5 × 10^k, about a tenth of the scene's horizontal size."""
    target = max(float(max(span[0], span[1])) / 5, 1e-3)
    exponent = 10 ** math.floor(math.log10(target))
    return min((m * exponent for m in (1, 2, 5, 10)), key=lambda s: abs(s - target))
