"""NaN fuzz (issue 8): count non-finite values and derivatives over random configurations.

Three stages, each with values, forward-mode (``jax.jvp``) and reverse-mode (``jax.vjp``)
derivatives along random tangents / cotangents:

* **collision** — ``jc.collision.distance`` (default Nesterov GJK + EPA, exact implicit derivative
  rule) for every geometry-type pair of {sphere, ellipsoid, box, capsule, cylinder, cone, convex
  mesh} plus the plane against each of them. Every configuration combines an orientation mode
  (random; *parallel* — equal orientations, offset along the shared z axis, so boxes, cylinders and
  meshes meet face to face; *edge–edge* — the second shape turned 90° about x and 45° about z;
  *coincident centres*; *identical* — same pose and, for equal types, same size) with a *touching*
  flag (the second shape is moved along the normal by the signed distance of a first query, which
  puts the pair at exact contact up to the solver tolerance) and a scale of 1e-3, 1 or 1e3 m
  (sizes uniform in [0.2, 1] × scale, anisotropic).
  Inputs differentiated: both positions, both quaternions and both shapes' size parameters;
  outputs: signed distance, witness points, normal.
* **solver** — ``jc.contact.solve`` (default ADMM/NCP, implicit derivatives) on random problems
  with 4 contacts: Delassus ``J M⁻¹ Jᵀ`` from 6 dofs (rank ≤ 6 < 12, i.e. degenerate), full-rank,
  rank-one and all-zero Delassus; zero friction; values scaled by 1e-6 or 1e6; random inactive
  contacts and compliance. Derivatives w.r.t. ``G, g, μ`` of the force.
* **step** — ``jc.step`` on a scene of a floor and free box, sphere and convex-mesh bodies
  with random positions (often interpenetrating), orientations and velocities (σ 1 or 100 m/s).
  Derivatives of the next ``q, v`` w.r.t. ``q, v``.

The samplers and stage functions live in :mod:`jaxsim_contact.testing.fuzz` (the test suite runs
them at small sizes). Run (pinned, float64): ``taskset -c 0 python benchmarks/nan_fuzz.py --samples 100000`` writes
``benchmarks/results/nan_fuzz.{json,md}`` (``--out`` to change). ``--pairs sphere-box,...``
restricts the collision stage, ``--chunk`` sets the vmapped batch. Any non-finite entry is a bug;
the JSON keeps the first offending input of each stage for reproduction. The report is rewritten
after every chunk; ``--resume`` continues a killed or shorter run from its JSON with the inputs an
uninterrupted run would have drawn, so 10⁵ samples per pair can be collected over several sittings
(``nice -n 19 taskset -c 1 python benchmarks/nan_fuzz.py --resume``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)


from jaxsim_contact.testing.fuzz import (  # noqa: E402
    ORIENTATIONS,
    PAIRS,
    SCALES,
    run_collision,
    run_generic,
    solver_fn,
    solver_samples,
    step_fn,
    step_model,
    step_samples,
)


# -- main -----------------------------------------------------------------------------------------


def markdown(result: dict) -> str:
    lines = [
        "# NaN fuzz",
        "",
        f"Command: `{result['command']}`  ",
        f"Machine: {result['machine']}; load average at start {result['load_average_start']}, "
        f"at end {result['load_average_end']}; wall time {result['wall_s']:.0f} s.",
        "",
        "Non-finite entries (values; forward-mode jvp outputs; reverse-mode vjp outputs). "
        "Every configuration mixes the orientation modes "
        f"{', '.join(ORIENTATIONS)}, a touching flag and scales {SCALES} (see the script).",
        "",
        "| stage | samples | values | jvp | vjp | first call (s) | rest (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in result["collision"]:
        lines.append(f"| collision {row['pair']} | {row['samples']} | {row['values']} | "
                     f"{row['jvp']} | {row['vjp']} | {row['first_call_s']:.2f} | {row['run_s']:.2f} |")
    for row in result["other"]:
        lines.append(f"| {row['stage']} | {row['samples']} | {row['values']} | {row['jvp']} | "
                     f"{row['vjp']} | {row['first_call_s']:.2f} | {row['run_s']:.2f} |")
    total = sum(r["values"] + r["jvp"] + r["vjp"] for r in result["collision"] + result["other"])
    lines += ["", f"Total non-finite entries: **{total}**."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=100_000, help="per collision pair")
    parser.add_argument("--solver-samples", type=int, default=None, help="default: --samples")
    parser.add_argument("--step-samples", type=int, default=None, help="default: --samples / 10")
    parser.add_argument("--chunk", type=int, default=2000)
    parser.add_argument("--pairs", default="", help="comma list like sphere-box,plane-mesh")
    parser.add_argument("--plane-first", action="store_true",
                        help="run the (cheap, closed-form) plane pairs before the GJK pairs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "nan_fuzz"))
    parser.add_argument("--resume", action="store_true",
                        help="continue the run recorded in --out.json (same --seed and --chunk): "
                             "stages and pairs keep their counts and go on to the requested samples")
    args = parser.parse_args(argv)
    pairs = PAIRS if not args.pairs else tuple(tuple(p.split("-")) for p in args.pairs.split(","))
    if args.plane_first:
        pairs = tuple(sorted(pairs, key=lambda p: p[0] != "plane"))
    start = time.perf_counter()
    load_start = os.getloadavg()
    print(f"NaN fuzz: {len(pairs)} pairs x {args.samples} samples, chunk {args.chunk}", flush=True)
    log = lambda s: print(s, flush=True)  # noqa: E731
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    collision, other = [], []
    previous_collision, previous_other = {}, {}
    if args.resume and out.with_suffix(".json").exists():
        previous = json.loads(out.with_suffix(".json").read_text())
        if (previous.get("seed"), previous.get("chunk")) != (args.seed, args.chunk):
            raise SystemExit(f"cannot resume {out}.json: it was run with seed {previous.get('seed')} "
                             f"and chunk {previous.get('chunk')}, not {args.seed} and {args.chunk}")
        previous_collision = {row["pair"]: row for row in previous["collision"] if "samples" in row}
        previous_other = {row["stage"]: row for row in previous["other"] if "samples" in row}
        start -= previous.get("wall_s", 0.0)
        print(f"resuming {out}.json: {sum(r['samples'] for r in previous_collision.values())} "
              "collision samples done", flush=True)

    def write(_=None):
        """Results so far (a partial run leaves a valid report)."""
        result = dict(
            command="taskset -c 0 python " + " ".join([sys.argv[0], *(argv or sys.argv[1:])]),
            machine=f"{platform.machine()} {os.cpu_count()} cores, jax {jax.__version__}",
            load_average_start=[round(x, 2) for x in load_start],
            load_average_end=[round(x, 2) for x in os.getloadavg()],
            seed=args.seed, chunk=args.chunk,
            wall_s=time.perf_counter() - start, collision=collision, other=other,
        )
        out.with_suffix(".json").write_text(json.dumps(result, indent=1))
        out.with_suffix(".md").write_text(markdown(result))
        return result

    solver_n = args.samples if args.solver_samples is None else args.solver_samples
    step_n = args.samples // 10 if args.step_samples is None else args.step_samples
    stages = []
    if solver_n:
        stages.append(("solver (ADMM/NCP, implicit)", 0, solver_samples, solver_fn, solver_n, args.chunk))
    if step_n:
        stages.append(("step (3 free bodies + floor)", 1, step_samples, lambda: step_fn(step_model()),
                       step_n, min(args.chunk, 500)))
    for name, stream, make, make_fn, n, chunk in stages:
        slot = len(other)
        other.append({**(previous_other.get(name) or {}), "stage": name})

        def progress(row, slot=slot):
            other[slot] = row
            write()

        other[slot] = run_generic(name, stream, make, make_fn(), n, chunk, args.seed, log,
                                  previous_other.get(name), progress)
        write()
    collision = run_collision(pairs, args.samples, args.chunk, args.seed, log,
                              on_row=lambda rows: (collision.clear(), collision.extend(rows), write()),
                              previous=previous_collision)
    print(markdown(write()))
    total = sum(r["values"] + r["jvp"] + r["vjp"] for r in collision + other)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
