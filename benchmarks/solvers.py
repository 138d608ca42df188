"""Contact-solver benchmark: iterations and time to reach 1e-4 and 1e-6 (seed 001 §IV-C) for every
solver, at batch 1 and batch B (jit + vmap), next to Pinocchio's ADMMConstraintSolver and
PGSConstraintSolver on the same (G, g, μ) in the same run.

Accuracy is always measured with *our* criterion (``jc.contact.criterion``, NCP eq. 15, or CCP /
LCP for those formulations) on the returned forces, for our solvers and Pinocchio's alike. For
Pinocchio the tolerance is tightened (×0.1 steps) until our NCP criterion is met or 3 attempts fail.

    python benchmarks/solvers.py --quick      # a few minutes on 2 CPU cores
    python benchmarks/solvers.py              # full (batch 1024)

Writes benchmarks/results/solvers.json and solvers.md (``--out NAME``: NAME.json / NAME.md).
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import shlex
import sys
import time

from _common import enable_float64, timed, write_results

enable_float64()  # a script, not the library: float64 for accuracy

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxsim_contact as jc  # noqa: E402

C = jc.contact
B = jc.testing.problems
DT = 1e-3


def scenarios(quick: bool):
    rng = np.random.default_rng(0)
    out = {
        "cube_on_plane": lambda r: B.cube_on_plane(
            velocity=(r.normal() * 0.1, r.normal() * 0.1, 0.0), friction=0.5).problem(
                DT, units="impulse"),
        "stack_10_boxes": lambda r: B.box_stack(np.exp(r.normal(size=10) * 0.3),
                                                friction=0.5).problem(DT, units="impulse"),
    }
    for n in (4, 16, 64):
        out[f"random_{n}"] = lambda r, n=n: B.random_problem(r, n)
    return out, rng


def solvers(tol, cap):
    return {
        "PGS-lcp": C.PGS("lcp", tolerance=tol, max_iterations=cap),
        "PGS-ccp": C.PGS("ccp", tolerance=tol, max_iterations=cap),
        "PGS-ncp": C.PGS("ncp", tolerance=tol, max_iterations=cap),
        "ADMM-ccp": C.ADMM("ccp", tolerance=tol, max_iterations=cap),
        "ADMM-ncp": C.ADMM("ncp", tolerance=tol, max_iterations=cap),
        # what jc.step uses by default: Cholesky refactored every 10 iterations, residual-balanced
        # rho, Anderson acceleration (ADMM("ncp") alone is the eigendecomposition variant)
        "ADMM-ncp-step-default": jc.Options(dt=DT, gravity=(0.0, 0.0, -9.81)).solver.replace(
            tolerance=tol, max_iterations=cap),
        "Staggered": C.StaggeredProjections(tolerance=tol, max_iterations=min(cap, 300)),
        "Raisim": C.Raisim(tolerance=tol * 1e-2, max_iterations=min(cap, 200)),
        "PrimalNewton(R=1e-6·diag)": C.PrimalNewton(tolerance=tol, max_iterations=200),
    }


def formulation_of(name):
    if "lcp" in name:
        return "lcp"
    if "ccp" in name or "Newton" in name:
        return "ccp"
    return "ncp"


def with_compliance(p):
    diag = jnp.diagonal(p.delassus, axis1=-2, axis2=-1)
    d = diag.reshape(diag.shape[:-1] + (-1, 3)).mean(-1)
    return C.ContactProblem(p.delassus, p.free_velocity, p.friction,
                            compliance=jnp.repeat(1e-6 * d, 3, axis=-1)) if diag.ndim == 1 else None


# ---------------------------------------------------------------------------------------------
# Pinocchio


def pinocchio_solver(kind, n):
    import pinocchio as pin

    model = pin.Model()
    model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "ff")
    return pin, model


def pin_solve(pin, model, G, g, mu, kind, tol, cap, reps):
    n = len(mu)
    cms = pin.StdVec_ConstraintModel()
    for i in range(n):
        cm = pin.PointContactConstraintModel(model, 1)
        cm.setFriction(float(mu[i]))
        cms.append(pin.ConstraintModel(cm))
    cds = pin.StdVec_ConstraintData()
    for cm in cms:
        cds.append(cm.createData())
    if kind == "admm":
        S, st, res = pin.ADMMConstraintSolver(3 * n), pin.ADMMSolverSettings(), pin.ADMMSolverResult()
    else:
        S, st, res = pin.PGSConstraintSolver(3 * n), pin.PGSSolverSettings(), pin.PGSSolverResult()
    st.max_iterations = cap
    st.absolute_feasibility_tol = tol
    st.absolute_complementarity_tol = tol
    st.relative_feasibility_tol = 0.0
    st.relative_complementarity_tol = 0.0
    st.solve_ncp = True
    G = np.ascontiguousarray(G)
    g = np.ascontiguousarray(g)
    times = []
    for _ in range(reps):
        D = pin.DelassusOperatorDense(G)  # includes the factorisation work ADMM needs
        res.reset() if hasattr(res, "reset") else None
        t0 = time.perf_counter()
        S.solve(D, g, cms, cds, st, res)
        times.append(time.perf_counter() - t0)
    return res.retrieveConstraintImpulses().reshape(n, 3), int(res.iterations), float(np.median(times))


# ---------------------------------------------------------------------------------------------


def time_call(f, *args, reps=3):
    """``(output, median wall time of reps blocked calls)`` after one blocked warm-up call."""
    t = timed(lambda: f(*args), reps)
    return t.out, t.steady


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small batch, fewer scenarios")
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--scenarios", nargs="*", default=None,
                    help="subset of cube_on_plane, stack_10_boxes, random_4, random_16, random_64")
    ap.add_argument("--chunk", type=int, default=0,
                    help="solve the batch with jc.chunked_vmap in chunks of this many problems "
                         "(0: plain jax.vmap); on a CPU a chunk's working set can stay in cache")
    ap.add_argument("--queue", type=int, default=0,
                    help="solve the batch with jc.contact.solve_batch on this many lanes fed from a "
                         "work queue (0: off; overrides --chunk)")
    ap.add_argument("--solvers", nargs="*", default=None,
                    help="subset of the solver rows (names as in the table)")
    ap.add_argument("--cap", type=int, default=None,
                    help="iteration cap (default 500 with --quick, else 5000)")
    ap.add_argument("--repeats", type=int, default=None,
                    help="timed calls of the batched solve after a warm-up (default 1 quick, 3 full)")
    ap.add_argument("--out", default="solvers", help="results name (benchmarks/results/OUT.json/.md)")
    args = ap.parse_args()
    batch = args.batch or (32 if args.quick else 1024)
    cap = args.cap or (500 if args.quick else 5000)
    names, rng = scenarios(args.quick)
    unknown = set(args.scenarios or ()) - set(names)
    if unknown:
        ap.error(f"unknown scenarios {sorted(unknown)}; choose from {sorted(names)}")
    unknown = set(args.solvers or ()) - set(solvers(1e-6, cap))
    if unknown:
        ap.error(f"unknown solvers {sorted(unknown)}; choose from {sorted(solvers(1e-6, cap))}")
    meta = dict(jax=jax.__version__, platform=platform.platform(), cpu_count=os.cpu_count(),
                quick=args.quick, batch=batch, cap=cap, dt=DT, scenarios=args.scenarios, chunk=args.chunk,
                queue=args.queue,
                command=shlex.join(["python", "benchmarks/solvers.py", *sys.argv[1:]]),
                started=time.strftime("%Y-%m-%d %H:%M"))
    rows = []
    pin, model = pinocchio_solver("admm", 1)
    for scen, make in names.items():
        # every scenario draws its problems, so a subset sees the same problems as a full run
        problems = [make(rng) for _ in range(batch)]
        if args.scenarios is not None and scen not in args.scenarios:
            continue
        stacked = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *problems)
        one = problems[0]
        for tol in (1e-4, 1e-6):
            for name, solver in solvers(tol, cap).items():
                if args.quick and name in ("PGS-lcp", "PGS-ccp"):
                    continue
                if args.solvers is not None and name not in args.solvers:
                    continue
                form = formulation_of(name)
                p1, pb = one, stacked
                if "Newton" in name:
                    p1 = with_compliance(one)
                    pb = jax.tree_util.tree_map(lambda *x: jnp.stack(x),
                                                *[with_compliance(q) for q in problems])
                f1 = jax.jit(lambda p, s=solver: C.solve(p, s))
                batched = (functools.partial(jc.chunked_vmap, chunk_size=args.chunk)
                           if 0 < args.chunk < batch else jax.vmap)
                if args.queue:
                    fb = jax.jit(lambda p, s=solver: C.solve_batch(p, s, lanes=args.queue))
                else:
                    fb = jax.jit(batched(lambda p, s=solver: C.solve(p, s)))
                t0 = time.perf_counter()
                jax.block_until_ready(f1.lower(p1).compile())
                compile1 = time.perf_counter() - t0
                t0 = time.perf_counter()
                jax.block_until_ready(fb.lower(pb).compile())
                compileb = time.perf_counter() - t0
                s1, t1 = time_call(f1, p1)
                sb, tb = time_call(fb, pb, reps=args.repeats or (1 if args.quick else 3))
                crit_b = np.asarray(jax.vmap(lambda p, f: C.criterion(p, f, form))(pb, sb.force))
                rows.append(dict(
                    scenario=scen, tolerance=tol, solver=name, formulation=form,
                    iterations_batch1=int(s1.iterations),
                    criterion_batch1=float(C.criterion(p1, s1.force, form)),
                    time_batch1_s=t1, compile_batch1_s=compile1,
                    batch=batch, iterations_mean=float(np.mean(np.asarray(sb.iterations))),
                    iterations_max=int(np.max(np.asarray(sb.iterations))),
                    converged_fraction=float(np.mean(np.asarray(sb.converged))),
                    reached_fraction=float(np.mean(crit_b <= tol)),
                    time_batch_s=tb, time_per_problem_s=tb / batch, compile_batch_s=compileb,
                ))
                save(meta, rows, args.out)  # a long run keeps what it measured so far
                print(f"{scen:15s} tol={tol:.0e} {name:26s} it={int(s1.iterations):5d} "
                      f"crit={rows[-1]['criterion_batch1']:.1e} t1={t1*1e6:9.1f}us "
                      f"batch/prob={tb/batch*1e6:9.1f}us reached={rows[-1]['reached_fraction']:.2f}",
                      flush=True)
            # Pinocchio peers on the same problems (first min(batch, 64) problems, sequential)
            npin = min(batch, 64)
            for kind in ("admm", "pgs"):
                its, ts, crits = [], [], []
                for q in problems[:npin]:
                    G, g, mu = (np.asarray(q.delassus), np.asarray(q.free_velocity),
                                np.asarray(q.friction))
                    ptol = tol
                    for _ in range(3):
                        f, it, t = pin_solve(pin, model, G, g, mu, kind, ptol, cap, reps=3)
                        crit = float(C.criterion(q, jnp.asarray(f)))
                        if crit <= tol:
                            break
                        ptol *= 0.1
                    its.append(it)
                    ts.append(t)
                    crits.append(crit)
                crits = np.asarray(crits)
                rows.append(dict(
                    scenario=scen, tolerance=tol, solver=f"pinocchio-{kind.upper()}",
                    formulation="ncp", iterations_batch1=its[0], criterion_batch1=float(crits[0]),
                    time_batch1_s=ts[0], compile_batch1_s=0.0, batch=npin,
                    iterations_mean=float(np.mean(its)), iterations_max=int(np.max(its)),
                    converged_fraction=float(np.mean(crits <= tol)),
                    reached_fraction=float(np.mean(crits <= tol)),
                    time_batch_s=float(np.sum(ts)), time_per_problem_s=float(np.mean(ts)),
                    compile_batch_s=0.0,
                ))
                save(meta, rows, args.out)
                print(f"{scen:15s} tol={tol:.0e} pinocchio-{kind:18s} it={its[0]:5d} "
                      f"crit={crits[0]:.1e} per-problem={np.mean(ts)*1e6:9.1f}us "
                      f"reached={np.mean(crits <= tol):.2f}", flush=True)
    meta["finished"] = time.strftime("%Y-%m-%d %H:%M")
    save(meta, rows, args.out)


def save(meta, rows, out):
    write_results(out, dict(meta=meta, rows=rows), markdown(meta, rows))


def _driver(meta):
    if meta.get("queue"):
        return f"`jc.contact.solve_batch` on {meta['queue']} lanes (a work queue)"
    if 0 < meta.get("chunk", 0) < meta["batch"]:
        return f"`jc.chunked_vmap` in chunks of {meta['chunk']}"
    return "`jax.vmap`"


def markdown(meta, rows) -> str:
    lines = ["# Contact solvers benchmark", "",
             f"`{meta['command']}` — "
             f"started {meta.get('started', '?')}, "
             f"{'finished ' + meta['finished'] if meta.get('finished') else 'PARTIAL (still running or stopped)'}; jax "
             f"{meta['jax']}, {meta['cpu_count']} CPU cores, batch {meta['batch']}, iteration cap "
             f"{meta['cap']}, float64, batched by "
             f"{_driver(meta)}. Accuracy = our criterion (NCP eq. 15 unless the solver's "
             "formulation is CCP/LCP) on the returned forces. Pinocchio: sequential per-problem "
             "`solve` time (median of 3), on the first min(batch, 64) problems; its tolerance is "
             "tightened until our NCP criterion is met (up to 3 tries).", "",
             "| scenario | tol | solver | it (b=1) | crit (b=1) | t b=1 (µs) | t/problem batched (µs)"
             " | mean it | reached | compile b=1 / batch (s) | ratio vs pin-ADMM | ratio vs pin-PGS |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    pin = {(r["scenario"], r["tolerance"], r["solver"]): r for r in rows
           if r["solver"].startswith("pinocchio")}
    for r in rows:
        pa = pin.get((r["scenario"], r["tolerance"], "pinocchio-ADMM"))
        pp = pin.get((r["scenario"], r["tolerance"], "pinocchio-PGS"))
        ra = f"{r['time_per_problem_s'] / pa['time_per_problem_s']:.2f}" if pa else ""
        rp = f"{r['time_per_problem_s'] / pp['time_per_problem_s']:.2f}" if pp else ""
        lines.append(
            f"| {r['scenario']} | {r['tolerance']:.0e} | {r['solver']} | {r['iterations_batch1']} | "
            f"{r['criterion_batch1']:.1e} | {r['time_batch1_s']*1e6:.0f} | "
            f"{r['time_per_problem_s']*1e6:.1f} | {r['iterations_mean']:.0f} | "
            f"{r['reached_fraction']:.2f} | {r['compile_batch1_s']:.1f} / {r['compile_batch_s']:.1f} | "
            f"{ra} | {rp} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
