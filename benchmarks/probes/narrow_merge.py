"""Compile time vs run time of the narrow phase's general (GJK/EPA) pair groups: one program per
group, one program for all of them, or one for the mesh groups and one for the others (the
default of ``jaxsim_contact.collision._narrowphase.merged_general_groups``).

The demo scene (boxes, spheres, a capsule, a convex mesh) has four general groups: sphere-mesh,
capsule-mesh, box-mesh (the mesh class of the third policy) and capsule-box. For each policy and
batch size, in one process: the CPU time of compiling ``jit(vmap(rollout))`` of ``--steps`` steps, then env-steps/s
of that program from a state after 300 steps (bodies resting in contact), the best of
``--repeats`` blocked calls, the policies timed in alternation. One core (pinned).

    python benchmarks/probes/narrow_merge.py --batches 1 32 --out narrow_merge_demo
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

if "--all-cores" not in sys.argv and hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jaxsim_contact as jc  # noqa: E402
from jaxsim_contact.collision import _narrowphase as narrowphase  # noqa: E402
from jaxsim_contact.collision._mixed import mergeable  # noqa: E402
from jaxsim_contact.collision._registry import has_closed_form  # noqa: E402

RESULTS = Path(__file__).resolve().parent.parent / "results"  # benchmarks/results
DEFAULT_POLICY = narrowphase.merged_general_groups


def _general(structure):
    return [i for i, g in enumerate(structure.groups)
            if not has_closed_form(g.type_a, g.type_b) and mergeable(g.type_a, g.type_b)]


def _all_in_one(structure):
    groups = _general(structure)
    return [groups] if len(groups) >= 2 else []


def _mesh_split(structure):
    classes = {}
    for i in _general(structure):
        g = structure.groups[i]
        classes.setdefault(jc.GeomType.MESH in (g.type_a, g.type_b), []).append(i)
    return [members for members in classes.values() if len(members) >= 2]


#: the library default (narrowphase.merged_general_groups) is "mesh / non-mesh"
POLICIES = {"all-in-one": _all_in_one, "mesh / non-mesh": _mesh_split, "per-group": lambda structure: []}


def measure(batch: int, steps: int, repeats: int) -> list[dict]:
    model = jc.scenes.load("demo")
    rng = np.random.default_rng(0)
    q0 = np.tile(np.asarray(model.qpos0), (batch, 1))
    for j, joint_type in enumerate(model.tree.joint_type):
        if joint_type == jc.JointType.FREE:
            q0[:, model.tree.joint_qpos_adr[j] + 2] += rng.uniform(0, 0.01, batch)
    states = jax.vmap(lambda q: jc.init(model, q=q))(jnp.asarray(q0))
    ctrls = jnp.zeros((batch, steps, 0))
    compiled = {}
    for name, policy in POLICIES.items():
        narrowphase.merged_general_groups = policy
        run = jax.jit(jax.vmap(jc.rollout, in_axes=(None, 0, 0)))
        t0 = time.process_time()
        lowered = run.lower(model, states, ctrls)
        t1 = time.process_time()
        program = lowered.compile()
        compile_s = time.process_time() - t1
        trace_s = t1 - t0
        settled = states
        for _ in range(max(1, 300 // steps)):
            settled, _ = program(model, settled, ctrls)
        jax.block_until_ready(settled)
        general = len(_general(model.collision))
        programs = general - sum(len(group) - 1 for group in policy(model.collision))
        compiled[name] = (program, settled, compile_s, programs, trace_s)
    narrowphase.merged_general_groups = DEFAULT_POLICY
    times = {name: [] for name in compiled}
    for _ in range(repeats):
        for name, (program, settled, *_) in compiled.items():
            t0 = time.perf_counter()
            out, traj = program(model, settled, ctrls)
            jax.block_until_ready((out, traj))
            times[name].append(time.perf_counter() - t0)
    rows = []
    for name, (_, _, compile_s, programs, trace_s) in compiled.items():
        best = min(times[name])
        rows.append({"policy": name, "batch": batch, "gjk_epa_programs": programs, "compile_cpu_s": compile_s, "trace_and_lower_cpu_s": trace_s,
                     "env_steps_per_s": batch * steps / best, "times_s": times[name]})
        print(f"batch {batch:4d}  {name:26s} trace+lower {trace_s:5.1f}  XLA compile {compile_s:6.1f} CPU-s  {batch * steps / best:8.0f} env-steps/s",
              flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="narrow_merge_demo", help="file stem under benchmarks/results")
    parser.add_argument("--all-cores", action="store_true")
    args = parser.parse_args(argv)
    rows = [row for batch in args.batches for row in measure(batch, args.steps, args.repeats)]
    RESULTS.mkdir(exist_ok=True)
    meta = {"jax": jax.__version__, "load_average": os.getloadavg(), "steps": args.steps, "repeats": args.repeats}
    (RESULTS / f"{args.out}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = ["# Narrow phase: general pair groups merged into shared GJK/EPA programs (demo scene)", "",
             f"`python benchmarks/probes/narrow_merge.py --batches {' '.join(map(str, args.batches))}` — jax {jax.__version__}, "
             f"float64, one pinned core, load average {os.getloadavg()[0]:.1f} at the end. Compile: CPU time of "
             f"XLA's compile of `jit(vmap(rollout))` of {args.steps} steps (tracing + lowering listed apart); throughput: best of {args.repeats} blocked calls after 300 "
             "settling steps, policies timed in alternation.", "",
             "| batch | policy | GJK/EPA programs | trace + lower (CPU-s) | XLA compile (CPU-s) | env-steps/s |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['batch']} | {r['policy']} | {r['gjk_epa_programs']} | {r['trace_and_lower_cpu_s']:.1f} | "
                     f"{r['compile_cpu_s']:.1f} | "
                     f"{r['env_steps_per_s']:.0f} |")
    (RESULTS / f"{args.out}.md").write_text("\n".join(lines) + "\n")
    print("wrote", RESULTS / f"{args.out}.md")


if __name__ == "__main__":
    main()
