"""Does the primal Newton solver (seed 001 Alg. 4, ``jc.contact.PrimalNewton``) converge on the
robot scenes of ``benchmarks/step.py``? A probe for issue 5 (MJX, the throughput peer, runs a
Newton method on a soft problem).

For each scene, contact compliance (``Options.compliance``, absolute, force units) and solver
(default ADMM-NCP; PrimalNewton-CCP with ``--min-compliance``): one ``jit(scan(step))`` rollout
of ``--steps`` steps at batch 1, float64, one pinned core; reported: steps/s of the second call
(CPU time), mean and max solver iterations, worst final criterion, max penetration, finiteness.

    python benchmarks/probes/newton_probe.py --scenes humanoid --compliance 0 1e-3 1e-2
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jaxsim_contact as jc  # noqa: E402

HERE = Path(__file__).resolve().parent.parent  # benchmarks/ (this probe lives in benchmarks/probes)
sys.path.insert(0, str(HERE))
import step as step_benchmark  # noqa: E402


def probe(mj, q0, compliance: float, solver, steps: int) -> dict:
    model = jc.io.from_mjmodel(mj).replace_options(compliance=compliance)
    if solver is not None:
        model = model.replace_options(solver=solver)
    state, ctrl = jc.init(model, q=jnp.asarray(q0)), jnp.zeros((model.nu,))

    def body(s, _):
        s = jc.step(model, s, ctrl)
        return s, (s.contact.iterations, s.contact.residual, s.contact.penetration)

    fn = jax.jit(lambda s: jax.lax.scan(body, s, None, length=steps))
    jax.block_until_ready(fn(state))
    t0 = time.process_time()
    final, (iterations, residual, penetration) = jax.block_until_ready(fn(state))
    run = time.process_time() - t0
    return dict(steps_per_s=steps / run, mean_iterations=float(np.mean(iterations)),
                max_iterations=int(np.max(iterations)), worst=float(np.max(residual)),
                penetration=float(np.max(penetration)), finite=bool(np.all(np.isfinite(np.asarray(final.q)))))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenes", nargs="*", default=["humanoid"])
    parser.add_argument("--compliance", type=float, nargs="*", default=[0.0, 1e-3, 1e-2])
    parser.add_argument("--min-compliance", type=float, default=1e-9)
    parser.add_argument("--newton-iterations", type=int, default=100)
    parser.add_argument("--round-off-margin", type=float, default=1.0,
                        help="PrimalNewton's round_off_margin (0: stop on the tolerance only)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--out", default="newton_probe")
    args = parser.parse_args(argv)
    lines = ["# Primal Newton vs ADMM on robot scenes (probe)", "",
             f"`python benchmarks/probes/newton_probe.py {' '.join(sys.argv[1:] if argv is None else argv)}` — "
             f"{time.strftime('%Y-%m-%d %H:%M')}, jax {jax.__version__}, float64, batch 1, one pinned core, "
             f"{args.steps} steps from the scene's initial state, CPU time of the compiled call.", "",
             "| scene | compliance | solver | steps/s | mean iters | max iters | worst criterion | max penetration (m) | finite |",
             "|---|---|---|---|---|---|---|---|---|"]
    all_scenes = step_benchmark.scenes()
    newton = jc.contact.PrimalNewton(max_iterations=args.newton_iterations, tolerance=1e-6,
                                     min_compliance=args.min_compliance,
                                     round_off_margin=args.round_off_margin)
    for name in args.scenes:
        mj, q0 = all_scenes[name]
        for compliance in args.compliance:
            for label, solver in (("ADMM-NCP (default)", None),
                                  (f"PrimalNewton cap {args.newton_iterations}, margin {args.round_off_margin:g}", newton)):
                r = probe(mj, q0, compliance, solver, args.steps)
                lines.append(f"| {name} | {compliance:g} | {label} | {r['steps_per_s']:.0f} | {r['mean_iterations']:.1f} | "
                             f"{r['max_iterations']} | {r['worst']:.1e} | {r['penetration']:.2e} | {r['finite']} |")
                print(lines[-1], flush=True)
    (HERE / "results" / f"{args.out}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
