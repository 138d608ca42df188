"""Actuators with activation dynamics and muscles (MuJoCo Computation chapter "Actuation model").

Reference: MuJoCo C 4.0.0 (``qfrc_actuator``, ``act_dot``, ``mj_step`` with every integrator) on
``tests/models/actuated.xml``: a motor, ``intvelocity`` (integrator, activation range),
``cylinder`` (filter, affine bias), a ``filterexact`` actuator with ``actearly``, an integrator
with affine gain and bias, and three muscles (on a spatial tendon, on a hinge with the automatic
``force = scale / acc0``, on a slide with its own time constants). Central differences for the
derivatives.
"""

from __future__ import annotations

import pathlib

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.dynamics._actuation import activation_rate, clamp_controls
from jaxsim_contact.io import InvalidActuatorError, UnsupportedFeatureError
from mujoco_comparison import assert_derivatives_match_central_differences, assert_trajectory_equals_mujoco

MODEL = pathlib.Path(__file__).parent.parent / "models" / "actuated.xml"


def _load(integrator: str = "Euler"):
    mj = mujoco.MjModel.from_xml_path(str(MODEL))
    mj.opt.integrator = int(getattr(mujoco.mjtIntegrator, "mjINT_" + integrator.upper()))
    return mj, jc.io.from_mjmodel(mj, source=str(MODEL))


def test_loader_reads_every_activation_kind():
    model = jc.load(MODEL)
    states = model.actuator_states
    assert model.na == 7 and jc.init(model).act.shape == (7,)
    assert [k.value for k in states.dynamics] == [
        "none", "integrator", "filter", "filterexact", "integrator", "muscle", "muscle", "muscle"]
    assert states.act_early == (False, False, False, True, False, False, False, False)
    assert states.muscle_gain == (False,) * 5 + (True,) * 3 == states.muscle_bias


def test_forces_and_activation_rates_equal_mujoco_over_the_muscles_length_range():
    """On 200 random states (positions spanning the muscles' whole length range and beyond,
    activations and controls beyond their ranges) ``qfrc_actuator`` and ``act_dot`` equal
    MuJoCo's to 1e-10."""
    mj, model = _load()
    forces = jax.jit(lambda q, v, u, a: jc.dynamics.actuator_forces(model, q, v, u, act=a))
    rates = jax.jit(lambda u, a: activation_rate(model, clamp_controls(model, u), a))
    rng = np.random.default_rng(0)
    data = mujoco.MjData(mj)
    lengths = []
    for _ in range(200):
        data.qpos[:] = rng.uniform(-1.6, 1.6, size=mj.nq)
        data.qvel[:] = rng.normal(size=mj.nv)
        data.act[:] = rng.uniform(-0.3, 1.3, size=mj.na)
        data.ctrl[:] = rng.uniform(-0.3, 1.3, size=mj.nu)
        mujoco.mj_forward(mj, data)
        lengths.append(data.actuator_length[5:].copy())
        q, v, u, a = (jnp.asarray(x) for x in (data.qpos, data.qvel, data.ctrl, data.act))
        np.testing.assert_allclose(forces(q, v, u, a), data.qfrc_actuator, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(rates(u, a), data.act_dot, rtol=1e-10, atol=1e-10)
    # the muscles were exercised over their whole length ranges: each reached the lower and the
    # upper fifth of its range (the joint muscles went beyond it; the tendon's range is what its
    # geometry allows)
    lengths = np.asarray(lengths)
    low, high = mj.actuator_lengthrange[5:, 0], mj.actuator_lengthrange[5:, 1]
    assert np.all(lengths.min(axis=0) < low + 0.2 * (high - low))
    assert np.all(lengths.max(axis=0) > high - 0.2 * (high - low))


@pytest.mark.parametrize("integrator", ["Euler", "RK4", "implicitfast", "implicit"])
def test_trajectory_with_activations_equals_mujoco(integrator):
    """200 steps (qpos, qvel, act) equal ``mj_step``'s to 1e-8 with every integrator (RK4 carries
    the activations through its stages; the implicit integrators differentiate the actuators'
    velocity terms, muscles included)."""
    mj, model = _load(integrator)
    rng = np.random.default_rng(1)
    data = mujoco.MjData(mj)
    data.qpos[:] = 0.3 * rng.normal(size=mj.nq)
    data.qvel[:] = rng.normal(size=mj.nv)
    data.act[:] = rng.uniform(0.0, 1.0, size=mj.na)
    data.ctrl[:] = rng.uniform(0.0, 1.0, size=mj.nu)
    assert_trajectory_equals_mujoco(mj, model, data.qpos.copy(), data.qvel.copy(), data.ctrl.copy(),
                                    200, act0=data.act.copy())


def test_step_derivatives_through_muscles_and_filters():
    """``jacfwd``, ``jacrev`` and central differences of one step's ``(q, v, act)`` with respect
    to ``ctrl`` and ``act`` agree (1e-6 relative to the Jacobian's scale), at a state where every
    muscle is inside its length range and no activation at a clamp."""
    _, model = _load()
    q0 = jnp.asarray([0.2, -0.3, 0.05])
    v0 = jnp.asarray([0.3, -0.2, 0.1])

    def next_state(ctrl, act):
        nxt = jc.step(model, jc.init(model, q=q0, v=v0, act=act), ctrl)
        return jnp.concatenate([nxt.q, nxt.v, nxt.act])

    inputs = (jnp.asarray([0.3, 0.2, 0.4, 0.5, 0.1, 0.6, 0.55, 0.45]),
              jnp.asarray([0.1, 0.3, 0.2, -0.2, 0.4, 0.35, 0.5]))
    assert_derivatives_match_central_differences(next_state, inputs, steps=(1e-6, 1e-6))


def test_frozen_environment_holds_its_activations():
    """Fault isolation covers ``act``: a NaN control freezes the environment with the
    activations it came in with."""
    _, model = _load()
    state = jc.init(model, act=jnp.full((7,), 0.25))
    bad = jc.step(model, state, jnp.full((8,), jnp.nan))
    assert int(bad.error) & jc.ErrorFlag.INVALID_CONTROL
    np.testing.assert_array_equal(bad.act, state.act)


def _write(tmp_path, actuator: str) -> pathlib.Path:
    path = tmp_path / "model.xml"
    path.write_text('<mujoco><worldbody><body><joint name="j" type="slide"/><geom size=".1"/></body>'
                    f'</worldbody><actuator>{actuator}</actuator></mujoco>')
    return path


def test_bad_actuator_parameters_are_named(tmp_path):
    path = _write(tmp_path, '<general name="lag" joint="j" dyntype="filter" dynprm="0"/>')
    with pytest.raises(InvalidActuatorError, match=r"actuator 'lag'.*time constant 0\.0") as info:
        jc.load(path)
    assert str(path) in str(info.value)
    # MuJoCo's own muscle checks come back with the file named
    path = _write(tmp_path, '<muscle name="m" joint="j" range="1.2 0.5" lengthrange="-1 1"/>')
    with pytest.raises(jc.io.ModelError, match="range") as info:
        jc.load(path)
    assert str(path) in str(info.value)
    path = _write(tmp_path, '<general name="u" joint="j" dyntype="user"/>')
    with pytest.raises(UnsupportedFeatureError, match="actuator 'u'.*mjDYN_USER"):
        jc.load(path)


def test_act_given_to_a_model_without_activations_is_refused(tmp_path):
    model = jc.load(_write(tmp_path, '<motor joint="j"/>'))
    assert model.na == 0 and jc.init(model).act is None
    with pytest.raises(ValueError, match="no actuator activations"):
        jc.init(model, act=jnp.ones(1))
