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

BRAX = pathlib.Path(__import__("brax").__file__).parent
GYM_ASSETS = pathlib.Path(__import__("gymnasium").__file__).parent / "envs" / "mujoco" / "assets"
FAST_COMPILE = ({"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}
                if jax.default_backend() == "cpu" else None)
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
    state = jc.init(model, q=jnp.asarray(data.qpos), v=jnp.asarray(data.qvel))
    ctrl = jnp.asarray(data.ctrl)
    reference = []
    for _ in range(200):
        mujoco.mj_step(mj, data)
        reference.append(np.concatenate([data.qpos, data.qvel]))
    final, trajectory = jax.jit(jc.rollout, compiler_options=FAST_COMPILE)(
        model, state, jnp.tile(ctrl, (200, 1)))
    assert int(final.error) == 0
    ours = np.concatenate([np.asarray(trajectory.q), np.asarray(trajectory.v)], axis=1)
    np.testing.assert_allclose(ours, np.asarray(reference), rtol=0, atol=1e-8)


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
    forward = jax.jit(jax.jacfwd(next_state, argnums=(0, 1)), compiler_options=FAST_COMPILE)(*inputs)
    reverse = jax.jit(jax.jacrev(next_state, argnums=(0, 1)), compiler_options=FAST_COMPILE)(*inputs)
    evaluate = jax.jit(next_state, compiler_options=FAST_COMPILE)
    for argnum, eps in ((0, 1e-6), (1, 1e-3)):
        base = inputs[argnum]
        columns = []
        for k in range(base.shape[0]):
            plus, minus = list(inputs), list(inputs)
            plus[argnum], minus[argnum] = base.at[k].add(eps), base.at[k].add(-eps)
            columns.append((evaluate(*plus) - evaluate(*minus)) / (2 * eps))
        central = np.stack(columns, axis=1)
        scale = float(np.abs(central).max())
        assert scale > 0
        np.testing.assert_allclose(forward[argnum], reverse[argnum], rtol=0, atol=1e-10 * scale)
        np.testing.assert_allclose(forward[argnum], central, rtol=0, atol=1e-6 * scale)


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
