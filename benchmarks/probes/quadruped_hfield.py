"""Does dm_control's quadruped stand on its height field, next to MuJoCo C? (issue 44)

dm_control's ``suite/quadruped.xml`` declares a 201 × 201 height field over 60 × 60 m
(``size="30 30 5 .1"``, 0.3 m cells) that its Escape task fills at episode start. We fill it with a
terrain of the same kind (our own construction, seeded): a flat-bottomed bowl rising from 2 m
out, plus smooth random bumps (±5 cm), written with ``jc.io.set_height_field`` and into MuJoCo's
``hfield_data``. The Fetch task's ball is parked away from the robot. From several start points
(on the bumps and on the bowl's slope) the robot is lowered until MuJoCo reports a contact within
2 cm, then both engines run ``--steps`` steps with zero controls (the position servos hold the
default pose). Reported per start: terrain height under the start, torso height and uprightness
(z-axis · world up) at the end, ours and MuJoCo's; horizontal drift; steps at the solver's cap,
mean iterations, deepest penetration, error bits; step rate after compilation.

    python benchmarks/probes/quadruped_hfield.py --steps 400   # needs dm_control (pip install --no-deps dm_control); ~5 min, one core
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxsim_contact as jc  # noqa: E402

STARTS = [(-2.0, 1.5), (3.0, 1.0), (4.5, -2.0), (-6.0, -5.0)]


def quadruped_path() -> str:
    import dm_control

    return os.path.join(os.path.dirname(dm_control.__file__), "suite", "quadruped.xml")


def terrain(nrow: int, size: np.ndarray, seed: int = 0) -> np.ndarray:
    from scipy.ndimage import zoom

    x = np.linspace(-size[0], size[0], nrow)
    radius = np.hypot(*np.meshgrid(x, x))
    bumps = zoom(np.random.default_rng(seed).uniform(0.0, 1.0, (31, 31)), nrow / 31, order=3)[:nrow, :nrow]
    bowl = np.clip((radius - 2.0) / 25.0, 0.0, 1.0) ** 1.5
    return np.clip(0.7 * bowl + 0.02 * bumps + 0.004, 0.0, 1.0)


def uprightness(quat) -> float:
    return float(1.0 - 2.0 * (quat[1] ** 2 + quat[2] ** 2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args()
    path = quadruped_path()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mj = jc.io.compile_mjmodel(path)
        model = jc.load(path)
    size = np.asarray(mj.hfield_size[0])
    elevation = terrain(int(mj.hfield_nrow[0]), size)
    mj.hfield_data[:] = elevation.ravel()
    model = jc.io.set_height_field(model, "terrain", elevation)
    ground_z = mj.geom_pos[mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_GEOM, "terrain"), 2]
    ball = int(mj.jnt_qposadr[mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, "ball_root")])
    data = mujoco.MjData(mj)
    cap = int(model.options.solver.max_iterations)
    run = jax.jit(lambda s: jc.rollout(model, s, jnp.zeros((args.steps, model.nu))))
    print(f"quadruped on its height field: {args.steps} steps of {float(model.dt)} s, float64, default options")
    print("| start (x, y) m | terrain z m | torso z ours / MuJoCo m | upright ours / MuJoCo | drift ours / MuJoCo m "
          "| capped | mean it. | max penetration mm | error | steps/s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    compiled = False
    for xy in STARTS:
        q0 = mj.qpos0.copy()
        q0[:2] = xy
        q0[ball:ball + 3] = [xy[0] + 8.0, xy[1] + 8.0, 3.0]  # the Fetch task's ball, out of the way
        for z in np.arange(4.0, -1.0, -0.002):  # lowest point within 2 cm of the terrain (MuJoCo C)
            q0[2] = z
            data.qpos[:] = q0
            mujoco.mj_forward(mj, data)
            if any(c.dist < 0.02 for c in data.contact[:data.ncon]):
                break
        row, col = (np.asarray(xy)[::-1] + size[:2]) / (2 * size[:2]) * (np.asarray(elevation.shape) - 1)
        under = ground_z + size[2] * elevation[int(round(row)), int(round(col))]
        state = jc.init(model, q=jnp.asarray(q0))
        if not compiled:
            jax.block_until_ready(run(state))
            compiled = True
        start = time.perf_counter()
        final, trajectory = jax.block_until_ready(run(state))
        rate = args.steps / (time.perf_counter() - start)
        data.qpos[:], data.qvel[:], data.act[:], data.ctrl[:] = q0, 0.0, 0.0, 0.0
        for _ in range(args.steps):
            mujoco.mj_step(mj, data)
        iterations = np.asarray(trajectory.contact.iterations)
        drift = (np.linalg.norm(np.asarray(final.q[:2]) - xy), np.linalg.norm(data.qpos[:2] - xy))
        print(f"| ({xy[0]:g}, {xy[1]:g}) | {under:.3f} | {float(final.q[2]):.3f} / {data.qpos[2]:.3f} "
              f"| {uprightness(np.asarray(final.q[3:7])):.4f} / {uprightness(data.qpos[3:7]):.4f} "
              f"| {drift[0]:.3f} / {drift[1]:.3f} | {int((iterations >= cap).sum())} | {iterations.mean():.1f} "
              f"| {1e3 * float(np.max(np.asarray(trajectory.contact.penetration))):.2f} | {int(final.error)} "
              f"| {rate:.0f} |")


if __name__ == "__main__":
    main()
