"""Contact-free rollouts: agreement with MuJoCo C's Euler integrator step by step, energy and
momentum drift of first order in dt (semi-implicit Euler), error flags."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact import dynamics
from jaxsim_contact._model import ErrorFlag
from dynamics_reference import MODELS, mujoco_step_model

# name -> (initial q offset from qpos0, initial v, horizon in seconds)
SYSTEMS = {
    "pendulum": ([0.8], [2.0], 5.0),
    "double_pendulum": ([0.8, 0.8], [1.5, -2.0], 5.0),
    "spinning_body": ([0.0] * 7, [0.3, -0.1, 0.2, 3.0, -2.0, 5.0], 2.0),
}


@functools.cache
def loaded(name: str):
    return jc.load(MODELS / f"{name}.xml"), mujoco.MjModel.from_xml_path(str(MODELS / f"{name}.xml"))


rollout = jax.jit(jc.rollout)


@functools.cache
def energy_and_momentum_fn():
    def f(model, q, v):
        energy = dynamics.potential_energy(model, q) + dynamics.kinetic_energy(model, q, v)
        return energy, dynamics.spatial_momentum(model, q, v)

    return jax.jit(jax.vmap(f, in_axes=(None, 0, 0)))


def simulate(name: str, dt: float):
    """Trajectory of ``name`` with time step ``dt``: (q (T, nq), energy (T+1,), momentum (T+1, 6))."""
    model, _ = loaded(name)
    model = model.replace_options(dt=dt)
    dq, v0, horizon = SYSTEMS[name]
    state = jc.init(model, q=model.qpos0 + jnp.asarray(dq), v=jnp.asarray(v0))
    steps = int(round(horizon / dt))
    final, traj = rollout(model, state, jnp.zeros((steps, 0)))
    q = jnp.concatenate([state.q[None], traj.q])
    v = jnp.concatenate([state.v[None], traj.v])
    energy, momentum = energy_and_momentum_fn()(model, q, v)
    assert int(final.error) == 0 and float(final.time) == pytest.approx(horizon)
    return np.asarray(traj.q), np.asarray(energy), np.asarray(momentum)


@functools.cache
def simulated(name: str, dt: float):
    return simulate(name, dt)


def mujoco_trajectory(mj: mujoco.MjModel, q0, v0, steps: int, ctrls=None) -> np.ndarray:
    mj = mujoco_step_model(mj)
    data = mujoco.MjData(mj)
    data.qpos[:], data.qvel[:] = q0, v0
    out = []
    for t in range(steps):
        if ctrls is not None:
            data.ctrl[:] = ctrls[t]
        mujoco.mj_step(mj, data)
        out.append(data.qpos.copy())
    return np.asarray(out)


@pytest.mark.parametrize("name", list(SYSTEMS))
def test_rollout_matches_mujoco_euler(name):
    model, mj = loaded(name)
    q_ours, _, _ = simulated(name, 1e-3)
    dq, v0, _ = SYSTEMS[name]
    q_ref = mujoco_trajectory(mj, np.asarray(model.qpos0) + dq, v0, len(q_ours))
    # the double pendulum is chaotic: compare the first second tightly, all of it loosely
    assert np.max(np.abs(q_ours[:1000] - q_ref[:1000])) < 1e-10
    assert np.max(np.abs(q_ours - q_ref)) < 1e-6


def test_actuated_damped_sprung_tree_matches_mujoco_euler(scene):
    # free + ball + hinge + slide joints, implicit damping, a spring, a motor, a clamped motor and
    # a position servo: 300 steps agree with MuJoCo's Euler integrator to rounding
    model, mj = scene("all_joints")
    rng = np.random.default_rng(7)
    v0 = rng.standard_normal(mj.nv)
    ctrls = 1.5 * rng.standard_normal((300, mj.nu))
    final, traj = rollout(model, jc.init(model, v=v0), jnp.asarray(ctrls))
    q_ref = mujoco_trajectory(mj, mj.qpos0, v0, 300, ctrls)
    assert np.max(np.abs(np.asarray(traj.q) - q_ref)) < 1e-10
    assert float(final.time) == pytest.approx(300 * 0.002)


@pytest.mark.parametrize("name", list(SYSTEMS))
def test_energy_drift_is_first_order_in_dt(name):
    # semi-implicit Euler is a first-order method: halving dt halves the energy error
    _, e_coarse, _ = simulated(name, 2e-3)
    _, e_fine, _ = simulated(name, 1e-3)
    err_coarse = np.max(np.abs(e_coarse - e_coarse[0]))
    err_fine = np.max(np.abs(e_fine - e_fine[0]))
    assert 1.8 < err_coarse / err_fine < 2.2
    # and its size at dt = 1 ms stays below 1% of the energy (MuJoCo C's Euler gives the same)
    assert err_fine < 1e-2 * abs(e_fine[0])


def test_energy_error_of_the_pendulum_stays_bounded():
    # constant mass matrix: semi-implicit Euler is symplectic, so the energy error oscillates
    # without secular growth (the error of the second half is not larger than the first's). With
    # a configuration-dependent M (double pendulum) the method is not symplectic and only the
    # first-order bound above holds.
    _, energy, _ = simulated("pendulum", 1e-3)
    error = np.abs(energy - energy[0])
    half = len(error) // 2
    assert np.max(error[half:]) < 1.2 * np.max(error[:half])


def test_free_body_momentum_drift_is_first_order():
    # no gravity, no forces: the exact motion conserves linear and angular momentum. The free
    # joint's velocity is that of the body origin, which is off the centre of mass, so the
    # explicit centripetal/gyroscopic terms make both drift at first order in dt (as MuJoCo C).
    _, _, m_coarse = simulated("spinning_body", 2e-3)
    _, _, m_fine = simulated("spinning_body", 1e-3)
    for part in (slice(0, 3), slice(3, 6)):  # angular, linear
        drift_coarse = np.max(np.linalg.norm(m_coarse[:, part] - m_coarse[0, part], axis=-1))
        drift_fine = np.max(np.linalg.norm(m_fine[:, part] - m_fine[0, part], axis=-1))
        assert 1.8 < drift_coarse / drift_fine < 2.2
        assert drift_fine < 1e-2 * np.linalg.norm(m_fine[0, part])


def test_quaternions_stay_unit_norm():
    q, _, _ = simulated("spinning_body", 1e-3)
    np.testing.assert_allclose(np.linalg.norm(q[:, 3:7], axis=-1), 1.0, atol=1e-12)


def test_non_finite_state_sets_the_error_flag_per_environment():
    model, _ = loaded("double_pendulum")
    states = jax.vmap(lambda v: jc.init(model, v=v))(jnp.array([[0.1, 0.2], [jnp.nan, 0.0]]))
    stepped = jax.jit(jax.vmap(jc.step, in_axes=(None, 0, None)))(model, states, None)
    assert stepped.error.tolist() == [0, ErrorFlag.NON_FINITE_STATE]
    assert np.all(np.isfinite(np.asarray(stepped.q[0])))
