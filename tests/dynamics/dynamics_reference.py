"""Helpers for the dynamics tests: the scenes compared with MuJoCo C, where the robots are,
random configurations in MuJoCo's qpos layout, MuJoCo set up like our contact-free step."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import mujoco
import numpy as np

import jaxsim_contact as jc

from jaxsim_contact.io._urdf import default_package_dirs

MODELS = Path(__file__).resolve().parent.parent / "models"


def robots_dir() -> Path:
    """The ``robots`` folder of the installed example-robot-data package (a test dependency)."""
    for directory in default_package_dirs():
        if directory.name == "robots":
            return directory
    raise RuntimeError("example-robot-data is not installed (pip install -e '.[test]')")


# name -> (file, jc.load keyword arguments)
SCENES = {
    "all_joints": (MODELS / "all_joints.xml", {}),
    "panda": ("panda_description/urdf/panda.urdf", {"ignore_equality": True}),
    "go2": ("go2_description/urdf/go2.urdf", {"floating_base": True}),
    "allegro": ("allegro_hand_description/urdf/allegro_right_hand.urdf", {"balance_inertia": True}),
    "talos": ("talos_data/robots/talos_reduced.urdf", {"floating_base": True}),
}


def scene_path(name: str) -> Path:
    file, _ = SCENES[name]
    file = Path(file)
    return file if file.is_absolute() else robots_dir() / file


def random_configuration(mj: mujoco.MjModel, rng: np.random.Generator, scale: float = 0.7) -> np.ndarray:
    """A random ``qpos``: reference plus noise, unit quaternions for free and ball joints."""
    q = mj.qpos0.copy() + scale * rng.standard_normal(mj.nq)
    for j in range(mj.njnt):
        adr = mj.jnt_qposadr[j]
        if mj.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            q[adr + 3: adr + 7] = rng.standard_normal(4)
            q[adr + 3: adr + 7] /= np.linalg.norm(q[adr + 3: adr + 7])
        elif mj.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
            q[adr: adr + 4] = rng.standard_normal(4)
            q[adr: adr + 4] /= np.linalg.norm(q[adr: adr + 4])
    return q


def mujoco_step_model(mj: mujoco.MjModel) -> mujoco.MjModel:
    """A copy of ``mj`` set up like our contact-free step: Euler integrator, no constraints."""
    mj = mj.__copy__()
    mj.opt.integrator = int(mujoco.mjtIntegrator.mjINT_EULER)
    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    return mj


@functools.cache
def load_scene(name: str):
    """``(model, mjmodel)`` of a scene of :data:`SCENES`, loaded once per process. ``mjmodel`` is
    MuJoCo's compilation with the same loader options (the reference the model was converted from)."""
    path, kwargs = scene_path(name), SCENES[name][1]
    with warnings.catch_warnings():
        # the Panda's finger mimic joint: dropping it is asserted in tests/io/test_loading.py
        warnings.filterwarnings("ignore", message=".*ignoring equality constraint")
        return jc.load(path, **kwargs), jc.io.compile_mjmodel(path, **kwargs)
