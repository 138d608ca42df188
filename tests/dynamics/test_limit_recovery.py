"""A model that starts outside its joint limits comes back inside as MuJoCo does (issue 43).

gymnasium's ant starts with every ankle at 0, 0.52 rad outside its 30°–70° range. MuJoCo C
brings them inside within 6 steps (dt = 0.01 s) at joint speeds up to 9.6 rad/s. Capping the
limit's push-out like a contact's (0.5, in rad/s here) took ~100 steps and the ant landed on its
belly; limits have their own cap, ``Options.limit_correction_speed`` (10 rad/s).
"""

from pathlib import Path

import gymnasium
import jax
import mujoco
import numpy as np
import pytest

import jaxsim_contact as jc

STEPS = 10
INSIDE = 1e-3  # rad


def _outside(mj, qpos) -> np.ndarray:
    """Largest violation of any joint limit (rad), per row of ``qpos``."""
    limited = mj.jnt_limited.astype(bool)
    q = np.asarray(qpos)[..., mj.jnt_qposadr[limited]]
    low, high = mj.jnt_range[limited].T
    return np.max(np.maximum(low - q, 0.0) + np.maximum(q - high, 0.0), axis=-1)


def _first_inside(violations) -> int:
    return int(np.argmax(np.asarray(violations) < INSIDE))


def test_ant_ankles_return_inside_their_limits_as_in_mujoco():
    path = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "ant.xml"
    mj = jc.io.compile_mjmodel(path)
    model = jc.load(path)
    assert _outside(mj, mj.qpos0) > 0.5

    data = mujoco.MjData(mj)
    reference = []
    for _ in range(STEPS):
        mujoco.mj_step(mj, data)
        reference.append(_outside(mj, data.qpos))

    def body(state, _):
        state = jc.step(model, state)
        return state, (state.q, state.v)

    _, (q, v) = jax.jit(lambda s: jax.lax.scan(body, s, None, length=STEPS))(jc.init(model))
    ours = _outside(mj, q)
    assert ours[-1] < INSIDE and reference[-1] < INSIDE
    assert abs(_first_inside(ours) - _first_inside(reference)) <= 1, (ours, reference)
    joint_speed = np.max(np.abs(np.asarray(v)[:, 6:]))
    assert joint_speed <= float(model.options.limit_correction_speed) * (1 + 1e-9)
    assert np.all(np.isfinite(np.asarray(q)))


def test_limit_correction_speed_is_validated_and_separate_from_contacts():
    model = jc.scenes.load("pushed_ball")
    assert float(model.options.limit_correction_speed) == 10.0
    assert float(model.options.max_correction_speed) == 0.5
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="limit_correction_speed"):
            model.replace_options(limit_correction_speed=bad)
