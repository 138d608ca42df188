"""Fluid forces (MuJoCo's inertia-box model): the swimmers and brax's fluid test models against
MuJoCo C 4.0.0 (``qfrc_passive`` on random states, 200-step trajectories with contacts and limits
off), derivatives against central differences, bad input named."""

from __future__ import annotations

import pathlib
import warnings

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.io import InvalidFluidError, UnsupportedFeatureError
from mujoco_comparison import (FAST_COMPILE, assert_derivatives_match_central_differences,
                               assert_trajectory_equals_mujoco)

BRAX = pathlib.Path(__import__("brax").__file__).parent
GYM_ASSETS = pathlib.Path(__import__("gymnasium").__file__).parent / "envs" / "mujoco" / "assets"
#: box, box with offset centre of mass, sphere, two spheres, wind, swimmers (Euler and RK4)
MODELS = {
    "fluid_box": BRAX / "test_data" / "fluid_box.xml",
    "fluid_box_offset_com": BRAX / "test_data" / "fluid_box_offset_com.xml",
    "fluid_two_spheres": BRAX / "test_data" / "fluid_two_spheres.xml",
    "fluid_wind": BRAX / "test_data" / "fluid_wind.xml",
    "brax_swimmer": BRAX / "envs" / "assets" / "swimmer.xml",
    "gymnasium_swimmer": GYM_ASSETS / "swimmer.xml",
}


def _constraint_free(path: pathlib.Path):
    mj = mujoco.MjModel.from_xml_path(str(path))
    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_LIMIT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the swimmers' MuJoCo solver settings
        return mj, jc.io.from_mjmodel(mj, source=str(path))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_fluid_model_equals_mujoco(name):
    """``qfrc_passive`` (fluid included) on 20 random states to 1e-10 relative, and a 200-step
    trajectory (``qpos``, ``qvel``) to 1e-8."""
    mj, model = _constraint_free(MODELS[name])
    assert model.fluid_bodies and float(model.options.fluid_density + model.options.fluid_viscosity) > 0
    passive = jax.jit(lambda q, v: jc.dynamics.passive_forces(model, q, v), compiler_options=FAST_COMPILE)
    rng = np.random.default_rng(0)
    data = mujoco.MjData(mj)
    for _ in range(20):
        data.qpos[:] = mj.qpos0 + 0.5 * rng.normal(size=mj.nq)
        mujoco.mj_normalizeQuat(mj, data.qpos)
        data.qvel[:] = 2.0 * rng.normal(size=mj.nv)
        mujoco.mj_forward(mj, data)
        ours = passive(jnp.asarray(data.qpos), jnp.asarray(data.qvel))
        scale = max(1.0, float(np.abs(data.qfrc_passive).max()))
        np.testing.assert_allclose(ours, data.qfrc_passive, rtol=0, atol=1e-10 * scale)
    data.qpos[:] = mj.qpos0 + 0.2 * rng.normal(size=mj.nq)
    mujoco.mj_normalizeQuat(mj, data.qpos)
    data.qvel[:] = rng.normal(size=mj.nv)
    data.ctrl[:] = rng.uniform(-1.0, 1.0, size=mj.nu)
    assert_trajectory_equals_mujoco(mj, model, data.qpos.copy(), data.qvel.copy(), data.ctrl.copy(), 200)


def test_fluid_step_derivatives_forward_reverse_and_central_differences_agree():
    """``jacfwd`` = ``jacrev`` = central differences for one swimmer step with respect to ``v``
    and to the medium (density, viscosity: dynamic options)."""
    _, model = _constraint_free(MODELS["brax_swimmer"])
    q0 = model.qpos0 + 0.1

    def next_state(v, medium):
        moved = model.replace_options(fluid_density=medium[0], fluid_viscosity=medium[1])
        nxt = jc.step(moved, jc.init(moved, q=q0, v=v), jnp.zeros(model.nu))
        return jnp.concatenate([nxt.q, nxt.v])

    inputs = (jnp.linspace(-0.8, 0.9, model.nv), jnp.asarray([4000.0, 0.1]))
    assert_derivatives_match_central_differences(next_state, inputs, steps=(1e-6, 1e-3))


def _write(tmp_path, option: str, geom: str = 'size=".1"') -> pathlib.Path:
    path = tmp_path / "model.xml"
    path.write_text(f'<mujoco><option {option}/><worldbody><body><freejoint/>'
                    f'<geom name="hull" {geom}/></body></worldbody></mujoco>')
    return path


def test_bad_fluid_input_is_named(tmp_path):
    path = _write(tmp_path, 'density="-1"')
    with pytest.raises(InvalidFluidError, match=r"density=-1\.0") as info:
        jc.load(path)
    assert str(path) in str(info.value)
    path = _write(tmp_path, 'density="1.2"', 'size=".1" fluidshape="ellipsoid"')
    with pytest.raises(UnsupportedFeatureError, match=r"geom 'hull'.*ellipsoid"):
        jc.load(path)


def test_a_model_without_fluid_has_no_fluid_bodies(tmp_path):
    assert jc.load(_write(tmp_path, 'gravity="0 0 -9.81"')).fluid_bodies == ()
