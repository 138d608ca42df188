"""Random configurations for NaN fuzzing (DESIGN §4 "no NaN in any derivative"): samplers and
vmapped value / ``jvp`` / ``vjp`` functions of three stages — the collision query of every pair of
convex shape types (and the plane), the contact solver on degenerate problems, and ``jc.step`` on a
scene of interpenetrating free bodies — and the loop that counts non-finite entries.

Used by the test suite at small sizes and by ``benchmarks/nan_fuzz.py`` at 10⁵ configurations per
pair (its docstring describes the configurations). The callers enable float64.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import collision, contact
from ..dynamics import init, step
from ..geometry import Box, Capsule, Cone, ConvexMesh, Cylinder, Ellipsoid, Plane, Sphere
from ..io import load
from .._math import Transform

CONVEX = ("sphere", "ellipsoid", "box", "capsule", "cylinder", "cone", "mesh")
PAIRS = tuple(itertools.combinations_with_replacement(CONVEX, 2)) + tuple(("plane", t) for t in CONVEX)
ORIENTATIONS = ("random", "parallel", "edge_edge", "coincident_centres", "identical")
SCALES = (1e-3, 1.0, 1e3)


# -- shapes ---------------------------------------------------------------------------------------


def base_mesh() -> ConvexMesh:
    """A fixed 12-vertex convex polytope (random points on a sphere, seed 0) of radius 1; each
    sample stretches it (a linear map keeps the hull's faces and adjacency)."""
    rng = np.random.default_rng(0)
    d = rng.normal(size=(12, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return ConvexMesh.from_points(d)


def make_shape(kind: str, size: jax.Array, mesh: ConvexMesh):
    """Shape of type ``kind`` with size parameters taken from ``size`` ``(3,)`` (m)."""
    if kind == "sphere":
        return Sphere(size[0])
    if kind == "ellipsoid":
        return Ellipsoid(size)
    if kind == "box":
        return Box(size)
    if kind in ("capsule", "cylinder", "cone"):
        cls = {"capsule": Capsule, "cylinder": Cylinder, "cone": Cone}[kind]
        return cls(size[0], size[1])
    if kind == "mesh":
        return eqx.tree_at(lambda m: (m.vertices, m.center_local), mesh,
                           (mesh.vertices * size, mesh.center_local * size))
    if kind == "plane":
        return Plane()
    raise ValueError(kind)


def _quat(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


def _quat_mul(a, b):
    w1, x1, y1, z1 = np.moveaxis(a, -1, 0)
    w2, x2, y2, z2 = np.moveaxis(b, -1, 0)
    return np.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2], -1)


def _rotate(q, v):
    w, u = q[..., :1], q[..., 1:]
    t = 2 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def _random_quats(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


# -- collision stage ------------------------------------------------------------------------------


def collision_samples(rng, kind_a: str, kind_b: str, n: int) -> dict[str, np.ndarray]:
    """Host-side random configurations of one pair (see the module docstring)."""
    scale = rng.choice(SCALES, size=n)
    size_a = rng.uniform(0.2, 1.0, (n, 3)) * scale[:, None]
    size_b = rng.uniform(0.2, 1.0, (n, 3)) * scale[:, None]
    mode = rng.integers(0, len(ORIENTATIONS), n)
    touch = rng.random(n) < 0.5
    quat_a = _random_quats(rng, n)
    quat_b = _random_quats(rng, n)
    pos_a = rng.uniform(-1, 1, (n, 3)) * scale[:, None]
    direction = rng.normal(size=(n, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    gap = rng.uniform(0.0, 3.0, n) * scale
    pos_b = pos_a + gap[:, None] * direction
    z_axis = _rotate(quat_a, np.array([0.0, 0.0, 1.0]))
    parallel = mode == 1
    quat_b[parallel] = quat_a[parallel]
    pos_b[parallel] = pos_a[parallel] + gap[parallel, None] * z_axis[parallel]
    edge = mode == 2
    turn = _quat_mul(_quat([0, 0, 1], np.pi / 4), _quat([1, 0, 0], np.pi / 2))
    quat_b[edge] = _quat_mul(quat_a[edge], turn)
    pos_b[edge] = pos_a[edge] + gap[edge, None] * z_axis[edge]
    coincident = mode >= 3
    pos_b[coincident] = pos_a[coincident]
    identical = mode == 4
    quat_b[identical] = quat_a[identical]
    if kind_a == kind_b:
        size_b[identical] = size_a[identical]
    return dict(
        pos_a=pos_a, quat_a=quat_a, pos_b=pos_b, quat_b=quat_b, size_a=size_a, size_b=size_b,
        touch=touch, mode=mode, scale=scale,
        tangent=rng.normal(size=(n, 20)), cotangent=rng.normal(size=(n, 10)),
    )


def collision_fn(kind_a: str, kind_b: str, mesh: ConvexMesh):
    """Vmapped, jitted ``sample -> (values, jvp outputs, vjp outputs)`` for one pair."""

    def query(pos_a, quat_a, pos_b, quat_b, size_a, size_b):
        r = collision.distance(make_shape(kind_a, size_a, mesh), Transform(pos_a, quat_a),
                                  make_shape(kind_b, size_b, mesh), Transform(pos_b, quat_b))
        return jnp.concatenate([r.signed_distance[None], r.point_a, r.point_b, r.normal])

    def one(s):
        args = [s["pos_a"], s["quat_a"], s["pos_b"], s["quat_b"], s["size_a"], s["size_b"]]
        first = jax.lax.stop_gradient(query(*args))
        # touching: move b along the normal by the signed distance (closes the gap / the overlap)
        args[2] = jnp.where(s["touch"], args[2] - first[0] * first[7:10], args[2])
        args = [jax.lax.stop_gradient(a) for a in args]
        splits = np.cumsum([3, 4, 3, 4, 3])
        tangents = jnp.split(s["tangent"], splits)
        values, forward = jax.jvp(query, tuple(args), tuple(tangents))
        _, pullback = jax.vjp(query, *args)
        reverse = jnp.concatenate([c.ravel() for c in pullback(s["cotangent"])])
        return values, forward, reverse

    return jax.jit(jax.vmap(one))


def _count(tree) -> int:
    return int(sum(int(jnp.sum(~jnp.isfinite(x))) for x in jax.tree_util.tree_leaves(tree)))


def _first_bad(sample: dict, outputs) -> dict | None:
    bad = np.zeros(len(next(iter(sample.values()))), bool)
    for x in jax.tree_util.tree_leaves(outputs):
        bad |= ~np.all(np.isfinite(np.asarray(x)).reshape(len(bad), -1), axis=1)
    if not bad.any():
        return None
    i = int(np.argmax(bad))
    return {k: np.asarray(v[i]).tolist() for k, v in sample.items()}


def _fuzz(fn, make_batch, samples: int, chunk: int, seed, previous: dict | None, on_progress) -> dict:
    """Evaluate ``fn`` on ``samples`` random inputs, ``chunk`` at a time (one compiled batch shape).

    Chunk ``k`` draws its inputs from ``default_rng([*seed, k])``, so a run resumed from
    ``previous`` (the row a killed run wrote) continues with exactly the inputs an uninterrupted
    run would have drawn. ``on_progress(row)`` runs after every chunk."""
    row = dict(samples=0, values=0, jvp=0, vjp=0, first_call_s=0.0, run_s=0.0, example=None)
    if previous is not None:
        row.update({k: previous[k] for k in row})
        if row["samples"] % chunk and row["samples"] < samples:
            raise SystemExit(f"cannot resume: {row['samples']} samples done is not a multiple of --chunk {chunk}")
    first = True
    while row["samples"] < samples:
        size = min(chunk, samples - row["samples"])
        sample = make_batch(np.random.default_rng([*seed, row["samples"] // chunk]), chunk)
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn({k: jnp.asarray(v) for k, v in sample.items()}))
        elapsed = time.perf_counter() - t0
        if first and previous is None:
            row["first_call_s"] = elapsed
        elif not first:  # a resumed run's first call compiles: not counted as run time
            row["run_s"] += elapsed  # unrounded: a closed-form chunk takes < 5 ms
        first = False
        out = jax.tree_util.tree_map(lambda x: x[:size], out)
        sample = {k: v[:size] for k, v in sample.items()}
        for name, part in zip(("values", "jvp", "vjp"), out):
            row[name] += _count(part)
        if row["example"] is None and row["values"] + row["jvp"] + row["vjp"]:
            row["example"] = _first_bad(sample, out)
        row["samples"] += size
        on_progress(row)
    return row


def run_collision(pairs, samples: int, chunk: int, seed: int, log=print, on_row=None,
                  previous: dict | None = None) -> list[dict]:
    """One row per pair; ``previous`` maps ``"a-b"`` to the rows of a run to resume."""
    mesh = base_mesh()
    rows = []
    for kind_a, kind_b in pairs:
        name = f"{kind_a}-{kind_b}"
        stream = PAIRS.index((kind_a, kind_b)) if (kind_a, kind_b) in PAIRS else 999
        fn = collision_fn(kind_a, kind_b, mesh)
        current = dict(pair=name)
        rows.append(current)

        def progress(row, current=current):
            current.update(row)
            if on_row is not None:
                on_row(rows)

        row = _fuzz(fn, lambda rng, n: collision_samples(rng, kind_a, kind_b, n), samples, chunk,
                    (seed, stream), (previous or {}).get(name), progress)
        current.update(row)
        log(f"  collision {name:<20} n={row['samples']:>7}  non-finite values {row['values']} "
            f"jvp {row['jvp']} vjp {row['vjp']}  (first call {row['first_call_s']:.1f} s, "
            f"rest {row['run_s']:.1f} s)")
        if on_row is not None:
            on_row(rows)
    return rows


# -- solver stage ---------------------------------------------------------------------------------

SOLVER_CONTACTS = 4
SOLVER_MODES = ("jacobian_rank6", "full_rank", "rank_one", "zero")


def solver_samples(rng, n: int) -> dict[str, np.ndarray]:
    m = 3 * SOLVER_CONTACTS
    mode = rng.integers(0, len(SOLVER_MODES), n)
    jac = rng.normal(size=(n, m, 6))
    delassus = jac @ np.swapaxes(jac, 1, 2)  # rank 6
    full = rng.normal(size=(n, m, m))
    full = full @ np.swapaxes(full, 1, 2) + 1e-3 * np.eye(m)
    delassus[mode == 1] = full[mode == 1]
    u = rng.normal(size=(n, m))
    delassus[mode == 2] = (u[:, :, None] * u[:, None, :])[mode == 2]
    delassus[mode == 3] = 0.0
    magnitude = rng.choice([1e-6, 1.0, 1e6], size=n)
    delassus *= magnitude[:, None, None]
    free_velocity = rng.normal(size=(n, m)) * rng.choice([1e-6, 1.0, 1e6], size=n)[:, None]
    friction = rng.uniform(0, 1.5, (n, SOLVER_CONTACTS))
    friction[rng.random(n) < 0.3] = 0.0
    compliance = np.where(rng.random((n, 1)) < 0.3, rng.uniform(0, 1e-3, (n, m)), 0.0)
    active = rng.random((n, SOLVER_CONTACTS)) < 0.8
    return dict(delassus=delassus, free_velocity=free_velocity, friction=friction,
                compliance=compliance, active=active, mode=mode,
                t_delassus=rng.normal(size=(n, m, m)), t_free=rng.normal(size=(n, m)),
                t_friction=rng.normal(size=(n, SOLVER_CONTACTS)),
                cotangent=rng.normal(size=(n, SOLVER_CONTACTS, 3)))


def solver_fn():
    def force(delassus, free_velocity, friction, compliance, active):
        problem = contact.ContactProblem(delassus, free_velocity, friction, compliance, active)
        return contact.solve(problem).force

    def one(s):
        sym = 0.5 * (s["t_delassus"] + s["t_delassus"].T)
        f = lambda g, v, mu: force(g, v, mu, s["compliance"], s["active"])  # noqa: E731
        primal = (s["delassus"], s["free_velocity"], s["friction"])
        values, forward = jax.jvp(f, primal, (sym, s["t_free"], s["t_friction"]))
        _, pullback = jax.vjp(f, *primal)
        return values, forward, pullback(s["cotangent"])

    return jax.jit(jax.vmap(one))


def run_generic(name, stream: int, make_samples, fn, samples, chunk, seed, log=print,
                previous: dict | None = None, on_progress=lambda row: None) -> dict:
    row = dict(stage=name)
    row.update(_fuzz(fn, make_samples, samples, chunk, (seed, 1000 + stream), previous,
                     lambda r: on_progress(dict(stage=name, **r))))
    log(f"  {name:<30} n={row['samples']:>7}  non-finite values {row['values']} jvp {row['jvp']} "
        f"vjp {row['vjp']}  (first call {row['first_call_s']:.1f} s, rest {row['run_s']:.1f} s)")
    return row


# -- step stage -----------------------------------------------------------------------------------

_MESH_POINTS = " ".join(f"{x:.4f}" for x in (0.1 * base_mesh().vertices).ravel().tolist())
STEP_SCENE = f"""<mujoco model="fuzz">
  <option timestep="0.002"/>
  <asset><mesh name="hull" vertex="{_MESH_POINTS}"/></asset>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="box" pos="0 0 0.3"><freejoint/><geom type="box" size="0.1 0.07 0.05" mass="1"/></body>
    <body name="ball" pos="0.1 0 0.3"><freejoint/><geom type="sphere" size="0.08" mass="1"/></body>
    <body name="rock" pos="0.1 0.1 0.3"><freejoint/><geom type="mesh" mesh="hull" mass="1"/></body>
  </worldbody>
</mujoco>
"""


def step_model():
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.xml"
        path.write_text(STEP_SCENE)
        return load(path)


def step_samples(rng, n: int, bodies: int = 3) -> dict[str, np.ndarray]:
    pos = rng.uniform([-0.15, -0.15, -0.05], [0.15, 0.15, 0.25], (n, bodies, 3))
    quat = _random_quats(rng, n * bodies).reshape(n, bodies, 4)
    q = np.concatenate([pos, quat], axis=-1).reshape(n, 7 * bodies)
    speed = rng.choice([1.0, 100.0], size=n)
    v = rng.normal(size=(n, 6 * bodies)) * speed[:, None]
    return dict(q=q, v=v, t_q=rng.normal(size=q.shape), t_v=rng.normal(size=v.shape),
                c_q=rng.normal(size=q.shape), c_v=rng.normal(size=v.shape))


def step_fn(model):
    state0 = init(model)

    def next_qv(q, v):
        state = step(model, eqx.tree_at(lambda s: (s.q, s.v), state0, (q, v)))
        return state.q, state.v

    def one(s):
        values, forward = jax.jvp(next_qv, (s["q"], s["v"]), (s["t_q"], s["t_v"]))
        _, pullback = jax.vjp(next_qv, s["q"], s["v"])
        return values, forward, pullback((s["c_q"], s["c_v"]))

    return jax.jit(jax.vmap(one))
