"""Issue 45 probe: is a model's step-for-step difference from ``mj_step`` round-off? (MJX's
``sensor/model.xml`` is the one model with MuJoCo's contact set that ``mujoco_soft_match.py``
finds more than 1e-8 from ``mj_step``: 2.0e-8 in qvel.)

On ``mujoco_soft_match.py``'s states of a corpus model (same seed and rule), prints per state:
the size of the step's numbers (``max |qvel⁺|``, ``max |qfrc_constraint|``), ours (the
MuJoCo-compatible model, ``PrimalNewton`` at tolerances 1e-10 / 1e-14) against ``mj_step``
(Newton at 1e-15) in qvel and in the constraint force ``Jᵀf`` (relative to its largest entry),
the qvel difference that force difference alone implies (``Δt M⁻¹ ΔJᵀf``), and MuJoCo's own spread:
the same step by its CG solver at 1e-15.

    python benchmarks/probes/soft_match_roundoff.py mujoco/mjx/test_data/sensor/model.xml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import corpus as corpus_tools  # noqa: E402  (enables float64 like the corpus run)
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import mujoco  # noqa: E402
import mujoco_soft_match as soft_match  # noqa: E402
import numpy as np  # noqa: E402

import jaxsim_contact as jc  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="corpus key (suffix of the file's path)")
    parser.add_argument("--states", type=int, default=3)
    args = parser.parse_args(argv)
    entry = next(e for e in corpus_tools.corpus(corpus_tools.SOURCES) if str(e.path).endswith(args.model))
    mj, model = soft_match.build_soft(entry)
    data = mujoco.MjData(mj)
    q_start, _ = corpus_tools.start_configuration(mj, entry)
    rng = np.random.default_rng(0)  # mujoco_soft_match.compare_model's states
    step = jax.jit(jc.step)
    for k in range(args.states):
        mujoco.mj_resetData(mj, data)
        data.qpos[:] = q_start
        for _ in range(50 * k):
            mujoco.mj_step(mj, data)
        data.qvel[:] += rng.normal(size=mj.nv) * 0.5
        mujoco.mj_forward(mj, data)
        qpos, qvel = data.qpos.copy(), data.qvel.copy()
        other = mujoco.MjData(mj)
        other.qpos[:], other.qvel[:] = qpos, qvel
        mj.opt.solver = mujoco.mjtSolver.mjSOL_CG
        mujoco.mj_step(mj, other)
        mj.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
        mujoco.mj_forward(mj, data)
        qfrc = data.qfrc_constraint.copy()
        mujoco.mj_step(mj, data)
        scale = np.abs(qfrc).max()
        print(f"state {k}: max|qvel+| {np.abs(data.qvel).max():.2e}, max|qfrc_constraint| {scale:.2e}, "
              f"{data.nefc} rows; MuJoCo CG - Newton: dqvel {np.abs(other.qvel - data.qvel).max():.2e}")
        for tolerance in (1e-10, 1e-14):
            ours_model = model.replace_options(solver=jc.contact.PrimalNewton(max_iterations=200, tolerance=tolerance))
            ours = step(ours_model, jc.init(ours_model, q=jnp.asarray(qpos), v=jnp.asarray(qvel)))
            dqfrc = np.asarray(ours.contact.generalized_force) - qfrc
            implied = np.zeros(mj.nv)
            mujoco.mj_solveM(mj, data, implied.reshape(1, -1), dqfrc.reshape(1, -1).copy())
            print(f"  ours at {tolerance:g}: dqvel {np.abs(np.asarray(ours.v) - data.qvel).max():.2e}, "
                  f"dqfrc / max|qfrc| {np.abs(dqfrc).max() / scale:.1e}, "
                  f"implied dqvel dt |M^-1 dqfrc| {mj.opt.timestep * np.abs(implied).max():.2e}, "
                  f"converged {bool(ours.contact.converged)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
