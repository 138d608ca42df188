"""Third-party model corpus (issues 43 and 48): does ``jc.load`` load models nobody in the project
wrote, and how does the default hard-contact step behave on them next to MuJoCo C?

Corpus (every file is found through the installed packages, never through a fixed path):

* ``gymnasium``  — ``gymnasium/envs/mujoco/assets/*.xml``;
* ``brax``       — ``brax/envs/assets/*.xml`` and ``brax/test_data/*.xml``;
* ``mujoco``     — the files shipped in the ``mujoco`` / ``mujoco-mjx`` wheels:
  ``mujoco/mjx/test_data/**/*.xml`` and ``mujoco/testdata/**/*.xml``;
* ``dm_control`` — ``dm_control/suite/*.xml`` when dm_control's files are present. The package is
  not a dependency of this project; ``pip install --no-deps dm_control`` only puts its files in
  place (nothing of it is imported);
* ``robots``     — every ``*.urdf`` under example-robot-data's ``robots`` folder
  (``jaxsim_contact.io._urdf.default_package_dirs()``), with a floor plane added
  (``friction="1 0.005 0.0001"``, as ``_scenes.robot``; for a fixed-base robot whose moving
  geometry reaches below it at ``qpos0`` — the Allegro hand's fingers around its palm at the
  origin, Talos' left arm hanging from the torso — lowered to :data:`START_CLEARANCE` below the
  lowest moving geom, :func:`lower_floor_below_fixed_base`) and the self-overlap exclusions
  ``jc.load`` makes; equality constraints are kept
  (``ignore_equality=False``): mimic joints are simulated as joint equalities. Floating base rule: every
  robot gets a free joint (legged, humanoid, wheeled, flying) except the arms, hands and fixed
  pendula named in :data:`FIXED_BASE` (a folder or file name matched against the path).

An MJCF file that MuJoCo C itself does not compile (an include fragment, a template filled in by
Python code, an invalid test file) is "not a model": listed apart, not counted as our failure. A
URDF that fails counts as failed either way, split by whether MuJoCo C compiles the same spec
(package URIs resolved, floating base, floor) without our validation; a mesh MuJoCo cannot read
(COLLADA) that our converter could not convert either leaves that check at "mesh conversion
failed". A source whose package is missing has no files.

Phase ``load`` (fast, in this process): per file ``jc.io.compile_mjmodel`` + ``jc.io.from_mjmodel``
(what ``jc.load`` does; for a URDF ``prepare_spec`` + floor + ``compile_spec`` + ``from_mjmodel``):
``loaded``, or the exception's class and the first line of its message, grouped by feature
(tendons, equality constraints, actuator dynamics, height fields, fluid forces, ...); warnings are
kept.

Phase ``simulate`` (slow; loaded models only; one fresh child process per model with a timeout,
so a hang or crash stops nothing): float64 (``--float32``: float32, x64 off), batch 1, default
``jc.Options`` (whatever
``from_mjmodel`` gives: the model's time step and gravity, NCP ADMM), zero controls, ``--steps``
steps as one ``jax.jit`` of a ``jax.lax.scan`` over ``jc.step``, next to ``mujoco.mj_step`` on
the same compiled ``MjModel`` from the same start. Start: the model's ``qpos0`` with limited
hinge/slide joints clipped into their ranges (a start past a limit is a violent correction in
every engine; the clipped count is reported); a floating URDF robot then has its free joint's z
raised or lowered so that the lowest geom that can touch the floor is :data:`START_CLEARANCE`
(1 cm) above it (``mujoco.mj_geomDistance``). Per model: compile time (``lower`` + ``compile``),
our steps/s (median of 3 blocked calls after the first; the first alone when it took more than
``SLOW_CALL_S`` = 10 s, marked ``*``), MuJoCo C steps/s (``mj_step`` with
``nstep``, median of 3 after one), steps at the solver's cap
(``model.options.solver.max_iterations``), the fraction of steps the solver reports converged
(tolerance or round-off floor; steps without contact count), mean / max iterations, max
penetration, non-finite values, the sticky ``state.error`` bits at the end, and for models with a
root the root's final height, ours against MuJoCo's (and the largest difference along the
rollout): the z of the first free joint, or the ``qpos`` of a planar walker's z slide attached to
the world (``rootz``: height relative to the body's position), and whether each engine is at rest
(the largest ``|qvel|`` entry over the last :data:`REST_WINDOW` of the steps at most
:data:`REST_SPEED`): issue 43 compares settled heights where both come to rest, and a robot that
is still falling or swinging at the last step (MuJoCo's Solo-12 stands on its folded legs until
~0.6 s, then collapses) says nothing about where it settles — ``--steps 2000`` gives such models
time; also MuJoCo's contacts at the start (overlaps in the model as given). ``--mujoco-mode``
also runs each model in our MuJoCo-compatible mode (``constraint_model="mujoco"``, MuJoCo's solver
settings) and reports where it settles: a model whose hard step rests elsewhere than MuJoCo C while
this mode rests where MuJoCo C does differs by the contact model (soft contacts sink and creep;
hard ones do not), not by a defect of the step. Timings are reported, never asserted.

A file that fails only for an inertia MuJoCo's ``balanceinertia`` repairs (``InvalidInertiaError``
naming ``balance_inertia=True``) is loaded again with ``balance_inertia=True``; when that loads,
it is simulated so (and counted apart from ``loaded``).

Results are cached per model in ``results/NAME.json``; a rerun skips what is there (``--redo``
simulates the selected models again, ``--fresh`` drops the whole cache, ``--phase report``
rewrites the Markdown from the JSON; ``--phase load --redo`` loads the selected files again and keeps
their simulate rows). Commands (run pinned, ``taskset -c K``)::

    pip install --no-deps dm_control        # once, for the dm_control suite files
    python benchmarks/corpus.py --phase load                    # < 1 min on one core
    python benchmarks/corpus.py --phase simulate --timeout-s 240    # every loaded model: hours
    python benchmarks/corpus.py --phase simulate --sources robots --match go2.urdf a1.urdf

A simulated model takes 10 s to 4 min (compile dominates; mesh robots are the slowest).
``PYTHONPATH=DIR`` runs another checkout's library (e.g. a ``git worktree`` of HEAD while the
working tree is being edited); the header records which library ran and its commit.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shlex
import statistics
import subprocess
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from _common import RESULTS, enable_float64, loadavg, median_time, pin_to_one_core, write_results

pin_to_one_core()
#: ``--float32``: every process of the run (children inherit the flag) simulates with
#: ``jax_enable_x64`` off, the dtype most users get (issue 42's "10⁴ float32 steps of every loadable
#: corpus robot")
FLOAT32 = "--float32" in sys.argv
#: also run our MuJoCo-compatible mode (``constraint_model="mujoco"``, MuJoCo's solver settings):
#: where it settles where MuJoCo C does and the hard model elsewhere, the difference is the
#: contact model's (soft penetration, creep), not a defect of the step
MUJOCO_MODE = "--mujoco-mode" in sys.argv
enable_float64(not FLOAT32)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402

import jaxsim_contact as jc  # noqa: E402

HERE = Path(__file__).resolve().parent
SOURCES = ("gymnasium", "brax", "mujoco", "dm_control", "robots")

#: URDF robots simulated with a fixed base (arms, hands, fixed pendula): a folder or file name
#: under ``robots/``; every other robot gets a free joint
FIXED_BASE = ("allegro_hand_description", "asr_twodof_description", "baxter_description",
              "double_pendulum_description", "finger_edu_description", "kinova_description",
              "panda_description", "so_arm_description", "ur_description", "xarm_description",
              "z1_description", "talos_left_arm.urdf")

#: height (m) of the lowest floor-colliding geom of a floating URDF robot above the floor at start
START_CLEARANCE = 0.01
#: floor geom added to every URDF robot
FLOOR = dict(name="corpus_floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[10, 10, 0.1],
             friction=[1.0, 0.005, 0.0001])
#: root-height difference (m) above which a model is listed as disagreeing with MuJoCo
HEIGHT_TOLERANCE = 0.02
#: "at rest": the largest |qvel| entry (m/s or rad/s) over the last REST_WINDOW of the steps stays
#: at or below REST_SPEED; root heights are compared where both engines are at rest (issue 43)
REST_SPEED, REST_WINDOW = 0.05, 0.1
TIMED_REPEATS = 3
#: a first timed call longer than this (s) is the timing (no repeats): keeps slow models in budget
SLOW_CALL_S = 10.0


# --------------------------------------------------------------------------- corpus


@dataclass(frozen=True)
class Entry:
    """One corpus file."""

    key: str            #: ``source/relative/path``
    source: str
    path: str
    kind: str           #: ``mjcf`` or ``urdf``
    floating_base: bool


def package_dir(name: str) -> Path | None:
    """The folder of installed package ``name`` (``None`` when it is not installed)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def robots_dir() -> Path | None:
    """example-robot-data's ``robots`` folder."""
    from jaxsim_contact.io._urdf import default_package_dirs

    found = [d.resolve() for d in default_package_dirs() if d.name == "robots" and d.is_dir()]
    return found[0] if found else None


def is_floating(relative: Path) -> bool:
    """The floating-base rule of the robots (module docstring)."""
    return not any(part in FIXED_BASE for part in relative.parts)


def source_files(source: str) -> list[Entry]:
    """The files of one source, sorted (empty when its package is missing)."""
    def mjcf(root: Path | None, patterns: list[str]) -> list[Entry]:
        if root is None:
            return []
        files = sorted({f for pattern in patterns for f in root.glob(pattern) if f.is_file()})
        return [Entry(f"{source}/{f.relative_to(root)}", source, str(f), "mjcf", False) for f in files]

    if source == "gymnasium":
        return mjcf(package_dir("gymnasium"), ["envs/mujoco/assets/*.xml"])
    if source == "brax":
        return mjcf(package_dir("brax"), ["envs/assets/*.xml", "test_data/*.xml"])
    if source == "mujoco":
        mjx = package_dir("mujoco.mjx")
        root = mjx.parent if mjx is not None else package_dir("mujoco")
        return mjcf(root, ["mjx/test_data/**/*.xml", "testdata/**/*.xml"])
    if source == "dm_control":
        return mjcf(package_dir("dm_control"), ["suite/*.xml"])
    if source == "robots":
        root = robots_dir()
        if root is None:
            return []
        return [Entry(f"robots/{f.relative_to(root)}", "robots", str(f), "urdf",
                      is_floating(f.relative_to(root))) for f in sorted(root.rglob("*.urdf"))]
    raise ValueError(f"unknown source {source!r}")


def corpus(sources, match: list[str] | None = None) -> list[Entry]:
    """The entries of ``sources`` whose key contains one of the ``match`` substrings (all when
    ``None``)."""
    entries = [e for s in sources for e in source_files(s)]
    return [e for e in entries if not match or any(m in e.key for m in match)]


# --------------------------------------------------------------------------- building models


def add_floor(spec) -> None:
    spec.worldbody.add_geom(**FLOOR)


def urdf_spec_unchecked(entry: Entry):
    """The robot's spec as ours builds it (package URIs, meshes, floating base, floor), without our
    validation: what "MuJoCo C compiles it" means for a URDF."""
    from jaxsim_contact.io._urdf import add_floating_base, inline_unreadable_meshes, resolve_mesh_files

    path = Path(entry.path)
    spec = mujoco.MjSpec.from_file(entry.path)
    if entry.floating_base:
        add_floating_base(spec)
    resolve_mesh_files(spec, path, ())
    inline_unreadable_meshes(spec, path)
    add_floor(spec)
    return spec


def mujoco_compiles(entry: Entry) -> str | None:
    """``None`` when MuJoCo C compiles the file, else its error (class and first line)."""
    try:
        if entry.kind == "urdf":
            urdf_spec_unchecked(entry).compile()
        else:
            mujoco.MjModel.from_xml_path(entry.path)
    except ValueError as err:  # the MuJoCo compiler's errors
        return f"{type(err).__name__}: {first_line(err, entry)}"
    except Exception as err:  # the mesh conversion of a URDF (MuJoCo C reads no COLLADA)
        return f"not compiled, mesh conversion failed: {type(err).__name__}: {first_line(err, entry)}"
    return None


def lower_floor_below_fixed_base(spec, mj, entry: Entry):
    """For a fixed-base robot whose moving geometry crosses the floor at ``qpos0``, move the floor
    to :data:`START_CLEARANCE` below the lowest moving geom and compile again; returns the
    compiled model (``mj`` itself when nothing crosses). A floor through a welded hand is an
    infeasible start no robot is mounted in."""
    from jaxsim_contact.cli import lowest_floor_distance

    if entry.floating_base:
        return mj
    floor = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_GEOM, FLOOR["name"])
    lowest = lowest_floor_distance(mj, floor, moving_bodies=True)
    if lowest is None or lowest >= 0:
        return mj
    geom = spec.geom(FLOOR["name"])
    geom.pos = [0.0, 0.0, lowest - START_CLEARANCE]
    return jc.io.compile_spec(spec, entry.path)


def build(entry: Entry, balance_inertia: bool = False):
    """``(MjModel, jc.Model)`` of the entry through ``jc.io`` (raises what ``jc.load`` raises)."""
    if entry.kind == "urdf":
        spec = jc.io.prepare_spec(entry.path, floating_base=entry.floating_base,
                                  balance_inertia=balance_inertia)
        add_floor(spec)
        mj = lower_floor_below_fixed_base(spec, jc.io.compile_spec(spec, entry.path), entry)
    else:
        mj = jc.io.compile_mjmodel(entry.path, balance_inertia=balance_inertia)
    return mj, jc.io.from_mjmodel(mj, source=entry.path)


def first_line(err, entry: Entry) -> str:
    """First line of an error or warning text without the leading file name; the file's path
    elsewhere is shortened to its key, other installed paths to ``<site-packages>/...``."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    text = text.replace(f"{entry.path}: ", "").replace(entry.path, entry.key)
    for folder in site_folders():
        text = text.replace(folder + "/", "<site-packages>/")
    return text


def site_folders() -> list[str]:
    """The installation folders of the corpus' packages (longest first)."""
    import site

    folders = {str(Path(p).resolve()) for p in site.getsitepackages() + [site.getusersitepackages()]}
    folders |= {str(d.parent) for d in map(package_dir, ("mujoco", "gymnasium", "brax")) if d is not None}
    return sorted(folders, key=len, reverse=True)


#: the feature of a failure for the classes that name one
FEATURE_OF_CLASS = dict(InvalidInertiaError="inertia", InvalidMassError="mass", InvalidFrictionError="friction",
                        InvalidGeometryError="geom size", DegenerateMeshError="mesh", MissingAssetError="asset file",
                        ModelParseError="syntax")

#: (feature, pattern in the message) for the other classes (``UnsupportedFeatureError``,
#: ``ModelError``), first match wins
FEATURES = (
    ("actuator transmission", "transmission|can be actuated"),
    ("tendons", "tendon"),
    ("equality constraints (incl. URDF mimic)", r"\bequality"),
    ("deformable (flex)", "flex"),
    ("composite objects", "composite"),
    ("plugins", "plugin"),
    ("height fields", "height field|hfield"),
    ("fluid forces", "fluid"),
    ("gravity compensation", "gravcomp"),
    ("actuator dynamics", "dyntype|actuator dynamics"),
    ("actuator type", "actuator <"),
    ("actuator gain / bias", "fixed gains|bias is supported"),
    ("stiffness on free/ball joint", "free/ball"),
    ("joint type", "joint .*has type|URDF joint"),
    ("geom type", "has type mjGEOM"),
    ("inertia", "inertia"),
    ("mass", "mass"),
    ("mesh file format", "mesh"),
)


def feature_of(error: str, message: str) -> str:
    if error in FEATURE_OF_CLASS:
        return FEATURE_OF_CLASS[error]
    for feature, pattern in FEATURES:
        if re.search(pattern, message, flags=re.IGNORECASE):
            return feature
    return "other"


# --------------------------------------------------------------------------- phase 1: load


def try_build(entry: Entry, balance_inertia: bool = False) -> dict:
    """``{"status": "loaded", sizes...}`` or ``{"status": "failed", error, message, feature}``."""
    try:
        mj, _ = build(entry, balance_inertia)
    except Exception as err:
        message = first_line(err, entry)
        return dict(status="failed", error=type(err).__name__, message=message,
                    feature=feature_of(type(err).__name__, message))
    return dict(status="loaded", nq=mj.nq, nv=mj.nv, nu=mj.nu, nbody=mj.nbody, ngeom=mj.ngeom)


def load_row(entry: Entry) -> dict:
    """Phase 1 for one file. An MJCF file MuJoCo C does not compile is ``not_a_model``; an
    inertia that only MuJoCo's ``balanceinertia`` repair accepts is tried again with
    ``balance_inertia=True`` (``row["balanced"]``)."""
    row = dict(asdict(entry))
    row.pop("path")
    row["mujoco_error"] = mujoco_compiles(entry)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        row.update(try_build(entry))
        row["load_s"] = round(time.perf_counter() - t0, 3)
        if row["status"] == "failed" and "balance_inertia=True" in row["message"]:
            row["balanced"] = try_build(entry, balance_inertia=True)
    row["warnings"] = sorted({first_line(w.message, entry) for w in caught})
    if row["status"] == "failed" and row["mujoco_error"] is not None and entry.kind == "mjcf":
        row["status"] = "not_a_model"
    return row


def simulated_variant(row: dict) -> bool | None:
    """``balance_inertia`` to simulate a load row with, ``None`` when it does not load."""
    if row["status"] == "loaded":
        return False
    if row.get("balanced", {}).get("status") == "loaded":
        return True
    return None


# --------------------------------------------------------------------------- phase 2: simulate


def clip_into_limits(mj, q: np.ndarray) -> int:
    """Clip limited hinge/slide joints of ``q`` (in place) into their ranges; how many moved."""
    moved = 0
    for j in range(mj.njnt):
        if mj.jnt_limited[j] and int(mj.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE),
                                                          int(mujoco.mjtJoint.mjJNT_SLIDE)):
            a = mj.jnt_qposadr[j]
            low, high = mj.jnt_range[j]
            clipped = min(max(q[a], low), high)
            moved += int(clipped != q[a])
            q[a] = clipped
    return moved


def free_joints(mj) -> list[int]:
    return [j for j in range(mj.njnt) if int(mj.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE)]


def floor_clearance(mj, q: np.ndarray) -> float:
    """Smallest signed distance from the added floor to a floating geom that can collide with it
    (the CLI's ``--floor`` measure, at ``q``)."""
    from jaxsim_contact.cli import lowest_floor_distance

    floor = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_GEOM, FLOOR["name"])
    lowest = lowest_floor_distance(mj, floor, qpos=q)
    return float("nan") if lowest is None else lowest


def start_configuration(mj, entry: Entry) -> tuple[np.ndarray, dict]:
    """The start rule of the module docstring: ``(q0, notes)``."""
    q = np.array(mj.qpos0, dtype=np.float64)
    notes = dict(clipped_joints=clip_into_limits(mj, q))
    if entry.kind == "urdf" and entry.floating_base and free_joints(mj):
        shift = START_CLEARANCE - floor_clearance(mj, q)
        if np.isfinite(shift):
            for j in free_joints(mj):
                q[mj.jnt_qposadr[j] + 2] += shift
            notes["raised_m"] = round(float(shift), 4)
    return q, notes


def root_height_index(mj) -> int | None:
    """``qpos`` index of the root height: the first free joint's z; without a free joint, the first
    slide joint along world z of a body attached to the world (a planar walker's ``rootz``: its
    ``qpos`` is the height change from the body's position); ``None`` without either."""
    joints = free_joints(mj)
    if joints:
        return int(mj.jnt_qposadr[joints[0]] + 2)
    for j in range(mj.njnt):
        body = mj.jnt_bodyid[j]
        if (int(mj.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_SLIDE) and mj.body_parentid[body] == 0
                and np.allclose(mj.jnt_axis[j], [0, 0, 1]) and np.allclose(mj.body_quat[body], [1, 0, 0, 0])):
            return int(mj.jnt_qposadr[j])
    return None


def error_names(bits: int) -> list[str]:
    names = ("NON_FINITE_STATE", "SOLVER_NOT_CONVERGED", "CONTACT_BUDGET_OVERFLOW", "INVALID_CONTROL",
             "EQUALITY_NOT_SATISFIED")
    return [n for n in names if bits & getattr(jc.ErrorFlag, n, 0)]


def run_ours(model, q0: np.ndarray, steps: int, root: int | None) -> dict:
    """Our rollout: compile time, steps/s, per-step solver statistics, final state."""
    state = jc.init(model, q=jnp.asarray(q0))
    ctrl = jnp.zeros((model.nu,))

    def run(s):
        def body(s, _):
            s = jc.step(model, s, ctrl)
            c = s.contact
            height = s.q[root] if root is not None else jnp.zeros(())
            return s, (c.iterations, c.converged, c.residual, c.penetration, c.num_active, height,
                       jnp.max(jnp.abs(s.v), initial=0.0))

        return jax.lax.scan(body, s, None, length=steps)

    t0 = time.perf_counter()
    compiled = jax.jit(run).lower(state).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    final, (iterations, converged, residual, penetration, active, heights, speeds) = jax.block_until_ready(
        compiled(state))
    first_s = time.perf_counter() - t0
    # a slow model is timed by its first call alone (the run is compiled already: no compile in it)
    timed_calls = 1 if first_s > SLOW_CALL_S else TIMED_REPEATS
    run_s = first_s if timed_calls == 1 else median_time(lambda: compiled(state), TIMED_REPEATS)
    iterations = np.asarray(iterations)
    cap = int(model.options.solver.max_iterations)
    values = [np.asarray(x) for x in (final.q, final.v, residual, penetration)]
    return dict(
        dtype=str(final.q.dtype),
        compile_s=round(compile_s, 2), first_call_s=round(first_s, 3), steps_per_s=steps / run_s,
        timed_calls=timed_calls,
        cap=cap, capped_steps=int((iterations >= cap).sum()),
        converged_fraction=float(np.mean(np.asarray(converged))),
        contact_steps=int((np.asarray(active) > 0).sum()), max_active=int(np.max(active)),
        mean_iterations=float(iterations.mean()), max_iterations=int(iterations.max()),
        max_residual=float(np.nanmax(np.asarray(residual))),
        max_penetration=float(np.nanmax(np.asarray(penetration))),
        finite=bool(all(np.all(np.isfinite(v)) for v in values)),
        error_bits=int(final.error), errors=error_names(int(final.error)),
        heights=np.asarray(heights, dtype=float), **rest_speed(np.asarray(speeds, dtype=float)),
    )


def rest_speed(speeds: np.ndarray) -> dict:
    """``final_speed``: the largest |qvel| entry over the last :data:`REST_WINDOW` of the steps
    (``speeds``: per step), and ``at_rest``: it is at most :data:`REST_SPEED`."""
    window = speeds[-max(1, int(np.ceil(REST_WINDOW * len(speeds)))):]
    final = float(np.max(window)) if len(window) else 0.0
    return dict(final_speed=final, at_rest=bool(final <= REST_SPEED))


def run_mujoco(mj, q0: np.ndarray, steps: int, root: int | None) -> dict:
    """MuJoCo C from the same start, zero controls: root heights per step, steps/s."""
    d = mujoco.MjData(mj)

    def reset():
        mujoco.mj_resetData(mj, d)
        d.qpos[:] = q0
        mujoco.mj_forward(mj, d)

    reset()
    distances = [float(d.contact.dist[i]) for i in range(d.ncon)]
    start = dict(start_contacts=int(d.ncon), start_min_distance=min(distances) if distances else None)
    heights, speeds = np.zeros(steps), np.zeros(steps)
    for i in range(steps):
        mujoco.mj_step(mj, d)
        heights[i] = d.qpos[root] if root is not None else 0.0
        speeds[i] = np.max(np.abs(d.qvel), initial=0.0)
    finite = bool(np.all(np.isfinite(d.qpos)) and np.all(np.isfinite(d.qvel)))
    times = []
    for _ in range(TIMED_REPEATS + 1):
        reset()
        t0 = time.perf_counter()
        mujoco.mj_step(mj, d, nstep=steps)
        times.append(time.perf_counter() - t0)
    return dict(steps_per_s=steps / statistics.median(times[1:]), finite=finite, heights=heights, **start,
                **rest_speed(speeds),
                integrator=mujoco.mjtIntegrator(mj.opt.integrator).name[6:].lower(),
                cone=mujoco.mjtCone(mj.opt.cone).name[7:].lower())


def simulate_row(entry: Entry, steps: int, balance_inertia: bool = False) -> dict:
    """Phase 2 for one model (run in a child process)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mj, model = build(entry, balance_inertia)
    q0, notes = start_configuration(mj, entry)
    root = root_height_index(mj)
    ours = run_ours(model, q0, steps, root)
    theirs = run_mujoco(mj, q0, steps, root)
    row = dict(status="ok", steps=steps, balance_inertia=balance_inertia, dt=float(mj.opt.timestep),
               nq=mj.nq, nv=mj.nv, ngeom=mj.ngeom, start=notes, mujoco_steps_per_s=theirs["steps_per_s"], mujoco_finite=theirs["finite"],
               mujoco_integrator=theirs["integrator"], mujoco_cone=theirs["cone"],
               start_contacts=theirs["start_contacts"], start_min_distance=theirs["start_min_distance"],
               mujoco_final_speed=theirs["final_speed"], mujoco_at_rest=theirs["at_rest"])
    ours_heights = ours.pop("heights")
    row.update(ours)
    if MUJOCO_MODE:
        from jaxsim_contact.io._loader import mujoco_compatible

        soft = run_ours(mujoco_compatible(model, mj), q0, steps, root)
        row.update(mujoco_mode=dict(capped_steps=soft["capped_steps"], finite=soft["finite"],
                                    final_speed=soft["final_speed"], at_rest=soft["at_rest"]))
        if root is not None:
            row["mujoco_mode"].update(root=float(soft["heights"][-1]),
                                      difference=float(soft["heights"][-1] - theirs["heights"][-1]))
    if root is not None:
        row.update(root_start=float(q0[root]), root_ours=float(ours_heights[-1]),
                   root_mujoco=float(theirs["heights"][-1]),
                   root_difference=float(ours_heights[-1] - theirs["heights"][-1]),
                   root_max_difference=float(np.max(np.abs(ours_heights - theirs["heights"]))))
    return row


def simulate_in_child(entry: Entry, steps: int, timeout_s: float, balance_inertia: bool) -> dict:
    """:func:`simulate_row` in a fresh process; a timeout or crash becomes the row's status."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", entry.key, "--steps", str(steps)]
    command += ["--balance-inertia"] * balance_inertia + ["--float32"] * FLOAT32 + ["--mujoco-mode"] * MUJOCO_MODE
    t0 = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return dict(status="timeout", steps=steps, wall_s=round(time.perf_counter() - t0, 1))
    wall_s = round(time.perf_counter() - t0, 1)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or [""])[-1]
        return dict(status="crashed", steps=steps, returncode=done.returncode, wall_s=wall_s,
                    message=tail.replace(entry.path, entry.key)[:300])
    row = json.loads(lines[-1][len("RESULT "):])
    row["wall_s"] = wall_s
    return row


def child_main(key: str, steps: int, balance_inertia: bool) -> int:
    entry = next(e for e in corpus(SOURCES) if e.key == key)
    try:
        row = simulate_row(entry, steps, balance_inertia)
    except Exception as err:
        row = dict(status="error", steps=steps, error=type(err).__name__, message=first_line(err, entry))
    print("RESULT " + json.dumps(row), flush=True)
    return 0


# --------------------------------------------------------------------------- report


def git(*args: str, cwd: Path) -> str:
    try:
        return subprocess.check_output(["git", *args], cwd=cwd, text=True, stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def library_stamp() -> dict:
    """Which ``jaxsim_contact`` ran: folder, commit, whether its files differ from the commit."""
    root = Path(jc.__file__).resolve().parent.parent
    dirty = subprocess.call(["git", "diff", "--quiet", "HEAD", "--", "jaxsim_contact"], cwd=root,
                            stderr=subprocess.DEVNULL) != 0
    return dict(library=str(root), library_commit=git("rev-parse", "--short", "HEAD", cwd=root),
                library_dirty=dirty)


def run_stamp(args, phase: str, entries: list[Entry]) -> dict:
    return dict(command="python benchmarks/corpus.py " + shlex.join(sys.argv[1:]), phase=phase,
                date=time.strftime("%Y-%m-%d %H:%M"), commit=git("rev-parse", "--short", "HEAD", cwd=HERE),
                **library_stamp(), jax=jax.__version__, mujoco=mujoco.__version__, loadavg=loadavg(),
                files=len(entries), steps=args.steps)


def fmt(x, spec: str = ".3g") -> str:
    return "–" if x is None else format(x, spec)


def load_counts(group: list[dict]) -> list[int]:
    """files, not a model, loaded, loads with balance_inertia, failed (MuJoCo C compiles it),
    failed (MuJoCo C fails too)."""
    failed = [r for r in group if r["status"] == "failed" and simulated_variant(r) is None]
    return [len(group), sum(r["status"] == "not_a_model" for r in group),
            sum(r["status"] == "loaded" for r in group), sum(simulated_variant(r) is True for r in group),
            sum(r["mujoco_error"] is None for r in failed), sum(r["mujoco_error"] is not None for r in failed)]


def load_section(rows: dict) -> list[str]:
    lines = ["## Load", "",
             "`loaded`: `jc.load` (for a robot: with its floor) succeeds with default arguments. `balance_inertia`: "
             "fails for an inertia violating A + B >= C and loads with `balance_inertia=True` (then simulated "
             "so). Failures are split by whether MuJoCo C compiles the same file.", "",
             "| source | files | not a model (MJCF MuJoCo C rejects) | loaded | loads with `balance_inertia=True` "
             "| failed, MuJoCo C compiles it | failed, MuJoCo C fails too |", "|---|---|---|---|---|---|---|"]
    total = [0] * 6
    for source in SOURCES:
        group = [r for r in rows.values() if r["source"] == source]
        if group:
            counts = load_counts(group)
            total = [a + b for a, b in zip(total, counts)]
            lines.append(f"| {source} | " + " | ".join(map(str, counts)) + " |")
    lines.append("| **all** | " + " | ".join(f"**{c}**" for c in total) + " |")
    failed = sorted((r for r in rows.values() if r["status"] == "failed"), key=lambda r: r["key"])
    by_feature: dict[tuple[str, str], list[dict]] = {}
    for r in failed:
        by_feature.setdefault((r["feature"], r["error"]), []).append(r)
    lines += ["", "### Failures by feature", "",
              "| feature | exception | files | of which MuJoCo C fails too | which |", "|---|---|---|---|---|"]
    for (feature, error), group in sorted(by_feature.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"| {feature} | `{error}` | {len(group)} | {sum(r['mujoco_error'] is not None for r in group)} "
                     f"| {', '.join(r['key'] for r in group)} |")
    lines += ["", "### Failures, one row per file", "",
              "| file | exception | message (first line) | MuJoCo C | with `balance_inertia=True` |",
              "|---|---|---|---|---|"]
    for r in failed:
        balanced = r.get("balanced")
        retry = "–" if balanced is None else ("loads" if balanced["status"] == "loaded"
                                               else f"`{balanced['error']}`: {md_escape(balanced['message'])}")
        lines.append(f"| {r['key']} | `{r['error']}` | {md_escape(r['message'])} "
                     f"| {md_escape(r['mujoco_error'] or 'compiles')} | {retry} |")
    not_models = sorted((r for r in rows.values() if r["status"] == "not_a_model"), key=lambda r: r["key"])
    lines += ["", "### Not a model: MJCF files MuJoCo C does not compile either (not counted as our failures)", "",
              "| file | MuJoCo C error | ours |", "|---|---|---|"]
    lines += [f"| {r['key']} | {md_escape(r['mujoco_error'])} | `{r['error']}`: {md_escape(r['message'])} |"
              for r in not_models]
    warned = sorted((r for r in rows.values() if r["status"] == "loaded" and r["warnings"]), key=lambda r: r["key"])
    lines += ["", "### Loaded with warnings", "", "| file | warnings (first line each) |", "|---|---|"]
    lines += [f"| {r['key']} | {md_escape(' / '.join(r['warnings']))[:400]} |" for r in warned]
    return lines


def md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def rate(steps_per_s: float) -> str:
    """Steps/s: whole numbers from 100 up, three significant digits below."""
    return f"{steps_per_s:.0f}" if steps_per_s >= 100 else f"{steps_per_s:.3g}"


def simulation_row(key: str, r: dict) -> str:
    ratio = r["mujoco_steps_per_s"] / r["steps_per_s"]
    root = ("–", "–", "–")
    rest = "–"
    if "at_rest" in r:
        rest = f"{'yes' if r['at_rest'] else 'no'} / {'yes' if r['mujoco_at_rest'] else 'no'}"
    if "root_ours" in r:
        root = (f"{r['root_ours']:.3f} / {r['root_mujoco']:.3f}", f"{100 * r['root_difference']:+.1f}",
                f"{100 * r['root_max_difference']:.1f}")
    start = r["start"]
    notes = []
    if start["clipped_joints"]:
        notes.append(f"{start['clipped_joints']} clipped")
    if "raised_m" in start:
        notes.append(f"z {start['raised_m']:+.3f} m")
    if r.get("start_contacts"):
        notes.append(f"{r['start_contacts']} MuJoCo contacts, deepest {1e3 * r['start_min_distance']:.1f} mm")
    notes = ", ".join(notes)
    return (f"| {key} | {r['nq']}/{r['nv']}/{r['ngeom']} | {r['dt']:g} | {notes or '–'} | {r['compile_s']:.1f} "
            f"| {rate(r['steps_per_s'])}{'*' if r.get('timed_calls') == 1 else ''} | {rate(r['mujoco_steps_per_s'])} "
            f"| {ratio:.0f} "
            f"| {r['capped_steps']} | {r['converged_fraction']:.3f} | {r['contact_steps']} / {r['max_active']} "
            f"| {r['mean_iterations']:.1f} / {r['max_iterations']} | {1e3 * r['max_penetration']:.2f} "
            f"| {'yes' if r['finite'] else '**no**'}{'' if r['mujoco_finite'] else ' (MuJoCo: no)'} "
            f"| {' '.join(r['errors']) or '–'} | {rest} | {root[0]} | {root[1]} | {root[2]} |")


def simulate_section(rows: dict, steps: int) -> list[str]:
    done = {k: r for k, r in rows.items() if r["status"] == "ok"}
    lines = ["## Simulate", "",
             f"{steps} steps, batch 1, {'float32' if FLOAT32 else 'float64'}, default options, zero controls (module docstring: start rule). "
             "Columns: nq/nv/ngeom; the model's time step; start notes (joints clipped into their limits, "
             "free-joint shift of a URDF robot, MuJoCo's contacts at the start and the deepest distance: "
             "overlaps in the model as given); compile = `lower` + `compile` (s); steps/s ours and MuJoCo C "
             "and their ratio (MuJoCo C / ours); steps at the solver cap; fraction of steps the solver reports "
             "converged; steps with an active constraint / most active slots; mean / max solver iterations; "
             "max penetration (mm); all values finite; `state.error` bits at the end; at rest ours / MuJoCo "
             f"(the largest |qvel| entry over the last {100 * REST_WINDOW:.0f} % of the steps ≤ {REST_SPEED} m/s or rad/s; "
             "– for rows simulated before this column); final root height "
             "(free joint z, or a planar walker's rootz slide) ours / MuJoCo (m), their difference ours − MuJoCo "
             "(cm), the largest difference along the rollout (cm). `*`: timed by one call (it took > 10 s).", "",
             "| model | nq/nv/ngeom | dt | start | compile s | ours steps/s | MuJoCo C steps/s | ratio "
             "| capped | converged | contact steps / max active | iterations mean / max | max pen. mm "
             "| finite | error bits | at rest ours / MuJoCo | root z ours / MuJoCo | Δ cm | max \\|Δ\\| cm |",
             "|" + "---|" * 19]
    lines += [simulation_row(k, r) for k, r in sorted(done.items())]
    other = {k: r for k, r in rows.items() if r["status"] != "ok"}
    if other:
        lines += ["", "### Not simulated to the end", "", "| model | status | wall s | message |", "|---|---|---|---|"]
        lines += [f"| {k} | {r['status']} | {r.get('wall_s', '–')} | "
                  f"{md_escape((r.get('error', '') + ': ' if r.get('error') else '') + r.get('message', ''))} |"
                  for k, r in sorted(other.items())]
    lines += ["", "### Headline", ""] + headline(done)
    return lines


def headline(done: dict) -> list[str]:
    capped = sorted((k, r["capped_steps"]) for k, r in done.items() if r["capped_steps"])
    apart = sorted((k, r["root_difference"]) for k, r in done.items()
                   if "root_difference" in r and abs(r["root_difference"]) > HEIGHT_TOLERANCE)
    # the bar compares heights where both engines come to rest
    rested = [(k, d) for k, d in apart if done[k].get("at_rest") and done[k].get("mujoco_at_rest")]

    def soft_mode(k):  # where our MuJoCo-compatible mode settled (when it ran)
        m = done[k].get("mujoco_mode")
        if not m or "difference" not in m:
            return ""
        return (f"; MuJoCo-compatible mode {100 * m['difference']:+.1f} cm"
                f"{'' if m['at_rest'] else ', not at rest'}")
    moving = [(k, d) for k, d in apart if "at_rest" in done[k] and (k, d) not in rested]
    unknown = [(k, d) for k, d in apart if "at_rest" not in done[k]]
    broken = sorted(k for k, r in done.items() if not r["finite"] or r["error_bits"] & jc.ErrorFlag.FREEZE)
    ratios = sorted(((r["mujoco_steps_per_s"] / r["steps_per_s"], k) for k, r in done.items()), reverse=True)
    lines = [f"- simulated: {len(done)} models",
             f"- steps at the solver cap in {len(capped)} models: "
             + (", ".join(f"{k} ({n})" for k, n in capped) or "none"),
             f"- final root height differs from MuJoCo C's by more than {100 * HEIGHT_TOLERANCE:.0f} cm in "
             f"{len(apart)} models; where both are at rest ({len(rested)}): "
             + (", ".join(f"{k} ({100 * d:+.1f} cm{soft_mode(k)})" for k, d in rested) or "none")
             + f"; not both at rest at the last step ({len(moving)}): "
             + (", ".join(f"{k} ({100 * d:+.1f} cm, speed ours {done[k]['final_speed']:.2g} / MuJoCo "
                          f"{done[k]['mujoco_final_speed']:.2g})" for k, d in moving) or "none")
             + f"; rest not recorded (simulated before that column, {len(unknown)}): "
             + (", ".join(f"{k} ({100 * d:+.1f} cm)" for k, d in unknown) or "none"),
             "- non-finite or frozen (NON_FINITE_STATE / INVALID_CONTROL): " + (", ".join(broken) or "none")]
    if ratios:
        lines.append("- largest MuJoCo C / ours steps/s ratios: "
                     + ", ".join(f"{k} ({ratio:.0f}x)" for ratio, k in ratios[:8])
                     + f"; median over all {statistics.median(r for r, _ in ratios):.0f}x")
    return lines


def markdown(data: dict) -> str:
    lines = ["# Third-party model corpus: load and simulate (issues 43, 48)", "",
             "Written by `benchmarks/corpus.py` (module docstring: corpus, rules, columns). Runs that filled "
             "this file (the rows are cached per model; a later run only adds what was missing):", ""]
    for run in data["runs"]:
        lines.append(f"- `{run['command']}` — {run['date']}, phase {run['phase']}, {run['files']} files, "
                     f"commit {run['commit']}, library `{run['library']}` at {run['library_commit']}"
                     f"{' (modified)' if run['library_dirty'] else ''}, jax {run['jax']}, mujoco {run['mujoco']}, "
                     f"load average {run['loadavg']}")
    lines += [""] + data.get("notes", []) + [""] * bool(data.get("notes"))
    lines += load_section(data["load"]) + [""]
    simulated = data["simulate"]
    if simulated:
        steps = sorted({r["steps"] for r in simulated.values()})
        lines += simulate_section(simulated, steps[0] if len(steps) == 1 else steps)
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- driver


def read_cache(path: Path, fresh: bool) -> dict:
    if path.exists() and not fresh:
        data = json.loads(path.read_text())
    else:
        data = dict(runs=[], load={}, simulate={})
    return data


def save(data: dict, name: str) -> None:
    """Write ``results/NAME.json`` / ``.md``; a hand-written ``## Reading`` section at the end of
    the existing ``.md`` is kept below the regenerated tables."""
    text = markdown(data)
    md = RESULTS / f"{name}.md"
    if md.exists():
        old = md.read_text()
        start = old.find("\n## Reading")
        if start >= 0:
            text = text.rstrip("\n") + "\n" + old[start:]
    write_results(name, data, text)


def run_load(entries: list[Entry], data: dict, name: str, redo: bool = False) -> None:
    for i, entry in enumerate(entries):
        if entry.key in data["load"] and not redo:
            continue
        row = load_row(entry)
        data["load"][entry.key] = row
        print(f"[load {i + 1}/{len(entries)}] {entry.key}: {row['status']} "
              f"{row.get('error', '')} {row.get('message', '')[:120]}", flush=True)
    save(data, name)


def run_simulate(entries: list[Entry], data: dict, name: str, steps: int, timeout_s: float,
                 redo: bool = False) -> None:
    loaded = [e for e in entries if simulated_variant(data["load"][e.key]) is not None]
    for i, entry in enumerate(loaded):
        cached = data["simulate"].get(entry.key)
        if cached is not None and cached["steps"] == steps and not redo:
            continue
        row = simulate_in_child(entry, steps, timeout_s, simulated_variant(data["load"][entry.key]))
        data["simulate"][entry.key] = row
        save(data, name)
        print(f"[simulate {i + 1}/{len(loaded)}] {entry.key}: {row['status']} {row.get('wall_s')} s "
              + (f"ours {row['steps_per_s']:.0f}/s MuJoCo {row['mujoco_steps_per_s']:.0f}/s capped "
                 f"{row['capped_steps']} root diff {row.get('root_difference')}" if row["status"] == "ok"
                 else row.get("message", "")[:200]), flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--phase", choices=["load", "simulate", "all", "report"], default="all",
                        help="report: rewrite results/NAME.md from the cached JSON, run nothing")
    parser.add_argument("--sources", nargs="+", choices=SOURCES, default=list(SOURCES))
    parser.add_argument("--match", nargs="+", default=None,
                        help="only files whose key (source/relative/path) contains one of these substrings")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--timeout-s", type=float, default=300.0, help="per model, phase simulate")
    parser.add_argument("--out", default="corpus", help="writes results/NAME.md and .json")
    parser.add_argument("--fresh", action="store_true", help="ignore the cached rows of results/NAME.json")
    parser.add_argument("--redo", action="store_true",
                        help="simulate the selected models again (phase load: load them again)")
    parser.add_argument("--note", action="append", default=[], help="a line for the results header")
    parser.add_argument("--all-cores", action="store_true", help="do not pin to one core")
    parser.add_argument("--float32", action="store_true",
                        help="simulate in float32 (x64 off in every process); use with its own --out")
    parser.add_argument("--mujoco-mode", action="store_true",
                        help="also simulate each model in our MuJoCo-compatible mode (root height, rest)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--balance-inertia", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args.child, args.steps, args.balance_inertia)

    data = read_cache(RESULTS / f"{args.out}.json", args.fresh)
    if args.phase == "report":
        save(data, args.out)
        return 0
    entries = corpus(args.sources, args.match)
    data["runs"].append(run_stamp(args, args.phase, entries))
    data.setdefault("notes", [])
    data["notes"] += [n for n in args.note if n not in data["notes"]]
    # also for phase simulate: it needs to know what loads; --redo with phase load reloads the
    # selected files (the library changed what it accepts) and keeps their simulate rows
    run_load(entries, data, args.out, redo=args.redo and args.phase == "load")
    if args.phase in ("simulate", "all"):
        run_simulate(entries, data, args.out, args.steps, args.timeout_s, args.redo)
    save(data, args.out)
    print(f"wrote {RESULTS / args.out}.md / .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
