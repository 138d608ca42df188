"""Where the time of one ``jc.step`` goes (issue 5): CPU time per stage, per scene, batch 1 and 32.

For each scene of ``benchmarks/step.py`` asked for (default ``tower``, ``go2``, ``panda``) the
script first advances the scene ``--settle`` steps from its initial state (so the contacts of a
resting / standing configuration are active), then times, at that state, jitted programs of:

* ``step``          — the whole ``jc.step``;
* ``smooth``        — kinematics, CRBA mass matrix, RNEA bias, Cholesky, free velocity;
* ``narrow``        — geom frames + bounding-sphere culling + all pair functions; one row per pair
  group (``narrow plane-box`` ...), marked ``closed`` (registered closed form) or ``GJK/EPA``;
* ``contact stage`` — narrow phase + contact Jacobians + Delassus ``J M̃⁻¹ Jᵀ`` + problem + solve;
* ``solve``         — the contact solve alone, on the problem of that state (captured from one
  eager call of the contact stage), with the step's solver (``--solver``, default ADMM-NCP) and
  warm start as in ``step``;
* ``solve, k it``   — the same solve forced to exactly ``k`` iterations (tolerance 0), giving the
  cost per solver iteration ``(t(k2) − t(k1)) / (k2 − k1)`` and the setup (factorisation, κ, ρ₀,
  criterion) ``t(k1) − k1 · per-iteration``;
* ``contact stage, solve stubbed`` — the same with the solve replaced by zero forces, so
  ``problem build = stubbed stage − narrow`` (selection, Jacobians, Delassus, warm start, update).

Each program runs ``batch`` identical copies of the state under ``vmap``; times are CPU time
(``time.process_time``, the process pinned to one core), the median of ``--repeats`` calls after
one warm-up call, in µs per call (not per environment). A jitted identity on the state gives the
per-call dispatch overhead that every row contains.

    PYTHONPATH=. taskset -c 0 python benchmarks/step_profile.py [--scenes tower go2 panda]
        [--solver newton --compliance 1e-3 --tangential-compliance 1e-3 --limit-compliance 1e-3]

Writes ``benchmarks/results/step_profile.json`` and ``step_profile.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from _common import RESULTS, enable_float64, loadavg, pin_to_one_core, timed, write_results

pin_to_one_core(opt_out=None)  # always one core (no --all-cores here)
enable_float64()  # a script, not the library

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxsim_contact as jc  # noqa: E402
from jaxsim_contact.contact import PrimalNewton, solve  # noqa: E402
from jaxsim_contact.dynamics._kinematics import forward_kinematics  # noqa: E402
from jaxsim_contact.dynamics._step import smooth_dynamics  # noqa: E402
from jaxsim_contact.collision import _narrowphase as narrow_module  # noqa: E402
from jaxsim_contact.collision._geoms import geom_world_frames  # noqa: E402
from jaxsim_contact.collision._pairs import collision_structure  # noqa: E402
from jaxsim_contact.collision._registry import has_closed_form  # noqa: E402
from jaxsim_contact.constraints import _stage as constraints_module  # noqa: E402
from jaxsim_contact.contact import ContactSolution  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import step as step_bench  # noqa: E402


def _cpu_time(fn, args, repeats: int) -> float:
    """Median CPU seconds of ``fn(*args)`` (blocked), after one warm-up (compile) call."""
    return timed(lambda: fn(*args), repeats, clock=time.process_time).steady


def _batched(tree, batch: int):
    return jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + jnp.shape(x)), tree)


def _capture_problem(model, state):
    """``(problem, (warm_start, warm_primal))`` of the contact solve at ``state`` (one eager
    contact stage, run op by op so that the solve's ``lax.cond`` takes its branch in Python)."""
    captured = {}
    real_solve = constraints_module.solve

    def spy(problem, solver, warm_start=None, gradient="implicit", warm_primal=None):
        captured["problem"], captured["warm"] = problem, (warm_start, warm_primal)
        return real_solve(problem, solver, warm_start=warm_start, gradient=gradient,
                          warm_primal=warm_primal)

    constraints_module.solve = spy
    try:
        # op by op: the solve sits in a lax.cond (skipped when no slot is active), which would
        # otherwise trace it and hand the spy tracers
        with jax.disable_jit():
            smooth = smooth_dynamics(model, state, jnp.zeros((model.nu,)))  # zero controls, as the step
            constraints_module.contact_stage(model, state, smooth, model.options.dt)
    finally:
        constraints_module.solve = real_solve
    if "problem" not in captured:
        raise ValueError("no constraint slot is active at the profiled state: nothing to solve "
                         "(try another --settle)")
    return captured["problem"], captured["warm"]


def _stub_solve(problem, solver, warm_start=None, gradient="implicit", warm_primal=None):
    """Zero forces that still depend on every problem array the solver reads (so XLA keeps
    building them): ``PrimalNewton`` with a Delassus factor reads the factor, not ``G``."""
    n = problem.num_contacts
    dep = 0.0 * (jnp.sum(problem.free_velocity) + jnp.sum(warm_start))
    if warm_primal is not None:
        dep = dep + 0.0 * jnp.sum(warm_primal)
    factor_only = isinstance(solver, PrimalNewton) and problem.delassus_factor is not None
    if not factor_only:
        dep = dep + 0.0 * jnp.sum(problem.delassus)
    if problem.delassus_factor is not None:
        dep = dep + 0.0 * jnp.sum(problem.delassus_factor)
    zero = jnp.zeros((), problem.delassus.dtype) + dep
    return ContactSolution(force=jnp.zeros((n, 3)) + dep, velocity=jnp.zeros((n, 3)),
                           iterations=jnp.zeros((), jnp.int32), converged=jnp.ones((), bool),
                           criterion=zero, primal=zero, dual=zero, complementarity=zero, rho=zero)


def _forced(solver, iterations: int):
    """``solver`` forced to exactly ``iterations`` iterations (tolerance 0; PrimalNewton's
    round-off stop off too)."""
    if isinstance(solver, PrimalNewton):
        return PrimalNewton(max_iterations=iterations, tolerance=0.0,
                            min_compliance=solver.min_compliance, line_search=solver.line_search,
                            line_search_steps=solver.line_search_steps, armijo=solver.armijo,
                            backtracking=solver.backtracking, round_off_margin=0.0,
                            line_search_tolerance=solver.line_search_tolerance)
    return solver.replace(max_iterations=iterations, tolerance=0.0)


def profile_scene(name, mj, q0, batches, settle: int, repeats: int, k1: int, k2: int, options=None):
    model = jc.io.from_mjmodel(mj)
    if options:
        model = model.replace_options(**options)
    state = jc.init(model, q=jnp.asarray(q0))
    ctrl = jnp.zeros((model.nu,))
    settle_fn = jax.jit(lambda s: jax.lax.scan(lambda c, _: (jc.step(model, c, ctrl), None), s, None,
                                               length=settle)[0])
    state = jax.block_until_ready(settle_fn(state))
    structure = collision_structure(model)
    problem, warm = _capture_problem(model, state)
    solver = model.options.solver
    info = dict(scene=name, nv=int(model.nv), slots=int(problem.num_contacts),
                active=int(np.sum(np.asarray(problem.active))),
                groups=[dict(pair=f"{g.type_a.name.lower()}-{g.type_b.name.lower()}", pairs=g.num_pairs,
                             narrow_budget=g.narrow_budget,
                             kind="closed" if has_closed_form(g.type_a, g.type_b) else "GJK/EPA")
                        for g in structure.groups])
    margin = model.options.contact_margin

    def narrow_all(s):
        kin = smooth_dynamics(model, s, ctrl).kinematics
        return narrow_module.narrow_phase(model, structure, kin.body_pos, kin.body_quat, margin)

    def kinematics_only(s):
        kin = forward_kinematics(model, s.q)
        return geom_world_frames(model, kin.body_pos, kin.body_quat)

    def narrow_group(group):
        def fn(s):
            frames = kinematics_only(s)
            culled = narrow_module._cull(model, structure, frames, group, margin)
            manifold = narrow_module._group_manifolds(model, structure, frames, group, culled)
            return narrow_module._candidates(model, group, culled, manifold)
        return fn

    def contact_stage(s):
        smooth = smooth_dynamics(model, s, ctrl)
        return constraints_module.contact_stage(model, s, smooth, model.options.dt)

    def contact_stage_without_solve(s):
        real = constraints_module.solve
        constraints_module.solve = _stub_solve
        try:
            return contact_stage(s)
        finally:
            constraints_module.solve = real

    rows = []
    for batch in batches:
        states = _batched(state, batch)
        probs, warms = _batched(problem, batch), _batched(warm, batch)
        t = {}
        v = lambda f: jax.jit(jax.vmap(f))  # noqa: E731
        t["dispatch (jit identity)"] = _cpu_time(v(lambda s: s.q), (states,), repeats)
        t["step"] = _cpu_time(v(lambda s: jc.step(model, s, ctrl)), (states,), repeats)
        t["smooth dynamics"] = _cpu_time(v(lambda s: smooth_dynamics(model, s, ctrl).free_velocity),
                                         (states,), repeats)
        t["kinematics + geom frames"] = _cpu_time(v(kinematics_only), (states,), repeats)
        t["narrow (all groups, incl. kinematics)"] = _cpu_time(v(narrow_all), (states,), repeats)
        for g, gi in zip(structure.groups, info["groups"]):
            t[f"narrow {gi['pair']} x{gi['narrow_budget']} ({gi['kind']}, incl. kinematics)"] = _cpu_time(
                v(narrow_group(g)), (states,), repeats)
        t["contact stage (incl. smooth)"] = _cpu_time(v(contact_stage), (states,), repeats)
        t["contact stage, solve stubbed (incl. smooth)"] = _cpu_time(v(contact_stage_without_solve),
                                                                    (states,), repeats)
        solve_fn = lambda slv: v(lambda p, w: solve(  # noqa: E731
            p, slv, warm_start=w[0], warm_primal=w[1], gradient=model.options.contact_gradient).force)
        t["solve (default)"] = _cpu_time(solve_fn(solver), (probs, warms), repeats)
        sol = jax.jit(lambda p, w: solve(p, solver, warm_start=w[0], warm_primal=w[1]))(problem, warm)
        t1 = _cpu_time(solve_fn(_forced(solver, k1)), (probs, warms), repeats)
        t2 = _cpu_time(solve_fn(_forced(solver, k2)), (probs, warms), repeats)
        per_iter = (t2 - t1) / (k2 - k1)
        t[f"solve, {k1} it"] = t1
        t[f"solve, {k2} it"] = t2
        derived = dict(
            iterations=int(sol.iterations), criterion=float(sol.criterion),
            per_iteration_us=per_iter * 1e6, solve_setup_us=(t1 - k1 * per_iter) * 1e6,
            problem_build_us=(t["contact stage, solve stubbed (incl. smooth)"]
                              - t["narrow (all groups, incl. kinematics)"]) * 1e6,
        )
        rows.append(dict(batch=batch, times_us={k: x * 1e6 for k, x in t.items()}, **derived))
        print(name, batch, json.dumps(rows[-1], indent=None), flush=True)
    return dict(info, rows=rows)


def markdown(meta, results) -> str:
    lines = ["# One step, stage by stage (CPU time)", "",
             f"`{meta['command']}` — {meta['date']}, jax {meta['jax']}, float64, one pinned core, "
             f"median of {meta['repeats']} calls; load average {meta['loadavg_start']} → "
             f"{meta['loadavg_end']}. µs per call (batch copies of one state under vmap), each "
             "row includes the dispatch overhead of its first row. The state is the scene after "
             f"{meta['settle']} steps. Solver: {meta.get('solver', 'ADMM-NCP (default options)')}.", ""]
    for res in results:
        lines += [f"## {res['scene']} (nv {res['nv']}, {res['slots']} constraint slots, "
                  f"{res['active']} active)", "",
                  "pair groups: " + ", ".join(f"{g['pair']} {g['pairs']} pairs (budget "
                                              f"{g['narrow_budget']}, {g['kind']})" for g in res["groups"]),
                  ""]
        batches = [r["batch"] for r in res["rows"]]
        lines += ["| stage | " + " | ".join(f"batch {b} (µs)" for b in batches) + " |",
                  "|---|" + "---|" * len(batches)]
        for key in res["rows"][0]["times_us"]:
            lines.append(f"| {key} | " + " | ".join(f"{r['times_us'][key]:,.0f}" for r in res["rows"]) + " |")
        for key, label in [("problem_build_us", "problem build = stubbed contact stage − narrow"),
                           ("per_iteration_us", "solver: cost per iteration"),
                           ("solve_setup_us", "solver: setup (init, first factorisation, criterion)"),
                           ("iterations", "solver: iterations at this state"),
                           ("criterion", "solver: final criterion")]:
            fmt = (lambda x: f"{x:.1e}") if key == "criterion" else (lambda x: f"{x:,.0f}")
            lines.append(f"| {label} | " + " | ".join(fmt(r[key]) for r in res["rows"]) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenes", nargs="*", default=["tower", "go2", "panda"])
    parser.add_argument("--batches", type=int, nargs="*", default=[1, 32])
    parser.add_argument("--settle", type=int, default=200, help="steps before the profiled state")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--iterations", type=int, nargs=2, default=[10, 50],
                        help="forced iteration counts k1 k2 for the per-iteration cost")
    parser.add_argument("--solver", choices=("admm", "newton"), default="admm",
                        help="as benchmarks/step.py: the default ADMM-NCP or PrimalNewton-CCP")
    parser.add_argument("--compliance", type=float, default=0.0)
    parser.add_argument("--tangential-compliance", type=float, default=0.0)
    parser.add_argument("--limit-compliance", type=float, default=0.0)
    parser.add_argument("--out", default="step_profile")
    args = parser.parse_args(argv)
    if args.solver == "newton" and args.compliance <= 0:
        parser.error("--solver newton needs --compliance > 0")
    options, label = step_bench.ours_options(args.solver, args.compliance, args.tangential_compliance,
                                             args.limit_compliance)
    meta = dict(command="python benchmarks/step_profile.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                date=time.strftime("%Y-%m-%d %H:%M"), jax=jax.__version__, repeats=args.repeats,
                settle=args.settle, solver=label, loadavg_start=loadavg())
    all_scenes = step_bench.scenes()
    results = []
    for name in args.scenes:
        mj, q0 = all_scenes[name]
        results.append(profile_scene(name, mj, q0, args.batches, args.settle, args.repeats,
                                     *args.iterations, options=options))
        meta["loadavg_end"] = loadavg()
        write_results(args.out, dict(meta=meta, results=results), markdown(meta, results))
    print((RESULTS / f"{args.out}.md").read_text())


if __name__ == "__main__":
    main()
