"""The ``jaxsim-contact`` command line.

Subcommands:

* ``demo`` — simulates the embedded default scene (boxes, spheres, a capsule and a convex mesh
  dropped on a plane), prints a summary (steps/s, max penetration, energy, solver residual) and
  writes a self-contained HTML replay;
* ``simulate FILE`` — the same for an MJCF/URDF file (``--steps``, ``--batch``, ``--out``; loading:
  ``--floating-base``, ``--floor``, ``--balance-inertia``, ``--package-dir``; physics:
  ``--solver``, ``--compliance``, ``--float32``);
* ``collide`` — batched collision queries between the built-in shapes (jit + vmap), one table row
  per shape pair and separation: signed distance, GJK iterations per variant, µs/query.
* ``bench`` — runs ``benchmarks/gjk.py --quick`` from a source checkout, or says where the
  benchmarks live.

The CLI is an application, not the library: it enables float64 (``--float32`` to opt out) and JAX's
persistent compilation cache (``--no-cache`` to opt out) so a second ``demo`` starts quickly.

A model that cannot be loaded (any :class:`jaxsim_contact.io.ModelError`, an
``UnsupportedFeatureError``, a missing, unreadable or non-XML file, a directory) is reported as one
line on stderr with exit code 2; ``--debug`` shows the traceback instead. Before simulating, the
start pose is checked with MuJoCo C's collision detection: geom pairs that start interpenetrating
deeper than :data:`PENETRATION_WARNING_DEPTH` are named on stderr (pairs within one kinematic tree
are left to ``jc.load``'s ``SelfOverlapWarning``).
"""

from __future__ import annotations

import argparse
import errno
import itertools
import os
import statistics
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim_contact as jc
from jaxsim_contact.contact._defaults import default_step_solver
from jaxsim_contact.dynamics import kinetic_energy, potential_energy
from jaxsim_contact.io._overlaps import one_mechanism, reference_pose_contacts

__all__ = [
    "main", "demo", "collide", "simulate", "DEMO_SHAPES", "DEFAULT_PAIRS", "build_parser",
    "load_scene", "place_on_floor", "lowest_floor_distance", "initial_penetrations",
    "make_solver", "SOLVERS", "FLOOR_CLEARANCE", "PENETRATION_WARNING_DEPTH",
]

#: built-in shape names used by ``demo``
DEMO_SHAPES = ("sphere", "box", "capsule", "cylinder", "cone", "ellipsoid", "mesh")
#: default pairs: every shape type appears at least once (four compilations per GJK variant)
DEFAULT_PAIRS = ("sphere-box", "capsule-cylinder", "cone-ellipsoid", "mesh-box")
DEFAULT_DISTANCES = (-0.05, 0.0, 0.05, 0.5)
VARIANTS = ("vanilla", "polyak", "nesterov")
#: gap (m) that ``--floor`` leaves between the floor and the lowest collision point of the floating
#: bodies: a few mm, so the robot drops onto the floor instead of starting in a contact
FLOOR_CLEARANCE = 5e-3
#: initial overlaps deeper than this (m) between two geoms are reported before simulating: deeper
#: than the contact margin and the Baumgarte push-out handle quietly (1 cm takes ~10 steps at the
#: default 0.5 m/s cap); a robot through the floor is tens of cm
PENETRATION_WARNING_DEPTH = 1e-2
#: ``--solver`` choices: contact solvers of :mod:`jaxsim_contact.contact`
SOLVERS = ("admm", "newton", "pgs")


def _demo_shape(name: str):
    """A built-in shape of roughly 0.2–0.4 m, by name."""
    if name == "sphere":
        return jc.Sphere(0.3)
    if name == "box":
        return jc.Box(jnp.array([0.3, 0.2, 0.25]))
    if name == "capsule":
        return jc.Capsule(0.15, 0.2)
    if name == "cylinder":
        return jc.Cylinder(0.2, 0.25)
    if name == "cone":
        return jc.Cone(0.25, 0.3)
    if name == "ellipsoid":
        return jc.Ellipsoid(jnp.array([0.35, 0.2, 0.25]))
    if name == "mesh":
        # hull of 64 points on a squashed sphere (deterministic)
        rng = np.random.default_rng(0)
        points = rng.normal(size=(64, 3))
        points /= np.linalg.norm(points, axis=1, keepdims=True)
        return jc.ConvexMesh.from_points(points * np.array([0.3, 0.25, 0.2]))
    raise ValueError(f"unknown demo shape {name!r}; choose from {DEMO_SHAPES}")


def _parse_pair(text: str) -> tuple[str, str]:
    parts = text.split("-")
    if len(parts) != 2 or any(p not in DEMO_SHAPES for p in parts):
        raise argparse.ArgumentTypeError(
            f"pair must be A-B with A, B in {', '.join(DEMO_SHAPES)}; got {text!r}"
        )
    return parts[0], parts[1]


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:  # also rejects nan
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return value


def _chunk_length(steps: int) -> int:
    """Steps per compiled call: a divisor of ``steps`` giving 10–50 progress updates when there is
    one (1000 → 100), else the whole run in one call (no progress bar)."""
    for parts in range(10, 51):
        if steps % parts == 0 and steps // parts >= 10:
            return steps // parts
    return steps


def _progress_bar(done: int, total: int, rate: float, file, width: int = 30) -> None:
    filled = int(width * done / total)
    end = "\n" if done == total else ""
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} steps, {rate:.0f} env-steps/s",
          end=end, file=file, flush=True)


# ---------------------------------------------------------------------------------------------
# Loading a scene: jc.load's own pipeline (prepare_spec → compile_spec → from_mjmodel), with the
# ``--floor`` plane added to the MuJoCo spec, so that the MuJoCo model the start pose is checked on
# and the simulated model are one scene.
# ---------------------------------------------------------------------------------------------


def load_scene(path, *, package_dirs=(), floating_base: bool = False,
               balance_inertia: bool = False, floor: bool = False, dtype=None):
    """Load ``path`` as :func:`jaxsim_contact.load` does, optionally on a floor; returns
    ``(model, mjmodel)``, the simulated :class:`~jaxsim_contact._model.Model` and the compiled
    ``mujoco.MjModel`` of the same scene (same geoms, same ``qpos0``).

    With ``floor``, a plane at z = 0 is added (as :func:`jaxsim_contact.io.add_floor`: friction 1,
    colliding with every geom) and the floating bodies are lifted onto it
    (:func:`place_on_floor`): the model's ``qpos0`` is the placed start pose.

    Raises what :func:`jaxsim_contact.load` raises; a directory raises ``IsADirectoryError``
    (``jc.load`` would call it "not found").
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not an MJCF or URDF file", str(path))
    spec = jc.io.prepare_spec(path, package_dirs=package_dirs, floating_base=floating_base,
                              balance_inertia=balance_inertia)
    floor_name = _add_floor_geom(spec) if floor else None
    mj = jc.io.compile_spec(spec, path)
    if floor_name is not None:
        place_on_floor(mj, _geom_id(mj, floor_name))
    return jc.io.from_mjmodel(mj, source=str(path), dtype=dtype), mj


def _add_floor_geom(spec) -> str:
    """Add the ``--floor`` plane to the world body of ``spec``; returns its (unique) name."""
    import mujoco

    taken = {geom.name for geom in spec.geoms}
    name, suffix = "floor", 0
    while name in taken:  # a model of its own may have a geom called "floor"
        suffix += 1
        name = f"floor_{suffix}"
    spec.worldbody.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_PLANE, size=[10.0, 10.0, 0.1],
                            friction=[1.0, 0.005, 0.0001], contype=1, conaffinity=1)
    return name


def _geom_id(mj, name: str) -> int:
    import mujoco

    return mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_GEOM, name)


def _floating_roots(mj) -> list[int]:
    """Top-level bodies whose first joint is a free joint (floating robots and free objects)."""
    import mujoco

    return [b for b in range(1, mj.nbody)
            if mj.body_parentid[b] == 0 and mj.body_jntnum[b] > 0
            and mj.jnt_type[mj.body_jntadr[b]] == mujoco.mjtJoint.mjJNT_FREE]


def _collides(mj, geom_a: int, geom_b: int) -> bool:
    """MuJoCo's contype/conaffinity filter."""
    return bool(mj.geom_contype[geom_a] & mj.geom_conaffinity[geom_b]
                or mj.geom_contype[geom_b] & mj.geom_conaffinity[geom_a])


def lowest_floor_distance(mj, floor_geom: int, qpos=None, moving_bodies: bool = False) -> float | None:
    """Signed distance (m) from the floor plane ``floor_geom`` to the lowest collision geom of the
    floating bodies at ``qpos`` (default ``qpos0``; negative: below the floor); ``None`` when they
    have none. ``moving_bodies``: of every body not welded to the world instead (a fixed-base
    robot's links).

    MuJoCo C's ``mj_geomDistance`` measures each geom against the plane with the colliders that
    later find the contacts (mesh geoms as their convex hulls), so it is exact for every geom type
    without a support function per type here.
    """
    import mujoco

    roots = set(_floating_roots(mj))
    moves = ((lambda body: mj.body_weldid[body] != 0) if moving_bodies
             else (lambda body: mj.body_rootid[body] in roots))
    geoms = [g for g in range(mj.ngeom)
             if moves(mj.geom_bodyid[g])
             and mj.geom_type[g] != mujoco.mjtGeom.mjGEOM_PLANE and _collides(mj, g, floor_geom)]
    if not geoms:
        return None
    data = mujoco.MjData(mj)
    if qpos is not None:
        data.qpos[:] = qpos
    mujoco.mj_kinematics(mj, data)
    # distmax bounds the search only: geoms farther than it are "at least distmax" above the floor
    distmax = 1e3
    return min(mujoco.mj_geomDistance(mj, data, floor_geom, g, distmax, None) for g in geoms)


def place_on_floor(mj, floor_geom: int, clearance: float = FLOOR_CLEARANCE) -> float:
    """Raise every floating body (free root joint) by one common height so the lowest of their
    collision geoms is ``clearance`` above the floor; edits ``mj.qpos0`` in place and returns the
    lift (m, 0 when they are already that high: a model above the floor is meant to drop).

    One common lift keeps the floating bodies' relative placement (a robot and the object it
    stands next to); bodies welded to the world are not moved.
    """
    lowest = lowest_floor_distance(mj, floor_geom)
    if lowest is None or lowest >= clearance:
        return 0.0
    lift = clearance - lowest
    for root in _floating_roots(mj):
        mj.qpos0[mj.jnt_qposadr[mj.body_jntadr[root]] + 2] += lift
    return lift


# ---------------------------------------------------------------------------------------------
# Checking the start pose
# ---------------------------------------------------------------------------------------------


def initial_penetrations(mj, depth: float = PENETRATION_WARNING_DEPTH) -> list[tuple[int, int, float]]:
    """Geom pairs that overlap by more than ``depth`` (m) at ``qpos0``, as MuJoCo C's collision
    detection finds them (after its own filters: contype/conaffinity, parent–child, ``<exclude>``,
    including the excludes ``jc.load`` adds for overlapping links).

    Pairs within one mechanism are left out (:func:`jaxsim_contact.io._overlaps.one_mechanism`):
    ``jc.load`` already reports those (``SelfOverlapWarning``) and a common lift does not change
    them.

    Returns:
      ``(geom1, geom2, depth)`` per geom pair, deepest first.
    """
    deepest: dict[tuple[int, int], float] = {}
    for geom1, geom2, overlap, excluded in reference_pose_contacts(mj):
        if excluded or overlap <= depth or one_mechanism(mj, geom1, geom2):
            continue
        pair = tuple(sorted((geom1, geom2)))
        deepest[pair] = max(overlap, deepest.get(pair, 0.0))
    return sorted(((a, b, d) for (a, b), d in deepest.items()), key=lambda item: -item[2])


def _geom_label(mj, geom: int) -> str:
    """``world geom 'floor'``, ``body 'FR_calf' geom #7``: names where the model has them, else
    MuJoCo ids (URDF collision geoms are often unnamed)."""
    import mujoco

    geom_name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_GEOM, geom)
    geom_text = f"geom {geom_name!r}" if geom_name else f"geom #{geom}"
    body = int(mj.geom_bodyid[geom])
    if body == 0:
        return f"world {geom_text}"
    body_name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_BODY, body)
    return f"body {body_name!r} {geom_text}" if body_name else f"body #{body} {geom_text}"


def warn_initial_penetrations(mj, source: str, file=None, shown: int = 6) -> list[tuple[int, int, float]]:
    """Print one line on ``file`` (default stderr) naming the geom pairs of
    :func:`initial_penetrations` (the deepest ``shown`` of them) when there are any; returns them."""
    pairs = initial_penetrations(mj)
    if pairs:
        named = "; ".join(f"{_geom_label(mj, a)} and {_geom_label(mj, b)} by {1e3 * d:.1f} mm"
                          for a, b, d in pairs[:shown])
        more = f"; and {len(pairs) - shown} more" if len(pairs) > shown else ""
        hint = ""
        if not _floating_roots(mj):
            hint = " (no body is floating: for a URDF robot pass --floating-base, so --floor can place it)"
        print(f"jaxsim-contact: warning: {source}: {len(pairs)} geom pair(s) start interpenetrating "
              f"deeper than {1e3 * PENETRATION_WARNING_DEPTH:g} mm: {named}{more}; the contacts "
              f"will push them apart{hint}", file=sys.stderr if file is None else file)
    return pairs


def make_solver(name: str, compliance: float = 0.0):
    """The contact solver of ``--solver NAME``: ``admm`` the default (NCP ADMM as set up for
    multibody steps), ``pgs`` projected Gauss–Seidel on the NCP, ``newton`` the primal Newton
    solver of the compliant CCP (needs ``compliance > 0``: with rigid contact its Hessian is
    singular up to a 1e-9 floor and robots diverge; docs/choosing_a_solver.md)."""
    if name == "admm":
        return default_step_solver()
    if name == "pgs":
        return jc.contact.PGS("ncp")
    if name == "newton":
        if compliance <= 0:
            raise ValueError("--solver newton needs --compliance > 0 (the primal Newton solver "
                             "solves the compliant problem; e.g. --compliance 1e-3)")
        return jc.contact.PrimalNewton()
    raise ValueError(f"unknown solver {name!r}; choose from {SOLVERS}")


def apply_physics_flags(model, solver: str = "admm", compliance: float = 0.0):
    """``model`` with the ``--solver`` and ``--compliance`` choices in its options (compliance on
    the normal, friction and joint-limit rows alike, as MuJoCo's soft constraints: the Newton
    solver needs all three to take few iterations, docs/choosing_a_solver.md)."""
    changes = dict(solver=make_solver(solver, compliance))
    if compliance > 0:
        changes.update(compliance=compliance, tangential_compliance=compliance,
                       limit_compliance=compliance)
    return model.replace_options(**changes)


_CACHE_WORDS = {"off": "no persistent cache", "hit": "persistent cache hit: loaded, not compiled",
                "miss": "persistent cache miss: compiled and stored", "none": "already compiled in this process"}


def simulate(model, steps: int = 1000, batch: int = 1, out_html=None, out=None,
             progress: bool = True) -> dict:
    """Roll ``model`` out for ``steps`` steps (``batch`` copies, vmapped) and print a summary.

    Runs of more than ~100 steps go in 10–50 equal chunks of one compiled rollout, with a progress
    bar on stderr (``progress=False`` silences it).

    The copies start from ``qpos0`` with the free bodies' heights jittered by up to 1 cm (so the
    batch is not degenerate). Prints compile time, env-steps/s, max penetration, energy at the
    start and the end, mean solver iterations and the worst solver residual, error bits; writes the
    HTML replay of copy 0 to ``out_html`` when given. Returns the summary as a dict.
    """
    out = sys.stdout if out is None else out
    dtype = model.dtype
    rng = np.random.default_rng(0)
    q0 = np.tile(np.asarray(model.qpos0), (batch, 1))
    for j, jtype in enumerate(model.tree.joint_type):
        if jtype == jc.JointType.FREE and batch > 1:
            q0[1:, model.tree.joint_qpos_adr[j] + 2] += rng.uniform(0, 0.01, batch - 1)
    states = jax.vmap(lambda q: jc.init(model, q=q))(jnp.asarray(q0, dtype))
    chunk = _chunk_length(steps)
    ctrls = jnp.zeros((batch, chunk, model.nu), dtype)
    run = jax.jit(jax.vmap(jc.rollout, in_axes=(None, 0, 0)))
    scene = Path(model.source).name or "the scene"
    with jc.compile_report(f"the rollout of {scene} ({batch} env{'s' if batch > 1 else ''} x {chunk} steps "
                           "per call; XLA may note 'Very slow compile?': its own timer, harmless)",
                           announce=progress) as compiling:
        compiled = run.lower(model, states, ctrls).compile()
    compile_s = compiling.seconds
    # the rollout runs in equal chunks of one compiled program, so long runs can report progress
    final, pieces, run_s = states, [], 0.0
    for done in range(chunk, steps + 1, chunk):
        t0 = time.perf_counter()
        final, piece = compiled(model, final, ctrls)
        jax.block_until_ready(final)
        run_s += time.perf_counter() - t0
        pieces.append(piece)
        if progress and chunk < steps:
            _progress_bar(done, steps, batch * done / run_s, file=sys.stderr)
    traj = jax.tree_util.tree_map(lambda *x: jnp.concatenate(x, axis=1), *pieces)
    energy = jax.jit(jax.vmap(lambda q, v: kinetic_energy(model, q, v) + potential_energy(model, q)))
    e = np.asarray(energy(traj.q[0], traj.v[0]))
    summary = dict(
        steps=steps, batch=batch, compile_s=compile_s, compile_cache=compiling.cache_status, run_s=run_s,
        env_steps_per_s=steps * batch / run_s,
        max_penetration=float(jnp.max(traj.contact.penetration)),
        energy_start=float(e[0]), energy_end=float(e[-1]),
        mean_iterations=float(jnp.mean(traj.contact.iterations)),
        max_residual=float(jnp.max(traj.contact.residual)),
        errors=[int(x) for x in np.asarray(final.error)],
        finite=bool(jnp.all(jnp.isfinite(final.q))),
    )
    print(f"scene       {Path(model.source).name or 'embedded'}: {model.nbody - 1} bodies, nv={model.nv}, "
          f"{sum(g.num_pairs for g in jc.collision.collision_structure(model).groups)} candidate pairs, "
          f"{jc.constraints.num_constraint_slots(model)} constraint slots", file=out)
    print(f"run         {steps} steps x {batch} envs, dt={float(model.options.dt):g} s, "
          f"dtype {jnp.dtype(dtype).name}, backend {jax.default_backend()}", file=out)
    print(f"compile     {compile_s:.1f} s ({_CACHE_WORDS[compiling.cache_status]})", file=out)
    print(f"speed       {summary['env_steps_per_s']:.0f} env-steps/s ({run_s:.2f} s)", file=out)
    print(f"penetration max {summary['max_penetration']:.3e} m", file=out)
    print(f"energy      {summary['energy_start']:.6f} J -> {summary['energy_end']:.6f} J (env 0)", file=out)
    print(f"solver      {type(model.options.solver).__name__}: {summary['mean_iterations']:.1f} "
          "iterations/step (mean), worst residual "
          f"{summary['max_residual']:.2e}", file=out)
    print(f"errors      {summary['errors'][:8]}{' ...' if batch > 8 else ''} (bits: 1 non-finite, "
          "2 solver not converged, 4 contact budget overflow)", file=out)
    if out_html:
        env0, start0 = (jax.tree_util.tree_map(lambda x: x[0], tree) for tree in (traj, states))
        jc.viz.to_html(model, env0, out_html, initial=start0)
        print(f"replay      {out_html}", file=out)
        summary["html"] = str(out_html)
    return summary


def demo(steps: int = 1000, batch: int = 1, out_html="jaxsim_contact_demo.html", out=None) -> dict:
    """Simulate the embedded default scene (:func:`jaxsim_contact.scenes.demo_scene`): boxes,
    spheres, a capsule and a convex mesh dropped on a plane; see :func:`simulate`."""
    return simulate(jc.scenes.load("demo"), steps, batch, out_html, out)


def collide(
    pairs=None,
    distances=DEFAULT_DISTANCES,
    variants=VARIANTS,
    batch: int = 1024,
    repeats: int = 3,
    out=None,
) -> list[dict]:
    """Run batched collision queries on built-in shapes and print a table.

    For each pair ``a-b``, shape b is tilted by a fixed rotation, placed far from a, and translated
    along the closest-point axis (from a first query) so that the separation along that axis is
    each value of ``distances`` — the protocol of seed 000 "GJK++" §IV. The queries are tiled to
    ``batch`` lanes and run through ``jax.jit(jax.vmap(jc.collision.distance))`` per variant
    (compiled ahead of time in parallel threads and timed separately); µs/query is the median of
    ``repeats`` blocked calls divided by ``batch``.

    Args:
      pairs: iterable of ``(name_a, name_b)``; default ``DEFAULT_PAIRS``.
      distances: target separations in metres (negative: overlap).
      variants: GJK variants to run (subset of "vanilla", "polyak", "nesterov").
      batch: lanes per jitted call.
      repeats: timing repeats.
      out: text stream for the table (default ``sys.stdout``).
    Returns:
      One dict per row: ``pair``, ``target``, ``distance`` (first variant), ``iterations``
      ``{variant: int}``, ``us_per_query`` ``{variant: float}``, ``converged`` (all variants).
    """
    out = sys.stdout if out is None else out
    pairs = [tuple(p.split("-")) if isinstance(p, str) else tuple(p) for p in (pairs or DEFAULT_PAIRS)]
    distances = tuple(float(d) for d in distances)
    variants = tuple(variants)
    dtype = jnp.result_type(float)
    identity = jnp.array([1.0, 0.0, 0.0, 0.0], dtype)
    # b is tilted so that no pair is axis-aligned; the approach direction is tilted too
    quat_b = jnp.asarray(jc._math.quat_from_axis_angle(jnp.array([1.0, 1.0, 1.0]) / np.sqrt(3.0), 0.5), dtype)
    approach = jnp.asarray(np.array([1.0, 0.3, -0.2]) / np.linalg.norm([1.0, 0.3, -0.2]), dtype)
    lanes = np.arange(batch) % len(distances)

    def batched(tree):
        return jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), tree)

    # 1. lower and compile every (pair, variant) in parallel threads (XLA releases the GIL)
    jobs = {}
    for name_a, name_b in pairs:
        shape_a, shape_b = _demo_shape(name_a), _demo_shape(name_b)
        far = 2.0 * (shape_a.bounding_radius() + shape_b.bounding_radius()) + 1.0
        pose_a = batched(jc.Transform(jnp.zeros(3, dtype), identity))
        pose_far = batched(jc.Transform(far * approach, quat_b))
        for method in variants:
            fn = jax.jit(
                jax.vmap(lambda pa, pb, m=method, a=shape_a, b=shape_b: jc.collision.distance(a, pa, b, pb, method=m))
            )
            jobs[(name_a, name_b, method)] = (fn, pose_a, pose_far)

    def compile_job(key):
        fn, pose_a, pose_far = jobs[key]
        return key, fn.lower(pose_a, pose_far).compile()

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, min(len(jobs), os.cpu_count() or 1))) as pool:
        compiled = dict(pool.map(compile_job, list(jobs)))
    compile_total = time.perf_counter() - t0

    rows = []
    for name_a, name_b in pairs:
        _, pose_a, pose_far = jobs[(name_a, name_b, variants[0])]
        # 2. place b: from a far pose, translate along the closest-point axis so that the signed
        #    separation along that axis is each requested distance (exact when separated)
        first = compiled[(name_a, name_b, variants[0])](pose_a, pose_far)
        d0, normal = first.signed_distance[0], first.normal[0]
        offsets = (jnp.asarray(distances, dtype) - d0)[lanes, None] * normal
        pose_b = jc.Transform(pose_far.pos + offsets, pose_far.quat)
        # 3. run and time every variant on the same poses
        results = {}
        for method in variants:
            query = compiled[(name_a, name_b, method)]
            res = jax.block_until_ready(query(pose_a, pose_b))
            times = []
            for _ in range(repeats):
                t1 = time.perf_counter()
                jax.block_until_ready(query(pose_a, pose_b))
                times.append(time.perf_counter() - t1)
            results[method] = (res, statistics.median(times) / batch * 1e6)
        for k, target in enumerate(distances):
            res0 = results[variants[0]][0]
            rows.append(
                dict(
                    pair=f"{name_a}-{name_b}",
                    target=target,
                    distance=float(res0.signed_distance[k]),
                    iterations={m: int(results[m][0].iterations[k]) for m in variants},
                    us_per_query={m: float(results[m][1]) for m in variants},
                    converged=bool(all(bool(results[m][0].converged[k]) for m in variants)),
                )
            )

    header = ["pair", "target m", "distance m"] + [f"it {m}" for m in variants] + [f"µs/q {m}" for m in variants] + ["conv"]
    table = [header] + [
        [r["pair"], f"{r['target']:+.3f}", f"{r['distance']:+.6f}"]
        + [str(r["iterations"][m]) for m in variants]
        + [f"{r['us_per_query'][m]:.2f}" for m in variants]
        + ["yes" if r["converged"] else "NO"]
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print("  ".join(cell.rjust(w) for cell, w in zip(row, widths)), file=out)
        if i == 0:
            print("  ".join("-" * w for w in widths), file=out)
    print(
        f"\n{len(rows)} rows; batch {batch} per call (jit + vmap), dtype {jnp.dtype(dtype).name}, "
        f"backend {jax.default_backend()}; compilation {compile_total:.1f} s wall for {len(jobs)} "
        "functions (parallel threads; excluded from µs/query). `distance`: signed distance from the "
        f"{variants[0]} run (< 0: penetration depth from EPA; for negative targets the overlap is set "
        "along the closest-point axis, so the depth can be smaller).",
        file=out,
    )
    return rows


def _bench(args) -> int:
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "gjk.py"
    if not script.exists():
        print(
            "The benchmarks are scripts in the source repository (benchmarks/gjk.py); "
            "clone it and run `python benchmarks/gjk.py --quick`. Results: benchmarks/results/."
        )
        return 0
    cmd = [sys.executable, str(script)] + ([] if args.full else ["--quick"])
    print("running", " ".join(cmd), flush=True)
    return subprocess.call(cmd)


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown (``(default: 1000)``), except for switches and unset options (where
    ``(default: False)`` / ``(default: None)`` says nothing); descriptions keep their line breaks."""

    def _get_help_string(self, action):
        if action.default is None or action.nargs == 0:  # unset, or a switch (takes no value)
            return action.help
        if isinstance(action.default, (list, tuple)):  # "-0.05 0.0 0.5", as typed, not a repr
            return f"{action.help} (default: {' '.join(map(str, action.default))})"
        return super()._get_help_string(action)


_DESCRIPTION = """\
jaxsim-contact: simulate MJCF and URDF models with the jaxsim_contact JAX
physics engine, replay them in a browser, and time its collision queries.

examples:
  jaxsim-contact demo
  jaxsim-contact simulate robot.urdf --floating-base --floor --steps 500
  jaxsim-contact simulate scene.xml --solver newton --compliance 1e-3 --batch 32
  jaxsim-contact COMMAND --help
"""

_SIMULATE_DESCRIPTION = f"""\
Simulate an MJCF (.xml) or URDF (.urdf) file from its reference pose with zero
controls, print a summary (speed, penetration, energy, solver) and write an
HTML replay of environment 0.

A file that cannot be loaded is reported in one line (exit code 2; --debug
shows the traceback). Geom pairs that start interpenetrating deeper than
{1e3 * PENETRATION_WARNING_DEPTH:g} mm are named on stderr before simulating.

URDF robots: MuJoCo welds the root link to the world, so pass --floating-base
for legged robots and humanoids, and --floor to stand them on a floor.
"""


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``jaxsim-contact``."""
    parser = argparse.ArgumentParser(prog="jaxsim-contact", description=_DESCRIPTION,
                                     formatter_class=_HelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # flags every subcommand takes (after the subcommand name)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true",
                        help="show Python tracebacks and full warnings instead of one-line messages")

    def add_command(name, text, description=None):
        return sub.add_parser(name, help=text, description=description or text[0].upper() + text[1:] + ".",
                              parents=[common], formatter_class=_HelpFormatter)

    d = add_command("demo", "simulate the embedded default scene and write an HTML replay")
    d.add_argument("--steps", type=int, default=1000, help="time steps")
    d.add_argument("--batch", type=int, default=1, help="environments (vmapped)")
    d.add_argument("--out", default="jaxsim_contact_demo.html", help="HTML replay file ('' for none)")
    d.add_argument("--float32", action="store_true", help="run in float32 (default: float64)")
    d.add_argument("--no-cache", action="store_true", help="do not use JAX's persistent compilation cache")

    f = add_command("simulate", "simulate an MJCF/URDF file and write an HTML replay",
                    _SIMULATE_DESCRIPTION)
    f.add_argument("file", help="MJCF (.xml) or URDF (.urdf) file")
    f.add_argument("--steps", type=int, default=1000, help="time steps")
    f.add_argument("--batch", type=int, default=1, help="environments (vmapped)")
    f.add_argument("--out", default="replay.html", help="HTML replay file ('' for none)")
    f.add_argument("--floor", action="store_true",
                   help="add a floor plane at z = 0 and lift the floating bodies so their lowest "
                        f"collision point starts {1e3 * FLOOR_CLEARANCE:g} mm above it")
    f.add_argument("--floating-base", action="store_true",
                   help="give each root body without a joint a free joint (URDF robots that walk or fly)")
    f.add_argument("--balance-inertia", action="store_true",
                   help="let MuJoCo repair link inertias that violate the triangle inequality")
    f.add_argument("--package-dir", action="append", default=None, metavar="DIR",
                   help="directory searched for URDF package://PKG/... meshes (repeatable; "
                        "example-robot-data is searched after these)")
    f.add_argument("--solver", choices=SOLVERS, default="admm",
                   help="contact solver: admm (NCP ADMM), pgs (projected Gauss-Seidel), "
                        "newton (primal Newton; needs --compliance > 0)")
    f.add_argument("--compliance", type=_non_negative_float, default=0.0, metavar="R",
                   help="soft contacts and joint limits: compliance R of the normal, friction and "
                        "limit rows, (m/s^2)/N; 0 is rigid; 1e-3 suits robots")
    f.add_argument("--float32", action="store_true", help="load and run in float32 (default: float64)")
    f.add_argument("--no-cache", action="store_true", help="do not use JAX's persistent compilation cache")

    p = add_command("collide", "batched collision queries on the built-in shapes")
    p.add_argument(
        "--pairs", nargs="+", type=_parse_pair, default=None,
        help=f"shape pairs A-B (default: {' '.join(DEFAULT_PAIRS)}); shapes: {', '.join(DEMO_SHAPES)}",
    )
    p.add_argument("--all-pairs", action="store_true", help="every shape-type combination (slow: one compile each)")
    p.add_argument("--distances", nargs="+", type=float, default=list(DEFAULT_DISTANCES), help="target separations (m)")
    p.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS), help="GJK variants")
    p.add_argument("--batch", type=int, default=1024, help="queries per jitted call")
    p.add_argument("--repeats", type=int, default=3, help="timing repeats")
    p.add_argument("--float32", action="store_true", help="run in float32 (default: float64)")
    p.add_argument("--no-cache", action="store_true", help="do not use JAX's persistent compilation cache")

    b = add_command("bench", "run benchmarks/gjk.py --quick (source checkout)")
    b.add_argument("--full", action="store_true", help="run the full benchmark instead of --quick")
    return parser


def _load_error_message(err: BaseException) -> str:
    """One line naming the problem: the library's messages already name the file, the element and
    the value; an OS error names the file and the reason."""
    if isinstance(err, OSError) and err.filename and err.strerror:
        text = f"{err.filename}: {err.strerror}"
    else:
        text = str(err)
    if isinstance(err, jc.io.ModelParseError) and "malformed XML" in text:
        text += " (expected an MJCF or URDF file, which are XML)"
    if "balance_inertia=True" in text:  # the library's hint, in the command line's words
        text += " (on the command line: --balance-inertia)"
    return " ".join(text.split())


def _print_warning_line(message, category, filename, lineno, file=None, line=None):
    """``warnings.showwarning`` of the command line: one line, no source location."""
    text = " ".join(str(message).split())
    print(f"jaxsim-contact: warning ({category.__name__}): {text}", file=sys.stderr if file is None else file)


def _print_error(message: str) -> int:
    """Report a problem the user can fix in one line on stderr; returns the exit code 2 (as
    argparse's for bad arguments)."""
    print(f"jaxsim-contact: error: {message}", file=sys.stderr)
    return 2


def _run_simulate(args) -> int:
    """``simulate``: load (one line and exit code 2 on a load error), place, check, simulate."""
    if args.solver == "newton" and args.compliance <= 0:
        return _print_error("--solver newton needs --compliance > 0 (e.g. --compliance 1e-3)")
    try:
        model, mj = load_scene(args.file, package_dirs=args.package_dir or (),
                               floating_base=args.floating_base, balance_inertia=args.balance_inertia,
                               floor=args.floor, dtype=jnp.float32 if args.float32 else jnp.float64)
    except (jc.io.ModelError, jc.io.UnsupportedFeatureError, OSError) as err:
        if args.debug:
            raise
        return _print_error(_load_error_message(err))
    warn_initial_penetrations(mj, args.file)
    model = apply_physics_flags(model, args.solver, args.compliance)
    simulate(model, args.steps, args.batch, args.out or None)
    return 0


def _run_demo(args) -> int:
    import mujoco

    warn_initial_penetrations(mujoco.MjModel.from_xml_string(jc.scenes.demo_scene()), "demo scene")
    demo(args.steps, args.batch, args.out or None)
    return 0


def main(argv=None) -> int:
    """Entry point of the ``jaxsim-contact`` console script; returns the exit code (2 for a model
    that cannot be loaded and for bad arguments)."""
    args = build_parser().parse_args(argv)
    if args.command == "bench":
        return _bench(args)

    jax.config.update("jax_enable_x64", not args.float32)
    with warnings.catch_warnings():
        if not args.debug:
            warnings.showwarning = _print_warning_line
        if not args.no_cache:
            jc.enable_compilation_cache()
        if args.command == "demo":
            return _run_demo(args)
        if args.command == "simulate":
            return _run_simulate(args)
        pairs = args.pairs
        if args.all_pairs:
            pairs = list(itertools.combinations_with_replacement(DEMO_SHAPES, 2))
        collide(pairs, args.distances, tuple(args.variants), args.batch, args.repeats)
        return 0


if __name__ == "__main__":
    sys.exit(main())
