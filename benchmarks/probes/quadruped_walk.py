"""Does dm_control's quadruped walk onto its height field and stand there, next to MuJoCo C? (issue 44)

An open-loop trot (our construction; no feedback) on dm_control's ``suite/quadruped.xml``. Each
leg's three position-servo actuators (yaw, lift, extend; ``general`` with a 0.1 s filter) get

    fwd_i(t)  = -cos(2π f t + φ_i)         φ = 0 for front-left and back-right, π for the other pair
    yaw_i     = s_i · a_yaw · fwd_i        s = (-1, +1, +1, -1): the sign that swings toe i toward +x
    lift_i    = -a_lift · max(0, sin(2π f t + φ_i))    negative lift folds the leg (toe up) in the swing half
    extend_i  = e_i · a_ext · fwd_i        e = (+1, +1, -1, -1): front legs reach forward by extending,
                                           back legs by folding

so a leg swings forward while lifted and pushes back while down. The extend signals of front and
back legs are in opposite phase: a trot with the same extend signal on all legs is symmetric under a
half-turn of the robot and goes nowhere. The amplitudes ramp in and out over 0.5 s; after ``--walk``
seconds the controls are zero (the servos hold the default pose) for ``--stand`` seconds.

Two scenes, the same controls in both engines (MuJoCo C ``mj_step`` and ``jax.jit(jc.rollout)``,
float64, default options): flat ground (the height field below dm_control's floor plane), and a
ramp rising from x = 1.0 m to x = 2.2 m to a plateau ``--height`` m up with gentle bumps (up to
``--bumps`` m, seeded) on the raised part, spanning all y; the robot starts at the origin on the
flat floor, its front toes (x = +0.59 m) 0.4 m short of the ramp's foot. The height field is written with
``jc.io.set_height_field`` and into MuJoCo's ``hfield_data``. MuJoCo C runs twice: with the model's
(default) pyramidal friction cone and with the elliptic cone, the exact Coulomb cone our hard
contacts obey. Prints three markdown tables (per-engine outcome; our solver's capped steps and error
bits; torso x each second), pasted into ``benchmarks/results/quadruped_walk.md``.

    python benchmarks/probes/quadruped_walk.py   # needs dm_control's files (pip install --no-deps dm_control)

~4 min on 2 shared cores, ~2 min 15 s of it the compile of the 2400-step rollout (both scenes share it:
the elevations are a dynamic leaf of the model).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import jax
import mujoco
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxsim_contact as jc  # noqa: E402

LEGS = ("front_left", "front_right", "back_right", "back_left")  # the actuator order of quadruped.xml
PHASE = np.array([0.0, np.pi, 0.0, np.pi])
YAW_SIGN = np.array([-1.0, 1.0, 1.0, -1.0])
EXTEND_SIGN = np.array([1.0, 1.0, -1.0, -1.0])
RAMP = (1.0, 2.2)
TOE_RADIUS = 0.08  # quadruped.xml's toe spheres


def quadruped_path() -> str:
    import dm_control

    return os.path.join(os.path.dirname(dm_control.__file__), "suite", "quadruped.xml")


def gait(mj, steps_walk: int, steps_stand: int, f: float, a_yaw: float, a_lift: float, a_ext: float,
         ramp: float = 0.5) -> np.ndarray:
    dt = float(mj.opt.timestep)
    t = np.arange(steps_walk)[:, None] * dt
    theta = 2.0 * np.pi * f * t + PHASE
    fwd = -np.cos(theta)
    u = np.stack([YAW_SIGN * a_yaw * fwd, -a_lift * np.maximum(0.0, np.sin(theta)), EXTEND_SIGN * a_ext * fwd], -1)
    envelope = np.clip(np.minimum(t, steps_walk * dt - t) / ramp, 0.0, 1.0)
    u = (envelope[:, :, None] * u).reshape(steps_walk, 12)
    u = np.clip(u, mj.actuator_ctrlrange[:, 0], mj.actuator_ctrlrange[:, 1])
    return np.concatenate([u, np.zeros((steps_stand, mj.nu))])


def terrain(mj, height: float, bumps: float, seed: int = 0) -> np.ndarray:
    """Elevations (nrow, ncol): the surface's world z is ``base + size[2] · elevation``; flat
    ground is left at elevation 0 (1 cm under dm_control's floor plane), the ramp and plateau rise
    above the floor."""
    from scipy.ndimage import zoom

    gid = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_GEOM, "terrain")
    base, size, n = mj.geom_pos[gid, 2], mj.hfield_size[0], int(mj.hfield_nrow[0])
    x = np.linspace(-size[0], size[0], n)
    rise = np.clip((x - RAMP[0]) / (RAMP[1] - RAMP[0]), 0.0, 1.0)[None, :]
    noise = zoom(np.random.default_rng(seed).uniform(0.0, 1.0, (61, 61)), n / 61, order=3)[:n, :n]
    top = rise * (height + bumps * np.clip(noise, 0.0, 1.0))
    return np.where(top > 0.0, np.clip((top - base) / size[2], 0.0, 1.0), 0.0)


def surface(mj, elevation: np.ndarray, x: float, y: float) -> float:
    """World z of the terrain (or of the floor plane, z = 0, where higher) under (x, y), bilinear."""
    gid = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_GEOM, "terrain")
    base, size = mj.geom_pos[gid, 2], mj.hfield_size[0]
    n = elevation.shape[0] - 1
    c, r = (x + size[0]) / (2 * size[0]) * n, (y + size[1]) / (2 * size[1]) * n
    c0, r0 = int(c), int(r)
    fc, fr = c - c0, r - r0
    e = elevation[r0:r0 + 2, c0:c0 + 2]
    z = (1 - fr) * ((1 - fc) * e[0, 0] + fc * e[0, 1]) + fr * ((1 - fc) * e[1, 0] + fc * e[1, 1])
    return max(0.0, base + size[2] * z)


def uprightness(q) -> float:
    return float(1.0 - 2.0 * (q[4] ** 2 + q[5] ** 2))


def heading(q) -> float:
    w, x, y, z = q[3:7]
    return float(np.degrees(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))))


def start_pose(mj, data) -> np.ndarray:
    ball = int(mj.jnt_qposadr[mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, "ball_root")])
    q0 = mj.qpos0.copy()
    q0[:2] = 0.0
    q0[ball:ball + 3] = [-8.0, 8.0, 3.0]  # the Fetch task's ball, out of the way
    for z in np.arange(2.0, -1.0, -0.002):  # lowest point within 2 cm of the ground (MuJoCo C)
        q0[2] = z
        data.qpos[:] = q0
        mujoco.mj_forward(mj, data)
        if any(c.dist < 0.02 for c in data.contact[:data.ncon]):
            break
    return q0


def summary(mj, elevation, qs: np.ndarray, vs: np.ndarray, steps_walk: int, dt: float) -> dict:
    """Per-run numbers from the torso trajectory qs (T, nq), vs (T, nv) (state after each step)."""
    data = mujoco.MjData(mj)
    data.qpos[:] = qs[-1]
    mujoco.mj_kinematics(mj, data)
    toes = np.array([data.site_xpos[mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_SITE, f"toe_{leg}")] for leg in LEGS])
    final = qs[-1]
    return {
        "x4": qs[min(len(qs), int(round(4.0 / dt))) - 1, 0],
        "xwalk": qs[steps_walk - 1, 0],
        "x": final[0], "y": final[1], "heading": heading(final),
        "height": final[2] - surface(mj, elevation, final[0], final[1]),
        "min_up": min(uprightness(q) for q in qs[:steps_walk]),
        "up": uprightness(final),
        "speed": float(np.linalg.norm(vs[-1, :3])),
        "toe_x": toes[:, 0].min(),
        "toe_gap": max(toes[i, 2] - TOE_RADIUS - surface(mj, elevation, *toes[i, :2]) for i in range(4)),
        "series": qs[:, :3],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--walk", type=float, default=10.0, help="seconds of gait")
    parser.add_argument("--stand", type=float, default=2.0, help="seconds of zero controls after the gait")
    parser.add_argument("--height", type=float, default=0.08, help="plateau height, m")
    parser.add_argument("--bumps", type=float, default=0.02, help="bump amplitude on the raised part, m")
    parser.add_argument("--freq", type=float, default=1.0)
    parser.add_argument("--yaw", type=float, default=0.3)
    parser.add_argument("--lift", type=float, default=0.3)
    parser.add_argument("--extend", type=float, default=0.4)
    args = parser.parse_args()
    path = quadruped_path()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mj = jc.io.compile_mjmodel(path)
        model0 = jc.load(path)
    dt = float(mj.opt.timestep)
    steps_walk, steps_stand = int(round(args.walk / dt)), int(round(args.stand / dt))
    ctrls = gait(mj, steps_walk, steps_stand, args.freq, args.yaw, args.lift, args.extend)
    data = mujoco.MjData(mj)
    q0 = start_pose(mj, data)
    cap = int(model0.options.solver.max_iterations)
    run = jax.jit(jc.rollout)
    print(f"quadruped walk: gait f={args.freq} Hz, yaw {args.yaw}, lift {args.lift}, extend {args.extend}; "
          f"{steps_walk} + {steps_stand} steps of {dt} s; plateau {args.height} m, bumps {args.bumps} m; "
          f"start z {q0[2]:.3f}", flush=True)
    rows = []
    for scene, height, bumps in (("flat", 0.0, 0.0), ("ramp + plateau", args.height, args.bumps)):
        elevation = terrain(mj, height, bumps)
        mj.hfield_data[:] = elevation.ravel()
        model = jc.io.set_height_field(model0, "terrain", elevation)
        # MuJoCo C: its default pyramidal friction cone, and the elliptic one (the exact Coulomb
        # cone that our hard contacts obey)
        theirs = {}
        for cone in ("pyramidal", "elliptic"):
            mj.opt.cone = getattr(mujoco.mjtCone, f"mjCONE_{cone.upper()}")
            mujoco.mj_resetData(mj, data)
            data.qpos[:] = q0
            qs, vs = np.empty((len(ctrls), mj.nq)), np.empty((len(ctrls), mj.nv))
            start = time.perf_counter()
            for k, u in enumerate(ctrls):
                data.ctrl[:] = u
                mujoco.mj_step(mj, data)
                qs[k], vs[k] = data.qpos, data.qvel
            theirs[cone] = summary(mj, elevation, qs, vs, steps_walk, dt)
            theirs[cone].update(time=time.perf_counter() - start)
        mj.opt.cone = mujoco.mjtCone.mjCONE_PYRAMIDAL
        # ours
        state = jc.init(model, q=jax.numpy.asarray(q0))
        start = time.perf_counter()
        final, trajectory = jax.block_until_ready(run(model, state, jax.numpy.asarray(ctrls)))
        our_time = time.perf_counter() - start
        ours = summary(mj, elevation, np.asarray(trajectory.q), np.asarray(trajectory.v), steps_walk, dt)
        iterations = np.asarray(trajectory.contact.iterations)
        ours.update(capped=int((iterations >= cap).sum()), mean_it=iterations.mean(), error=int(final.error),
                    first_error=int(np.argmax(np.asarray(trajectory.error) != 0)) if int(final.error) else None,
                    capped_t=dt * (1 + np.flatnonzero(iterations >= cap)),
                    pen=1e3 * float(np.max(np.asarray(trajectory.contact.penetration))), time=our_time)
        rows.append((scene, ours, theirs))
        print(f"{scene}: ours {our_time:.0f} s (with compile on the first scene), MuJoCo "
              f"{theirs['pyramidal']['time']:.1f} s", flush=True)

    print()
    print("| scene | engine | x at 4 s m | x at end of gait m | final x, y m | heading ° | torso above ground m "
          "| min upright (gait) | final upright | final speed mm/s | rearmost toe x m | largest toe gap mm |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for scene, ours, theirs in rows:
        for name, r in (("ours", ours), ("MuJoCo C", theirs["pyramidal"]), ("MuJoCo C, elliptic cone", theirs["elliptic"])):
            print(f"| {scene} | {name} | {r['x4']:.3f} | {r['xwalk']:.3f} | {r['x']:.3f}, {r['y']:.3f} | "
                  f"{r['heading']:.1f} | {r['height']:.3f} | {r['min_up']:.4f} | {r['up']:.4f} | {1e3 * r['speed']:.2f} "
                  f"| {r['toe_x']:.3f} | {1e3 * r['toe_gap']:.1f} |")
    print()
    print(f"| scene | steps at the cap ({cap}) | at t = s (torso x m) | mean iterations | max penetration mm | error bits "
          "| first step with a bit | ours s (first: with compile) | MuJoCo C s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for scene, ours, theirs in rows:
        times = ", ".join(f"{t:.3f} ({ours['series'][int(round(t / dt)) - 1, 0]:.2f})" for t in ours["capped_t"])
        print(f"| {scene} | {ours['capped']} | {times} | {ours['mean_it']:.1f} | {ours['pen']:.2f} | {ours['error']} "
              f"| {ours['first_error']} | {ours['time']:.0f} | {theirs['pyramidal']['time']:.1f} |")
    print()
    seconds = [t for t in range(1, int(args.walk + args.stand) + 1)]
    print("| torso x m (ours / MuJoCo C / MuJoCo C elliptic) at t = | " + " | ".join(f"{t} s" for t in seconds) + " |")
    print("|---|" + "---|" * len(seconds))
    for scene, ours, theirs in rows:
        cells = [" / ".join(f"{r['series'][int(round(t / dt)) - 1, 0]:.2f}" for r in (ours, *theirs.values()))
                 for t in seconds]
        print(f"| {scene} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
