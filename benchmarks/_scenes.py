"""The benchmark scenes: one ``mujoco.MjModel`` and initial ``qpos`` per scene, shared by
``step.py``, ``gpu/run.py`` and the scripts that import ``step``.

Import it after choosing the dtype (``_common.enable_float64``): it imports ``jaxsim_contact``.

* ``box``      — one 0.1 m cube dropped 0.1 mm onto a plane (in contact from the first steps);
* ``tower``    — ten 0.1 m cubes stacked with 1 mm gaps (``jc.scenes.box_tower``);
* ``pile``     — 27 0.1 m cubes in a 3 × 3 × 3 grid, 2 mm apart (``jc.scenes.cube_pile``, as the
  stability tests);
* ``humanoid`` — MJX's own benchmark humanoid (``mujoco/mjx/test_data/humanoid/humanoid.xml``,
  its tuned solver options; 21 motors) — needs ``mujoco-mjx`` (the ``bench`` extra);
* ``ant``      — Brax's ant (``brax/envs/assets/ant.xml``: 8 motors, feet against the floor);
* ``panda``    — the Franka Panda URDF of ``example-robot-data`` on a floor, self-collision off;
* ``go2``      — the Unitree Go2 URDF (floating base, legs in a standing pose, feet 1 cm above
  the floor) on a floor, self-collision off.

A model file that is not installed as a package is looked for in the folder named by the
environment variable ``JAXSIM_CONTACT_BENCH_MODELS`` (what ``benchmarks/gpu/fetch_carry.sh``
fills for a machine that cannot install packages).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import mujoco
import numpy as np

import jaxsim_contact as jc

HERE = Path(__file__).resolve().parent

#: every scene, in the order reports list them
NAMES = ("box", "tower", "pile", "humanoid", "ant", "panda", "go2")

#: height (m) of the lowest foot vertex above the floor at the start: the robot drops and lands
GO2_DROP = 0.01


def compile_text(text: str, name: str):
    """Compile MJCF ``text`` through ``jc.io`` (as a file named ``name.xml``)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.xml"
        path.write_text(text)
        return jc.io.compile_spec(jc.io.prepare_spec(path), path)


def _model_file(package_path: Path | None, name: str) -> Path:
    """``package_path`` when it exists, else ``$JAXSIM_CONTACT_BENCH_MODELS/name``."""
    if package_path is not None and package_path.is_file():
        return package_path
    folder = os.environ.get("JAXSIM_CONTACT_BENCH_MODELS")
    if folder and (Path(folder) / name).is_file():
        return Path(folder) / name
    raise FileNotFoundError(f"benchmark model {name!r} not found (install its package or set "
                            "JAXSIM_CONTACT_BENCH_MODELS to a folder holding it)")


def robot(file: str, floating_base: bool = False, edit=None, **kwargs):
    """A URDF robot of ``example-robot-data`` with a floor plane and every body pair excluded
    (self-collision off, as in the robot tests); ``edit(spec)``, if given, runs just before
    compiling."""
    from jaxsim_contact.io._urdf import default_package_dirs

    roots = [d for d in default_package_dirs() if d.name == "robots"]
    if not roots:
        raise FileNotFoundError("example-robot-data is not installed (its robots folder is needed)")
    path = roots[0] / file
    spec = jc.io.prepare_spec(path, floating_base=floating_base, **kwargs)
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[10, 10, 0.1],
                            friction=[1.0, 0.005, 0.0001])
    bodies = [b.name for b in spec.bodies if b.name != "world"]
    for i, a in enumerate(bodies):
        for b in bodies[i + 1:]:
            spec.add_exclude(bodyname1=a, bodyname2=b)
    if edit is not None:
        edit(spec)
    return jc.io.compile_spec(spec, path)


def panda(edit=None, limit_margin: float = 0.0):
    """``(MjModel, q0)``: the Panda on a floor, its reference pose clipped into the joint limits
    shrunk by ``limit_margin`` (rad or m; 0 puts joint 4 and both fingers exactly on a limit)."""
    mj = robot("panda_description/urdf/panda.urdf", ignore_equality=True, edit=edit)
    q0 = mj.qpos0.copy()
    limited = mj.jnt_limited.astype(bool)
    q0[mj.jnt_qposadr[limited]] = np.clip(q0[mj.jnt_qposadr[limited]],
                                          mj.jnt_range[limited, 0] + limit_margin,
                                          mj.jnt_range[limited, 1] - limit_margin)
    return mj, q0


def go2():
    """``(MjModel, q0)``: the Go2 on a floor, legs in the standing pose of
    ``examples/inverse_standing_quadruped.py`` (inside the URDF limits; the URDF's qpos0 = 0 puts
    every calf 0.84 rad past its limit), feet ``GO2_DROP`` above the floor."""
    import jax

    sys.path.insert(0, str(HERE.parent / "examples"))
    x64 = bool(jax.config.jax_enable_x64)
    try:
        # the example enables float64 when imported (it is a script); the pose is solved in
        # float64 whatever the caller's dtype, and the caller's setting is restored — a float32
        # benchmark that loaded the Go2 once ran in float64 from then on
        from inverse_standing_quadruped import standing_configuration

        mj = robot("go2_description/urdf/go2.urdf", floating_base=True)
        jax.config.update("jax_enable_x64", True)
        q0 = np.asarray(standing_configuration(mj, penetration=-GO2_DROP), dtype=np.float64)
    finally:
        jax.config.update("jax_enable_x64", x64)
    return mj, q0


def humanoid():
    """``(MjModel, q0)``: MJX's benchmark humanoid at its first keyframe."""
    try:
        import mujoco.mjx as mjx_module
        package_path = Path(mjx_module.__file__).parent / "test_data" / "humanoid" / "humanoid.xml"
    except ImportError:
        package_path = None
    mj = jc.io.compile_mjmodel(_model_file(package_path, "humanoid.xml"))
    return mj, (mj.key_qpos[0].copy() if mj.nkey else mj.qpos0.copy())


def ant():
    """``(MjModel, q0)``: Brax's ant at its ``qpos0`` clipped into the joint limits (``qpos0``
    puts the four ankles at 0, outside their 30°–70° ranges)."""
    try:
        import brax
        package_path = Path(brax.__file__).parent / "envs" / "assets" / "ant.xml"
    except ImportError:
        package_path = None
    mj = jc.io.compile_mjmodel(_model_file(package_path, "ant.xml"))
    q0 = mj.qpos0.copy()
    limited = mj.jnt_limited.astype(bool)
    q0[mj.jnt_qposadr[limited]] = np.clip(q0[mj.jnt_qposadr[limited]], mj.jnt_range[limited, 0],
                                          mj.jnt_range[limited, 1])
    return mj, q0


def box():
    mj = compile_text(jc.scenes.box_tower(count=1, gap=1e-4), "box")
    return mj, mj.qpos0.copy()


def tower():
    mj = compile_text(jc.scenes.box_tower(count=10, gap=1e-3), "tower")
    return mj, mj.qpos0.copy()


def pile():
    """The 3×3×3 cube pile of the stability tests (2 mm between side neighbours, 1 mm gaps up)."""
    mj = compile_text(jc.scenes.cube_pile(gap=2e-3), "pile")
    return mj, mj.qpos0.copy()


BUILDERS = dict(box=box, tower=tower, pile=pile, humanoid=humanoid, ant=ant, panda=panda, go2=go2)


def load(name: str):
    """``(MjModel, q0)`` of scene ``name`` (one of :data:`NAMES`), checked to start inside its joint
    limits."""
    mj, q0 = BUILDERS[name]()
    check_within_joint_limits(name, mj, q0)
    return mj, q0


def check_within_joint_limits(name: str, mj, q0):
    """A start outside the joint limits makes every engine's first steps a violent limit correction
    (the old Go2 start did: 0.76 rad past four calf limits), which is not what a scene measures."""
    limited = mj.jnt_limited.astype(bool) & np.isin(mj.jnt_type, (mujoco.mjtJoint.mjJNT_HINGE,
                                                                  mujoco.mjtJoint.mjJNT_SLIDE))
    q = q0[mj.jnt_qposadr[limited]]
    low, high = mj.jnt_range[limited, 0], mj.jnt_range[limited, 1]
    if np.any((q < low) | (q > high)):
        raise ValueError(f"scene {name!r} starts outside its joint limits")
