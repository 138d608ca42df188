"""Does excluding the pairs that overlap at ``qpos0`` (``jc.load(exclude_self_overlaps=True)``,
the default since issue 43) let the default solver converge on example-robot-data's Solo-12?

Solo-12 on a floor, floating base, in its SRDF ``standing`` pose (base at 0.235 m), zero
controls (it folds onto the floor), float64, default options, ``--steps`` steps in one
``jit(scan(step))``; next to MuJoCo C from the same start on the same compiled model. Reported per
variant (the four ``base_link``–``*_UPPER_LEG`` hip overlaps kept / excluded): MuJoCo's contacts at
the start, steps at the solver's cap, mean / max iterations, worst residual, final base height
ours and MuJoCo's, sticky error bits.

    python benchmarks/probes/solo12_self_overlap.py --steps 200   # ~3 min, one core
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxsim_contact as jc  # noqa: E402
from jaxsim_contact.io._urdf import default_package_dirs  # noqa: E402

STANDING = {"FL_HAA": 0.1, "FL_HFE": 0.8, "FL_KFE": -1.6, "HL_HAA": 0.1, "HL_HFE": -0.8,
            "HL_KFE": 1.6, "FR_HAA": -0.1, "FR_HFE": 0.8, "FR_KFE": -1.6, "HR_HAA": -0.1,
            "HR_HFE": -0.8, "HR_KFE": 1.6}
BASE_HEIGHT = 0.235  # m, the SRDF's standing pose


def solo12(exclude: bool):
    roots = [d for d in default_package_dirs() if d.name == "robots"]
    path = roots[0] / "solo_description" / "robots" / "solo12.urdf"
    spec = jc.io.prepare_spec(path, floating_base=True)
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[10, 10, 0.1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jc.io.SelfOverlapWarning)
        return jc.io.compile_spec(spec, path, exclude_self_overlaps=exclude)


def standing_pose(mj) -> np.ndarray:
    q0 = mj.qpos0.copy()
    q0[2] = BASE_HEIGHT
    for joint, value in STANDING.items():
        q0[mj.jnt_qposadr[mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, joint)]] = value
    return q0


def run(exclude: bool, steps: int) -> dict:
    mj = solo12(exclude)
    q0 = standing_pose(mj)
    data = mujoco.MjData(mj)
    data.qpos[:] = q0
    mujoco.mj_forward(mj, data)
    start_contacts = int(data.ncon)
    for _ in range(steps):
        mujoco.mj_step(mj, data)
    model = jc.io.from_mjmodel(mj, dtype=jnp.float64)
    cap = model.options.solver.max_iterations

    def body(state, _):
        state = jc.step(model, state)
        return state, (state.contact.iterations, state.contact.residual)

    rollout = jax.jit(lambda s: jax.lax.scan(body, s, None, length=steps))
    t0 = time.perf_counter()
    final, (iterations, residual) = jax.block_until_ready(rollout(jc.init(model, q=jnp.asarray(q0))))
    iterations = np.asarray(iterations)
    return dict(variant="excluded" if exclude else "kept", mujoco_start_contacts=start_contacts,
                capped=int(np.sum(iterations >= cap)), mean_iterations=float(iterations.mean()),
                max_iterations=int(iterations.max()), worst_residual=float(np.max(residual)),
                base_z=float(final.q[2]), mujoco_base_z=float(data.qpos[2]), error=int(final.error),
                first_call_s=time.perf_counter() - t0)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args(argv)
    print(f"Solo-12 standing, zero controls, {args.steps} steps, float64, default options; "
          f"jax {jax.__version__}, mujoco {mujoco.__version__}\n")
    print("| hip overlaps | MuJoCo contacts at start | capped steps | iterations mean / max | "
          "worst residual | base z ours / MuJoCo (m) | error bits | first call (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for exclude in (False, True):
        r = run(exclude, args.steps)
        print(f"| {r['variant']} | {r['mujoco_start_contacts']} | {r['capped']} / {args.steps} | "
              f"{r['mean_iterations']:.1f} / {r['max_iterations']} | {r['worst_residual']:.3g} | "
              f"{r['base_z']:.4f} / {r['mujoco_base_z']:.4f} | {r['error']} | "
              f"{r['first_call_s']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
