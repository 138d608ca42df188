"""Why does the default solve stop at its cap on a corpus robot? (issue 43)

Runs a corpus model (``benchmarks/corpus.py``'s build and start rule: floor, floating base, the
self-overlap exclusions ``jc.load`` makes) for ``--steps`` steps with default options and zero
controls, finds the first step whose solve stopped at the iteration cap, rebuilds that step's
contact problem and prints, per active contact slot: the two bodies, the distance, the norms of
its three rows of the Delassus factor ``B = J L⁻ᵀ`` (tangent, tangent, normal), the normal's share
``‖B_n‖² / ‖B‖²_F`` (a slot below ``DEGENERATE_NORMAL_RATIO`` is masked: no force moves it) and
its free normal velocity; then the same problem solved by ADMM (NCP) at 500 and 5000 iterations,
ADMM on the CCP, and PrimalNewton, with their criteria.

What it found (session 48): Talos' chest 0.07 mm inside its pelvis (normal row 40× less mobile
than its tangent row: a frictional NCP without solution, residual = the slot's approach velocity
at any cap), a UR3's shoulder 1 µm inside its welded base (normal share 1e-12 to 6e-11, not
masked at 100 ε), an impact of a UR3's wrist on the floor (ADMM needs ~5000 iterations; the CCP
converges in 500).

    python benchmarks/probes/capped_step.py robots/ur_description/urdf/ur3_robot.urdf --steps 200
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import corpus  # noqa: E402  (enables float64 like the corpus run)
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402

import jaxsim_contact as jc  # noqa: E402
from jaxsim_contact.collision._narrowphase import KEY_STRIDE  # noqa: E402
from jaxsim_contact.collision._pairs import collision_structure  # noqa: E402
from jaxsim_contact.constraints import _assembler  # noqa: E402
from jaxsim_contact.contact import ADMM, PrimalNewton, solve  # noqa: E402
from jaxsim_contact.dynamics import smooth_dynamics  # noqa: E402


def first_capped_state(model, q0, steps):
    """``(index, state before that step, per-step iterations)`` of the first capped step, or
    ``(None, None, iterations)``."""
    ctrl = jnp.zeros(model.nu)

    def body(state, _):
        after = jc.step(model, state, ctrl)
        return after, (after.contact.iterations, state)

    state = jc.init(model, q=jnp.asarray(q0))
    _, (iterations, states) = jax.jit(lambda s: jax.lax.scan(body, s, None, length=steps))(state)
    iterations = np.asarray(iterations)
    capped = np.flatnonzero(iterations >= model.options.solver.max_iterations)
    if not capped.size:
        return None, None, iterations
    index = int(capped[0])
    return index, jax.tree_util.tree_map(lambda x: x[index], states), iterations


def report_problem(mj, model, state):
    ctrl = jnp.zeros(model.nu)
    dt = model.options.dt
    smooth = smooth_dynamics(model, state, ctrl)
    blocks, _ = _assembler.constraint_rows(model, state, smooth, dt, False)
    rows = _assembler.stack(blocks)
    problem, factor = _assembler.contact_problem(model, blocks, rows, smooth, state.v, dt)
    pairs = [p for g in collision_structure(model).groups for p in zip(g.geom_a, g.geom_b)]
    body = lambda g: mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_BODY, mj.geom_bodyid[g])  # noqa: E731
    active, keys = np.asarray(problem.active), np.asarray(rows.key)
    factor, free = np.asarray(factor), np.asarray(problem.free_velocity)
    print("blocks (kind, slots, active):", [(type(b).__name__, b.num_slots) for b in blocks],
          "active", int(active.sum()))
    for i in np.flatnonzero(active[:blocks[0].num_slots]):
        a, b = pairs[int(keys[i]) // KEY_STRIDE]
        norms = np.linalg.norm(factor[3 * i:3 * i + 3], axis=1)
        print(f"  slot {i}: {body(a)} - {body(b)}  d = {float(rows.distance[i]):.3e} m  "
              f"|B| rows (t1, t2, n) = {np.array2string(norms, precision=4)}  normal share "
              f"{norms[2] ** 2 / np.sum(norms ** 2):.2e}  free normal velocity {free[3 * i + 2]:.3e}")
    for name, solver in [("ADMM NCP, cap 500", ADMM(max_iterations=500)),
                         ("ADMM NCP, cap 5000", ADMM(max_iterations=5000)),
                         ("ADMM CCP, cap 500", ADMM(max_iterations=500, formulation="ccp")),
                         ("PrimalNewton, cap 200", PrimalNewton(max_iterations=200))]:
        solution = jax.jit(lambda p, solver=solver: solve(p, solver))(problem)
        print(f"  {name}: {int(solution.iterations)} iterations, criterion {float(solution.criterion):.3e} "
              f"(primal {float(solution.primal):.1e}, dual {float(solution.dual):.1e}, "
              f"complementarity {float(solution.complementarity):.1e})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("key", help="corpus key, e.g. robots/ur_description/urdf/ur3_robot.urdf")
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    entries = [e for e in corpus.corpus(list(corpus.SOURCES)) if e.key == args.key]
    if not entries:
        print(f"no corpus file {args.key!r}")
        return 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mj, model = corpus.build(entries[0])
    q0, _ = corpus.start_configuration(mj, entries[0])
    index, state, iterations = first_capped_state(model, q0, args.steps)
    cap = model.options.solver.max_iterations
    print(f"{args.key}: {int((iterations >= cap).sum())} of {args.steps} steps at the cap ({cap}), "
          f"mean iterations {iterations.mean():.1f}; first capped step: {index}")
    if index is not None:
        report_problem(mj, model, state)
    return 0


if __name__ == "__main__":
    sys.exit(main())
