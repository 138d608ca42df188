"""Gradient cost relative to the forward pass, next to central finite differences and MJX autodiff,
in the same run (issue 6; seed 004 §IV-A, Table III).

Per scene and engine, one environment (per-env times), float64, every call blocked on its result,
compile time (first call minus steady call) reported separately, median of ``--repeats`` calls:

* ``step``      one forward step;
* ``jacfwd``    the full step Jacobian ``∂v⁺/∂(q, v, τ)`` (``nv × (nq + nv + nu)``) by
  ``jax.jacfwd`` (ours: implicit contact derivatives; MJX: autodiff of its solver);
* ``jacrev``    the same by ``jax.jacrev`` (``nv`` cotangents instead of ``nq + nv + nu``
  tangents; MJX: not available, its solver's ``while_loop`` has no reverse mode);
* ``jacobian``  the faster of the two — the one a user would pick — used in the ratios;
* ``fd``        the same Jacobian by central finite differences: ``2 (nq + nv + nu)`` steps in one
  ``vmap``-ed program (the cheapest way to run them on one core in JAX);
* ``rollout``   a 100-step rollout (``lax.scan``);
* ``grad``      ``jax.grad`` of a scalar loss of that rollout w.r.t. the controls ``(100, nu)`` and
  the initial velocity (reverse mode through 100 steps).

Ratios: ``jacobian / step`` and ``grad / rollout`` (seed 004 reports ≈ 1 on one CPU core; the
issue's target is ≤ 3) and ``fd / jacobian`` (target ≥ 10).

Scenes (one ``mujoco.MjModel`` each, handed to ours through ``jc.io.from_mjmodel`` and to MJX
through ``mjx.put_model``; each starts from a state with its contacts established, found by
MuJoCo C — ``mj_step`` with zero controls for ``--settle`` steps):

* ``half_cheetah`` — a planar 9-dof runner of capsules (MJCF below, after MuJoCo's half-cheetah),
  6 motors, lying on its feet on a plane;
* ``humanoid``     — MJX's benchmark humanoid (``mujoco/mjx/test_data/humanoid/humanoid.xml``,
  21 motors);
* ``panda``        — the Franka Panda URDF (example-robot-data) on a floor, a motor per joint,
  its reference pose clipped ``PANDA_LIMIT_MARGIN`` inside the joint limits (not onto them: see
  ``scenes``);
* ``go2``          — the Unitree Go2 URDF standing on a floor (all 19 collision meshes), a motor
  per joint (``examples/inverse_standing_quadruped.py``), at rest in its standing pose, feet
  0.1 mm into the floor (not settled: without torques it folds).

MJX differentiates through its solver's ``while_loop`` in forward mode only; reverse mode
(``jax.grad`` of a rollout) needs ``opt.iterations = 1`` (a single Newton step, then a
``while_loop``-free graph), which is what its column uses — the table says so.

    taskset -c 1 python benchmarks/gradients.py [--scenes half_cheetah go2] [--repeats 3]
    python benchmarks/gradients.py --one-process   # all scenes in one process (default: one each)
    python benchmarks/gradients.py --skip panda:mjx   # XLA's compile of MJX's Panda step OOMs

Writes ``benchmarks/results/gradients.json`` and ``gradients.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import enable_float64, loadavg, pin_to_one_core, write_results

# One core, as benchmarks/step.py (before JAX starts its threads): XLA:CPU hands work between its
# pool threads inside loops, and on a shared machine each handoff can wait a scheduler quantum.
pin_to_one_core()
enable_float64()  # a script, not the library

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import mujoco  # noqa: E402

import jaxsim_contact as jc  # noqa: E402
import step as step_bench  # noqa: E402  (benchmarks/step.py: shared scenes and timing)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HORIZON = 100
#: distance (rad, m) of the Panda start from every joint limit: with the arm at rest no limit
#: row is active after the warm-start step, and none is within reach of a ±h FD perturbation
PANDA_LIMIT_MARGIN = 0.01

HALF_CHEETAH = """<mujoco model="half_cheetah_like">
  <option timestep="0.01" gravity="0 0 -9.81"/>
  <default>
    <joint limited="true" damping="0.05" armature="0.1"/>
    <geom type="capsule" friction="0.4 0.005 0.0001" density="1000"/>
    <motor ctrllimited="true" ctrlrange="-1 1"/>
  </default>
  <worldbody>
    <geom name="floor" type="plane" size="40 40 0.1"/>
    <body name="torso" pos="0 0 0.7">
      <joint name="rootx" type="slide" axis="1 0 0" limited="false" damping="0" armature="0"/>
      <joint name="rootz" type="slide" axis="0 0 1" limited="false" damping="0" armature="0"/>
      <joint name="rooty" type="hinge" axis="0 1 0" limited="false" damping="0" armature="0"/>
      <geom name="torso" fromto="-0.5 0 0 0.5 0 0" size="0.046"/>
      <geom name="head" pos="0.6 0 0.1" axisangle="0 1 0 0.87" size="0.046 0.15"/>
      <body name="bthigh" pos="-0.5 0 0">
        <joint name="bthigh" type="hinge" axis="0 1 0" range="-0.52 1.05"/>
        <geom pos="0.1 0 -0.13" axisangle="0 1 0 -3.8" size="0.046 0.145"/>
        <body name="bshin" pos="0.16 0 -0.25">
          <joint name="bshin" type="hinge" axis="0 1 0" range="-0.785 0.785"/>
          <geom pos="-0.14 0 -0.07" axisangle="0 1 0 -2.03" size="0.046 0.15"/>
          <body name="bfoot" pos="-0.28 0 -0.14">
            <joint name="bfoot" type="hinge" axis="0 1 0" range="-0.4 0.785"/>
            <geom pos="0.03 0 -0.097" axisangle="0 1 0 -0.27" size="0.046 0.094"/>
          </body>
        </body>
      </body>
      <body name="fthigh" pos="0.5 0 0">
        <joint name="fthigh" type="hinge" axis="0 1 0" range="-1 0.7"/>
        <geom pos="-0.07 0 -0.12" axisangle="0 1 0 0.52" size="0.046 0.133"/>
        <body name="fshin" pos="-0.14 0 -0.24">
          <joint name="fshin" type="hinge" axis="0 1 0" range="-1.2 0.87"/>
          <geom pos="0.065 0 -0.09" axisangle="0 1 0 -0.6" size="0.046 0.106"/>
          <body name="ffoot" pos="0.13 0 -0.18">
            <joint name="ffoot" type="hinge" axis="0 1 0" range="-0.5 0.5"/>
            <geom pos="0.045 0 -0.07" axisangle="0 1 0 -0.6" size="0.046 0.07"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="bthigh" gear="120"/> <motor joint="bshin" gear="90"/> <motor joint="bfoot" gear="60"/>
    <motor joint="fthigh" gear="120"/> <motor joint="fshin" gear="60"/> <motor joint="ffoot" gear="30"/>
  </actuator>
</mujoco>
"""


# ---- scenes -------------------------------------------------------------------------------------

def _motors_on_joints(spec):
    for joint in spec.joints:
        if joint.type in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
            spec.add_actuator(name=f"{joint.name}_motor", target=joint.name,
                              trntype=mujoco.mjtTrn.mjTRN_JOINT)


def _settle(mj, q0, steps: int):
    """``(qpos, qvel)`` after ``steps`` MuJoCo C steps from ``q0`` at rest, zero controls."""
    data = mujoco.MjData(mj)
    data.qpos[:] = q0
    for _ in range(steps):
        mujoco.mj_step(mj, data)
    return data.qpos.copy(), data.qvel.copy()


def scenes(settle: int) -> dict:
    """name -> (MjModel, qpos, qvel)."""
    import tempfile

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "half_cheetah.xml"
        path.write_text(HALF_CHEETAH)
        cheetah = jc.io.compile_mjmodel(path)
    out["half_cheetah"] = (cheetah, *_settle(cheetah, cheetah.qpos0.copy(), settle))
    try:
        import mujoco.mjx as mjx_module

        path = Path(mjx_module.__file__).parent / "test_data" / "humanoid" / "humanoid.xml"
        humanoid = jc.io.compile_mjmodel(path)
        q0 = humanoid.key_qpos[0].copy() if humanoid.nkey else humanoid.qpos0.copy()
        out["humanoid"] = (humanoid, *_settle(humanoid, q0, settle))
    except ImportError:
        print("humanoid skipped: mujoco-mjx is not installed (pip install -e '.[bench]')")
    # Strictly inside the joint limits: on a limit (step.panda's default clip puts joint 4 and the
    # fingers there) gravity holds the arm at distance ~1e-13 from it, where v⁺(q) has a kink (the
    # limit's target speed is -d/dt for d > 0 but Baumgarte's -β d/dt for d < 0), so central
    # differences straddle two one-sided slopes (the old 67 % disagreement, issue 6).
    panda, q0 = step_bench.panda(edit=_motors_on_joints, limit_margin=PANDA_LIMIT_MARGIN)
    out["panda"] = (panda, q0, np.zeros(panda.nv))  # an arm at rest: no settling needed
    sys.path.insert(0, str(ROOT / "examples"))
    from inverse_standing_quadruped import go2_mjmodel, standing_configuration

    go2 = go2_mjmodel(feet_only=False)
    # standing at rest, feet 0.1 mm into the floor (without torques it would fold when settled)
    out["go2"] = (go2, standing_configuration(go2, penetration=1e-4), np.zeros(go2.nv))
    return out


# ---- timing -------------------------------------------------------------------------------------

_timed = step_bench._median_time  # (steady s, compile s, output), blocked on results


def _fd_inputs(x, h):
    n = x.shape[0]
    eye = jnp.eye(n, dtype=x.dtype) * h
    return jnp.concatenate([x + eye, x - eye])


def _measure(name, f_step, x, f_rollout, loss_args, repeats, fd_step, skip_over):
    """Time ``f_step(x) -> v⁺``, its ``jacfwd``, central differences, a rollout and its gradient.

    ``f_rollout(*loss_args) -> scalar loss``; its gradient is w.r.t. every argument."""
    res = {}
    step = jax.jit(f_step)
    res["step_s"], res["step_compile_s"], v_next = _timed(lambda: step(x), repeats)
    res["finite"] = bool(np.all(np.isfinite(np.asarray(v_next))))
    n = x.shape[0]
    if res["step_s"] * 2 * n > skip_over:
        res["error"] = f"skipped: one step takes {res['step_s']:.2f} s"
        return res
    jac = jax.jit(jax.jacfwd(f_step))
    res["jacfwd_s"], res["jacfwd_compile_s"], jf = _timed(lambda: jac(x), repeats)
    try:  # reverse mode: nv cotangents instead of nq + nv + nu tangents
        jac_rev = jax.jit(jax.jacrev(f_step))
        res["jacrev_s"], res["jacrev_compile_s"], jr = _timed(lambda: jac_rev(x), repeats)
        res["jacrev_vs_jacfwd"] = float(jnp.max(jnp.abs(jr - jf)) / jnp.maximum(jnp.max(jnp.abs(jf)), 1e-12))
    except Exception as err:  # noqa: BLE001 - a peer without reverse mode through its solver
        res["jacrev_error"] = f"{type(err).__name__}: {err}"[:300]
    # "the Jacobian" of the ratios: the faster of the two modes, as a user would pick
    res["jacobian_mode"] = "jacrev" if res.get("jacrev_s", float("inf")) < res["jacfwd_s"] else "jacfwd"
    res["jacobian_s"] = res[f"{res['jacobian_mode']}_s"]
    fd = jax.jit(lambda y: jax.vmap(f_step)(_fd_inputs(y, fd_step)))
    res["fd_s"], res["fd_compile_s"], out = _timed(lambda: fd(x), repeats)
    jfd = ((out[:n] - out[n:]) / (2 * fd_step)).T
    res["jacobian_vs_fd"] = float(jnp.linalg.norm(jf - jfd) / jnp.maximum(jnp.linalg.norm(jfd), 1e-12))
    res["jacobian_finite"] = bool(np.all(np.isfinite(np.asarray(jf))))
    roll = jax.jit(f_rollout)
    res["rollout_s"], res["rollout_compile_s"], _ = _timed(lambda: roll(*loss_args), repeats)
    try:
        grad = jax.jit(jax.grad(f_rollout, argnums=tuple(range(len(loss_args)))))
        res["grad_s"], res["grad_compile_s"], g = _timed(lambda: grad(*loss_args), repeats)
        res["grad_finite"] = bool(all(np.all(np.isfinite(np.asarray(a))) for a in g))
    except Exception as err:  # noqa: BLE001 - a peer that cannot differentiate is reported
        res["grad_error"] = f"{type(err).__name__}: {err}"[:300]
    res["jacobian_over_step"] = res["jacobian_s"] / res["step_s"]
    res["fd_over_jacobian"] = res["fd_s"] / res["jacobian_s"]
    if "grad_s" in res:
        res["grad_over_rollout"] = res["grad_s"] / res["rollout_s"]
    return res


def _loss(q, v):
    """A scalar of a trajectory: final configuration and accumulated squared velocity."""
    return jnp.sum(q[-1] ** 2) + 1e-2 * jnp.sum(v ** 2)


def flat_step(model, qpos, qvel):
    """``(state, next_state, x)``: ``state`` is one step after ``(qpos, qvel)`` with zero controls
    (its contact cache warm-starts the next solve, as in a running simulation; warm-starting a
    state from its own solution would make the forward step converge in 0 iterations), and
    ``next_state(x)`` is ``jc.step`` from it as a function of the flat ``x = (q, v, ctrl)``
    (``(nq + nv + nu,)``), ``x`` its value at ``state``."""
    nq, nv, nu = model.nq, model.nv, model.nu
    state = jax.jit(jc.step)(model, jc.init(model, q=jnp.asarray(qpos), v=jnp.asarray(qvel)),
                             jnp.zeros(nu))

    def next_state(x):
        s = jc.State(q=x[:nq], v=x[nq:nq + nv], time=state.time, error=state.error,
                     contact=state.contact)
        return jc.step(model, s, x[nq + nv:])

    return state, next_state, jnp.concatenate([state.q, state.v, jnp.zeros(nu)])


def rollout_loss(model, state):
    """``(f_rollout, (ctrls, v0))``: the scalar :func:`_loss` of a ``HORIZON``-step rollout from
    ``state`` as a function of the controls and the initial velocity, and their values (fixed
    random controls in ``[-0.1, 0.1]``)."""

    def f_rollout(ctrls, v0):
        s = jc.State(q=state.q, v=v0, time=state.time, error=state.error, contact=state.contact)
        _, traj = jc.rollout(model, s, ctrls)
        return _loss(traj.q, traj.v)

    ctrls = 0.1 * jnp.asarray(np.random.default_rng(0).uniform(-1, 1, (HORIZON, model.nu)))
    return f_rollout, (ctrls, state.v)


def bench_ours(mj, qpos, qvel, repeats, fd_step, skip_over):
    model = jc.io.from_mjmodel(mj)
    state, next_state, x = flat_step(model, qpos, qvel)

    def f_step(x):
        return next_state(x).v

    nu = model.nu
    f_rollout, loss_args = rollout_loss(model, state)
    res = _measure("ours", f_step, x, f_rollout, loss_args, repeats, fd_step, skip_over)
    res["active_contacts"] = int(state.contact.num_active)
    # constraint rows of the differentiated step (at x): one with |distance| ≲ fd_step sits on the
    # kink of its target speed at distance 0, where central differences are not a derivative
    at_x = jax.jit(jc.step)(model, state, jnp.zeros(nu)).contact
    near = np.abs(np.asarray(at_x.distance))[np.asarray(at_x.active)]
    res["nearest_active_distance"] = float(near.min()) if near.size else None
    res["solver_iterations"] = int(state.contact.iterations)
    return res


def bench_mjx(mj, qpos, qvel, repeats, fd_step, skip_over):
    from mujoco import mjx

    mx = mjx.put_model(mj)
    # reverse mode: MJX's solver while_loop has no transpose; one Newton iteration is loop-free
    mx_rev = mjx.put_model(mj).tree_replace({"opt.iterations": 1})
    nq, nv = mj.nq, mj.nv
    data = mjx.make_data(mx).replace(qpos=jnp.asarray(qpos), qvel=jnp.asarray(qvel))
    data = jax.jit(mjx.forward)(mx, data)

    def f_step(x):
        d = data.replace(qpos=x[:nq], qvel=x[nq:nq + nv], ctrl=x[nq + nv:])
        return mjx.step(mx, d).qvel

    def f_rollout(ctrls, v0):
        def body(d, u):
            d = mjx.step(mx_rev, d.replace(ctrl=u))
            return d, (d.qpos, d.qvel)

        _, (q, v) = jax.lax.scan(body, data.replace(qvel=v0), ctrls)
        return _loss(q, v)

    x = jnp.concatenate([data.qpos, data.qvel, jnp.zeros(mj.nu)])
    ctrls = 0.1 * jnp.asarray(np.random.default_rng(0).uniform(-1, 1, (HORIZON, mj.nu)))
    res = _measure("mjx", f_step, x, f_rollout, (ctrls, data.qvel), repeats, fd_step, skip_over)
    # MJX's ``ncon`` is its static contact budget, not the active count: not reported
    return res


# ---- driver -------------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", nargs="*", default=None)
    parser.add_argument("--engines", nargs="*", default=["ours", "mjx"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--settle", type=int, default=100, help="MuJoCo C steps to settle contacts")
    parser.add_argument("--fd-step", type=float, default=1e-6)
    parser.add_argument("--skip-over", type=float, default=30.0,
                        help="skip an engine's derivatives when 2n steps would exceed this (s)")
    parser.add_argument("--all-cores", action="store_true")
    parser.add_argument("--out", default="gradients")
    parser.add_argument("--skip", nargs="*", default=[], metavar="SCENE:ENGINE",
                        help="pairs not to run, reported as skipped (e.g. panda:mjx: XLA's compile "
                             "of MJX's Panda step outgrows 24 GiB and is killed)")
    parser.add_argument("--one-process", action="store_true",
                        help="measure every scene in this process (default: one child process per "
                             "scene, see _run_scenes_apart)")
    parser.add_argument("--out-dir", default=str(HERE / "results"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    engines = {"ours": bench_ours, "mjx": bench_mjx}
    skip = set()
    for item in args.skip:
        scene, _, engine = item.partition(":")
        if not scene or engine not in engines:
            parser.error(f"--skip takes SCENE:ENGINE with ENGINE one of {sorted(engines)}, got {item!r}")
        skip.add((scene, engine))
    meta = dict(date=time.strftime("%Y-%m-%d %H:%M"), machine=platform.machine(), cpus=os.cpu_count(),
                cores_used=len(os.sched_getaffinity(0)), jax=jax.__version__, mujoco=mujoco.__version__,
                horizon=HORIZON, repeats=args.repeats, fd_step=args.fd_step,
                loadavg_start=loadavg())
    rows = []
    out_dir = Path(args.out_dir)
    out_dir.mkdir(exist_ok=True)
    measured = {name: scene for name, scene in scenes(args.settle).items()
                if not args.scenes or name in args.scenes}
    if len(measured) > 1 and not args.one_process:
        meta["scene_processes"] = "one per scene"
        rows = _run_scenes_apart(list(measured), args)
        meta["loadavg_end"] = loadavg()
        write_results(args.out, dict(meta=meta, rows=rows), markdown(meta, rows, argv), out_dir)
        print((out_dir / f"{args.out}.md").read_text())
        return
    for name, (mj, qpos, qvel) in measured.items():  # scenes built (and settled) once
        row = dict(scene=name, nq=int(mj.nq), nv=int(mj.nv), nu=int(mj.nu))
        rows.append(row)
        for engine in args.engines:
            try:  # (a skipped pair is written too: a child process's rows come from its file)
                row[engine] = (dict(error="skipped (--skip)") if (name, engine) in skip else
                               engines[engine](mj, qpos, qvel, args.repeats, args.fd_step, args.skip_over))
            except Exception as err:  # noqa: BLE001 - a peer that cannot run a scene is reported
                row[engine] = dict(error=f"{type(err).__name__}: {err}"[:300])
            print(name, engine, {k: (round(v, 5) if isinstance(v, float) else v)
                                 for k, v in row[engine].items()}, flush=True)
            meta["loadavg_end"] = loadavg()
            write_results(args.out, dict(meta=meta, rows=rows), markdown(meta, rows, argv), out_dir)
    print((out_dir / f"{args.out}.md").read_text())


def _run_scenes_apart(names, args) -> list:
    """The rows of ``names``, each measured by this script in a child process of its own.

    Measurements of one scene depend on what ran before it in the process: the Panda's step
    ``jacrev`` took 0.23 ms in a process of its own, 0.27 after the half-cheetah's programs and
    0.29 after the half-cheetah's and the humanoid's (session 34, same code; not explained —
    XLA:CPU's runtime state, allocator or caches). One process per scene makes each row
    independent of the scene order."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            child = [sys.executable, __file__, "--one-process", "--scenes", name, "--out", name,
                     "--out-dir", tmp, "--engines", *args.engines, "--repeats", str(args.repeats),
                     "--settle", str(args.settle), "--fd-step", repr(args.fd_step),
                     "--skip-over", repr(args.skip_over)]
            child += ["--skip", *args.skip] if args.skip else []
            child += ["--all-cores"] if args.all_cores else []
            done = subprocess.run(child)
            result = Path(tmp) / f"{name}.json"
            if result.exists():
                rows += json.loads(result.read_text())["rows"]
            else:
                rows.append(dict(scene=name, nv="—", ours=dict(error=f"child process exited with {done.returncode}")))
    return rows


def _ms(r, key):
    v = r.get(key) if isinstance(r, dict) else None
    return "—" if v is None else f"{1e3 * v:.2f}"


def _x(r, key, fmt="{:.2f}"):
    v = r.get(key) if isinstance(r, dict) else None
    return "—" if v is None else fmt.format(v)


def markdown(meta, rows, argv) -> str:
    lines = [
        "# Gradient cost: jaxsim_contact vs finite differences vs MJX autodiff",
        "",
        f"`python benchmarks/gradients.py {' '.join(argv or sys.argv[1:])}` — {meta['date']}, "
        f"{meta['cpus']} CPUs ({meta['machine']}; process pinned to {meta['cores_used']}), jax {meta['jax']}, "
        f"mujoco {meta['mujoco']}; one environment, float64, median of {meta['repeats']} blocked calls; "
        f"load average {meta['loadavg_start']} → {meta.get('loadavg_end')}"
        + ("; each scene in a process of its own." if meta.get("scene_processes") else "."),
        "",
        "Ours: hard NCP contact (ADMM, default options), implicit contact derivatives. MJX: its soft "
        "contact, autodiff through its solver (step Jacobian: forward mode through the solver "
        "`while_loop`; rollout gradient: `opt.iterations = 1`, since the loop has no reverse mode). "
        "Step Jacobian of v⁺ w.r.t. (q, v, τ): `jax.jacfwd` and `jax.jacrev` timed, the faster "
        "(mode in the table) used in the ratios; FD = central differences "
        f"(h = {meta['fd_step']:g}, 2(nq + nv + nu) steps in one vmapped call); "
        f"rollout = {meta['horizon']} steps, grad = `jax.grad` of a scalar loss w.r.t. the controls "
        "and the initial velocity. Times in ms; compile times (s) in the JSON.",
        "",
        "| scene | nv | engine | step | jacfwd | jacrev | Jacobian / step (mode) | FD | FD / Jacobian | "
        "rollout | grad | grad / rollout | ‖J − J_fd‖/‖J_fd‖ | contacts |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for engine in ("ours", "mjx"):
            e = r.get(engine)
            if e is None:
                continue
            lines.append(
                f"| {r['scene']} | {r['nv']} | {engine} | {_ms(e, 'step_s')} | {_ms(e, 'jacfwd_s')} | "
                f"{_ms(e, 'jacrev_s')} | {_x(e, 'jacobian_over_step')} ({e.get('jacobian_mode', '—')}) | "
                f"{_ms(e, 'fd_s')} | {_x(e, 'fd_over_jacobian', '{:.1f}')} | "
                f"{_ms(e, 'rollout_s')} | {_ms(e, 'grad_s')} | {_x(e, 'grad_over_rollout')} | "
                f"{_x(e, 'jacobian_vs_fd', '{:.1e}')} | {_x(e, 'active_contacts', '{}')} |")
    errors = [(r["scene"], f"{k} {key.removesuffix('error').replace('_', ' ').strip()}".strip(), v[key])
              for r in rows for k, v in r.items() if isinstance(v, dict)
              for key in ("error", "grad_error", "jacrev_error") if key in v]
    if errors:
        lines += ["", "Errors / skips:", ""] + [f"- {s} {k}: {e}" for s, k, e in errors]
    ours = [r["ours"] for r in rows if isinstance(r.get("ours"), dict) and "jacobian_s" in r["ours"]]
    if ours:
        worst_j = max(e["jacobian_over_step"] for e in ours)
        worst_g = max(e.get("grad_over_rollout", float("inf")) for e in ours)
        worst_fd = min(e["fd_over_jacobian"] for e in ours)
        verdict = lambda ok: "met" if ok else "not met"  # noqa: E731
        lines += ["", "Targets (ours, worst scene; gradient / forward ≤ 3 read for both derivatives): "
                  f"grad / rollout {worst_g:.2f} (≤ 3: {verdict(worst_g <= 3)}), Jacobian / step "
                  f"{worst_j:.2f} (≤ 3: {verdict(worst_j <= 3)}); FD / Jacobian {worst_fd:.1f} "
                  f"(≥ 10: {verdict(worst_fd >= 10)})."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
