"""Long runs (issue 8): soak of resting and stacked boxes, separation of interpenetrated spawns,
and the tunnelling envelope of a fast small body against a thin static slab. float64 throughout.

1. **Soak.** A 0.1 m box resting on the floor and stacks of ``--stacks`` boxes (default 4 and
   10; ``jc.scenes.load("tower", ...)``, 1 mm gaps, default options and solver) run ``--steps`` steps (default 10⁴, dt 2 ms)
   in chunks of ``--chunk`` steps. Reported: the largest step-to-step increase of the total energy
   ``kinetic_energy + potential_energy`` (``jaxsim_contact.dynamics``, as in
   tests/dynamics/test_stability.py), over the whole run and after the settling time; the largest
   displacement of any body centre from where it was at ``t = 0.5 s``; the OR of the error flags;
   solver iterations, residual and the number of unconverged steps.
2. **Interpenetrated spawns.** A box half sunk into the floor (centre at ``z = 0``) and two boxes
   overlapping by half their size (the upper centre 0.05 m above the lower one). Separated means
   the contact penetration ``state.contact.penetration`` is at most 1 mm; reported: the first time it
   is, whether it stays so to the end of a 1 s run, and the largest linear body speed (m/s). The
   criterion (separate within 0.5 s, no speed above 1 m/s) is checked as stated, for the default
   ``Options.baumgarte`` and for a sweep of β (the velocity bias ``β δ / dt`` of seed 001 §II).
3. **Tunnelling envelope.** A static slab of thickness ``h`` (a world box geom, 1 m × 1 m) and a
   free sphere of radius ``r`` (or a cube of half-size ``r``), no gravity, moving straight at the
   slab with speed ``v`` from ``(3 + φ) v dt`` above it, for 100 steps (enough to cross the slab
   at the smallest ratio swept, 0.2, if nothing stops it). φ ∈ [0, 1) samples where between steps the body meets the
   slab (``--phases`` values); a configuration "holds" if the body ends above the slab's mid-plane
   for every φ (``--phases`` values, default 32). For each (body, r, h, dt) the ratio ``v dt / h``
   is swept on a log grid from 0.2 to 20; the largest ratio below which every ratio holds for every
   φ is then refined by 10 bisections and reported, with the same in terms of ``v dt / (h + 2 r)``
   and next to the prediction ``(h/2 + r + contact_margin) / h`` (a body is stopped iff it comes
   within the contact margin at a step that still ends with its centre before the mid-plane).

    taskset -c 1 python benchmarks/long_runs.py              # full sizes
    taskset -c 1 python benchmarks/long_runs.py --steps 2000 # a shorter soak

The process pins itself to the lowest core it is allowed (as benchmarks/step.py does), so
``taskset -c 1`` selects the core. Writes ``benchmarks/results/long_runs.json`` and ``.md``.
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

from _common import RESULTS, enable_float64, loadavg, pin_to_one_core, write_results

# One core: see benchmarks/step.py (XLA:CPU thread handoffs on a shared machine).
pin_to_one_core()
enable_float64()  # a script, not the library

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxsim_contact as jc  # noqa: E402
from jaxsim_contact.dynamics import kinetic_energy, potential_energy  # noqa: E402

HERE = Path(__file__).resolve().parent
SETTLE_TIME = 0.5  # s: displacement is measured from the positions at this time
SEPARATED = 1e-3  # m: penetration at or below this counts as separated (the stacking test's bound)


def _body_positions(model, q):
    """``(..., nbody-1, 3)`` centres of the free bodies (freejoint qpos: position then quaternion)."""
    return q.reshape(q.shape[:-1] + (model.nbody - 1, 7))[..., :3]


def _body_speeds(model, v):
    """``(..., nbody-1)`` linear speeds (freejoint qvel: linear velocity first)."""
    lin = v.reshape(v.shape[:-1] + (model.nbody - 1, 6))[..., :3]
    return jnp.linalg.norm(lin, axis=-1)


@eqx.filter_jit
def _chunk(model, state, length_marker):
    """``length_marker.shape[0]`` steps; returns the final state and per-step reductions."""
    final, traj = jc.rollout(model, state, jnp.zeros((length_marker.shape[0], model.nu), state.q.dtype))
    energy = jax.vmap(lambda q, v: kinetic_energy(model, q, v) + potential_energy(model, q))(traj.q, traj.v)
    per_step = dict(energy=energy, pos=_body_positions(model, traj.q), speed=_body_speeds(model, traj.v),
                    penetration=traj.contact.penetration, iterations=traj.contact.iterations,
                    residual=traj.contact.residual, converged=traj.contact.converged, error=traj.error,
                    time=traj.time)
    return final, per_step


def run_long(model, state, steps: int, chunk: int):
    """Run ``steps`` steps in chunks; returns the per-step arrays concatenated (host numpy)."""
    out, done = [], 0
    energy0 = float(kinetic_energy(model, state.q, state.v) + potential_energy(model, state.q))
    while done < steps:
        n = min(chunk, steps - done)
        state, per_step = _chunk(model, state, jnp.zeros((n,)))
        out.append(jax.tree_util.tree_map(np.asarray, per_step))
        done += n
    merged = {k: np.concatenate([o[k] for o in out]) for k in out[0]}
    merged["energy"] = np.concatenate([[energy0], merged["energy"]])
    return merged


# ---- 1. soak ------------------------------------------------------------------------------------

def soak(name, model, steps, chunk):
    t0 = time.perf_counter()
    r = run_long(model, jc.init(model), steps, chunk)
    wall = time.perf_counter() - t0
    dt = float(model.options.dt)
    settle = int(round(SETTLE_TIME / dt))  # index into per-step arrays: state after step `settle`
    gain = np.diff(r["energy"])  # gain[k]: energy after step k+1 minus after step k
    disp = np.linalg.norm(r["pos"][settle - 1:] - r["pos"][settle - 1], axis=-1)
    error = int(np.bitwise_or.reduce(r["error"]))
    row = dict(
        scene=name, boxes=model.nbody - 1, steps=steps, dt=dt, sim_seconds=steps * dt, wall_seconds=wall,
        max_energy_increase_J=float(gain.max()), step_of_max_increase=int(gain.argmax()) + 1,
        max_energy_increase_after_settle_J=float(gain[settle:].max()),
        energy_start_J=float(r["energy"][0]), energy_end_J=float(r["energy"][-1]),
        max_drift_m=float(disp.max()), max_drift_per_body_m=[float(x) for x in disp.max(axis=0)],
        final_max_speed=float(r["speed"][-1].max()),
        max_penetration_after_settle_m=float(r["penetration"][settle:].max()),
        error_flags=error, error_names=_flag_names(error),
        steps_with_error_bits=int(np.count_nonzero(r["error"])),
        unconverged_steps=int(np.count_nonzero(~r["converged"])),
        unconverged_steps_after_settle=int(np.count_nonzero(~r["converged"][settle:])),
        mean_iterations=float(r["iterations"].mean()), max_iterations=int(r["iterations"].max()),
        max_residual=float(r["residual"].max()), max_residual_after_settle=float(r["residual"][settle:].max()),
        finite=bool(np.all(np.isfinite(r["energy"]))),
    )
    row["energy_never_increases_1e-6"] = row["max_energy_increase_J"] < 1e-6
    row["drift_below_1mm"] = row["max_drift_m"] < 1e-3
    return row


def _flag_names(bits):
    names = [n for n in ("NON_FINITE_STATE", "SOLVER_NOT_CONVERGED", "CONTACT_BUDGET_OVERFLOW",
                         "INVALID_CONTROL") if bits & getattr(jc.ErrorFlag, n)]
    return names or ["none"]


# ---- 2. interpenetrated spawns ------------------------------------------------------------------

def spawn_cases(dt):
    """name -> (model, q0): a box half sunk into the floor, two boxes overlapping by half a side."""
    sunk = jc.scenes.load("tower", count=1, gap=1e-3, dt=dt)
    q = np.asarray(sunk.qpos0).copy()
    q[2] = 0.0  # centre on the floor: 0.05 m = half the 0.1 m side below z = 0
    pair = jc.scenes.load("tower", count=2, gap=1e-3, dt=dt)
    q2 = np.asarray(pair.qpos0).copy()
    q2[2] = 0.05  # lower box resting on the floor
    q2[9] = 0.10  # upper centre 0.05 m above the lower one: 0.05 m (half the side) of overlap
    return {"box half sunk in floor": (sunk, q), "two boxes overlapping by half": (pair, q2)}


def separation(name, model, q0, baumgarte, horizon=1.0):
    model = model.replace_options(baumgarte=baumgarte)
    steps = int(round(horizon / float(model.options.dt)))
    r = run_long(model, jc.init(model, q=jnp.asarray(q0)), steps, steps)
    pen, t = r["penetration"], r["time"]
    ok = pen <= SEPARATED
    first = int(np.argmax(ok)) if ok.any() else None
    error = int(np.bitwise_or.reduce(r["error"]))
    row = dict(case=name, baumgarte=baumgarte, dt=float(model.options.dt), horizon_s=horizon,
               initial_penetration_m=0.05,
               separation_time_s=float(t[first]) if first is not None else None,
               stays_separated=bool(first is not None and ok[first:].all()),
               max_penetration_after_0p5s_m=float(pen[t > SETTLE_TIME + 1e-12].max()),
               max_speed_m_s=float(r["speed"].max()), final_max_speed_m_s=float(r["speed"][-1].max()),
               max_height_gain_m=float((r["pos"][..., 2] - jnp.asarray(q0).reshape(-1, 7)[:, 2]).max()),
               error_names=_flag_names(error), finite=bool(np.all(np.isfinite(r["energy"]))))
    row["meets_criterion"] = bool(row["separation_time_s"] is not None and row["separation_time_s"] <= 0.5
                                  and row["max_speed_m_s"] <= 1.0)
    return row


# ---- 3. tunnelling envelope ---------------------------------------------------------------------

def slab_model(body: str, thickness: float, radius: float, dt: float):
    """A static slab (top face at z = 0) and a free sphere / cube above it; no gravity."""
    shape = (f'type="sphere" size="{radius}"' if body == "sphere"
             else f'type="box" size="{radius} {radius} {radius}"')
    text = (
        '<mujoco model="slab">\n'
        f'  <option timestep="{dt}" gravity="0 0 0"/>\n'
        "  <worldbody>\n"
        f'    <geom name="slab" type="box" pos="0 0 {-thickness / 2}" size="0.5 0.5 {thickness / 2}"/>\n'
        '    <body name="bullet" pos="0 0 1">\n      <freejoint/>\n'
        f'      <geom {shape} mass="0.01"/>\n    </body>\n'
        "  </worldbody>\n</mujoco>\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "slab.xml"
        path.write_text(text)
        return jc.load(path, dtype=jnp.float64)


# enough steps to cross the slab and the body at the smallest ratio (0.2): (3 + 1 + (h + 2 r) / (0.2 h))
TUNNEL_STEPS = 100


@eqx.filter_jit
def _shoot(model, z0, vz):
    """Batched: final centre height after TUNNEL_STEPS steps from height z0 with velocity vz."""

    def one(z, w):
        q = model.qpos0.at[2].set(z)
        v = jnp.zeros((model.nv,), q.dtype).at[2].set(w)
        final, traj = jc.rollout(model, jc.init(model, q=q, v=v), jnp.zeros((TUNNEL_STEPS, 0), q.dtype))
        return final.q[2], jax.lax.reduce(traj.error, jnp.int32(0), jax.lax.bitwise_or, (0,))

    return jax.vmap(one)(z0, vz)


def _holds(model, thickness, radius, dt, ratios, phases):
    """``(len(ratios), len(phases))`` bool: the body ends on the near side of the slab's mid-plane."""
    ratio_grid, phase_grid = np.meshgrid(ratios, phases, indexing="ij")
    speed = ratio_grid * thickness / dt
    # the body's lowest point starts (3 + φ) v dt above the slab's top face
    z0 = radius + (3.0 + phase_grid) * speed * dt
    zf, err = _shoot(model, jnp.asarray(z0.ravel()), jnp.asarray(-speed.ravel()))
    zf = np.asarray(zf).reshape(ratio_grid.shape)
    return zf > -thickness / 2, int(np.bitwise_or.reduce(np.asarray(err)))


def tunnelling(body, thickness, radius, dt, ratios, phases, bisections=10):
    model = slab_model(body, thickness, radius, dt)
    held, err = _holds(model, thickness, radius, dt, ratios, phases)
    all_hold = held.all(axis=1)
    # the envelope: the largest ratio below which every ratio of the grid holds for every phase
    fails = np.flatnonzero(~all_hold)
    if not fails.size or fails[0] == 0:
        envelope, first_fail = (float(ratios[-1]), None) if not fails.size else (0.0, float(ratios[0]))
    else:
        lo, hi = float(ratios[fails[0] - 1]), float(ratios[fails[0]])
        for _ in range(bisections):  # refine the boundary between the last safe and first failing ratio
            mid = float(np.sqrt(lo * hi))
            ok, e = _holds(model, thickness, radius, dt, np.array([mid]), phases)
            err |= e
            lo, hi = (mid, hi) if ok.all() else (lo, mid)
        envelope, first_fail = lo, hi
    margin = float(model.options.contact_margin)
    return dict(body=body, thickness_m=thickness, radius_m=radius, dt=dt,
                max_safe_v_dt_over_h=envelope, first_failing_v_dt_over_h=first_fail,
                max_safe_v_dt_over_h_plus_2r=envelope * thickness / (thickness + 2 * radius),
                # the body is stopped iff some step ends with its centre before the mid-plane, having
                # come within the contact margin: v dt <= h/2 + r + margin
                predicted_v_dt_over_h=(thickness / 2 + radius + margin) / thickness,
                max_safe_speed_m_s=envelope * thickness / dt,
                fraction_of_phases_held=[float(x) for x in held.mean(axis=1)],
                error_names=_flag_names(err))


# ---- driver -------------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10_000, help="soak steps")
    parser.add_argument("--chunk", type=int, default=1000, help="steps per compiled rollout call")
    parser.add_argument("--stacks", type=int, nargs="*", default=[4, 10], help="boxes in each soaked stack")
    parser.add_argument("--dt", type=float, default=2e-3)
    parser.add_argument("--phases", type=int, default=32)
    parser.add_argument("--parts", nargs="*", default=["soak", "spawn", "tunnel"])
    parser.add_argument("--all-cores", action="store_true")
    args = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True,
                            text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "jaxsim_contact"], cwd=HERE.parent,
                                capture_output=True, text=True).stdout.strip())
    meta = dict(command="python benchmarks/long_runs.py " + " ".join(argv),
                date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), commit=commit,
                library_dirty=dirty, machine=platform.machine(), jax=jax.__version__,
                cores_used=sorted(os.sched_getaffinity(0)), loadavg_start=loadavg(),
                phases=args.phases, default_solver=_solver_text(jc.scenes.load("tower", count=1).options.solver))
    out_dir = RESULTS
    results = dict(meta=meta, soak=[], spawn=[], tunnel=[])

    def save():
        meta["loadavg_end"] = loadavg()
        write_results("long_runs", results, markdown(results), out_dir)

    if "soak" in args.parts:
        scenes = [("box on floor", jc.scenes.load("tower", count=1, gap=1e-3, dt=args.dt))] + [
            (f"stack of {n}", jc.scenes.load("tower", count=n, gap=1e-3, dt=args.dt)) for n in args.stacks]
        for name, model in scenes:
            row = soak(name, model, args.steps, args.chunk)
            print(json.dumps(row), flush=True)
            results["soak"].append(row)
            save()
    if "spawn" in args.parts:
        for name, (model, q0) in spawn_cases(args.dt).items():
            for beta in [float(model.options.baumgarte), 0.1, 0.05, 0.03, 0.02, 0.01]:
                row = separation(name, model, q0, beta)
                print(json.dumps(row), flush=True)
                results["spawn"].append(row)
            save()
    if "tunnel" in args.parts:
        ratios = np.geomspace(0.2, 20.0, 41)
        phases = np.arange(args.phases) / args.phases
        for body, radius in [("sphere", 0.005), ("sphere", 0.001), ("box", 0.005)]:
            for thickness in [0.002, 0.005, 0.02]:
                for dt in [1e-3, 4e-3]:
                    row = tunnelling(body, thickness, radius, dt, ratios, phases)
                    row = {k: v for k, v in row.items() if k != "fraction_of_phases_held"} | dict(
                        ratios_held_fraction={f"{r:.3g}": f for r, f in zip(ratios, row["fraction_of_phases_held"])
                                              if f < 1.0})
                    print(json.dumps(row), flush=True)
                    results["tunnel"].append(row)
            save()
    save()
    print((out_dir / "long_runs.md").read_text())


def _solver_text(solver):
    fields = [f"{k}={getattr(solver, k)}" for k in ("formulation", "max_iterations", "factorization")
              if hasattr(solver, k)]
    if hasattr(solver, "tolerance"):
        fields.append(f"tolerance={float(solver.tolerance):g}")
    return f"{type(solver).__name__}({', '.join(fields)})"


def _g(x, fmt=".3g"):
    return "—" if x is None else format(x, fmt)


def markdown(results) -> str:
    m = results["meta"]
    lines = ["# Long runs: soak, interpenetrated spawns, tunnelling envelope (issue 8)", "",
             f"`{m['command']}` — {m['date']}, commit {m['commit']}"
             f"{' (library modified)' if m['library_dirty'] else ''}, {m['machine']}, jax {m['jax']}, "
             f"pinned to core {m['cores_used']}, float64, load average {m['loadavg_start']} at start, "
             f"{m.get('loadavg_end')} at end. Default solver: `{m['default_solver']}`.", ""]
    if results["soak"]:
        lines += ["## 1. Soak (default options)", "",
                  "| scene | steps × dt | max ΔE per step (J) | max ΔE after 0.5 s (J) | max drift from t=0.5 s (m) "
                  "| max penetration after 0.5 s (m) | final max speed (m/s) | error flags | unconverged steps "
                  "| mean / max iterations | max residual | wall (s) |", "|" + "---|" * 12]
        for r in results["soak"]:
            lines.append(
                f"| {r['scene']} | {r['steps']} × {r['dt']:g} | {r['max_energy_increase_J']:.2e} (step "
                f"{r['step_of_max_increase']}) | {r['max_energy_increase_after_settle_J']:.2e} | "
                f"{r['max_drift_m']:.2e} | {r['max_penetration_after_settle_m']:.2e} | {r['final_max_speed']:.1e} | "
                f"{', '.join(r['error_names'])} | {r['unconverged_steps']} | {r['mean_iterations']:.1f} / "
                f"{r['max_iterations']} | {r['max_residual']:.1e} | {r['wall_seconds']:.0f} |")
        lines.append("")
    if results["spawn"]:
        lines += ["## 2. Interpenetrated spawns (0.05 m = 50 % overlap, 1 s run)", "",
                  f"Separated: contact penetration ≤ {SEPARATED * 1e3:g} mm. Criterion: separated within 0.5 s, "
                  "no linear body speed above 1 m/s.", "",
                  "| case | β (baumgarte) | separation time (s) | stays separated | max speed (m/s) "
                  "| max height gain (m) | final max speed (m/s) | criterion met | flags |", "|" + "---|" * 9]
        for r in results["spawn"]:
            lines.append(
                f"| {r['case']} | {r['baumgarte']:g} | {_g(r['separation_time_s'])} | {r['stays_separated']} | "
                f"{r['max_speed_m_s']:.3g} | {r['max_height_gain_m']:.3g} | {r['final_max_speed_m_s']:.1e} | "
                f"{'yes' if r['meets_criterion'] else 'NO'} | {', '.join(r['error_names'])} |")
        lines.append("")
    if results["tunnel"]:
        lines += [f"## 3. Tunnelling envelope (static slab, no gravity, {m['phases']} impact phases per speed)", "",
                  "| body (r = half-size) | h (m) | dt (s) | largest safe v·dt/h | first failing v·dt/h "
                  "| safe v·dt/(h+2r) | predicted (h/2+r+margin)/h | safe speed (m/s) |", "|" + "---|" * 8]
        for r in results["tunnel"]:
            lines.append(
                f"| {r['body']} r={r['radius_m']:g} | {r['thickness_m']:g} | {r['dt']:g} | "
                f"{r['max_safe_v_dt_over_h']:.4g} | {_g(r['first_failing_v_dt_over_h'], '.4g')} | "
                f"{r['max_safe_v_dt_over_h_plus_2r']:.3g} | {r['predicted_v_dt_over_h']:.4g} | "
                f"{r['max_safe_speed_m_s']:.3g} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
