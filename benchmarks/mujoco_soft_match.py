"""The MuJoCo-compatible constraint model against ``mj_step`` on the corpus (issue 45, "Step for
step" and "Trajectories").

Corpus: ``benchmarks/corpus.py``'s (gymnasium, brax, MuJoCo's and MJX's test models, dm_control
suite, example-robot-data robots on a floor; select with ``--match``). Per model, in a fresh child
process with a timeout:

* **load** with ``constraint_model="mujoco"`` (MJCF: ``jc.load``; URDF: ``prepare_spec`` + floor +
  ``compile_spec`` + ``from_mjmodel`` + ``mujoco_compatible``), MuJoCo's own contact set (no
  excluded self-overlaps). A model the mode refuses is listed with the reason; a model on which
  MuJoCo C has no constraint row in the whole run below is listed as such and not compared (its
  steps are contact-free dynamics, compared in ``tests/dynamics``).
* **one step** from ``--states`` states (settled for 0, 50, 100, ... MuJoCo steps from the start,
  then N(0, 0.5²) velocities added): worst ``|Δqpos|``, ``|Δqvel|`` after one step; worst
  ``|Δ qfrc_constraint|`` (``Jᵀ efc_force`` of ``mj_forward`` at the state against our stage's
  ``Jᵀ f``) relative to the largest entry; contacts matched by geom pair and world point (1e-9
  m) — the worst
  difference of the contact's world force (``mj_contactForce`` rotated by ``contact.frame``;
  ours: the contact's slots, pyramid edges summed) relative to the largest, and per geom-type pair
  MuJoCo's contacts, ours and the matched ones (a collider that produces other points shows here);
  joint-limit and dof / tendon frictionloss rows matched by joint, dof or tendon: worst ``|Δ
  efc_force|`` relative to the largest, and rows only one side has with a nonzero force.
* **trajectory**: ``--steps`` steps from the start configuration (``qpos0``, limited joints
  clipped into range; a floating robot 1 cm above the floor: ``corpus.start_configuration``),
  zero controls: max ``|Δqpos|`` over the run and the first step where it exceeds 1e-6.

MuJoCo C runs its Newton solver at tolerance 1e-15 / 1000 iterations, whatever solver the file
names (its default tolerance 1e-8 stops elliptic solves ~1e-6 short of the exact answer, and PGS
— gymnasium's humanoid — stays 1e-9 to 0.8 m/s away from it after 1000 iterations); ours with the
file's iterations raised to at least 100 (MJX-tuned files cap Newton at 1 iteration, below
convergence) and ``mujoco_compatible``'s tolerance. Every model's row is kept in ``results/mujoco_soft_match.json`` (written after each
model): a rerun continues from it, ``--redo`` reruns the selected models, ``--report-only``
rewrites the Markdown.

    python benchmarks/mujoco_soft_match.py [--match gymnasium/ dm_control/] [--states 4] [--steps 500]

``--cone elliptic`` (or ``pyramidal``) runs the selected models with that friction cone in both
engines instead of the file's (``mj.opt.cone`` set on the compiled model, ours loaded from it),
under the key ``"<model> [cone=elliptic]"``: MJX's own tests run its models under both cones, and
files with ``condim`` 4 / 6 contacts exercise the elliptic cone's torsional and rolling rows that
way. With a cone the elliptic contacts' torques are compared too (``mj_contactForce``'s last
three components against our spin slots'; the pyramid's edges report no torque).

Writes ``benchmarks/results/mujoco_soft_match.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402

import jaxsim_contact as jc  # noqa: E402
from jaxsim_contact.constraints import slot_ranges  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus as corpus_tools  # noqa: E402

HERE = Path(__file__).resolve().parent
#: every model's row, by corpus key (the cache a rerun continues from, and the report's data)
RESULTS_JSON = HERE / "results" / "mujoco_soft_match.json"
DIVERGENCE = 1e-6
MATCH_DISTANCE = 1e-9


CONES = {"elliptic": mujoco.mjtCone.mjCONE_ELLIPTIC, "pyramidal": mujoco.mjtCone.mjCONE_PYRAMIDAL}


#: the mark of a row run with an imposed cone (:func:`row_key`)
IMPOSED = " [cone="


def row_key(entry, cone: str | None) -> str:
    """The results key of a model's row: its corpus key, with the cone when one is imposed."""
    return entry.key if cone is None else f"{entry.key}{IMPOSED}{cone}]"


def build_soft(entry, balance_inertia: bool = False, cone: str | None = None):
    """``(MjModel, jc.Model)`` of a corpus entry in the MuJoCo-compatible mode (with the friction
    cone ``cone`` in both engines instead of the file's, when given); an inertia only MuJoCo's
    ``balanceinertia`` accepts is loaded with it, as ``corpus.py`` does."""
    try:
        return _build_soft(entry, balance_inertia, cone)
    except ValueError as err:
        if balance_inertia or "balance" not in str(err).lower() and "not positive definite" not in str(err):
            raise
        return _build_soft(entry, True, cone)


def _build_soft(entry, balance_inertia: bool, cone: str | None):
    from jaxsim_contact.constraints._soft_contacts import pair_condim

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if entry.kind == "urdf" or cone is not None:
            if entry.kind == "urdf":
                spec = jc.io.prepare_spec(entry.path, floating_base=entry.floating_base,
                                          balance_inertia=balance_inertia)
                corpus_tools.add_floor(spec)
                mj = jc.io.compile_spec(spec, entry.path, exclude_self_overlaps=False)
            else:
                mj = jc.io.compile_mjmodel(entry.path, exclude_self_overlaps=False,
                                           balance_inertia=balance_inertia)
            if cone is not None:
                mj.opt.cone = CONES[cone]
            model = jc.io.mujoco_compatible(jc.io.from_mjmodel(mj, source=entry.path), mj)
            pair_condim(model)  # what jc.load refuses in this mode
        else:
            model = jc.load(entry.path, constraint_model="mujoco", balance_inertia=balance_inertia)
            mj = jc.io.compile_mjmodel(entry.path, exclude_self_overlaps=False,
                                       balance_inertia=balance_inertia)
    # the exact solution of MuJoCo's problem: its Newton at tolerance 1e-15 (a file's PGS stops
    # 1e-9 (pyramidal) to 0.8 m/s (elliptic) from it on gymnasium's humanoid in 1000 iterations)
    mj.opt.tolerance, mj.opt.iterations = 1e-15, 1000
    mj.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    # ours to convergence too: MJX-tuned files cap Newton at 1 iteration (barkour, humanoid), and
    # one iteration of ours is not one of MuJoCo's (docs/choosing_a_solver.md, iteration caps)
    cap = max(model.options.solver.max_iterations, 100)
    model = model.replace_options(solver=jc.contact.PrimalNewton(max_iterations=cap, tolerance=1e-10))
    return mj, model


def pair_type(mj, g1: int, g2: int) -> str:
    names = sorted(mujoco.mjtGeom(int(mj.geom_type[g])).name.removeprefix("mjGEOM_").lower()
                   for g in (g1, g2))
    return "-".join(names)


def mujoco_contacts(mj, data, torques: bool = False):
    """MuJoCo's contacts with rows: ``(point (3,), world force (3,) — with the world torque
    appended, (6,), when ``torques`` —, pair type, geoms)``."""
    out = []
    force = np.zeros(6)
    for i in range(data.ncon):
        con = data.contact[i]
        if con.efc_address < 0:
            continue
        mujoco.mj_contactForce(mj, data, i, force)
        frame = np.asarray(con.frame).reshape(3, 3)
        world = frame.T @ force[:3]
        if torques:
            world = np.concatenate([world, frame.T @ force[3:]])
        out.append((np.array(con.pos), world, pair_type(mj, con.geom1, con.geom2),
                    frozenset((int(con.geom1), int(con.geom2)))))
    return out


def our_contacts(mj, model, contact, torques: bool = False):
    """Our active contact slots grouped by geom pair and point (pyramid edges are slots of one
    contact): ``(point, world force, pair type, geoms)``; with ``torques`` the force is ``(6,)``,
    the world torque of the contact's spin slot appended (zero without one)."""
    from jaxsim_contact.collision._narrowphase import KEY_STRIDE
    from jaxsim_contact.collision._pairs import collision_structure

    pairs = collision_structure(model).pair_geoms
    ranges = slot_ranges(model)
    span, spin = ranges["contacts"], ranges["contact_spin"]
    active = np.asarray(contact.active)[span]
    point = np.asarray(contact.point)[span]
    frame, force = np.asarray(contact.frame), np.asarray(contact.force)
    world = np.einsum("nij,ni->nj", frame[span], force[span])
    if torques:
        torque = np.zeros_like(world)
        if spin.stop > spin.start:
            spin_active = np.asarray(contact.active)[spin]
            torque = np.where(spin_active[:, None], np.einsum("nij,ni->nj", frame[spin], force[spin]), 0.0)
        world = np.concatenate([world, torque], axis=1)
    key = np.asarray(contact.key)[span]
    groups = {}
    for k in np.flatnonzero(active):
        g1, g2 = pairs[int(key[k]) // KEY_STRIDE]
        geoms = frozenset((int(g1), int(g2)))
        label = (geoms, tuple(np.round(point[k], 12)))
        if label not in groups:
            groups[label] = [point[k], np.zeros(world.shape[1]), pair_type(mj, int(g1), int(g2)), geoms]
        groups[label][1] = groups[label][1] + world[k]
    return [tuple(g) for g in groups.values()]


def mujoco_row_forces(mj, data) -> dict:
    """``efc_force`` of the joint-limit and frictionloss rows by what they constrain:
    ``("limit", joint)``, ``("friction", dof)``, ``("tendon friction", tendon)``."""
    kinds = {int(mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT): "limit",
             int(mujoco.mjtConstraint.mjCNSTR_FRICTION_DOF): "friction",
             int(mujoco.mjtConstraint.mjCNSTR_FRICTION_TENDON): "tendon friction"}
    out = {}
    for i in range(data.nefc):
        kind = kinds.get(int(data.efc_type[i]))
        if kind is not None:
            out[(kind, int(data.efc_id[i]))] = float(data.efc_force[i])
    return out


def our_row_forces(model, contact) -> dict:
    """Our slot forces of the same rows (:func:`mujoco_row_forces`' keys), active slots only."""
    from jaxsim_contact.constraints import limited_ball_joints, limited_joints

    ranges = slot_ranges(model)
    force, active = np.asarray(contact.force)[:, 2], np.asarray(contact.active)
    labels = {}
    for block, joints in (("limits", limited_joints(model)), ("ball_limits", limited_ball_joints(model))):
        for slot, joint in zip(range(ranges[block].start, ranges[block].stop), joints):
            labels[slot] = ("limit", int(joint))
    friction = [("friction", int(d)) for d in model.frictionloss_dofs]
    friction += [("tendon friction", int(t)) for t in model.tendons.frictionloss_tendons]
    for slot, label in zip(range(ranges["friction"].start, ranges["friction"].stop), friction):
        labels[slot] = label
    return {label: float(force[slot]) for slot, label in labels.items() if active[slot]}


def compare_rows(theirs: dict, ours: dict) -> tuple[float, int, int]:
    """Worst ``|Δ efc_force|`` over the rows both have, the number compared, and the number only
    one side has with a force above 1e-9 (a row the other does not instantiate)."""
    worst, compared, unmatched = 0.0, 0, 0
    for label in set(theirs) | set(ours):
        if label in theirs and label in ours:
            worst = max(worst, abs(theirs[label] - ours[label]))
            compared += 1
        elif abs(theirs.get(label, 0.0)) + abs(ours.get(label, 0.0)) > 1e-9:
            unmatched += 1
    return worst, compared, unmatched


def compare_contacts(theirs, ours, per_type) -> float:
    """Match by geom pair and point; add counts to ``per_type``; worst force difference (N)."""
    worst = 0.0
    used = set()
    for point, force, kind, geoms in theirs:
        per_type[kind]["mujoco"] += 1
        for j, (p, f, _, g) in enumerate(ours):
            if j not in used and g == geoms and np.abs(p - point).max() < MATCH_DISTANCE:
                used.add(j)
                per_type[kind]["matched"] += 1
                worst = max(worst, float(np.abs(f - force).max()))
                break
    for _, _, kind, _ in ours:
        per_type[kind]["ours"] += 1
    return worst


def compare_model(entry, states: int, steps: int, cone: str | None = None) -> dict:
    try:
        mj, model = build_soft(entry, cone=cone)
    except (NotImplementedError, ValueError) as err:
        return dict(status="refused", reason=corpus_tools.first_line(err, entry)[:200])
    data = mujoco.MjData(mj)
    q_start, _ = corpus_tools.start_configuration(mj, entry)
    # an imposed cone also compares elliptic contacts' torques (a pyramid's edges report none)
    torques = cone is not None and mj.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC

    # MuJoCo first: the states and the reference trajectory (and whether any row ever exists)
    rng = np.random.default_rng(0)
    samples = []
    for k in range(states):
        mujoco.mj_resetData(mj, data)
        data.qpos[:] = q_start
        for _ in range(50 * k):
            mujoco.mj_step(mj, data)
        data.qvel[:] += rng.normal(size=mj.nv) * 0.5
        mujoco.mj_forward(mj, data)
        before = (data.qpos.copy(), data.qvel.copy(), data.qfrc_constraint.copy(),
                  (mujoco_contacts(mj, data, torques),
                   mujoco_row_forces(mj, data)), int(data.nefc))
        mujoco.mj_step(mj, data)
        samples.append(before + (data.qpos.copy(), data.qvel.copy()))
    mujoco.mj_resetData(mj, data)
    data.qpos[:] = q_start
    reference, rows_seen = [], sum(s[4] for s in samples)
    for _ in range(steps):
        mujoco.mj_step(mj, data)
        reference.append(data.qpos.copy())
        rows_seen += data.nefc
    if rows_seen == 0:
        return dict(status="no rows", note="MuJoCo C has no constraint row in the run")

    step = jax.jit(jc.step)
    t0 = time.perf_counter()
    state = jc.init(model, q=jnp.asarray(samples[0][0]), v=jnp.asarray(samples[0][1]))
    jax.block_until_ready(step(model, state))
    compile_s = time.perf_counter() - t0
    worst_q = worst_v = worst_qfrc = worst_force = 0.0
    per_type = defaultdict(lambda: dict(mujoco=0, ours=0, matched=0))
    errors = 0
    worst_row, rows_compared, rows_unmatched = 0.0, 0, 0
    for qpos, qvel, qfrc, (theirs, their_rows), nefc, qpos_next, qvel_next in samples:
        ours = step(model, jc.init(model, q=jnp.asarray(qpos), v=jnp.asarray(qvel)))
        errors |= int(ours.error)
        worst_q = max(worst_q, float(np.abs(np.asarray(ours.q) - qpos_next).max()))
        worst_v = max(worst_v, float(np.abs(np.asarray(ours.v) - qvel_next).max()))
        scale = max(1.0, float(np.abs(qfrc).max()))
        worst_qfrc = max(worst_qfrc, float(np.abs(np.asarray(ours.contact.generalized_force) - qfrc).max()) / scale)
        found = our_contacts(mj, model, ours.contact, torques)
        force_scale = max([1.0] + [float(np.abs(f).max()) for _, f, _, _ in theirs])
        worst_force = max(worst_force, compare_contacts(theirs, found, per_type) / force_scale)
        row_scale = max([1.0] + [abs(f) for f in their_rows.values()])
        worst, compared, unmatched = compare_rows(their_rows, our_row_forces(model, ours.contact))
        worst_row = max(worst_row, worst / row_scale)
        rows_compared, rows_unmatched = rows_compared + compared, rows_unmatched + unmatched

    state = jc.init(model, q=jnp.asarray(q_start))
    max_dq, first_divergence = 0.0, None
    for k in range(steps):
        state = step(model, state)
        dq = float(np.abs(np.asarray(state.q) - reference[k]).max())
        max_dq = max(max_dq, dq)
        if first_divergence is None and dq > DIVERGENCE:
            first_divergence = k + 1
        errors |= int(state.error)
    return dict(status="compared", cone=mujoco.mjtCone(int(mj.opt.cone)).name.removeprefix("mjCONE_").lower(),
                integrator=mujoco.mjtIntegrator(int(mj.opt.integrator)).name.removeprefix("mjINT_"),
                states=states, rows=int(sum(s[4] for s in samples)), compile_s=round(compile_s, 1),
                max_dqpos=worst_q, max_dqvel=worst_v, qfrc_rel=worst_qfrc, contact_force_rel=worst_force,
                limit_friction_rows=rows_compared, limit_friction_rel=worst_row,
                limit_friction_unmatched=rows_unmatched,
                pair_types={k: dict(v) for k, v in sorted(per_type.items())}, steps=steps,
                trajectory_max_dq=max_dq, first_divergence=first_divergence, error_bits=errors)


def run_child(entry, args) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", entry.key,
               "--states", str(args.states), "--steps", str(args.steps)]
    if args.cone:
        command += ["--cone", args.cone]
    t0 = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout_s)
    except subprocess.TimeoutExpired:
        return dict(status="timeout", wall_s=round(time.perf_counter() - t0, 1))
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or [""])[-1]
        return dict(status="crashed", message=tail.replace(entry.path, entry.key)[:300])
    row = json.loads(lines[-1][len("RESULT "):])
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    row["commit"] = corpus_tools.git("rev-parse", "--short", "HEAD", cwd=HERE)
    return row


def load_rows() -> dict:
    return json.loads(RESULTS_JSON.read_text()) if RESULTS_JSON.exists() else {}


def save_rows(rows: dict) -> None:
    RESULTS_JSON.write_text(json.dumps(dict(sorted(rows.items())), indent=1) + "\n")


def fmt(x, spec=".1e"):
    return "–" if x is None else format(x, spec)


def report(entries, args) -> str:
    cached = load_rows()
    keys = [row_key(e, cone) for e in entries for cone in (None, *CONES)]
    rows = {key: cached[key] for key in keys if key in cached}
    compared = {k: r for k, r in rows.items() if r["status"] == "compared"}
    lines = ["# `constraint_model=\"mujoco\"` against `mj_step` on the corpus (issue 45)", "",
             f"`python benchmarks/mujoco_soft_match.py --states {args.states} --steps {args.steps}`; "
             f"jax {jax.__version__}, mujoco {mujoco.__version__}; MuJoCo C: its Newton at tolerance 1e-15. "
             "Method: the script's docstring. One step: worst over the states; dq, dv absolute (m, "
             "rad, m/s, rad/s); qfrc and contact force relative to the largest entry; contacts: "
             "matched / MuJoCo's / ours (with an imposed cone `[cone=…]`, elliptic contacts' force and torque). Trajectory: zero controls from the start configuration; "
             "`>1e-6 at` is the first step with max |dqpos| > 1e-6 (– : never). Commits of the "
             "rows: " + ", ".join(sorted({r.get("commit", "?") for r in rows.values()})) + ".", ""]
    status = defaultdict(int)
    for key, r in rows.items():
        if IMPOSED not in key:
            status[r["status"]] += 1
    lines.append("Models: " + ", ".join(f"{n} {s}" for s, n in sorted(status.items())) + ".")

    def same_contacts(r):
        return all(c["matched"] == c["mujoco"] == c["ours"] for c in r["pair_types"].values())

    def agreement(keys):
        agreeing = [k for k in keys if same_contacts(compared[k])]
        within = [k for k in agreeing if compared[k]["max_dqvel"] <= 1e-8 and compared[k]["max_dqpos"] <= 1e-8]
        return agreeing, within

    files = [k for k in compared if IMPOSED not in k]
    agreeing, within = agreement(files)
    lines += ["", f"Of the {len(files)} compared models, {len(agreeing)} have the same contact set as "
              f"MuJoCo C on every state (every pair type: matched = MuJoCo's = ours); of those, "
              f"{len(within)} agree with `mj_step` to 1e-8 in qpos and qvel"
              + (f" (not: {', '.join(sorted(set(agreeing) - set(within)))})" if set(agreeing) - set(within) else "")
              + f". The other {len(files) - len(agreeing)} have pair types whose MuJoCo collider makes "
              "other points than ours (the table below): their differences are the contact sets'."]
    imposed = [k for k in compared if IMPOSED in k]
    if imposed:
        agreeing, within = agreement(imposed)
        lines += ["", f"Rows `[cone=…]` run a model with that friction cone imposed in both "
                  f"engines (`--cone`): {len(imposed)} compared, {len(agreeing)} with MuJoCo's contact "
                  f"set, {len(within)} of those within 1e-8 of `mj_step`"
                  + (f" (not: {', '.join(sorted(set(agreeing) - set(within)))})" if set(agreeing) - set(within) else "")
                  + "; their contact column compares each elliptic contact's torque as well."]
    lines += ["", "| model | integrator | cone | rows | dqpos | dqvel | qfrc | contact force | contacts | "
              "limit / frictionloss rows: compared, force, unmatched | trajectory max dq | >1e-6 at | errors |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key, r in compared.items():
        counts = [v for v in r["pair_types"].values()]
        contacts = (f"{sum(c['matched'] for c in counts)}/{sum(c['mujoco'] for c in counts)}/"
                    f"{sum(c['ours'] for c in counts)}")
        lines.append(f"| {key} | {r['integrator']} | {r['cone']} | {r['rows']} | {fmt(r['max_dqpos'])} | "
                     f"{fmt(r['max_dqvel'])} | {fmt(r['qfrc_rel'])} | {fmt(r['contact_force_rel'])} | "
                     f"{contacts} | {r['limit_friction_rows']}, {fmt(r['limit_friction_rel'])}, "
                     f"{r['limit_friction_unmatched']} | {fmt(r['trajectory_max_dq'])} | {r['first_divergence'] or '–'} | "
                     f"{r['error_bits']} |")
    totals = defaultdict(lambda: dict(mujoco=0, ours=0, matched=0, models=0))
    for r in compared.values():
        for kind, c in r["pair_types"].items():
            for field in ("mujoco", "ours", "matched"):
                totals[kind][field] += c[field]
            totals[kind]["models"] += 1
    lines += ["", "## Contact sets per geom-type pair (one-step states, all compared models)", "",
              "A pair type whose counts differ has a collider that produces other points than "
              "MuJoCo's; the step comparison above includes them. MuJoCo 4.0.0's colliders there: "
              "plane–mesh keeps the deepest vertex and up to two of its mesh-graph neighbours "
              "within the margin (`mjc_PlaneConvex`), ours a manifold of the hull's face; mesh–mesh, "
              "box–cylinder and cylinder–mesh its CCD (one point, or `multiccd`'s), ours a clipped "
              "manifold; height fields its prism decomposition. The plane, sphere, capsule, box and "
              "plane–cylinder pairs agree point for point (plane–cylinder since 8fdfb6a: MuJoCo's "
              "`mjc_PlaneCylinder` points).", "",
              "| pair type | models | MuJoCo's contacts | ours | matched by point |", "|---|---|---|---|---|"]
    for kind, c in sorted(totals.items()):
        lines.append(f"| {kind} | {c['models']} | {c['mujoco']} | {c['ours']} | {c['matched']} |")
    others = {k: r for k, r in rows.items() if r["status"] != "compared"}
    if others:
        lines += ["", "## Not compared", "", "| model | status | reason |", "|---|---|---|"]
        for key, r in others.items():
            reason = r.get("reason") or r.get("note") or r.get("message") or ""
            lines.append(f"| {key} | {r['status']} | {reason} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--match", nargs="*", default=None, help="substrings of corpus keys")
    parser.add_argument("--states", type=int, default=4)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--timeout-s", type=float, default=900.0)
    parser.add_argument("--redo", action="store_true")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--cone", choices=sorted(CONES), default=None,
                        help="impose this friction cone in both engines (rows keyed '<model> [cone=...]')")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        entry = next(e for e in corpus_tools.corpus(corpus_tools.SOURCES) if e.key == args.child)
        try:
            row = compare_model(entry, args.states, args.steps, args.cone)
        except Exception as err:  # reported per model, the run goes on
            row = dict(status="error", message=f"{type(err).__name__}: {corpus_tools.first_line(err, entry)}"[:300])
        print("RESULT " + json.dumps(row), flush=True)
        return
    entries = corpus_tools.corpus(corpus_tools.SOURCES, args.match)
    cached = load_rows()
    if not args.report_only:
        for entry in entries:
            key = row_key(entry, args.cone)
            if key in cached and not args.redo:
                continue
            if entry.kind == "mjcf" and corpus_tools.mujoco_compiles(entry) is not None:
                continue  # not a model (an include fragment, a template): corpus.py lists them
            row = run_child(entry, args)
            cached = load_rows()  # another run may have added rows meanwhile
            cached[key] = row
            save_rows(cached)
            print(key, {k: v for k, v in row.items() if k != "pair_types"}, flush=True)
    all_entries = corpus_tools.corpus(corpus_tools.SOURCES)
    (HERE / "results" / "mujoco_soft_match.md").write_text(report(all_entries, args))


if __name__ == "__main__":
    main()
