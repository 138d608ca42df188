"""No NaN / inf in step derivatives over 10⁴ random states per scene (issue 6, "Must show").

For each scene of the step-gradient tests (tests/dynamics/test_step_gradients.py and
test_inverse_problems.py), ``--states`` random states around contact make/break and exact
touching; for each state one forward-mode derivative (``jax.jvp`` of one ``jc.step`` along a
random tangent of ``x = (q, v, ctrl, μ, mass)``) and one reverse-mode gradient (``jax.vjp`` of a
random cotangent of ``(q⁺, v⁺)``), both through the implicit contact derivatives. Counted: states
whose tangent / gradient / next state has a non-finite entry, and the mismatch of the two modes
(``w·(J t) = (Jᵀ w)·t`` must hold on every state).

Scenes and their random states:

* ``cube``        — the dragged cube of seed 001 (4 box–plane contacts): height of the lowest
  corner uniform in ±2 mm (a quarter exactly 0: touching), half tilted by up to 0.05 rad (an
  edge or a corner touches first), velocities N(0, 0.3²) (a quarter at rest), pushes around
  μ m g (stick / slip); the generator of test_step_gradients.py;
* ``pendulum``    — a hinge pendulum whose bob lies on the floor: bob height uniform in ±2 mm (a
  quarter exactly 0), angular velocity N(0, 1) (the bob hits or leaves the floor within the step),
  torque uniform ±0.5 N·m, μ uniform in [0, 1.5], arm mass uniform in [0.05, 0.2] kg;
* ``quadruped``   — the standing Go2 of examples/inverse_standing_quadruped.py (Baumgarte off,
  no margin): joint angles ±0.1 rad around the stance, base tilted up to 0.05 rad, lowest foot
  uniform in ±2 mm (a quarter exactly 0), v N(0, 0.3²) (a quarter at rest), torques N(0, 5²);
* ``quadruped_default`` — the same Go2 with the library's default contact options (1 mm margin,
  Baumgarte on, default ADMM: 100 iterations, many solves stop unconverged — their derivatives
  must be finite too).

    taskset -c 1 python benchmarks/gradient_nan_sweep.py [--states 10000] [--scenes cube pendulum]

Writes ``benchmarks/results/gradient_nan_sweep.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

from _common import RESULTS, enable_float64, loadavg, pin_to_one_core, write_results

pin_to_one_core()
enable_float64()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxsim_contact as jc  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests" / "dynamics"))
sys.path.insert(0, str(ROOT / "examples"))

import inverse_standing_quadruped as quad  # noqa: E402
import test_step_gradients as sg  # noqa: E402  (the cube / pendulum scenes and step_fn)


def _touching_quarter(rng, n, low=-2e-3, high=2e-3):
    z = rng.uniform(low, high, n)
    z[: n // 4] = 0.0
    return z


def cube_states(n, rng):
    return sg.cube(), sg._random_cube_states(n, seed=int(rng.integers(1 << 31)))


def pendulum_states(n, rng):
    model = sg.pendulum()
    # bob height φ = 0.05 − 0.05 − 0.4 sin θ → θ = asin(−φ / 0.4)
    theta = np.arcsin(-_touching_quarter(rng, n) / 0.4)
    omega = rng.normal(size=n)
    ctrl = rng.uniform(-0.5, 0.5, n)
    mu = rng.uniform(0.0, 1.5, n)
    mass = rng.uniform(0.05, 0.2, n)
    x = np.stack([theta, omega, ctrl, mu, mass], axis=1)
    return model, jnp.asarray(x)


def _quadruped_states(model, mj, n, rng):
    import mujoco

    base = quad.standing_configuration(mj, penetration=0.0)
    data = mujoco.MjData(mj)
    xs = np.zeros((n, model.nq + model.nv + model.nu + 2))
    heights = _touching_quarter(rng, n)
    feet = [g for g in range(mj.ngeom) if mj.geom_contype[g] and mj.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH]
    for i in range(n):
        q = base.copy()
        q[7:] += rng.uniform(-0.1, 0.1, 12)
        axis = rng.normal(size=3)
        angle = rng.uniform(0, 0.05)
        q[3:7] = np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis / np.linalg.norm(axis)])
        data.qpos[:] = q
        mujoco.mj_kinematics(mj, data)
        lowest = np.inf
        for g in feet:
            m = mj.geom_dataid[g]
            verts = mj.mesh_vert[mj.mesh_vertadr[m]: mj.mesh_vertadr[m] + mj.mesh_vertnum[m]]
            lowest = min(lowest, (data.geom_xpos[g] + verts @ data.geom_xmat[g].reshape(3, 3).T)[:, 2].min())
        q[2] += heights[i] - lowest
        v = 0.3 * rng.normal(size=model.nv) * (i % 4 != 1)
        tau = 5.0 * rng.normal(size=model.nu)
        xs[i] = np.concatenate([q, v, tau, [rng.uniform(0.2, 1.5), float(model.body_mass[-1])]])
    return jnp.asarray(xs)


def quadruped_states(n, rng):
    mj = quad.go2_mjmodel(feet_only=True)
    model, _ = quad.standing_go2(feet_only=True)
    return model, _quadruped_states(model, mj, n, rng)


def quadruped_default_states(n, rng):
    mj = quad.go2_mjmodel(feet_only=True)
    model = jc.io.from_mjmodel(mj, dtype=jnp.float64)
    return model, _quadruped_states(model, mj, n, rng)


SCENES = {"cube": cube_states, "pendulum": pendulum_states, "quadruped": quadruped_states,
          "quadruped_default": quadruped_default_states}


def _derivatives(x, model, contact, t, w):
    f = lambda y: sg.step_fn(y, model, contact)  # noqa: E731
    out, tangent = jax.jvp(f, (x,), (t,))
    _, pullback = jax.vjp(f, x)
    (gradient,) = pullback(w)
    nxt = sg._next_state(x, model, contact)
    return out, tangent, gradient, nxt.contact.num_active, nxt.contact.converged


sweep = jax.jit(jax.vmap(_derivatives, (0, None, None, 0, 0)))


def run_scene(name, n, batch, seed):
    rng = np.random.default_rng(seed)
    model, xs = SCENES[name](n, rng)
    contact = jc.init(model).contact
    ts = jnp.asarray(rng.normal(size=xs.shape))
    ws = jnp.asarray(rng.normal(size=(n, model.nq + model.nv)))
    counts = dict(states=n, nonfinite_tangent=0, nonfinite_gradient=0, nonfinite_state=0,
                  unconverged=0, no_contact=0, some_contacts=0, max_mode_mismatch=0.0)
    active_hist = {}
    t0 = time.perf_counter()
    compile_s = None
    for k in range(0, n, batch):
        sl = slice(k, k + batch)
        tb = time.perf_counter()
        out, tangent, gradient, active, converged = jax.block_until_ready(
            sweep(xs[sl], model, contact, ts[sl], ws[sl]))
        if compile_s is None:
            compile_s = time.perf_counter() - tb
        out, tangent, gradient = np.asarray(out), np.asarray(tangent), np.asarray(gradient)
        active, converged = np.asarray(active), np.asarray(converged)
        finite_t = np.isfinite(tangent).all(axis=1)
        finite_g = np.isfinite(gradient).all(axis=1)
        counts["nonfinite_tangent"] += int((~finite_t).sum())
        counts["nonfinite_gradient"] += int((~finite_g).sum())
        counts["nonfinite_state"] += int((~np.isfinite(out).all(axis=1)).sum())
        counts["unconverged"] += int((~converged).sum())
        counts["no_contact"] += int((active == 0).sum())
        counts["some_contacts"] += int((active > 0).sum())
        for a in np.unique(active):
            active_hist[int(a)] = active_hist.get(int(a), 0) + int((active == a).sum())
        ok = finite_t & finite_g
        lhs = np.einsum("bo,bo->b", np.asarray(ws[sl])[ok], tangent[ok])
        rhs = np.einsum("bi,bi->b", gradient[ok], np.asarray(ts[sl])[ok])
        mismatch = np.abs(lhs - rhs) / np.maximum(1.0, np.abs(lhs))
        if mismatch.size:
            counts["max_mode_mismatch"] = max(counts["max_mode_mismatch"], float(mismatch.max()))
    counts["active_contacts_histogram"] = dict(sorted(active_hist.items()))
    counts["seconds"] = time.perf_counter() - t0
    counts["first_call_s"] = compile_s
    counts["touching_exactly"] = n // 4
    return counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--scenes", nargs="*", default=list(SCENES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--all-cores", action="store_true")
    args = parser.parse_args(argv)
    if args.states % args.batch:
        parser.error("--states must be a multiple of --batch (one compiled batch shape)")
    meta = dict(date=time.strftime("%Y-%m-%d %H:%M"), machine=platform.machine(), cpus=os.cpu_count(),
                cores_used=len(os.sched_getaffinity(0)), jax=jax.__version__, states=args.states,
                seed=args.seed, loadavg_start=loadavg())
    results = {}
    out_dir = RESULTS
    out_dir.mkdir(exist_ok=True)
    for name in args.scenes:
        results[name] = run_scene(name, args.states, args.batch, args.seed)
        print(name, results[name], flush=True)
        meta["loadavg_end"] = loadavg()
        write_results("gradient_nan_sweep", dict(meta=meta, scenes=results), markdown(meta, results, argv), out_dir)
    print((out_dir / "gradient_nan_sweep.md").read_text())


def markdown(meta, results, argv) -> str:
    lines = [
        "# Non-finite step derivatives over random states near contact make/break",
        "",
        f"`python benchmarks/gradient_nan_sweep.py {' '.join(argv or sys.argv[1:])}` — {meta['date']}, "
        f"jax {meta['jax']}, pinned to {meta['cores_used']} core; load average {meta['loadavg_start']} → "
        f"{meta.get('loadavg_end')}. One `jax.jvp` (random tangent) and one `jax.vjp` (random "
        "cotangent) of `jc.step` per state, float64, implicit contact derivatives.",
        "",
        "| scene | states | exactly touching | non-finite tangent | non-finite gradient | "
        "non-finite next state | unconverged solves | states without contact | max rel. fwd/rev mismatch | active contacts: states | time (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, c in results.items():
        hist = ", ".join(f"{k}: {v}" for k, v in c["active_contacts_histogram"].items())
        lines.append(
            f"| {name} | {c['states']} | {c['touching_exactly']} | {c['nonfinite_tangent']} | "
            f"{c['nonfinite_gradient']} | {c['nonfinite_state']} | {c['unconverged']} | {c['no_contact']} | "
            f"{c['max_mode_mismatch']:.1e} | {hist} | {c['seconds']:.0f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
