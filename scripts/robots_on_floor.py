"""Issue 5 robot check outside the test suite (too slow for CI on 2 cores): each robot loads from
example-robot-data, gets a floor, runs 1000 steps of random torques (5 N·m scale; robots without
actuators just fall), and we print finiteness, joint-limit violation, max penetration, final base
height and unconverged steps. Tests cover Panda, Go2 and Allegro (tests/dynamics); this covers
Solo-12, UR5 and Talos.

    taskset -c 1 python scripts/robots_on_floor.py solo12 ur5 talos

Measured 2026-11-22 (loaded machine, unpinned): ur5 finite, limit violation 2.7e-5 rad, max
penetration 4.9 cm (see the note of issue 5), 198/1000 steps unconverged, 196 s; solo12 finite,
limits hold, penetration 0.86 mm, base settles at 2.9 cm (no actuators: it folds), 918/1000
unconverged, 574 s. talos (pinned, quiet machine): finite, limit violation 2.3e-5 rad,
penetration 1.3 mm, base ends at 0.75 m (no actuators: it collapses), 922/1000 unconverged, 59 s.
"""
import sys, time, warnings
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "dynamics"))
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
import jaxsim_contact as jc
from jaxsim_contact.constraints._limit_rows import limited_joints
from dynamics_reference import robots_dir
R = {"solo12": ("solo_description/robots/solo12.urdf", {"floating_base": True}, 0.4),
     "ur5": ("ur_description/urdf/ur5_joint_limited_robot.urdf", {}, None),
     "talos": ("talos_data/robots/talos_reduced.urdf", {"floating_base": True}, 1.2)}
for name in sys.argv[1:]:
    f, kw, h = R[name]
    t0 = time.time()
    model = jc.load(robots_dir() / f, **kw)
    model = jc.io.add_floor(model)
    model = jc.io.set_collision(model, self_collision=False)
    q0 = np.asarray(model.qpos0).copy()
    if h is not None: q0[2] = h
    for j in limited_joints(model):
        adr = model.tree.joint_qpos_adr[j]; lo, hi = np.asarray(model.joint_range[j]); q0[adr] = np.clip(q0[adr], lo, hi)
    rng = np.random.default_rng(0)
    ctrl = jnp.asarray(rng.uniform(-1, 1, (1000, model.nu)) * 5.0)
    final, traj = jax.jit(jc.rollout)(model, jc.init(model, q=jnp.asarray(q0)), ctrl)
    jax.block_until_ready(final)
    worst = 0.0
    for j in limited_joints(model):
        q = np.asarray(traj.q[:, model.tree.joint_qpos_adr[j]]); lo, hi = np.asarray(model.joint_range[j])
        worst = max(worst, lo - q.min(), q.max() - hi)
    print(name, "nv", model.nv, "nu", model.nu, "time %.0f s" % (time.time() - t0), "finite", bool(jnp.all(jnp.isfinite(traj.q))),
          "error", int(final.error), "limit violation %.2e" % worst, "max pen %.2e" % float(jnp.max(traj.contact.penetration)),
          "z final", float(final.q[2]) if h else None, "unconverged steps", int((~traj.contact.converged).sum()))
