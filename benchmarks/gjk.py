"""GJK++ benchmark (seed 000 "GJK++" §IV) for jaxsim_contact, with coal as the peer in the same run.

Protocol
--------
* Ellipsoids: random positive-definite matrices = random rotation × axis-aligned semi-axes drawn
  uniformly in [0.05, 1] m (the rotation goes into the pose). Convex hulls: N points on the surface
  of a random ellipsoid, so the hull has exactly N vertices (N = 100 and 1000).
* Each pair gets a uniformly random relative rotation and a random translation direction; coal
  (tight tolerance) computes the closest points, and shape b is translated along that closest-point
  axis so that the separation equals each target d ∈ {−0.1, −0.01, 0, 0.01, 0.1, 1} m. For d < 0
  this sets the overlap *along that axis*; the true penetration depth (coal's EPA, recorded as the
  reference) can be smaller — the seed does the same. The reference distance is the median of six
  tight coal solves (``coal_reference``): single tight coal solves are not reliable to 1e-6.
* GJK tolerance ε = 1e-8 for both libraries: coal uses the duality-gap criterion with an absolute
  threshold (gap ≤ 1e-8, the seed's setting); jaxsim_contact's criterion is relative
  (gap ≤ εL(|x| + εL), L = sum of bounding radii, see ``collision._gjk.run_gjk``). Warm start: the
  difference of the shape centres for jaxsim_contact, the bounding-box centres for coal
  (``GJKInitialGuess.BoundingVolumeGuess``), as in the seed.
* jaxsim_contact timings: ``jax.jit(jax.vmap(distance))`` at batch 4096 (pairs cycled to fill the
  batch; one call, blocked with ``block_until_ready``; median of ``--repeats`` calls) and
  ``jax.jit(distance)`` at batch 1 (one call per pair, each blocked; includes JAX's per-call
  dispatch). Compile time (first call) is reported separately.
* coal timings: (a) a tight Python loop over ``coal.distance`` — dominated by Python/boost overhead;
  (b) "native": ``coal.ComputeDistance`` with ``DistanceRequest.enable_timings``, which times only
  the C++ call (``DistanceResult.timings.user``, µs). Ratios use (b).
* Convex meshes: support by dense max over the vertices (the library default) versus hill-climbing
  over the precomputed neighbour lists (``geometry.hill_climbing_support_index``), timed both as a
  bare support query and inside GJK (cold start at vertex 0: ``run_gjk``'s support interface carries
  no per-shape state, so a warm start from the previous support is not possible there).

Run ``python benchmarks/gjk.py --quick`` (< 3 min) or ``python benchmarks/gjk.py`` (full). Results go
to ``benchmarks/results/gjk.json`` and ``benchmarks/results/gjk.md`` (``--quick`` writes
``gjk_quick.*``). Everything runs in float64.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from functools import partial
from pathlib import Path

from _common import enable_float64, loadavg, median_time, write_results

enable_float64()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import trimesh  # noqa: E402

import jaxsim_contact as jc  # noqa: E402
from jaxsim_contact.collision import distance  # noqa: E402
from jaxsim_contact.collision._gjk import run_gjk  # noqa: E402
from jaxsim_contact.geometry import hill_climbing_support_index  # noqa: E402

try:
    import coal
except ImportError:  # pragma: no cover - coal is a test extra
    coal = None

DISTANCES = (-0.1, -0.01, 0.0, 0.01, 0.1, 1.0)
VARIANTS = ("vanilla", "polyak", "nesterov")
TOLERANCE = 1e-8
MAX_ITERATIONS = 128
RESULTS_DIR = Path(__file__).resolve().parent / "results"


# ----------------------------------------------------------------------------- helpers


def random_rotations(rng: np.random.Generator, n: int) -> np.ndarray:
    """Uniformly random rotations as unit quaternions ``(n, 4)`` (w, x, y, z), w ≥ 0."""
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return q * np.sign(q[:, :1] + 1e-300)


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices ``(..., 3, 3)`` of unit quaternions ``(..., 4)`` (w, x, y, z), as numpy."""
    return np.asarray(jc._math.quat_to_matrix(jnp.asarray(q)))


def stack(trees):
    """Stack a list of equal-structure pytrees along a new leading axis."""
    return jax.tree.map(lambda *x: jnp.stack(x), *trees)


def take(tree, index):
    """Gather ``index`` along the leading axis of every leaf."""
    return jax.tree.map(lambda x: x[index], tree)


def coal_transform(pos, quat):
    """coal ``Transform3s`` from a position and a (w, x, y, z) quaternion."""
    return coal.Transform3s(quat_to_matrix(np.asarray(quat)), np.asarray(pos, dtype=np.float64))


def coal_convex(vertices: np.ndarray, faces: np.ndarray):
    """coal ``Convex`` polytope from hull vertices and triangles (coal here is built without qhull)."""
    points = coal.StdVec_Vec3s()
    points.extend([np.asarray(v, dtype=np.float64) for v in vertices])
    triangles = coal.StdVec_Triangle()
    triangles.extend([coal.Triangle(int(a), int(b), int(c)) for a, b, c in faces])
    return coal.Convex(points, triangles)


def coal_request(variant: str, tolerance: float = TOLERANCE, timings: bool = False):
    """coal ``DistanceRequest`` configured like the seed's benchmark (duality gap, absolute ε)."""
    req = coal.DistanceRequest()
    req.gjk_variant = {
        "vanilla": coal.GJKVariant.DefaultGJK,
        "polyak": coal.GJKVariant.PolyakAcceleration,
        "nesterov": coal.GJKVariant.NesterovAcceleration,
    }[variant]
    req.gjk_convergence_criterion = coal.GJKConvergenceCriterion.DualityGap
    req.gjk_convergence_criterion_type = coal.GJKConvergenceCriterionType.Absolute
    req.gjk_tolerance = tolerance
    req.gjk_max_iterations = MAX_ITERATIONS
    req.gjk_initial_guess = coal.GJKInitialGuess.BoundingVolumeGuess
    req.epa_tolerance = 1e-8
    req.enable_timings = timings
    return req


# ----------------------------------------------------------------------------- pair generation


class PairSet:
    """One family of shape pairs (ellipsoids or hulls) at every target distance.

    Attributes: ``kind``; ``shapes_a``/``shapes_b`` stacked jaxsim shapes ``(n, ...)``;
    ``coal_a``/``coal_b`` lists of coal shapes; ``quat_a``, ``quat_b`` ``(n, 4)``; ``pos_a``
    ``(n, 3)``; ``pos_b`` ``{d: (n, 3)}``; ``reference`` ``{d: (n,)}`` coal's tight signed distance;
    ``centers_a``/``centers_b`` ``(n, 3)`` local interior points (jaxsim's warm start).
    """


def coal_reference(shape_a, tf_a, shape_b, tf_b):
    """Reference signed distance and nearest points: the median of six tight coal solves.

    coal's GJK occasionally breaks down at very tight tolerances (e.g. vanilla at ε = 1e-12 returning
    a distance 1e-5 *below* the true one for distant ellipsoids), and its EPA sometimes fails at
    epa_tolerance 1e-10 (returns −DBL_MAX). The median over the three variants at ε ∈ {1e-10, 1e-12}
    (EPA tolerance 1e-8, retried at 1e-6 on failure) is robust to one bad solve.
    """
    runs = []
    for variant in VARIANTS:
        for tol in (1e-10, 1e-12):
            req = coal_request(variant, tolerance=tol)
            req.gjk_max_iterations = 1000
            req.epa_max_iterations = 1000
            res = coal.DistanceResult()
            d = coal.distance(shape_a, tf_a, shape_b, tf_b, req, res)
            if abs(d) > 1e3:  # EPA failure
                req.epa_tolerance = 1e-6
                res = coal.DistanceResult()
                d = coal.distance(shape_a, tf_a, shape_b, tf_b, req, res)
            runs.append((d, np.array(res.getNearestPoint1()), np.array(res.getNearestPoint2())))
    runs.sort(key=lambda r: r[0])
    return runs[len(runs) // 2]


def make_pairs(kind: str, n: int, rng: np.random.Generator, num_vertices: int | None = None):
    """Random pairs of ``kind`` ("ellipsoid" or "mesh") placed at every distance in ``DISTANCES``."""
    ps = PairSet()
    ps.kind = kind
    ps.n = n
    radii = rng.uniform(0.05, 1.0, size=(2, n, 3))
    if kind == "ellipsoid":
        ps.shapes_a = jc.Ellipsoid(jnp.asarray(radii[0]))
        ps.shapes_b = jc.Ellipsoid(jnp.asarray(radii[1]))
        ps.coal_a = [coal.Ellipsoid(*r) for r in radii[0]]
        ps.coal_b = [coal.Ellipsoid(*r) for r in radii[1]]
        ps.bound_a, ps.bound_b = radii[0].max(1), radii[1].max(1)
        ps.centers_a = ps.centers_b = np.zeros((n, 3))
        ps.max_neighbors = None
    else:
        hulls = []
        for side in range(2):
            for i in range(n):
                d = rng.normal(size=(num_vertices, 3))
                d /= np.linalg.norm(d, axis=1, keepdims=True)
                hulls.append(trimesh.convex.convex_hull(d * radii[side, i]))
        degree = max(max(len(nb) for nb in h.vertex_neighbors) for h in hulls)
        nverts = max(len(h.vertices) for h in hulls)
        nfaces = max(len(h.faces) for h in hulls)
        meshes = [
            jc.ConvexMesh.from_points(
                h.vertices, max_vertices=nverts, max_neighbors=degree, max_faces=nfaces
            )
            for h in hulls
        ]
        ps.shapes_a, ps.shapes_b = stack(meshes[:n]), stack(meshes[n:])
        ps.coal_a = [coal_convex(h.vertices, h.faces) for h in hulls[:n]]
        ps.coal_b = [coal_convex(h.vertices, h.faces) for h in hulls[n:]]
        ps.bound_a = np.array([np.linalg.norm(h.vertices - h.centroid, axis=1).max() for h in hulls[:n]])
        ps.bound_b = np.array([np.linalg.norm(h.vertices - h.centroid, axis=1).max() for h in hulls[n:]])
        ps.centers_a = np.array([h.centroid for h in hulls[:n]])
        ps.centers_b = np.array([h.centroid for h in hulls[n:]])
        ps.num_vertices = nverts
        ps.max_neighbors = degree
    for s in ps.coal_a + ps.coal_b:
        s.computeLocalAABB()

    ps.quat_a, ps.quat_b = random_rotations(rng, n), random_rotations(rng, n)
    ps.pos_a = np.zeros((n, 3))
    direction = rng.normal(size=(n, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    start = direction * (ps.bound_a + ps.bound_b + 0.5)[:, None]

    ps.pos_b = {d: np.zeros((n, 3)) for d in DISTANCES}
    ps.reference = {d: np.zeros(n) for d in DISTANCES}
    tf_a = [coal_transform(ps.pos_a[i], ps.quat_a[i]) for i in range(n)]
    for i in range(n):
        d0, p1, p2 = coal_reference(ps.coal_a[i], tf_a[i], ps.coal_b[i], coal_transform(start[i], ps.quat_b[i]))
        axis = (p2 - p1) / d0
        for d in DISTANCES:
            pos = start[i] + (d - d0) * axis
            ps.pos_b[d][i] = pos
            ps.reference[d][i] = coal_reference(
                ps.coal_a[i], tf_a[i], ps.coal_b[i], coal_transform(pos, ps.quat_b[i])
            )[0]
    return ps


def jax_poses(ps: PairSet, d: float, index: np.ndarray):
    """Stacked ``(Transform a, Transform b)`` for the pairs ``index`` at distance ``d``."""
    pose_a = jc.Transform(jnp.asarray(ps.pos_a[index]), jnp.asarray(ps.quat_a[index]))
    pose_b = jc.Transform(jnp.asarray(ps.pos_b[d][index]), jnp.asarray(ps.quat_b[index]))
    return pose_a, pose_b


# ----------------------------------------------------------------------------- jaxsim timing


def bench_jax(ps: PairSet, batch: int, batch1_queries: int, repeats: int, log):
    """Iterations, accuracy and µs/query of jaxsim_contact on ``ps`` for every variant and distance."""
    out = {}
    index = np.arange(batch) % ps.n
    shapes_a, shapes_b = take(ps.shapes_a, index), take(ps.shapes_b, index)
    for method in VARIANTS:
        query = partial(distance, method=method, max_iterations=MAX_ITERATIONS, tolerance=TOLERANCE)
        batched = jax.jit(jax.vmap(query))
        single = jax.jit(query)
        entry = {}
        for k, d in enumerate(DISTANCES):
            pose_a, pose_b = jax_poses(ps, d, index)
            args = (shapes_a, pose_a, shapes_b, pose_b)
            if k == 0:
                t0 = time.perf_counter()
                jax.block_until_ready(batched(*args))
                compile_batched = time.perf_counter() - t0
            res = jax.block_until_ready(batched(*args))
            t_batch = median_time(lambda: jax.block_until_ready(batched(*args)), repeats)
            # CPU time of this process (all its threads): what the query costs when the shared
            # machine's other jobs delay it; equal to the wall time on an idle pinned core.
            t_batch_cpu = median_time(
                lambda: jax.block_until_ready(batched(*args)), repeats, clock=time.process_time
            )

            # batch 1: one blocked call per pair (same compiled function for every pair)
            singles = []
            for i in range(min(batch1_queries, ps.n)):
                pa, pb = jax_poses(ps, d, np.array(i))
                singles.append((take(ps.shapes_a, i), pa, take(ps.shapes_b, i), pb))
            if k == 0:
                t0 = time.perf_counter()
                jax.block_until_ready(single(*singles[0]))
                compile_single = time.perf_counter() - t0

            def run_singles():
                for a in singles:
                    jax.block_until_ready(single(*a))

            t_single = median_time(run_singles, max(1, repeats // 2)) / len(singles)

            n = ps.n
            iters = np.asarray(res.iterations[:n])
            signed = np.asarray(res.signed_distance[:n])
            ref = ps.reference[d]
            err = np.abs(signed - ref)
            sep = ref > 1e-9
            entry[str(d)] = dict(
                mean_iterations=float(iters.mean()),
                max_iterations=int(iters.max()),
                mean_epa_iterations=float(np.asarray(res.epa_iterations[:n]).mean()),
                converged_fraction=float(np.asarray(res.converged[:n]).mean()),
                us_per_query_batch=t_batch / batch * 1e6,
                us_per_query_batch_cpu=t_batch_cpu / batch * 1e6,
                us_per_query_batch1=t_single * 1e6,
                max_abs_error_vs_coal_separated=float(err[sep].max()) if sep.any() else None,
                max_abs_error_vs_coal_penetrating=float(err[~sep].max()) if (~sep).any() else None,
                nan_count=int(np.sum(~np.isfinite(signed))),
            )
            log(
                f"  jax {ps.label:>10s} {method:8s} d={d:+.2f}: it {iters.mean():5.1f}/{iters.max():3d} "
                f"batch {entry[str(d)]['us_per_query_batch']:8.2f} µs/q  b1 {t_single * 1e6:8.1f} µs  "
                f"err {err.max():.1e} conv {entry[str(d)]['converged_fraction']:.3f}"
            )
        out[method] = dict(
            per_distance=entry,
            compile_s_batch=compile_batched,
            compile_s_batch1=compile_single,
        )
    return out


# ----------------------------------------------------------------------------- coal timing


def bench_coal(ps: PairSet, repeats: int, log):
    """coal on the same pairs: Python-loop µs/query, native (C++-timed) µs/query, iterations."""
    out = {}
    tf_a = [coal_transform(ps.pos_a[i], ps.quat_a[i]) for i in range(ps.n)]
    for method in VARIANTS:
        req = coal_request(method)
        req_t = coal_request(method, timings=True)
        entry = {}
        for d in DISTANCES:
            tf_b = [coal_transform(ps.pos_b[d][i], ps.quat_b[i]) for i in range(ps.n)]
            res = coal.DistanceResult()
            triples = list(zip(ps.coal_a, tf_a, ps.coal_b, tf_b))

            # The result must be cleared before every call: coal keeps the minimum over calls and
            # skips the query (≈0.03 µs) when a stored result already shows penetration.
            def loop():
                for sa, ta, sb, tb in triples:
                    res.clear()
                    coal.distance(sa, ta, sb, tb, req, res)

            t_loop = median_time(loop, repeats) / ps.n
            functors = [coal.ComputeDistance(sa, sb) for sa, _, sb, _ in triples]
            native_runs = []
            signed = np.zeros(ps.n)
            for _ in range(repeats):
                total = 0.0
                for i, (f, (_, ta, _, tb)) in enumerate(zip(functors, triples)):
                    res.clear()
                    signed[i] = f(ta, tb, req_t, res)
                    total += res.timings.user
                native_runs.append(total / ps.n)
            # iterations: the GJK object on the same Minkowski difference and initial guess
            iters = np.zeros(ps.n, int)
            for i, (sa, ta, sb, tb) in enumerate(triples):
                mink = coal.MinkowskiDiff()
                mink.set(sa, sb, ta, tb, False)
                gjk = coal.GJK(MAX_ITERATIONS, TOLERANCE)
                gjk.gjk_variant = req.gjk_variant
                gjk.convergence_criterion = req.gjk_convergence_criterion
                gjk.convergence_criterion_type = req.gjk_convergence_criterion_type
                # coal's GJK works in shape a's frame (GJKSolver's BoundingVolumeGuess)
                cb_in_a = ta.getRotation().T @ (np.asarray(tb.transform(sb.aabb_center)) - ta.getTranslation())
                guess = np.asarray(sa.aabb_center) - cb_in_a
                gjk.evaluate(mink, guess, np.zeros(2, dtype=np.int32))
                iters[i] = gjk.getNumIterations()
            failed = np.abs(signed) > 1e3  # coal's EPA failure value is -DBL_MAX
            err = np.abs(signed - ps.reference[d])[~failed]
            entry[str(d)] = dict(
                failures=int(failed.sum()),
                us_per_query_python_loop=t_loop * 1e6,
                us_per_query_native=statistics.median(native_runs),
                mean_iterations=float(iters.mean()),
                max_iterations=int(iters.max()),
                max_abs_error_vs_tight_reference=float(err.max()) if err.size else None,
            )
            log(
                f"  coal {ps.label:>10s} {method:8s} d={d:+.2f}: it {iters.mean():5.1f}/{iters.max():3d} "
                f"loop {t_loop * 1e6:6.2f} µs/q native {entry[str(d)]['us_per_query_native']:6.2f} µs/q"
            )
        out[method] = entry
    return out


# ----------------------------------------------------------------------------- mesh support


def _world_support_dense(mesh, pose):
    def fn(direction):
        return pose.apply(mesh.support_core(pose.inverse_rotate(direction)))

    return fn


def _world_support_hill(mesh, pose, max_steps):
    def fn(direction):
        local = pose.inverse_rotate(direction)
        index = hill_climbing_support_index(mesh, local, jnp.zeros((), jnp.int32), max_steps)
        return pose.apply(mesh.vertices[index])

    return fn


def _gjk_only(support_kind, method, max_steps, mesh_a, pose_a, mesh_b, pose_b):
    """GJK (no EPA) between two meshes with the chosen support routine; returns (|x|, iterations)."""
    make = _world_support_dense if support_kind == "dense" else partial(_world_support_hill, max_steps=max_steps)
    sup_a, sup_b = make(mesh_a, pose_a), make(mesh_b, pose_b)

    def support(direction):
        pa, pb = sup_a(direction), sup_b(-direction)
        return pa - pb, pa, pb

    x0 = pose_a.apply(mesh_a.center) - pose_b.apply(mesh_b.center)
    length = mesh_a.bounding_radius() + mesh_b.bounding_radius()
    state = run_gjk(
        support, x0, length, method=method, max_iterations=MAX_ITERATIONS, tolerance=TOLERANCE
    )
    return jnp.linalg.norm(state.x), state.iterations


def bench_mesh_support(ps: PairSet, batch: int, repeats: int, log, method="nesterov"):
    """Dense max vs hill-climbing: bare support queries and whole GJK runs (batched)."""
    rng = np.random.default_rng(1)
    index = np.arange(batch) % ps.n
    meshes = take(ps.shapes_a, index)
    max_steps = int(ps.num_vertices)  # a cap the climb never needs; it stops at the optimum
    out = {"max_neighbors": ps.max_neighbors, "num_vertices": int(ps.num_vertices)}

    # bare support queries: cold start (vertex 0) and warm start (support of a nearby direction,
    # ~0.1 rad away, as between successive GJK iterations)
    dirs = rng.normal(size=(batch, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    near = dirs + 0.1 * rng.normal(size=(batch, 3))
    dirs, near = jnp.asarray(dirs), jnp.asarray(near)

    dense = jax.jit(jax.vmap(lambda m, u: jnp.argmax(m.vertices @ u)))
    hill = jax.jit(jax.vmap(lambda m, u, s: hill_climbing_support_index(m, u, s, max_steps)))
    warm_start = dense(meshes, near)
    cold_start = jnp.zeros(batch, jnp.int32)
    ref = np.asarray(dense(meshes, dirs))
    for name, fn, args in (
        ("dense_max", dense, (meshes, dirs)),
        ("hill_climb_cold", hill, (meshes, dirs, cold_start)),
        ("hill_climb_warm", hill, (meshes, dirs, warm_start)),
    ):
        t0 = time.perf_counter()
        got = np.asarray(jax.block_until_ready(fn(*args)))
        compile_s = time.perf_counter() - t0
        t = median_time(lambda: jax.block_until_ready(fn(*args)), repeats)
        verts = np.asarray(meshes.vertices)
        score_ref = np.einsum("bi,bi->b", verts[np.arange(batch), ref], np.asarray(dirs))
        score_got = np.einsum("bi,bi->b", verts[np.arange(batch), got], np.asarray(dirs))
        out[f"support_{name}"] = dict(
            ns_per_query_batch=t / batch * 1e9,
            compile_s=compile_s,
            max_score_gap_vs_dense=float(np.max(score_ref - score_got)),
        )
        log(f"  support {ps.label:>10s} {name:16s}: {t / batch * 1e9:8.1f} ns/query (batch {batch})")

    # whole GJK (no EPA), cold-started hill-climbing vs dense, at every distance
    pa_idx = index
    for kind in ("dense", "hill"):
        fn = jax.jit(jax.vmap(partial(_gjk_only, kind, method, max_steps)))
        entry = {}
        for k, d in enumerate(DISTANCES):
            pose_a, pose_b = jax_poses(ps, d, pa_idx)
            args = (take(ps.shapes_a, pa_idx), pose_a, take(ps.shapes_b, pa_idx), pose_b)
            if k == 0:
                t0 = time.perf_counter()
                jax.block_until_ready(fn(*args))
                entry["compile_s"] = time.perf_counter() - t0
            norm, iters = jax.block_until_ready(fn(*args))
            t = median_time(lambda: jax.block_until_ready(fn(*args)), repeats)
            entry[str(d)] = dict(
                us_per_query_batch=t / batch * 1e6,
                mean_iterations=float(np.asarray(iters[: ps.n]).mean()),
            )
        out[f"gjk_{kind}_{method}"] = entry
        log(
            f"  gjk-only {ps.label:>10s} {kind:5s}: "
            + " ".join(f"{d:+.2f}:{entry[str(d)]['us_per_query_batch']:.2f}µs" for d in DISTANCES)
        )
    return out


# ----------------------------------------------------------------------------- report


def markdown(results) -> str:
    """Render the results dictionary as Markdown tables."""
    meta = results["meta"]
    lines = [
        "# GJK++ benchmark (seed 000 §IV) — jaxsim_contact vs coal",
        "",
        f"Generated by `{meta['command']}` on {meta['date']}. dtype **float64**; "
        f"{meta['machine']}; JAX {meta['jax']} ({meta['backend']}), coal {meta['coal']}; "
        f"jaxsim_contact commit {meta['library_commit']}. "
        + (
            f"CPU affinity {meta['cpu_affinity']}, XLA_FLAGS `{meta.get('xla_flags') or '(none)'}`. "
            if "cpu_affinity" in meta
            else ""
        )
        + f"CPU load average at start/end: {meta['loadavg_start']} / {meta['loadavg_end']} "
        "(the machine's 2 cores are shared with another engineer's jobs, so absolute times are "
        "noisy; ratios within one run are more reliable).",
        "",
        f"Pairs: {meta['pairs']}. ε = {TOLERANCE:g} (coal: absolute duality gap; jaxsim: relative, "
        "gap ≤ εL(|x|+εL)). Batch = " + str(meta["batch"]) + " (pairs cycled), batch-1 over "
        f"{meta['batch1_queries']} pairs; steady state = median of {meta['repeats']} repeats. "
        "coal native = C++ time from `DistanceRequest.enable_timings` (`ComputeDistance`); "
        "coal loop = Python loop over `coal.distance` (mostly Python/boost overhead).",
        "",
    ]
    for family, fam in results["families"].items():
        lines += [f"## {family}", ""]
        lines += [
            "| d (m) | variant | jax it mean / max | coal it mean / max | jax µs/q batch "
            f"{meta['batch']} (wall / CPU) | jax µs/q batch 1 | coal native µs/q | coal loop µs/q | "
            "batch / coal native | max abs err vs coal |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for d in DISTANCES:
            for method in VARIANTS:
                j = fam["jax"][method]["per_distance"][str(d)]
                c = fam["coal"][method][str(d)] if fam.get("coal") else None
                errs = [
                    e
                    for e in (
                        j["max_abs_error_vs_coal_separated"],
                        j["max_abs_error_vs_coal_penetrating"],
                    )
                    if e is not None
                ]
                row = [
                    f"{d:+g}",
                    method,
                    f"{j['mean_iterations']:.1f} / {j['max_iterations']}",
                    f"{c['mean_iterations']:.1f} / {c['max_iterations']}" if c else "–",
                    f"{j['us_per_query_batch']:.2f} / {j.get('us_per_query_batch_cpu', float('nan')):.2f}",
                    f"{j['us_per_query_batch1']:.0f}",
                    f"{c['us_per_query_native']:.2f}" if c else "–",
                    f"{c['us_per_query_python_loop']:.2f}" if c else "–",
                    f"{j['us_per_query_batch'] / c['us_per_query_native']:.1f}×" if c else "–",
                    f"{max(errs):.1e}",
                ]
                lines.append("| " + " | ".join(row) + " |")
        lines += ["", "Compile time (first call, s):", ""]
        lines += ["| variant | jit+vmap batch | jit batch 1 |", "|---|---|---|"]
        for method in VARIANTS:
            j = fam["jax"][method]
            lines.append(f"| {method} | {j['compile_s_batch']:.1f} | {j['compile_s_batch1']:.1f} |")
        if "mesh_support" in fam:
            ms = fam["mesh_support"]
            lines += [
                "",
                f"Mesh support ({ms['num_vertices']} vertices, ≤ {ms['max_neighbors']} neighbours), "
                f"batch {meta['batch']}:",
                "",
                "| support routine | ns/query | worst score gap vs dense |",
                "|---|---|---|",
            ]
            for name in ("dense_max", "hill_climb_cold", "hill_climb_warm"):
                s = ms[f"support_{name}"]
                lines.append(f"| {name} | {s['ns_per_query_batch']:.1f} | {s['max_score_gap_vs_dense']:.1e} |")
            keys = [k for k in ms if k.startswith("gjk_")]
            lines += [
                "",
                "GJK only (no EPA), µs/query at batch " + str(meta["batch"]) + ":",
                "",
                "| support | " + " | ".join(f"d={d:+g}" for d in DISTANCES) + " | compile s |",
                "|---|" + "---|" * (len(DISTANCES) + 1),
            ]
            for key in keys:
                e = ms[key]
                lines.append(
                    f"| {key} | "
                    + " | ".join(f"{e[str(d)]['us_per_query_batch']:.2f}" for d in DISTANCES)
                    + f" | {e['compile_s']:.1f} |"
                )
        lines.append("")
    lines += ["## Targets", ""]
    for t in results["targets"]:
        lines.append(f"- {t}")
    lines += ["", "## Notes", ""]
    lines += [f"- {note}" for note in NOTES]
    lines.append("")
    return "\n".join(lines)


NOTES = (
    "Under `vmap` a `while_loop` runs until its slowest lane finishes, so the batched time follows "
    "the *max* iteration count of the batch (and, for penetrating pairs, the max EPA iterations), "
    "not the mean.",
    "Iteration counts are not exactly comparable between the libraries: coal stops on an absolute "
    "duality gap (≤ 1e-8 m²), jaxsim_contact on a relative one (≤ εL(|x| + εL)), which is about 100× "
    "stricter at |x| = 1 cm and unreachable at |x| → 0 (touching, where jaxsim relies on its "
    "stall test).",
    "The close-proximity set of the iteration target is the seed's (Table III: 0 ≤ d ≤ 0.1 m), "
    "i.e. d ∈ {0, 0.01, 0.1} here; earlier versions of this benchmark also averaged in d = −0.01 "
    "(overlapping).",
    "EPA runs only when some lane of the batch needs it (``distance``'s batching rule branches on "
    "'any lane penetrates'): a batch with one penetrating pair pays EPA's polytope set-up and its "
    "slowest lane's EPA iterations for all 4096 lanes, which is what the d < 0 rows measure.",
    "Where the batched GJK time goes (ellipsoids, batch 4096, Nesterov at d = 0.1, CPU time of "
    "the pinned process, measured 2026-11-23 under load 10–17 with /tmp probes): the whole query "
    "≈ 25 µs/q, of which the GJK loop ≈ 22 µs/q = 33 iterations (the slowest lane; mean 12) × "
    "≈ 0.67 µs per lane-iteration. Of that, the support call is ≈ 0.06 µs and the simplex "
    "projection (all 15 faces of the 4-simplex evaluated branch-free per lane) ≈ 0.5–0.6 µs; coal "
    "spends ≈ 0.1 µs per iteration in total. Two rewrites of the projection did not help in the "
    "same conditions: scalar struct-of-arrays form (every quantity a (batch,) array, candidates "
    "chosen by a where-chain: 1.05 µs) and selects instead of gathers/scatters (0.64 µs vs 0.58 "
    "µs). The remaining gap is thus ≈ 6× per iteration (projection arithmetic as compiled by "
    "XLA:CPU) times ≈ 2.7× for running every lane to the slowest lane's iteration count.",
    "coal native time includes its first-touch cost: each (variant, distance) pass builds fresh "
    "`ComputeDistance` functors and the first pass over the pairs is 2–8× slower than later ones "
    "(cold caches; 200 hulls of 1000 vertices do not fit in cache); the median of the passes is "
    "reported.",
    "A `DistanceResult` must be cleared before each coal call: coal keeps the minimum over calls "
    "and returns in ≈ 0.03 µs when the stored result already shows penetration.",
    "Reference distances: single tight coal solves are not reliable to 1e-6 (vanilla/Polyak at "
    "ε = 1e-12 return distances up to 2e-5 too small for distant ellipsoids; EPA at tolerance 1e-10 "
    "sometimes fails with −DBL_MAX), so the reference is the median of six tight coal solves. At "
    "d = 0 (touching) GJK converges slowly (distance error ~ √gap) and coal's tight solves scatter "
    "by ~5e-6, so the 5.2e-6 'error' at d = 0 (the same lane for all variants) is the reference's: "
    "on that lane jaxsim returns 6.5e-8 (target 0), the coal median 1.9e-6.",
    "Hill-climbing inside GJK is cold-started at vertex 0 on every support call (`run_gjk`'s support "
    "interface carries no per-shape state). The bare support table also times a warm start (from "
    "the support of a direction ~0.1 rad away, as between successive GJK iterations; what coal "
    "does). Each lane has its own mesh, so a dense support streams the lane's whole vertex array "
    "from memory on every call (4096 × 1000 × 3 doubles ≈ 98 MB per side per iteration).",
)


def targets(results) -> list[str]:
    """Evaluate the issue's targets on the results."""
    out = []
    ell = results["families"].get("ellipsoid")
    if ell:
        # Seed 000 Table III: "close-proximity when 0 ≤ dist(A1, A2) ≤ 0.1 m" (16 → 7 iterations).
        close = [d for d in DISTANCES if 0.0 <= d <= 0.1]
        van = np.mean([ell["jax"]["vanilla"]["per_distance"][str(d)]["mean_iterations"] for d in close])
        nes = np.mean([ell["jax"]["nesterov"]["per_distance"][str(d)]["mean_iterations"] for d in close])
        ratio = nes / van
        out.append(
            f"Nesterov / vanilla mean GJK iterations on close-proximity ellipsoids (d ∈ {close}): "
            f"{nes:.1f} / {van:.1f} = {ratio:.2f} (target ≤ 0.6): {'MET' if ratio <= 0.6 else 'NOT MET'}"
        )
        for d in close:
            v = ell["jax"]["vanilla"]["per_distance"][str(d)]["mean_iterations"]
            n = ell["jax"]["nesterov"]["per_distance"][str(d)]["mean_iterations"]
            out.append(f"  at d = {d}: {n:.1f} / {v:.1f} = {n / v:.2f}")
    for family, fam in results["families"].items():
        if not fam.get("coal"):
            continue
        ratios = []
        for method in VARIANTS:
            for d in DISTANCES:
                j = fam["jax"][method]["per_distance"][str(d)]["us_per_query_batch"]
                c = fam["coal"][method][str(d)]["us_per_query_native"]
                ratios.append(j / c)
        worst, best = max(ratios), min(ratios)
        cpu = [
            fam["jax"][m]["per_distance"][str(d)].get("us_per_query_batch_cpu", float("nan"))
            / fam["coal"][m][str(d)]["us_per_query_native"]
            for m in VARIANTS
            for d in DISTANCES
        ]
        out.append(
            f"{family}: batched µs/query ÷ coal native µs/query ranges {best:.1f}× – {worst:.1f}× "
            f"(with jax CPU time instead of wall time: {min(cpu):.1f}× – {max(cpu):.1f}×) "
            f"(target ≤ 2×): {'MET' if worst <= 2 else 'NOT MET'}"
        )
    return out


def _git_commit() -> str:
    """Commit of the library under test (with "+dirty" if its collision/geometry code is modified)."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], cwd=root, text=True).strip()
        dirty = subprocess.call(
            ["git", "diff", "--quiet", "HEAD", "--", "jaxsim_contact/collision", "jaxsim_contact/geometry"],
            cwd=root,
        )
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv=None) -> int:
    """Run the benchmark; ``--quick`` for a < 3 minute smoke run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (< 3 minutes)")
    parser.add_argument("--pairs", type=int, help="ellipsoid pairs (default 1000, quick 50; 0 skips them)")
    parser.add_argument("--mesh-pairs", type=int, help="hull pairs per size (default 200, quick 10)")
    parser.add_argument("--mesh-sizes", type=int, nargs="*", help="hull vertex counts (default 100 1000)")
    parser.add_argument("--batch", type=int, help="batched size (default 4096, quick 256)")
    parser.add_argument("--batch1-queries", type=int, help="pairs timed one by one (default 50, quick 5)")
    parser.add_argument("--repeats", type=int, help="timing repeats (default 3, quick 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="output stem (default benchmarks/results/gjk[_quick])")
    parser.add_argument("--render", type=Path, help="only re-render the Markdown of an existing JSON")
    args = parser.parse_args(argv)
    if args.render:
        results = json.loads(args.render.read_text())
        results["targets"] = targets(results)
        args.render.with_suffix(".md").write_text(markdown(results))
        return 0
    if coal is None:
        print("coal is required (pip install coal) for pair generation and as the peer", file=sys.stderr)
        return 2
    quick = args.quick
    pairs = args.pairs if args.pairs is not None else (50 if quick else 1000)
    mesh_pairs = args.mesh_pairs or (10 if quick else 200)
    mesh_sizes = args.mesh_sizes if args.mesh_sizes is not None else ([100] if quick else [100, 1000])
    batch = args.batch or (256 if quick else 4096)
    batch1 = args.batch1_queries or (5 if quick else 50)
    repeats = args.repeats or 3
    out = args.out or RESULTS_DIR / ("gjk_quick" if quick else "gjk")

    def log(msg):
        print(msg, flush=True)

    t_start = time.perf_counter()
    results = {
        "meta": dict(
            command="python benchmarks/" + Path(sys.argv[0]).name + " " + " ".join(argv if argv is not None else sys.argv[1:]),
            date=time.strftime("%Y-%m-%d %H:%M:%S"),
            machine=f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
            jax=jax.__version__,
            backend=jax.default_backend(),
            coal=getattr(coal, "__version__", "?"),
            dtype="float64",
            library_commit=_git_commit(),
            loadavg_start=loadavg(),
            # XLA:CPU loops are far slower with more threads than cores: record the pinning.
            xla_flags=os.environ.get("XLA_FLAGS", ""),
            cpu_affinity=sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            pairs=f"{pairs} ellipsoid pairs; " + ", ".join(f"{mesh_pairs} hull pairs of {n} vertices" for n in mesh_sizes),
            batch=batch,
            batch1_queries=batch1,
            repeats=repeats,
            tolerance=TOLERANCE,
            max_iterations=MAX_ITERATIONS,
            distances=list(DISTANCES),
        ),
        "families": {},
    }
    rng = np.random.default_rng(args.seed)
    families = [("ellipsoid", "ellipsoid", pairs, None)] * (pairs > 0) + [
        (f"hull{n}", "mesh", mesh_pairs, n) for n in mesh_sizes
    ]
    for label, kind, n, nv in families:
        t0 = time.perf_counter()
        ps = make_pairs(kind, n, rng, nv)
        ps.label = label
        log(f"{label}: generated {n} pairs in {time.perf_counter() - t0:.1f} s")
        fam = {"generation_s": time.perf_counter() - t0}
        fam["coal"] = bench_coal(ps, repeats, log)
        fam["jax"] = bench_jax(ps, batch, batch1, repeats, log)
        if kind == "mesh":
            fam["mesh_support"] = bench_mesh_support(ps, batch, repeats, log)
        results["families"][label] = fam
    results["meta"]["loadavg_end"] = loadavg()
    results["meta"]["total_s"] = time.perf_counter() - t_start
    results["targets"] = targets(results)
    stem = out.with_suffix("")
    write_results(stem.name, results, markdown(results), stem.parent)
    log("\n".join(results["targets"]))
    log(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')} in {results['meta']['total_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
