"""How the default solver's iteration cap trades convergence for time on whole rollouts (issue 5).

For each scene (``go2``, ``tower`` from ``benchmarks/step.py``; ``demo`` = ``jc.scenes.load("demo")``)
and each cap, one ``jit(scan(step))`` rollout of ``--steps`` steps at batch 1 (``--batch N``: N
vmapped trajectories whose initial velocities are spread, so that counts do not hang on one chaotic
trajectory), float64, with the default solver of ``jc.Options`` except ``max_iterations`` (and the
``--rho-updates`` / ``--anderson`` / ``--polish`` variants). Reported: steps with an active contact,
mean solver iterations, steps whose final criterion exceeds the tolerance (unconverged, i.e.
stopped by the cap), the worst criterion, CPU time of the second (compiled) call and compile time.

    PYTHONPATH=. taskset -c 0 python benchmarks/solver_cap.py [--scenes go2 tower demo humanoid]
        [--caps 200 500] [--rho-updates balanced spectral] [--anderson 0 5] [--polish 0 1]
        [--steps N] [--out FILE]

Writes ``benchmarks/results/solver_cap.md`` (``--out``).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from _common import enable_float64, loadavg  # noqa: E402

enable_float64()  # a script, not the library

import jaxsim_contact as jc  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import step as step_benchmark  # noqa: E402

STEPS = {"go2": 1000, "tower": 1000, "demo": 500, "humanoid": 300}


def scene(name: str):
    """``(model, initial state)``."""
    if name == "demo":
        model = jc.scenes.load("demo")
        return model, jc.init(model)
    mj, q0 = step_benchmark.scenes()[name]
    model = jc.io.from_mjmodel(mj)
    return model, jc.init(model, q=jnp.asarray(q0))


def with_cap(model, cap: int, rho_update: str | None = None, anderson: int | None = None,
             polish: bool | None = None):
    changes = dict(max_iterations=cap)
    if polish is not None:
        changes["polish"] = polish
    if rho_update is not None:
        changes["rho_update"] = rho_update
    if anderson is not None:
        changes["anderson_memory"] = anderson
    return model.replace_options(solver=model.options.solver.replace(**changes))


#: relative spread of the initial velocities across a batch (``--batch``): different trajectories
#: of one scene, so that counts of capped steps are not those of one chaotic trajectory
LANE_VELOCITY_SPREAD = 0.05


def lanes(model, state, batch: int):
    """``batch`` copies of ``state`` whose velocities are scaled by ``1 + LANE_VELOCITY_SPREAD z``
    plus ``LANE_VELOCITY_SPREAD · z'`` m/s or rad/s (``z, z'`` standard normal, fixed seed); copy 0
    is ``state`` itself."""
    rng = np.random.default_rng(0)
    v = np.asarray(state.v)
    noise = rng.standard_normal((batch, v.shape[0]))
    scale = 1.0 + LANE_VELOCITY_SPREAD * rng.standard_normal((batch, 1))
    velocities = v * scale + LANE_VELOCITY_SPREAD * noise
    velocities[0] = v
    return jax.vmap(lambda vel: jc.init(model, q=state.q, v=vel))(jnp.asarray(velocities))


def measure(model, state, steps: int, batch: int = 1) -> dict:
    ctrl = jnp.zeros((model.nu,))

    def body(s, _):
        s = jc.step(model, s, ctrl)
        return s, (s.contact.iterations, s.contact.residual, jnp.any(s.contact.active))

    scan_body = body
    if batch > 1:
        state = lanes(model, state, batch)
        scan_body = jax.vmap(body, in_axes=(0, None))

    fn = jax.jit(lambda s: jax.lax.scan(scan_body, s, None, length=steps))
    t0 = time.process_time()
    jax.block_until_ready(fn(state))
    first = time.process_time() - t0
    t0 = time.process_time()
    _, (iterations, criterion, in_contact) = jax.block_until_ready(fn(state))
    run = time.process_time() - t0
    iterations, criterion, in_contact = (np.asarray(x).reshape(steps, -1)
                                         for x in (iterations, criterion, in_contact))
    tolerance = float(model.options.solver.tolerance)
    unconverged = np.flatnonzero((criterion > tolerance).any(axis=1))
    return dict(steps=steps * iterations.shape[1], contact_steps=int(in_contact.sum()),
                mean_iterations=float(iterations.mean()),
                unconverged=int((criterion > tolerance).sum()), first_unconverged=unconverged[:8].tolist(),
                capped=int((iterations >= model.options.solver.max_iterations).sum()),
                worst=float(criterion.max()), run_s=run, steps_per_s=steps * iterations.shape[1] / run,
                compile_s=max(first - run, 0.0))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", nargs="*", default=["go2", "tower", "demo"], choices=list(STEPS))
    parser.add_argument("--caps", type=int, nargs="*", default=[200, 500])
    parser.add_argument("--rho-updates", nargs="*", default=[None], choices=["balanced", "spectral"],
                        help="ADMM ρ schedules to compare (default: the default solver's)")
    parser.add_argument("--anderson", type=int, nargs="*", default=[None],
                        help="ADMM Anderson memories to compare (0: off; default: the default solver's)")
    parser.add_argument("--polish", type=int, nargs="*", default=[None], choices=[0, 1],
                        help="ADMM polish of capped solves off / on (default: the default solver's)")
    parser.add_argument("--steps", type=int, default=None, help="steps per rollout (default: per scene)")
    parser.add_argument("--batch", type=int, default=1,
                        help="trajectories per scene (vmapped; velocities spread by LANE_VELOCITY_SPREAD)")
    parser.add_argument("--out", default=str(HERE / "results" / "solver_cap.md"))
    args = parser.parse_args(argv)
    lines = ["# Solver iteration cap on whole rollouts", "",
             f"`python benchmarks/solver_cap.py {' '.join(sys.argv[1:] if argv is None else argv)}` — "
             f"{time.strftime('%Y-%m-%d %H:%M')}, jax {jax.__version__}, float64, batch {args.batch}, CPU time of "
             f"one pinned process; load average at start {loadavg()}.",
             "Default solver of `jc.Options` except `max_iterations`.", "",
             f"Batch {args.batch}: " + ("one trajectory per scene." if args.batch == 1 else
             f"{args.batch} trajectories per scene (vmapped), initial velocities spread by "
             f"{LANE_VELOCITY_SPREAD} (`lanes`); counts are env-steps over the batch, 'first' are "
             "time steps where some trajectory is unconverged."), "",
             "| scene | ρ update | Anderson | polish | cap | env-steps | contact env-steps | mean iterations | "
             "at the cap | unconverged (first) | worst criterion | env-steps/s (CPU) | compile (s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in args.scenes:
        model, state = scene(name)
        for rho_update, anderson, polish, cap in itertools.product(args.rho_updates, args.anderson,
                                                                    args.polish, args.caps):
            capped = with_cap(model, cap, rho_update, anderson, None if polish is None else bool(polish))
            r = measure(capped, state, args.steps or STEPS[name], args.batch)
            print(name, rho_update, anderson, polish, cap, r, flush=True)
            lines.append(f"| {name} | {capped.options.solver.rho_update} | "
                         f"{capped.options.solver.anderson_memory} | {capped.options.solver.polish} | {cap} | {r['steps']} | "
                         f"{r['contact_steps']} | {r['mean_iterations']:.1f} | {r['capped']} | "
                         f"{r['unconverged']} {r['first_unconverged']} | {r['worst']:.1e} | "
                         f"{r['steps_per_s']:,.0f} | {r['compile_s']:.1f} |")
    out = Path(args.out)
    out.write_text("\n".join(lines) + "\n")
    print(out.read_text())


if __name__ == "__main__":
    main()
