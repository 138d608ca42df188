"""Ball joints: limits as hard unilateral constraints, and actuators on ball and free joints.

Limits (MuJoCo ``mj_instantiateLimit``, ball branch): one slot on the joint's rotation angle ``θ``,
distance ``max(range) − θ``, normal row ``−axis`` on the joint's dofs
(``jaxsim_contact.constraints._ball_limit_rows``). The geometry equals MuJoCo's ``efc_pos`` /
``efc_J``; the forces are this engine's hard ones, checked in closed form (a tilted inverted
pendulum held at its limit reads ``m g L sin θ`` in ``jointlimitfrc``) and against the same model
without the limit (a released pendulum swings freely until the limit's window).

Actuators (MuJoCo ``mj_transmission``, ``mjTRN_JOINT`` / ``mjTRN_JOINTINPARENT`` on ball and free
joints): ``actuator_length`` / ``actuator_moment`` / ``actuator_force`` / ``qfrc_actuator`` and
200-step trajectories equal MuJoCo 4.0.0's on MJX's ``pendula.xml`` — with joint and tendon limits
disabled in both engines (``<flag limit="disable"/>``: pendula's slides start on their lower limit,
and MuJoCo's soft limits differ from hard ones when active) — and on a small model with every
transmission variant under the implicit integrator. Central differences for the derivatives.
"""

from __future__ import annotations

import pathlib

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.constraints import slot_ranges
from jaxsim_contact.constraints._ball_limit_rows import ball_angles, ball_limit_rows
from jaxsim_contact.dynamics._rnea import actuator_forces, actuator_terms
from jaxsim_contact.io import ModelError
from mujoco_comparison import (assert_derivatives_match_central_differences,
                               assert_trajectory_equals_mujoco)

PENDULA = pathlib.Path(mujoco.__file__).parent / "mjx" / "test_data" / "pendula.xml"

GRAVITY, MASS, LENGTH, LIMIT_DEG = 9.81, 1.0, 0.5, 30.0

#: an inverted pendulum on a ball joint (all mass in the sphere at height LENGTH), its limit a
#: cone of LIMIT_DEG around the vertical
INVERTED_PENDULUM = f"""
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body name="pole">
      <joint name="ball" type="ball" range="0 {LIMIT_DEG}"/>
      <geom type="capsule" fromto="0 0 0 0 0 {LENGTH}" size="0.02" mass="0"/>
      <geom type="sphere" pos="0 0 {LENGTH}" size="0.05" mass="{MASS}"/>
    </body>
  </worldbody>
  <sensor><jointlimitfrc joint="ball"/></sensor>
</mujoco>
"""

#: every joint transmission on ball and free joints: gears in the child and the parent frame, a
#: position servo (its force depends on the length, the rotation vector), a 6-vector free gear
BALL_ACTUATORS = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <body name="base" pos="0 0 1">
      <freejoint name="free"/>
      <geom type="box" size=".1 .15 .2" mass="2"/>
      <body name="arm" pos="0.1 0 -0.2">
        <joint name="ball" type="ball" damping="0.1"/>
        <geom type="capsule" fromto="0 0 0 0.1 0.05 -0.4" size="0.04" mass="1"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="ball" gear="1 2 3"/>
    <motor jointinparent="ball" gear="-2 1 0.5"/>
    <position joint="ball" gear="0 1 0.5" kp="5" kv="0.5"/>
    <motor joint="free" gear="1 2 3 0.1 0.2 0.3"/>
    <motor jointinparent="free" gear="0.5 0 1 0.3 -0.2 0.1"/>
  </actuator>
</mujoco>
"""


def _from_string(text: str, tmp_path, integrator: str | None = None):
    path = tmp_path / "model.xml"
    path.write_text(text)
    mj = mujoco.MjModel.from_xml_path(str(path))
    if integrator is None:
        return mj, jc.load(path)
    mj.opt.integrator = int(getattr(mujoco.mjtIntegrator, "mjINT_" + integrator.upper()))
    return mj, jc.io.from_mjmodel(mj, source=str(path))


def _random_state(mj, data, rng, scale=1.0):
    """Random ``qpos`` (quaternions left unnormalised: both engines normalise them), ``qvel`` and
    ``ctrl``."""
    data.qpos[:] = mj.qpos0 + scale * rng.normal(size=mj.nq)
    data.qvel[:] = rng.normal(size=mj.nv)
    data.ctrl[:] = rng.normal(size=mj.nu)


def _tilted(axis, angle: float) -> np.ndarray:
    """The ball quaternion of a rotation by ``angle`` (rad) about the unit ``axis``."""
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


# --- actuators ------------------------------------------------------------------------------------


def _dense_moment(mj, data) -> np.ndarray:
    moment = np.zeros((mj.nu, mj.nv))
    mujoco.mju_sparse2dense(moment, data.actuator_moment, data.moment_rownnz, data.moment_rowadr,
                            data.moment_colind)
    return moment


def test_pendula_loads_and_its_actuators_equal_mujoco():
    """MJX's pendula.xml (motors on a ball joint with child- and parent-frame gears, a
    parent-frame 6-vector gear on a free joint) loads; on 20 random states and controls
    ``actuator_length``, ``actuator_velocity``, ``actuator_force``, ``qfrc_actuator`` and the
    moment matrix (∂ velocity / ∂ qvel) equal MuJoCo's to 1e-10."""
    model = jc.load(PENDULA)
    mj = mujoco.MjModel.from_xml_path(str(PENDULA))
    assert model.actuator_in_parent == (False,) * 9 + (True, True)
    assert slot_ranges(model)["ball_limits"] == slice(12, 13)  # joint1, "range 0 35"
    terms = jax.jit(lambda q, v, u: (actuator_terms(model, q, v, u), actuator_forces(model, q, v, u),
                                     jax.jacfwd(lambda w: actuator_terms(model, q, w, u)[1])(v)))
    rng = np.random.default_rng(0)
    data = mujoco.MjData(mj)
    rotated = 0.0
    for _ in range(20):
        _random_state(mj, data, rng, scale=0.5)
        mujoco.mj_forward(mj, data)
        (length, velocity, force), qfrc, moment = terms(
            *(jnp.asarray(x) for x in (data.qpos, data.qvel, data.ctrl)))
        np.testing.assert_allclose(length, data.actuator_length, rtol=0, atol=1e-10)
        np.testing.assert_allclose(velocity, data.actuator_velocity, rtol=0, atol=1e-10)
        np.testing.assert_allclose(force, data.actuator_force, rtol=0, atol=1e-10)
        np.testing.assert_allclose(qfrc, data.qfrc_actuator, rtol=0, atol=1e-10)
        np.testing.assert_allclose(moment, _dense_moment(mj, data), rtol=0, atol=1e-10)
        rotated = max(rotated, float(np.abs(data.actuator_length[:3]).max()))
    assert rotated > 1.0  # the ball's lengths (gear · rotation vector) were exercised


def test_pendula_trajectory_equals_mujoco_with_limits_disabled():
    """200 Euler steps of pendula.xml with small random controls equal ``mj_step``'s to 1e-8 (2e-11
    measured), joint and
    tendon limits disabled in both engines (its slides start on their lower limits, where MuJoCo's
    soft limits and the hard ones differ)."""
    mj = mujoco.MjModel.from_xml_path(str(PENDULA))
    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_LIMIT)
    model = jc.io.from_mjmodel(mj, source=str(PENDULA))
    assert slot_ranges(model)["ball_limits"] == slice(0, 0)
    rng = np.random.default_rng(1)
    v0 = 0.3 * rng.normal(size=mj.nv)
    # small controls (up to ~7 N·m through the gears of 150–300): with unit ones MuJoCo's own
    # limit-free trajectory leaves 1e6 within 100 steps
    ctrl = 0.01 * rng.normal(size=mj.nu)
    assert_trajectory_equals_mujoco(mj, model, mj.qpos0.copy(), v0, ctrl, 200)


def test_ball_and_free_transmissions_under_the_implicit_integrator(tmp_path):
    """Every ball / free joint transmission (child- and parent-frame gears, a position servo
    whose force depends on the rotation vector and on ``moment · v``): 200 implicit steps equal
    MuJoCo's to 1e-8 (the velocity derivative of the servo goes through the ball's moment)."""
    mj, model = _from_string(BALL_ACTUATORS, tmp_path, integrator="implicit")
    assert model.actuator_in_parent == (False, True, False, False, True)
    data = mujoco.MjData(mj)
    _random_state(mj, data, np.random.default_rng(2), scale=0.3)
    mujoco.mj_normalizeQuat(mj, data.qpos)
    assert_trajectory_equals_mujoco(mj, model, data.qpos.copy(), 0.5 * data.qvel, data.ctrl.copy(), 200)


def test_step_derivatives_with_ball_and_free_joint_actuators(tmp_path):
    """``jacfwd`` = ``jacrev`` = central differences (1e-5) of one step's ``(q, v)`` with respect
    to ``q``, ``v`` and ``ctrl`` through the ball and free transmissions."""
    mj, model = _from_string(BALL_ACTUATORS, tmp_path)
    data = mujoco.MjData(mj)
    _random_state(mj, data, np.random.default_rng(3), scale=0.3)
    mujoco.mj_normalizeQuat(mj, data.qpos)

    def next_state(q, v, ctrl):
        nxt = jc.step(model, jc.init(model, q=q, v=v), ctrl)
        return jnp.concatenate([nxt.q, nxt.v])

    inputs = tuple(jnp.asarray(x) for x in (data.qpos, data.qvel, data.ctrl))
    assert_derivatives_match_central_differences(next_state, inputs, steps=(1e-6, 1e-6, 1e-6), rtol=1e-5)


# --- limits ---------------------------------------------------------------------------------------


def test_ball_angle_equals_mujoco_quat2vel():
    """``ball_angles``: the norm and direction of MuJoCo's ``mju_quat2Vel`` of the normalised
    quaternion, for both hemispheres (``w < 0``: the angle maps into ``[0, π]``), with the
    ``e_x`` axis and finite derivatives at the identity."""
    rng = np.random.default_rng(4)
    for quat in rng.normal(size=(50, 4)):
        unit = quat / np.linalg.norm(quat)
        rotation = np.zeros(3)
        mujoco.mju_quat2Vel(rotation, unit, 1.0)
        angle, axis = ball_angles(jnp.asarray(quat))
        np.testing.assert_allclose(angle, np.linalg.norm(rotation), rtol=0, atol=1e-12)
        np.testing.assert_allclose(axis, rotation / np.linalg.norm(rotation), rtol=0, atol=1e-12)
    identity = jnp.asarray([2.0, 0.0, 0.0, 0.0])
    angle, axis = ball_angles(identity)
    assert float(angle) == 0.0 and np.array_equal(axis, [1.0, 0.0, 0.0])
    derivative = jax.jacfwd(lambda q: jnp.concatenate([ball_angles(q)[0][None], ball_angles(q)[1]]))(identity)
    assert np.all(np.isfinite(derivative))


def test_ball_limit_rows_equal_mujoco_constraint_rows(tmp_path):
    """Where MuJoCo instantiates the ball limit (beyond it, about random axes), the slot's
    distance is MuJoCo's ``efc_pos`` and its normal row (``−axis`` on the dofs) MuJoCo's
    ``efc_J``; inside the range, away from the margin and at rest, the slot is inactive."""
    mj, model = _from_string(INVERTED_PENDULUM, tmp_path)
    data = mujoco.MjData(mj)
    rng = np.random.default_rng(5)
    rows = jax.jit(lambda q, v: ball_limit_rows(model, q, v, model.options.dt, model.options.contact_margin))
    for _ in range(10):
        data.qpos[:] = _tilted(rng.normal(size=3), np.deg2rad(LIMIT_DEG) + rng.uniform(0.01, 0.5))
        data.qvel[:] = 0.0
        mujoco.mj_forward(mj, data)
        assert data.nefc == 1
        block = rows(jnp.asarray(data.qpos), jnp.asarray(data.qvel))
        np.testing.assert_allclose(block.distance, data.efc_pos, rtol=0, atol=1e-12)
        np.testing.assert_allclose(-block.axis, data.efc_J.reshape(1, 3), rtol=0, atol=1e-12)
        assert bool(block.active[0])
    inside = rows(jnp.asarray(_tilted([1.0, 2.0, 0.0], np.deg2rad(LIMIT_DEG) - 0.1)), jnp.zeros(3))
    assert not bool(inside.active[0])


def test_ball_limit_holds_a_tilted_pendulum_and_reads_its_torque(tmp_path):
    """An inverted pendulum tilted to exactly its limit angle, about a horizontal axis, with
    gravity pulling it further: over 200 steps the angle stays within 1e-9 rad of the limit, and
    ``jointlimitfrc`` reads the static torque ``m g L sin θ`` to 1e-6 (MuJoCo: the force of the
    joint's limit row)."""
    _, model = _from_string(INVERTED_PENDULUM, tmp_path)
    limit = np.deg2rad(LIMIT_DEG)
    state = jc.init(model, q=jnp.asarray(_tilted([1.0, 1.0, 0.0], limit)))
    torque = jc.sensors(model, state)
    np.testing.assert_allclose(torque, [MASS * GRAVITY * LENGTH * np.sin(limit)], rtol=0, atol=1e-6)
    final, trajectory = jax.jit(jc.rollout)(
        model, state, jnp.zeros((200, 0)))
    assert int(final.error) == 0
    angle, axis = ball_angles(trajectory.q)
    assert float(jnp.max(angle)) <= limit + 1e-9
    assert float(jnp.min(angle)) >= limit - 1e-6  # held at the limit, not pushed back
    np.testing.assert_allclose(axis, np.broadcast_to([2 ** -0.5, 2 ** -0.5, 0.0], axis.shape), atol=1e-9)
    assert bool(jnp.all(trajectory.contact.active[:, slot_ranges(model)["ball_limits"]]))


def test_released_pendulum_swings_freely_until_its_limit(tmp_path):
    """Released at 10° from the vertical, the inverted pendulum falls as the same model without
    the limit (to 1e-12) until the limit's speculative window opens; then it stops at the limit
    (the angle never exceeds it by more than 1e-6 rad) and stays there."""
    steps = 300
    _, model = _from_string(INVERTED_PENDULUM, tmp_path)
    unlimited_text = (INVERTED_PENDULUM.replace(f'range="0 {LIMIT_DEG}"', "")
                      .replace('<sensor><jointlimitfrc joint="ball"/></sensor>', ""))
    _, free = _from_string(unlimited_text, tmp_path)
    assert slot_ranges(free)["ball_limits"] == slice(0, 0)
    q0 = jnp.asarray(_tilted([0.3, -1.0, 0.0], np.deg2rad(10.0)))
    run = jax.jit(jc.rollout)
    _, limited = run(model, jc.init(model, q=q0), jnp.zeros((steps, 0)))
    _, unlimited = run(free, jc.init(free, q=q0), jnp.zeros((steps, 0)))
    active = np.asarray(limited.contact.active[:, 0])
    assert active.any() and not active[0]
    first = int(np.argmax(active))  # the first step that solved with the limit's slot
    # states up to the one that step started from are the unlimited ones
    np.testing.assert_allclose(limited.q[:first], unlimited.q[:first], rtol=0, atol=1e-12)
    np.testing.assert_allclose(limited.v[:first], unlimited.v[:first], rtol=0, atol=1e-12)
    limit = np.deg2rad(LIMIT_DEG)
    angle_free = np.asarray(ball_angles(unlimited.q)[0])
    # the step that met the limit started inside the range, and without it the pole falls on
    assert angle_free[first - 1] < limit and angle_free.max() > limit + 0.1
    angle = np.asarray(ball_angles(limited.q)[0])
    assert angle.max() <= limit + 1e-6
    np.testing.assert_allclose(angle[first + 5:], limit, atol=1e-6)
    np.testing.assert_allclose(limited.v[-1], 0.0, atol=1e-6)


def test_step_derivatives_at_an_active_ball_limit(tmp_path):
    """``jacfwd`` = ``jacrev`` = central differences (1e-5) of one step's ``(q, v)`` at the
    tilted pendulum's limit, moving outwards about an oblique axis (the slot is active and
    carries force)."""
    _, model = _from_string(INVERTED_PENDULUM, tmp_path)
    q0 = jnp.asarray(_tilted([1.0, 2.0, 0.0], np.deg2rad(LIMIT_DEG)))
    v0 = jnp.asarray([0.4, 0.3, 0.2])  # axis · v > 0: the angle grows

    def next_state(q, v):
        nxt = jc.step(model, jc.init(model, q=q, v=v), jnp.zeros((0,)))
        return jnp.concatenate([nxt.q, nxt.v, nxt.contact.force[:, 2]])

    out = jax.jit(next_state)(q0, v0)
    assert float(out[-1]) > 1.0  # the limit pushes
    assert_derivatives_match_central_differences(next_state, (q0, v0), steps=(1e-6, 1e-6), rtol=1e-5)


# --- input -----------------------------------------------------------------------------------------


def test_ball_limit_flag_and_bad_ranges(tmp_path):
    """``<flag limit="disable"/>`` removes the slot (as MuJoCo's limit disable flag); a ball range
    MuJoCo refuses (``range[0] ≠ 0``) is a named model error."""
    _, model = _from_string(INVERTED_PENDULUM.replace('timestep="0.002"/>', 'timestep="0.002"><flag limit="disable"/></option>'),
                            tmp_path)
    assert slot_ranges(model)["ball_limits"] == slice(0, 0)
    path = tmp_path / "bad.xml"
    path.write_text(INVERTED_PENDULUM.replace(f'range="0 {LIMIT_DEG}"', 'range="-10 30"'))
    with pytest.raises(ModelError, match="ball joint") as info:
        jc.load(path)
    assert str(path) in str(info.value)
