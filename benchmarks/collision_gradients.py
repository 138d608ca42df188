"""Collision-derivative benchmark (seed 000 "Differentiable Collision Detection", Tables I and II).

Table I protocol (contact-pose generation)
------------------------------------------
* Shapes: random polyhedral ellipsoids — the convex hull of 12 points on the surface of an
  ellipsoid with semi-axes uniform in [0.1, 0.6] m (all 12 points are hull vertices).
* Targets: per pair, random points x1_des on the surface of A (A's frame = world, A fixed at the
  identity) and x2_des on the surface of B (B's frame): support points in uniformly random
  directions, i.e. vertices — the paper's terminal costs of 1e-33 show that its targets are
  exactly reachable; a point inside a face is not a witness point of any pose in general (in
  face-face contact GJK picks some point of the overlap).
* Unknown: the pose of B (6-D twist retraction, translation in m, rotation vector in rad, world
  frame). Start: random orientation, centre at distance R_A + R_B + 0.1 m in a random direction.
* Cost (eq. 30): C = ½ |x1*(q) - x1_des|² + ½ |x2*(q) - T(q) x2_des|² + ½ |x1*(q) - x2*(q)|², with
  x1*, x2* the witness points of ``jc.collision.distance`` (GJK + EPA).
* Solver: Gauss–Newton (J of the 9 residuals w.r.t. the twist) with backtracking line search
  (Armijo 1e-4, halving, ≤ 30 halvings; a step without decrease is rejected), 50 iterations, the
  same for every estimator. The normal equations carry a Levenberg–Marquardt term
  ``(1e-10 (1 + tr JᵀJ) + ν |r|²) I`` (Yamashita–Fukushima scaling: no effect on the fast local
  convergence of a zero-residual problem) with ν adapted as in Nocedal–Wright §10.3 (the paper's
  ref. [25]): ν ← 10 ν after a rejected step, ν ← max(ν / 10, ν₀) after an accepted one;
  ν₀ = ``--lm-damping`` (default 1e-3). ``--lm-damping 0 --no-adaptive`` is plain Gauss–Newton
  (the protocol of the first version of this script). Why the damping matters (measured, see
  the results notes): at polytope contacts the exact Jacobian is rank-deficient (a zero singular
  value); a smoothed estimator fills that direction with a small, biased singular value, plain
  Gauss–Newton divides by it, and the resulting huge step can be an ascent direction of the true
  cost. The line search rejects it, and a deterministic Jacobian (finite differences, the Gumbel
  closed form) then recomputes the same step at the same pose for the remaining iterations.
* Jacobians: central finite differences (12 queries; steps 1e-6 and 1e-3), 0th-order Gaussian
  (eq. 6), 1st-order Gaussian (eq. 26), 1st-order Gumbel (eqs. 27–28, softmax over all 12
  vertices), all through ``jc.collision.distance(..., smoothing=...)``. Report: quantiles D1, Q1,
  median, Q3, D9 of the terminal cost over all problems.

Table II protocol (cost of one derivative)
------------------------------------------
Batched (``jax.jit(jax.vmap(...))``, B pairs per call, ``block_until_ready``, median of repeats,
compile time separate): one distance query; the 9×6 Jacobian of the witness points w.r.t. the
pose of B by each estimator and by finite differences; split into colliding and separated pairs
as in the paper. Per-pair time = call time / B.

Run: ``python benchmarks/collision_gradients.py`` (reduced size, < 10 min on 2 cores) or with
``--full`` (the paper's 100 pairs × 100 targets, 79 chunks of 128 problems, ~140 s each on an
idle core of session 27's machine — ~3 core-hours (6.4 min per chunk while a CI run shared the
cores): resumable — every
finished chunk of problems is saved under ``--store``, by default
``benchmarks/results/collision_gradients_full_chunks/``, and rerunning the same command continues
where it stopped; e.g. ``nice -n 19 taskset -c 1 python benchmarks/collision_gradients.py --full
--out benchmarks/results/collision_gradients_full.md``; ``--shard K/M`` splits the chunks over M
processes, one per core). Writes
``benchmarks/results/collision_gradients.md`` (``--out`` to change) and a JSON twin. Float64.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from _common import enable_float64, timed

enable_float64()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxsim_contact as jc  # noqa: E402
from jaxsim_contact.dynamics._integration import quat_exp_increment  # noqa: E402
from jaxsim_contact._math import quat_mul, quat_normalize  # noqa: E402

Smoothing = jc.collision.Smoothing

ESTIMATORS = {
    # name: (kind, parameters)
    "finite differences h=1e-6": ("fd", dict(step=1e-6)),
    "finite differences h=1e-3": ("fd", dict(step=1e-3)),
    "0th-order Gaussian": ("smooth", dict(order=0, distribution="gaussian", noise=1e-2, num_samples=50)),
    "1st-order Gaussian": ("smooth", dict(order=1, distribution="gaussian", noise=0.3, num_samples=20)),
    "1st-order Gumbel": ("smooth", dict(order=1, distribution="gumbel", noise=0.1, num_samples=1)),
    "1st-order Gumbel n_l=1": ("smooth", dict(order=1, distribution="gumbel", noise=0.05, num_samples=1, neighborhood=1)),
}
ITERATIONS = 50
MAX_HALVINGS = 30
LM_DAMPING = 1e-3  # ν₀ of the Levenberg–Marquardt term (module docstring); --lm-damping
ADAPTIVE_DAMPING = True  # ν ×10 after a rejected step, ÷10 after an accepted one; --no-adaptive


# -- problem generation (host) ------------------------------------------------------------------


def polyhedral_ellipsoid(rng):
    radii = rng.uniform(0.1, 0.6, 3)
    d = rng.normal(size=(12, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return jc.ConvexMesh.from_points(d * radii, max_vertices=12, max_neighbors=12, max_faces=20)


def surface_points(mesh, count, rng):
    """Support points in uniformly random directions: vertices of the polyhedral shape, so that a
    zero cost is attainable (vertex-to-vertex contact). Points inside faces are not: in face-face
    contact GJK's witness points are not determined by the pose."""
    v = np.asarray(mesh.vertices)[np.asarray(mesh.vertex_mask)]
    d = rng.normal(size=(count, 3))
    return v[np.argmax(d @ v.T, axis=1)]


def random_quat(rng, count):
    q = rng.normal(size=(count, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def make_problems(num_pairs, num_targets, seed):
    rng = np.random.default_rng(seed)
    meshes_a, meshes_b, t1, t2, pos, quat = [], [], [], [], [], []
    for _ in range(num_pairs):
        a, b = polyhedral_ellipsoid(rng), polyhedral_ellipsoid(rng)
        ra, rb = float(a.bounding_radius()), float(b.bounding_radius())
        ta, tb = surface_points(a, num_targets, rng), surface_points(b, num_targets, rng)
        d = rng.normal(size=(num_targets, 3))
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        for k in range(num_targets):
            meshes_a.append(a)
            meshes_b.append(b)
            t1.append(ta[k])
            t2.append(tb[k])
            pos.append(d[k] * (ra + rb + 0.1))
        quat.append(random_quat(rng, num_targets))
    stack = lambda items: jax.tree.map(lambda *xs: jnp.stack(xs), *items)  # noqa: E731
    return dict(
        mesh_a=stack(meshes_a), mesh_b=stack(meshes_b), t1=jnp.asarray(np.array(t1)),
        t2=jnp.asarray(np.array(t2)), pos=jnp.asarray(np.array(pos)),
        quat=jnp.asarray(np.concatenate(quat)),
    )


# -- the optimisation (traced) ------------------------------------------------------------------


def expq(v):
    """Unit quaternion of a rotation vector (the integrator's exponential map)."""
    return quat_exp_increment(v, 1.0)


def retract(pose, xi):
    return jc.Transform(pose.pos + xi[:3], quat_normalize(quat_mul(expq(xi[3:]), pose.quat)))


def residual(xi, mesh_a, mesh_b, pose_b, t1, t2, smoothing=None, key=None):
    pb = retract(pose_b, xi)
    r = jc.collision.distance(mesh_a, jc.Transform(jnp.zeros(3)), mesh_b, pb, smoothing=smoothing, key=key)
    return jnp.concatenate([r.point_a - t1, r.point_b - pb.apply(t2), r.point_a - r.point_b])


def jacobian_fn(name):
    kind, params = ESTIMATORS[name]
    if kind == "fd":
        step = params["step"]

        def jac(mesh_a, mesh_b, pose_b, t1, t2, key):
            steps = jnp.concatenate([jnp.eye(6), -jnp.eye(6)]) * step
            vals = jax.vmap(lambda s: residual(s, mesh_a, mesh_b, pose_b, t1, t2))(steps)
            return (vals[:6] - vals[6:]).T / (2 * step)

        return jac

    def jac(mesh_a, mesh_b, pose_b, t1, t2, key):
        sm = Smoothing(**params)
        f = lambda xi: residual(xi, mesh_a, mesh_b, pose_b, t1, t2, sm, key)  # noqa: E731
        return jax.jacfwd(f)(jnp.zeros(6))

    return jac


def solve_problem(name):
    jac = jacobian_fn(name)

    def solve(mesh_a, mesh_b, pos, quat, t1, t2, key):
        def cost(pose_b, xi):
            r = residual(xi, mesh_a, mesh_b, pose_b, t1, t2)
            return 0.5 * jnp.dot(r, r), r

        def step(carry, it):
            pose_b, c0, nu = carry
            _, r0 = cost(pose_b, jnp.zeros(6))
            J = jac(mesh_a, mesh_b, pose_b, t1, t2, jax.random.fold_in(key, it))
            g = J.T @ r0
            A = J.T @ J
            # Levenberg–Marquardt term (module docstring): ν|r|² vanishes at a zero residual, so
            # the local convergence stays that of Gauss–Newton
            A = A + (1e-10 * (1.0 + jnp.trace(A)) + nu * jnp.dot(r0, r0)) * jnp.eye(6)
            delta = -jnp.linalg.solve(A, g)
            slope = jnp.dot(g, delta)

            def ls_cond(s):
                alpha, c, k = s
                return (c > c0 + 1e-4 * alpha * slope) & (k < MAX_HALVINGS)

            def ls_body(s):
                alpha, _, k = s
                alpha = 0.5 * alpha
                return alpha, cost(pose_b, alpha * delta)[0], k + 1

            c1 = cost(pose_b, delta)[0]
            alpha, c, _ = jax.lax.while_loop(ls_cond, ls_body, (jnp.ones(()), c1, 0))
            ok = jnp.isfinite(c) & (c < c0) & jnp.all(jnp.isfinite(delta))
            new_pose = retract(pose_b, jnp.where(ok, alpha * delta, 0.0))
            new_c = jnp.where(ok, c, c0)
            if ADAPTIVE_DAMPING:  # Levenberg–Marquardt: damp more after a rejected step
                nu = jnp.clip(jnp.where(ok, nu / 10.0, nu * 10.0), LM_DAMPING, 1e8)
            return (new_pose, new_c, nu), new_c

        pose0 = jc.Transform(pos, quat)
        c0 = cost(pose0, jnp.zeros(6))[0]
        nu0 = jnp.asarray(LM_DAMPING, c0.dtype)
        (_, final, _), history = jax.lax.scan(step, (pose0, c0, nu0), jnp.arange(ITERATIONS))
        return final, jnp.concatenate([c0[None], history])

    return solve


def quantiles(values):
    v = np.asarray(values)
    return {k: float(np.quantile(v, q)) for k, q in (("D1", 0.1), ("Q1", 0.25), ("median", 0.5), ("Q3", 0.75), ("D9", 0.9))}


def run_table1(problems, seed, chunk, store=None, shard=(0, 1), descending=False):
    """Terminal costs and cost histories of every estimator on every problem.

    Chunks of ``chunk`` problems run one after the other, every estimator on the same chunk. With
    ``store`` (a directory), each finished chunk is saved there (``chunk_<start>.npz``: per
    estimator the final costs, the cost histories and the seconds it took) and a chunk already in
    the directory is loaded instead of recomputed — so a long run (``--full``: ~30 CPU-hours here)
    can be stopped at any time and continued by the same command. Problems and keys depend only on
    ``seed`` and the problem index, so a continued run is the run it would have been.

    ``shard = (k, m)`` computes only the missing chunks whose index is ``k`` modulo ``m`` (so ``m``
    processes, e.g. one per core, share a ``store``); returns ``None`` while chunks of other
    shards are missing, the results once every chunk is in the store. ``descending`` walks the
    chunks from the last one: a helper started late on the same shard meets the first process
    in the middle instead of repeating its next chunk (a chunk found in the store is loaded).
    """
    n = problems["t1"].shape[0]
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.PRNGKey(seed), i))(jnp.arange(n))
    names = list(ESTIMATORS)
    functions = {}
    finals = {name: [] for name in names}
    histories = {name: [] for name in names}
    seconds = {name: 0.0 for name in names}
    compile_time = {name: None for name in names}
    if store is not None:
        store = Path(store)
        store.mkdir(parents=True, exist_ok=True)
    missing = 0
    starts = list(range(0, n, chunk))
    for start in (starts[::-1] if descending else starts):
        path = None if store is None else store / f"chunk_{start:06d}.npz"
        if (start // chunk) % shard[1] != shard[0] and (path is None or not path.exists()):
            missing += 1  # another shard's chunk, not computed yet
            continue
        if path is not None and path.exists():
            saved = np.load(path)
            if int(saved["size"]) != min(chunk, n - start) or list(saved["names"]) != names:
                raise ValueError(f"{path} was written with another --chunk or estimator list; "
                                 "use another --store directory")
            for i, name in enumerate(names):
                finals[name].append((start, saved["final"][i]))
                histories[name].append((start, saved["history"][i]))
                seconds[name] += float(saved["seconds"][i])
            continue
        sl = slice(start, start + chunk)
        args = [jax.tree.map(lambda x: x[sl], problems[k]) for k in ("mesh_a", "mesh_b", "pos", "quat", "t1", "t2")]
        chunk_final, chunk_history, chunk_seconds = [], [], []
        for name in names:
            fn = functions.setdefault(name, jax.jit(jax.vmap(solve_problem(name))))
            t_call = time.perf_counter()
            final, history = fn(*args, keys[sl])
            final.block_until_ready()
            elapsed = time.perf_counter() - t_call
            if compile_time[name] is None:
                compile_time[name] = elapsed
            chunk_final.append(np.asarray(final))
            chunk_history.append(np.asarray(history))
            chunk_seconds.append(elapsed)
        if path is not None:
            tmp = path.with_suffix(".tmp.npz")
            np.savez_compressed(tmp, final=np.stack(chunk_final), history=np.stack(chunk_history),
                     seconds=np.asarray(chunk_seconds), names=np.asarray(names),
                     size=np.asarray(chunk_final[0].shape[0]))
            tmp.replace(path)  # a run killed mid-write leaves no half chunk behind
        for i, name in enumerate(names):
            finals[name].append((start, chunk_final[i]))
            histories[name].append((start, chunk_history[i]))
            seconds[name] += chunk_seconds[i]
        print(f"  chunk {start}-{start + chunk_final[0].shape[0]} of {n} done "
              f"({sum(chunk_seconds):.0f} s)", flush=True)
    if missing:
        print(f"  shard {shard[0]}/{shard[1]} done; {missing} chunks of other shards still missing",
              flush=True)
        return None
    results = {}
    for name in names:
        final = np.concatenate([x for _, x in sorted(finals[name], key=lambda e: e[0])])
        history = np.concatenate([x for _, x in sorted(histories[name], key=lambda e: e[0])])
        print("  median cost at iterations 0,1,2,5,10,20,50:", " ".join(f"{np.median(history[:, i]):.1e}" for i in (0, 1, 2, 5, 10, 20, ITERATIONS)), flush=True)
        results[name] = dict(
            quantiles=quantiles(final), seconds=seconds[name],
            first_chunk_seconds_incl_compile=compile_time[name],
            median_history=np.median(history, axis=0).tolist(),
            nonfinite=int(np.sum(~np.isfinite(final))),
        )
        q = results[name]["quantiles"]
        print(f"{name:28s} " + "  ".join(f"{k}={v:.1e}" for k, v in q.items()) + f"   ({seconds[name]:.0f} s)", flush=True)
    return results


# -- Table II: cost of one derivative -----------------------------------------------------------


def timing_batch(batch, seed, colliding):
    rng = np.random.default_rng(seed)
    meshes_a, meshes_b, pos = [], [], []
    for _ in range(batch):
        a, b = polyhedral_ellipsoid(rng), polyhedral_ellipsoid(rng)
        ra, rb = float(a.bounding_radius()), float(b.bounding_radius())
        d = rng.normal(size=3)
        d /= np.linalg.norm(d)
        scale = rng.uniform(0.2, 0.6) if colliding else rng.uniform(1.1, 1.5)
        meshes_a.append(a)
        meshes_b.append(b)
        pos.append(d * (ra + rb) * scale)
    stack = lambda items: jax.tree.map(lambda *xs: jnp.stack(xs), *items)  # noqa: E731
    return stack(meshes_a), stack(meshes_b), jnp.asarray(np.array(pos)), jnp.asarray(random_quat(rng, batch))


def time_call(fn, args, repeats):
    """``(first call s, median s of repeats)``: wall time, every call blocked (``_common.timed``)."""
    t = timed(lambda: fn(*args), repeats)
    return t.first, t.steady


def run_table2(batch, repeats, seed):
    rows = {}
    for colliding in (True, False):
        mesh_a, mesh_b, pos, quat = timing_batch(batch, seed + int(colliding), colliding)
        zeros3 = jnp.zeros((batch, 3))
        keys = jax.vmap(jax.random.PRNGKey)(jnp.arange(batch))

        def query(ma, mb, p, q, t1, t2, key):
            return residual(jnp.zeros(6), ma, mb, jc.Transform(p, q), t1, t2)

        variants = {"distance query": query}
        for name in ESTIMATORS:
            jac = jacobian_fn(name)
            variants[name] = lambda ma, mb, p, q, t1, t2, key, jac=jac: jac(ma, mb, jc.Transform(p, q), t1, t2, key)
        label = "collision" if colliding else "no collision"
        d = np.asarray(jax.jit(jax.vmap(query))(mesh_a, mesh_b, pos, quat, zeros3, zeros3, keys))
        sep = np.linalg.norm(d[:, 6:9], axis=1)
        print(f"[{label}] pairs: {batch}, mean |x*| = {sep.mean():.3f} m", flush=True)
        for name, fn in variants.items():
            compile_time, t = time_call(jax.jit(jax.vmap(fn)), (mesh_a, mesh_b, pos, quat, zeros3, zeros3, keys), repeats)
            rows.setdefault(name, {})[label] = dict(us_per_pair=1e6 * t / batch, compile_s=compile_time)
            print(f"  {name:28s} {1e6 * t / batch:9.2f} µs/pair  (compile {compile_time:.1f} s)", flush=True)
    return rows


# -- report ------------------------------------------------------------------------------------


def fmt(x):
    return f"{x:.0e}" if x != 0 else "0"


def write_report(path, args, table1, table2, problems_shape, elapsed, load_before, load_after):
    lines = [
        "# Collision derivatives: contact-pose benchmark (seed 000 Table I) and cost (Table II)",
        "",
        f"Command: `{' '.join(['python'] + sys.argv)}`",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average before {load_before[0]:.2f} / after {load_after[0]:.2f} (1-min; the machine is "
        f"shared with other jobs, timings are inflated accordingly); jax {jax.__version__}, float64, CPU. "
        f"Run time of this invocation {elapsed / 60:.1f} min."
        + (f" Table I was taken from `{args.resume}` (an earlier run of the same command without "
           "`--resume`; see the run notes at the end)." if args.resume else ""),
        "",
        f"## Table I — terminal cost C(q) after {ITERATIONS} Gauss–Newton iterations",
        "",
        f"Size: {problems_shape[0]} random 12-vertex polyhedral-ellipsoid pairs × {problems_shape[1]} "
        f"target pairs = {problems_shape[0] * problems_shape[1]} problems "
        + ("(the paper's size)." if args.full else "(reduced; `--full` runs the paper's 100 × 100)."),
        "",
        "| | " + " | ".join(table1) + " |",
        "|---|" + "---|" * len(table1),
        "| parameters | " + " | ".join(_params(n) for n in table1) + " |",
    ]
    for q in ("D1", "Q1", "median", "Q3", "D9"):
        lines.append(f"| {q} | " + " | ".join(fmt(table1[n]["quantiles"][q]) for n in table1) + " |")
    lines.append("| wall time (s) | " + " | ".join(f"{table1[n]['seconds']:.0f}" for n in table1) + " |")
    fd_best = {q: min(table1[n]["quantiles"][q] for n in table1 if n.startswith("finite")) for q in ("Q3", "D9")}
    lines += [
        "",
        "Ratio of the better finite-difference step's Q3 / D9 to each estimator's (target for the "
        "1st-order estimators: ≥ 100):",
        "",
    ]
    for n in table1:
        if n.startswith("finite"):
            continue
        q = table1[n]["quantiles"]
        ratio = lambda k: fd_best[k] / q[k] if q[k] > 0 else float("inf")  # noqa: E731
        lines.append(f"- {n}: Q3 ×{ratio('Q3'):.3g}, D9 ×{ratio('D9'):.3g}")
    lines += [
        "",
        "Median cost per iteration (iterations 0, 1, 2, 5, 10, 20, 50):",
        "",
        "| iteration | " + " | ".join(table1) + " |",
        "|---|" + "---|" * len(table1),
    ]
    for it in (0, 1, 2, 5, 10, 20, 50):
        lines.append(f"| {it} | " + " | ".join(fmt(_history(table1[n], it)) for n in table1) + " |")
    lines += [
        "",
        f"## Table II — cost of one derivative (µs per pair, batch {args.batch}, median of {args.repeats})",
        "",
        "Jacobian of the 9 residuals (witness points) w.r.t. the 6-D pose of B, batched with "
        "`jax.jit(jax.vmap(...))`; compile time excluded (listed separately).",
        "",
        "| method | collision | no collision | × distance query (coll. / no coll.) | FD h=1e-6 ÷ method (coll. / no coll.) | compile (s) |",
        "|---|---|---|---|---|---|",
    ]
    base = table2["distance query"]
    fd = table2["finite differences h=1e-6"]
    for n, row in table2.items():
        c, s = row["collision"]["us_per_pair"], row["no collision"]["us_per_pair"]
        lines.append(
            f"| {n} | {c:.2f} | {s:.2f} | {c / base['collision']['us_per_pair']:.1f} / "
            f"{s / base['no collision']['us_per_pair']:.1f} | {fd['collision']['us_per_pair'] / c:.1f} / "
            f"{fd['no collision']['us_per_pair'] / s:.1f} | {row['collision']['compile_s']:.1f} |"
        )
    lines += [
        "",
        "Notes: noise parameters are in this library's units (`jc.collision.Smoothing`): the "
        "1st-order Gaussian ε perturbs the *unit* support direction, the Gumbel ε is the softmax "
        "temperature in units of the shape's bounding radius (seed 000 eqs. 26–28 apply ε to the "
        "unnormalised separation vector x*, i.e. an angular smoothing ε/|x*| that grows as the "
        "shapes approach contact; the paper's ε = 1e-3 / 1e-4 are therefore not comparable), the "
        "0th-order ε perturbs rotations in rad and translations in units of the pair size. The "
        "Gumbel closed form runs over all 12 vertices, or over the depth-1 neighbourhood of the "
        "witness vertex (`neighborhood=1`, the paper's n_l = 1). The 1st-order noise values were "
        "picked by a sweep on a separate problem seed (seed 7, 4 pairs × 8 targets) under the "
        "same optimiser.",
        "",
        f"Optimiser: Gauss–Newton + backtracking with the adaptive Levenberg–Marquardt term "
        f"ν|r|² (ν₀ = {LM_DAMPING:g}, adaptive: {ADAPTIVE_DAMPING}); see the script's docstring. "
        "Without it (plain Gauss–Newton, `--lm-damping 0 --no-adaptive`) a smoothed Jacobian's "
        "small, biased singular value in the direction where the exact polytope Jacobian is "
        "singular turns into a huge Gauss–Newton step that can be an ascent direction of the "
        "true cost; the line search rejects it and a deterministic Jacobian (finite differences, "
        "Gumbel closed form) recomputes the same step for the remaining iterations.",
        "",
    ]
    Path(path).write_text("\n".join(lines))
    Path(path).with_suffix(".json").write_text(json.dumps(dict(table1=table1, table2=table2), indent=1))


def _history(row, it):
    history = row["median_history"]
    return history[str(it)] if isinstance(history, dict) else history[it]


def _params(name):
    kind, p = ESTIMATORS[name]
    if kind == "fd":
        return f"M = 12, h = {p['step']:g}"
    if p["distribution"] == "gumbel" and p["order"] == 1:
        depth = "all vertices" if p.get("neighborhood") is None else f"n_l = {p['neighborhood']}"
        return f"closed form, {depth}, ε = {p['noise']:g}"
    return f"M = {p['num_samples']}, ε = {p['noise']:g}"


def main():
    global LM_DAMPING, ADAPTIVE_DAMPING
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="paper size: 100 pairs × 100 targets")
    parser.add_argument("--pairs", type=int, default=16)
    parser.add_argument("--targets", type=int, default=8)
    parser.add_argument("--chunk", type=int, default=128, help="problems per compiled call")
    parser.add_argument("--batch", type=int, default=256, help="Table II batch size")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-table1", action="store_true")
    parser.add_argument("--skip-table2", action="store_true")
    parser.add_argument("--lm-damping", type=float, default=LM_DAMPING, help="ν₀ of the Levenberg–Marquardt term (0: none)")
    parser.add_argument("--no-adaptive", action="store_true", help="keep ν fixed (with --lm-damping 0: plain Gauss–Newton)")
    parser.add_argument("--shard", default="0/1", help="K/M: compute only chunks K mod M (M processes "
                        "sharing --store); Table I is reported once every chunk is stored")
    parser.add_argument("--descending", action="store_true", help="walk Table I's chunks from the "
                        "last one (a second process on a shard meets the first in the middle)")
    parser.add_argument("--resume", help="take Table I from this JSON (written by an earlier run) and run Table II only")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "collision_gradients.md"))
    parser.add_argument("--store", help="directory of finished Table I chunks: saved as they finish, "
                        "reused when present, so the same command continues a stopped run "
                        "(default with --full: results/collision_gradients_full_chunks)")
    args = parser.parse_args()
    LM_DAMPING, ADAPTIVE_DAMPING = args.lm_damping, not args.no_adaptive
    if args.full:
        args.pairs, args.targets = 100, 100
        if args.store is None:
            args.store = str(Path(__file__).parent / "results" / "collision_gradients_full_chunks")
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    print(f"Table I: {args.pairs} pairs × {args.targets} targets", flush=True)
    if args.resume:
        saved = json.loads(Path(args.resume).read_text())
        table1 = saved["table1"]
        args.pairs, args.targets = saved.get("size", (args.pairs, args.targets))
    else:
        problems = make_problems(args.pairs, args.targets, args.seed)
        shard = tuple(int(x) for x in args.shard.split("/"))
        if len(shard) != 2 or not 0 <= shard[0] < shard[1]:
            raise SystemExit(f"--shard must be K/M with 0 <= K < M, got {args.shard!r}")
        table1 = {} if args.skip_table1 else run_table1(problems, args.seed, min(args.chunk, args.pairs * args.targets),
                                                        store=args.store, shard=shard,
                                                        descending=args.descending)
        if table1 is None:
            return
        # saved before Table II so that a long Table II can be rerun alone (--resume)
        Path(args.out).with_suffix(".table1.json").write_text(
            json.dumps(dict(table1=table1, size=(args.pairs, args.targets)), indent=1))
    print("Table II", flush=True)
    table2 = {} if args.skip_table2 else run_table2(args.batch, args.repeats, args.seed + 1000)
    if table1 and table2:
        write_report(args.out, args, table1, table2, (args.pairs, args.targets), time.perf_counter() - t0, load_before, os.getloadavg())
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
