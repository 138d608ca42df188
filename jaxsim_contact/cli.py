"""The ``jaxsim-contact`` command line.

Subcommands:

* ``demo`` — simulates the embedded default scene (boxes, spheres, a capsule and a convex mesh
  dropped on a plane), prints a summary (steps/s, max penetration, energy, solver residual) and
  writes a self-contained HTML replay;
* ``simulate FILE`` — the same for an MJCF/URDF file (``--steps``, ``--batch``, ``--out``);
* ``collide`` — batched collision queries between the built-in shapes (jit + vmap), one table row
  per shape pair and separation: signed distance, GJK iterations per variant, µs/query.
* ``bench`` — runs ``benchmarks/gjk.py --quick`` from a source checkout, or says where the
  benchmarks live.

The CLI is an application, not the library: it enables float64 (``--float32`` to opt out) and JAX's
persistent compilation cache (``--no-cache`` to opt out) so a second ``demo`` starts quickly.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim_contact as jc
from jaxsim_contact.dynamics import kinetic_energy, potential_energy

__all__ = ["main", "demo", "collide", "simulate", "DEMO_SHAPES", "DEFAULT_PAIRS", "build_parser"]

#: built-in shape names used by ``demo``
DEMO_SHAPES = ("sphere", "box", "capsule", "cylinder", "cone", "ellipsoid", "mesh")
#: default pairs: every shape type appears at least once (four compilations per GJK variant)
DEFAULT_PAIRS = ("sphere-box", "capsule-cylinder", "cone-ellipsoid", "mesh-box")
DEFAULT_DISTANCES = (-0.05, 0.0, 0.05, 0.5)
VARIANTS = ("vanilla", "polyak", "nesterov")


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
    t0 = time.perf_counter()
    compiled = run.lower(model, states, ctrls).compile()
    compile_s = time.perf_counter() - t0
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
        steps=steps, batch=batch, compile_s=compile_s, run_s=run_s,
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
    print(f"compile     {compile_s:.1f} s", file=out)
    print(f"speed       {summary['env_steps_per_s']:.0f} env-steps/s ({run_s:.2f} s)", file=out)
    print(f"penetration max {summary['max_penetration']:.3e} m", file=out)
    print(f"energy      {summary['energy_start']:.6f} J -> {summary['energy_end']:.6f} J (env 0)", file=out)
    print(f"solver      {summary['mean_iterations']:.1f} iterations/step (mean), worst residual "
          f"{summary['max_residual']:.2e}", file=out)
    print(f"errors      {summary['errors'][:8]}{' ...' if batch > 8 else ''} (bits: 1 non-finite, "
          "2 solver not converged, 4 contact budget overflow)", file=out)
    if out_html:
        env0 = jax.tree_util.tree_map(lambda x: x[0], traj)
        jc.viz.to_html(model, env0, out_html)
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
    quat_b = jnp.asarray(jc.math.quat_from_axis_angle(jnp.array([1.0, 1.0, 1.0]) / np.sqrt(3.0), 0.5), dtype)
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


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``jaxsim-contact``."""
    parser = argparse.ArgumentParser(prog="jaxsim-contact", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    d = sub.add_parser("demo", help="simulate the embedded default scene and write an HTML replay")
    d.add_argument("--steps", type=int, default=1000, help="time steps")
    d.add_argument("--batch", type=int, default=1, help="environments (vmapped)")
    d.add_argument("--out", default="jaxsim_contact_demo.html", help="HTML replay file ('' for none)")
    d.add_argument("--float32", action="store_true", help="run in float32 (default float64)")
    d.add_argument("--no-cache", action="store_true", help="do not use JAX's persistent compilation cache")

    f = sub.add_parser("simulate", help="simulate an MJCF/URDF file and write an HTML replay")
    f.add_argument("file", help="MJCF (.xml) or URDF (.urdf) file")
    f.add_argument("--steps", type=int, default=1000, help="time steps")
    f.add_argument("--batch", type=int, default=1, help="environments (vmapped)")
    f.add_argument("--out", default="replay.html", help="HTML replay file ('' for none)")
    f.add_argument("--floor", action="store_true", help="add a floor plane at z = 0 (URDF robots)")
    f.add_argument("--floating-base", action="store_true", help="free joint on root bodies (URDF)")
    f.add_argument("--float32", action="store_true", help="run in float32 (default float64)")
    f.add_argument("--no-cache", action="store_true", help="do not use JAX's persistent compilation cache")

    p = sub.add_parser("collide", help="batched collision queries on the built-in shapes")
    p.add_argument(
        "--pairs", nargs="+", type=_parse_pair, default=None,
        help=f"shape pairs A-B (default: {' '.join(DEFAULT_PAIRS)}); shapes: {', '.join(DEMO_SHAPES)}",
    )
    p.add_argument("--all-pairs", action="store_true", help="every shape-type combination (slow: one compile each)")
    p.add_argument("--distances", nargs="+", type=float, default=list(DEFAULT_DISTANCES), help="target separations (m)")
    p.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS), help="GJK variants")
    p.add_argument("--batch", type=int, default=1024, help="queries per jitted call")
    p.add_argument("--repeats", type=int, default=3, help="timing repeats")
    p.add_argument("--float32", action="store_true", help="run in float32 (default float64)")
    p.add_argument("--no-cache", action="store_true", help="do not use JAX's persistent compilation cache")

    b = sub.add_parser("bench", help="run benchmarks/gjk.py --quick (source checkout)")
    b.add_argument("--full", action="store_true", help="run the full benchmark instead of --quick")
    return parser


def main(argv=None) -> int:
    """Entry point of the ``jaxsim-contact`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    if args.command == "bench":
        return _bench(args)

    jax.config.update("jax_enable_x64", not args.float32)
    if not args.no_cache:
        cache = os.environ.get("JAXSIM_CONTACT_CACHE", str(Path.home() / ".cache" / "jaxsim_contact" / "jax"))
        jax.config.update("jax_compilation_cache_dir", cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    if args.command == "demo":
        demo(args.steps, args.batch, args.out or None)
        return 0
    if args.command == "simulate":
        model = jc.load(args.file, floating_base=args.floating_base)
        if args.floor:
            model = jc.io.add_floor(model)
        simulate(model, args.steps, args.batch, args.out or None)
        return 0
    pairs = args.pairs
    if args.all_pairs:
        pairs = list(itertools.combinations_with_replacement(DEMO_SHAPES, 2))
    collide(pairs, args.distances, tuple(args.variants), args.batch, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
