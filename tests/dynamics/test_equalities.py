"""Equality constraints and dry friction (issue 48): connect, weld, joint and tendon equalities as
hard bilateral rows, joint frictionloss as box rows.

* residuals and Jacobians equal MuJoCo C's ``efc_pos`` / ``efc_J`` rows (float64, 1e-10) for every
  equality kind, between bodies, sites and the world;
* hard constraints hold over 1000 steps (violation ≤ 1e-8 per step) without gaining energy
  (1e-6 J per step, no gravity: semi-implicit Euler's energy oscillates under gravity, with or
  without constraints): a closed four-bar linkage, a welded pair of free bodies, a coupled gripper;
* ``Equalities.active`` switches a constraint at run time without recompiling;
* a hinge with frictionloss ``f`` under a torque ramp sticks until ``|τ| = f`` and slips at the
  first step beyond;
* ``jacfwd`` = ``jacrev`` = central differences of ``step`` on an equality scene (w.r.t. q, v and a
  weld's relative pose) and a frictionloss scene (w.r.t. v, ctrl and the frictionloss);
* bad input: named errors.
"""

from __future__ import annotations

import os
import pathlib
import tempfile

import equinox as eqx
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact import dynamics
from jaxsim_contact.constraints._equality_rows import equality_errors
from jaxsim_contact.dynamics._tendons import tendon_kinematics
from jaxsim_contact.io import InvalidFrictionError

STEPS = 1000


def _write(xml: str) -> pathlib.Path:
    directory = pathlib.Path(tempfile.mkdtemp())
    path = directory / "model.xml"
    path.write_text(xml)
    return path


def _load(xml: str) -> jc.Model:
    return jc.load(_write(xml))


EVERY_KIND = """
<mujoco><option><flag contact="disable"/></option>
  <worldbody>
    <body name="a" pos="0 0 1"><freejoint/><geom size=".1" mass="1"/>
      <site name="sa" pos="0.1 0.2 0" euler="10 20 30"/>
      <body name="a2" pos="0.3 0 0"><joint type="ball"/><geom size=".05" mass="0.3"/></body></body>
    <body name="b" pos="0.5 0 1" euler="0 30 0"><freejoint/><geom size=".1" mass="1"/>
      <site name="sb" pos="0 0.1 0.3"/></body>
    <body name="c" pos="1 0 1"><joint name="j1" type="hinge"/><joint name="j2" type="slide" axis="1 0 0"/>
      <geom size=".1" mass="1"/></body>
  </worldbody>
  <tendon><fixed name="t1"><joint joint="j1" coef="2"/></fixed><fixed name="t2"><joint joint="j2" coef="1"/></fixed></tendon>
  <equality>
    <connect body1="a" body2="b" anchor="0.2 0 0"/>
    <weld body1="a" body2="b" relpose="0.1 0.2 0.3 1 0.2 0 0" anchor="0 0.1 0" torquescale="2"/>
    <joint joint1="j1" joint2="j2" polycoef="0.1 2 0.3 0.4 0.5"/>
    <tendon tendon1="t1" tendon2="t2" polycoef="0.2 1 0.5 0 0"/>
    <connect site1="sa" site2="sb"/>
    <weld site1="sa" site2="sb" torquescale="0.5"/>
    <weld body1="a"/>
    <connect body1="a2" anchor="0.1 0 0"/>
    <joint joint1="j2" polycoef="0.3 0 0 0 0"/>
  </equality>
</mujoco>
"""


def _mujoco_rows(kinds, errors, jacobians):
    """Our slots' rows in MuJoCo's ``efc`` order: connect 3, weld 6, joint / tendon 1 (normal row)."""
    rows_error, rows_jacobian, slot = [], [], 0
    for kind in kinds:
        if kind == "connect":
            rows_error += list(errors[slot])
            rows_jacobian += list(jacobians[slot])
            slot += 1
        elif kind == "weld":
            rows_error += list(errors[slot]) + list(errors[slot + 1])
            rows_jacobian += list(jacobians[slot]) + list(jacobians[slot + 1])
            slot += 2
        else:
            rows_error.append(errors[slot][2])
            rows_jacobian.append(jacobians[slot][2])
            slot += 1
    return np.asarray(rows_error), np.asarray(rows_jacobian)


def test_equality_rows_match_mujoco_efc_pos_and_jacobian():
    """Connect and weld between bodies, between sites and to the world, joint and tendon
    couplings with two and with one object: efc_pos and efc_J at random configurations."""
    path = _write(EVERY_KIND)
    model = jc.load(path)
    mj = mujoco.MjModel.from_xml_path(str(path))
    mj.opt.jacobian = int(mujoco.mjtJacobian.mjJAC_DENSE)
    data = mujoco.MjData(mj)
    rows = jax.jit(lambda q: _errors_and_jacobians(model, q))
    kinds = [k.value for k in model.equalities.kind]
    rng = np.random.default_rng(0)
    for _ in range(20):
        data.qpos[:] = mj.qpos0 + rng.normal(size=mj.nq) * 0.5
        mujoco.mj_normalizeQuat(mj, data.qpos)
        mujoco.mj_forward(mj, data)
        errors, jacobians = (np.asarray(x) for x in rows(jnp.asarray(data.qpos)))
        ours_error, ours_jacobian = _mujoco_rows(kinds, errors, jacobians)
        assert data.nefc == ours_error.shape[0]
        np.testing.assert_allclose(ours_error, data.efc_pos, rtol=0, atol=1e-10)
        np.testing.assert_allclose(ours_jacobian, data.efc_J.reshape(data.nefc, mj.nv), rtol=0, atol=1e-10)


def _passive_run(model, state, errors_of, steps=STEPS):
    """Largest constraint error and largest per-step energy gain over ``steps`` steps."""
    step = jax.jit(jc.step)
    energy = jax.jit(lambda q, v: dynamics.potential_energy(model, q) + dynamics.kinetic_energy(model, q, v))
    previous = float(energy(state.q, state.v))
    worst_error, worst_gain = 0.0, -np.inf
    for _ in range(steps):
        state = step(model, state)
        worst_error = max(worst_error, float(np.max(np.abs(errors_of(state.q)))))
        current = float(energy(state.q, state.v))
        worst_gain = max(worst_gain, current - previous)
        previous = current
    assert int(state.error) == 0
    return worst_error, worst_gain, state


def _errors_and_jacobians(model, q):
    kin = dynamics.forward_kinematics(model, q)
    axes = dynamics.motion_axes(model, kin)
    return equality_errors(model, q, kin, axes, tendon_kinematics(model, q, kin, axes))


def _errors_function(model):
    return jax.jit(lambda q: _errors_and_jacobians(model, q)[0])


FOUR_BAR = """
<mujoco><option timestep="0.002" gravity="0 0 0"><flag contact="disable"/></option>
  <worldbody>
    <body name="crank"><joint name="a" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.02" mass="0.5"/>
      <body name="coupler" pos="0 0 0.3"><joint name="b" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.9 0 0.4" size="0.02" mass="1"/></body></body>
    <body name="rocker" pos="1 0 0"><joint name="c" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 -0.1 0 0.7" size="0.02" mass="0.8"/></body>
  </worldbody>
  <equality><connect body1="coupler" body2="rocker" anchor="0.9 0 0.4"/></equality>
</mujoco>
"""


def test_four_bar_loop_closure_holds_without_gaining_energy():
    """A crank-rocker four-bar linkage closed by a connect constraint, driven by its initial
    velocity: the loop stays closed (1e-8 m) and the energy never rises (1e-6 J per step)."""
    model = _load(FOUR_BAR)
    errors_of = _errors_function(model)
    assert float(np.max(np.abs(errors_of(model.qpos0)))) < 1e-12  # closed at qpos0
    # a velocity compatible with the loop: project a guess onto the constraint's null space
    jacobian = np.asarray(_errors_and_jacobians(model, model.qpos0)[1]).reshape(3, 3)
    # 1.5 rad/s: semi-implicit Euler's kinetic energy of a mechanism whose inertia changes along
    # the motion oscillates by O(Δt ω³) per step with or without constraints (1.4e-6 J per step at
    # 4 rad/s for this one); the bound is on the constraints, not on the integrator
    guess = np.array([1.5, 0.0, 0.0])
    velocity = guess - np.linalg.pinv(jacobian) @ (jacobian @ guess)
    worst_error, worst_gain, state = _passive_run(model, jc.init(model, v=jnp.asarray(velocity)), errors_of)
    assert worst_error <= 1e-8, worst_error
    assert worst_gain <= 1e-6, worst_gain
    assert abs(float(state.q[0])) > 0.5  # the crank really turned


WHIRLED_BALL = """
<mujoco><option timestep="0.002" gravity="0 0 0"><flag contact="disable"/></option>
  <worldbody>
    <site name="anchor" pos="0 0 1"/>
    <body name="ball" pos="0.5 0 1"><freejoint/><geom size=".05" mass="1"/><site name="knot"/></body>
  </worldbody>
  <tendon><spatial name="string" limited="true" range="0 0.5">
    <site site="anchor"/><site site="knot"/></spatial></tendon>
</mujoco>
"""


def _string_length(model):
    @jax.jit
    def length(q):
        kin = dynamics.forward_kinematics(model, q)
        return tendon_kinematics(model, q, kin, dynamics.motion_axes(model, kin)).length[0]
    return length


def _on_the_circle(model, angle, speed):
    """The ball on the taut string's circle at ``angle`` (rad), moving along it at ``speed``."""
    direction = np.array([np.cos(angle), np.sin(angle), 0.0])
    q = model.qpos0.at[:3].set(jnp.asarray([0.0, 0.0, 1.0] + 0.5 * direction))
    return jc.init(model, q=q, v=jnp.zeros(6).at[:3].set(speed * jnp.asarray([-direction[1], direction[0], 0.0])))


def test_ball_whirled_on_a_taut_string_keeps_its_length_and_energy():
    """A ball on a free joint whirled at 0.75 m/s on a 0.5 m string (a tendon at its length limit),
    no gravity: the limit's second-order drift, ``Δt² v²/r`` per step, is projected out
    (``Options.project_limits``), so over 1000 steps (half a turn) the string stretches by at most
    1e-8 m, holds the ball (force > 0, reported by the string's row), and the passive run never gains more than 1e-6 J in a step
    nor loses more than 1e-4 of its energy in all. Without the projection the string stretches by
    more than 1e-6 m (the comparison can fail). jacfwd = jacrev = central differences of one step
    through the projection."""
    model = _load(WHIRLED_BALL)
    length = _string_length(model)
    energy = jax.jit(lambda q, v: dynamics.kinetic_energy(model, q, v))
    step = jax.jit(jc.step)
    state = _on_the_circle(model, 0.0, 0.75)
    initial = previous = float(energy(state.q, state.v))
    worst_stretch, worst_gain, turned = -np.inf, -np.inf, False
    for index in range(1000):
        state = step(model, state)
        worst_stretch = max(worst_stretch, float(length(state.q)) - 0.5)
        current = float(energy(state.q, state.v))
        worst_gain, previous = max(worst_gain, current - previous), current
        force = np.asarray(state.contact.force)[np.asarray(state.contact.active)]
        assert force.shape[0] == 1  # the string's row is in every solve
        # it holds the ball from the second step (the first starts along the tangent, where the
        # row needs no force to first order; its projection gives the centripetal impulse)
        assert index == 0 or force[0, 2] > 0
        turned = turned or float(state.q[0]) < -0.45
    assert int(state.error) == 0
    assert turned  # it went round
    assert worst_stretch <= 1e-8, worst_stretch
    assert worst_gain <= 1e-6, worst_gain
    assert abs(previous - initial) <= 1e-4 * initial, previous - initial

    unprojected = model.replace_options(project_limits=False)
    state, stretch = _on_the_circle(unprojected, 0.0, 0.75), -np.inf
    step = jax.jit(jc.step)
    for _ in range(200):
        state = step(unprojected, state)
        stretch = max(stretch, float(length(state.q)) - 0.5)
    assert stretch > 1e-6, stretch

    start = _on_the_circle(model, 1.0, 1.5)  # and moving out: the string pulls (force > 0)
    start = jc.init(model, q=start.q, v=start.v.at[:3].add(0.2 * jnp.asarray([np.cos(1.0), np.sin(1.0), 0.0])))

    def next_state(x):
        state = jc.step(model, jc.init(model, q=start.q.at[:3].set(x[:3]), v=start.v.at[:3].set(x[3:])))
        return jnp.concatenate([state.q, state.v])

    x = np.concatenate([np.asarray(start.q[:3]), np.asarray(start.v[:3])])
    moved = jax.jit(next_state)(jnp.asarray(x))
    assert float(length(moved[:7])) == pytest.approx(0.5, abs=1e-12)  # projected onto the string
    _check_derivatives(next_state, [x])


WELDED_PAIR = """
<mujoco><option timestep="0.002" gravity="0 0 0"><flag contact="disable"/></option>
  <worldbody>
    <body name="a" pos="0 0 1"><freejoint/><geom type="box" size=".1 .05 .02" mass="1"/></body>
    <body name="b" pos="0.25 0 1" euler="0 0 20"><freejoint/><geom type="box" size=".05 .1 .03" mass="2"/></body>
  </worldbody>
  <equality><weld body1="a" body2="b"/></equality>
</mujoco>
"""


def test_welded_free_bodies_move_as_one_rigid_body():
    """Two free boxes welded together, thrown spinning: their relative pose holds (1e-8) and the
    energy never rises (1e-6 J per step)."""
    model = _load(WELDED_PAIR)
    errors_of = _errors_function(model)
    v = np.zeros(model.nv)
    v[:6] = [0.3, 0.1, 0.0, 2.0, -1.0, 3.0]  # box a: translating and spinning
    worst_error, worst_gain, _ = _passive_run(model, jc.init(model, v=jnp.asarray(v)), errors_of)
    assert worst_error <= 1e-8, worst_error
    assert worst_gain <= 1e-6, worst_gain


GRIPPER = """
<mujoco><option timestep="0.002"><flag contact="disable"/></option>
  <worldbody>
    <body name="palm" pos="0 0 0.5">
      <body name="left"><joint name="left" type="slide" axis="1 0 0" range="-0.05 0.05"/>
        <geom type="box" size=".01 .02 .05" mass="0.1"/></body>
      <body name="right"><joint name="right" type="slide" axis="1 0 0" range="-0.05 0.05"/>
        <geom type="box" size=".01 .02 .05" mass="0.1"/></body>
    </body>
  </worldbody>
  <equality><joint joint1="right" joint2="left" polycoef="0 -1 0 0 0"/></equality>
  <actuator><motor joint="left"/></actuator>
</mujoco>
"""


def test_coupled_gripper_fingers_mirror_each_other():
    """Two fingers coupled by a joint equality (right = −left), one motor on the left: the
    fingers stay mirrored (1e-8 m) while the motor opens and closes them."""
    model = _load(GRIPPER)
    errors_of = _errors_function(model)
    step = jax.jit(jc.step)
    state = jc.init(model)
    worst = 0.0
    for k in range(STEPS):
        state = step(model, state, jnp.asarray([0.5 * np.sin(0.01 * k)]))
        worst = max(worst, float(np.max(np.abs(errors_of(state.q)))))
    assert int(state.error) == 0
    assert worst <= 1e-8, worst
    assert float(jnp.max(jnp.abs(state.q))) > 1e-3  # the fingers moved


def test_equality_switches_off_at_run_time_without_recompiling():
    """``Equalities.active`` is a dynamic mask: releasing a weld to the world under gravity lets
    the body fall, and the jitted step is not traced again."""
    model = _load("""
<mujoco><option timestep="0.002"><flag contact="disable"/></option>
  <worldbody><body name="box" pos="0 0 1"><freejoint/><geom type="box" size=".1 .1 .1" mass="1"/></body></worldbody>
  <equality><weld body1="box"/></equality>
</mujoco>""")
    traces = []

    @jax.jit
    def step(model, state):
        traces.append(1)
        return jc.step(model, state)

    state = jc.init(model)
    for _ in range(50):
        state = step(model, state)
    assert abs(float(state.q[2]) - 1.0) < 1e-8  # held by the weld
    released = eqx.tree_at(lambda m: m.equalities.active, model, jnp.zeros((1,), model.dtype))
    for _ in range(50):
        state = step(released, state)
    assert float(state.q[2]) < 1.0 - 0.5 * 9.81 * (0.1 ** 2) * 0.9  # it fell
    assert len(traces) == 1


FRICTION_HINGE = """
<mujoco><option timestep="0.002" gravity="0 0 0">
  </option>
  <worldbody><body><joint name="hinge" type="hinge" axis="0 1 0" frictionloss="{frictionloss}"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="1" contype="0" conaffinity="0"/></body></worldbody>
  <actuator><motor joint="hinge"/></actuator>
</mujoco>
"""


def test_frictionloss_sticks_until_the_torque_reaches_it_then_slips():
    """A hinge with frictionloss 3 N·m under a torque ramp of 0.01 N·m per step (seed 001 style):
    at rest while |τ| ≤ 3 (to 1e-9 rad/s), moving at the first step with |τ| > 3, and the
    friction force equals the applied torque while sticking and ∓3 while slipping."""
    model = _load(FRICTION_HINGE.format(frictionloss=3.0))
    step = jax.jit(jc.step)
    state = jc.init(model)
    for k in range(1, 400):
        torque = k / 100
        state = step(model, state, jnp.asarray([torque]))
        force = float(state.contact.generalized_force[0])
        if k <= 300:
            assert abs(float(state.v[0])) < 1e-9, (torque, state.v)
            assert force == pytest.approx(-torque, abs=1e-8)
        else:
            assert float(state.v[0]) > 1e-6, (torque, state.v)
            assert force == pytest.approx(-3.0, abs=1e-8)
            break
    else:
        pytest.fail("the hinge never slipped")


def _check_derivatives(function, points, h=1e-6):
    """jacfwd = jacrev = central differences of ``function`` at each row of ``points`` (one
    compilation of each for the whole batch); returns the forward Jacobians."""
    points = jnp.asarray(points)
    size = points.shape[1]
    forward = np.asarray(jax.jit(jax.vmap(jax.jacfwd(function)))(points))
    reverse = np.asarray(jax.jit(jax.vmap(jax.jacrev(function)))(points))
    steps = h * np.eye(size)
    shifted = np.concatenate([np.asarray(points)[:, None] + steps, np.asarray(points)[:, None] - steps], 1)
    values = np.asarray(jax.jit(jax.vmap(jax.vmap(function)))(jnp.asarray(shifted)))
    central = np.swapaxes(values[:, :size] - values[:, size:], 1, 2) / (2 * h)
    assert np.all(np.isfinite(forward))
    np.testing.assert_allclose(forward, reverse, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(forward, central, rtol=1e-5, atol=1e-7)
    return forward


THREE_MECHANISMS = """
<mujoco><option timestep="0.002"><flag contact="disable"/></option>
  <worldbody>
    <body name="arm"><joint name="arm" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size=".02" mass="1"/></body>
    <body name="load" pos="0.5 0 0"><freejoint/><geom type="box" size=".05 .05 .05" mass="0.5"/></body>

    <site name="anchor" pos="1.6 0 0.5"/>
    <body name="pendulum" pos="1 0 0"><joint name="swing" type="hinge" axis="0 1 0" pos="0 0 0.5"/>
      <geom type="capsule" fromto="0 0 0.5 0 0 0" size="0.02" mass="1"/><site name="tip"/></body>

    <body name="wheel" pos="3 0 0"><joint name="wheel" type="hinge" axis="0 1 0" frictionloss="3"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="1"/></body>
  </worldbody>
  <tendon><spatial name="rope" limited="true" range="0 0.6" stiffness="3">
    <site site="anchor"/><site site="tip"/></spatial></tendon>
  <equality><weld body1="arm" body2="load" relpose="0.5 0 0 1 0 0 0"/></equality>
  <actuator><motor joint="wheel"/></actuator>
</mujoco>
"""


def test_step_derivatives_with_a_weld_a_tendon_limit_and_frictionloss():
    """Three independent mechanisms in one model (one compilation): a free body welded to a
    swinging arm, a pendulum held by a rope at its length limit (as in test_tendons), a hinge with
    frictionloss. d(next q, v) w.r.t. (arm angle and velocity, weld relative position, pendulum
    angle and velocity, rope stiffness, wheel velocity, wheel torque, frictionloss): jacfwd =
    jacrev = central differences at a sticking and at a slipping wheel, away from mode switches."""
    model = _load(THREE_MECHANISMS)
    arm_dof, swing_dof, wheel_dof = (model.tree.joint_dof_adr[j] for j in (0, 2, 3))
    arm_q, swing_q = (model.tree.joint_qpos_adr[j] for j in (0, 2))
    limit_angle = float(np.arcsin(-0.25 / 0.6))  # the rope at its 0.6 m limit

    def stepped(x):
        changed = eqx.tree_at(
            lambda m: (m.equalities.data, m.tendons.stiffness, m.dof_frictionloss), model,
            (model.equalities.data.at[0, 3:6].set(x[2:5]), x[7:8],
             model.dof_frictionloss.at[wheel_dof].set(x[10])))
        q = model.qpos0.at[arm_q].set(x[0]).at[swing_q].set(x[5])
        v = jnp.zeros(model.nv).at[arm_dof].set(x[1]).at[swing_dof].set(x[6]).at[wheel_dof].set(x[8])
        return jc.step(changed, jc.init(changed, q=q, v=v), x[9:10])

    def next_state(x):
        state = stepped(x)
        return jnp.concatenate([state.q, state.v])

    sticking = [0.05, 0.3, 0.5, 0.01, -0.02, limit_angle + 1e-4, 0.3, 3.0, 0.0, 1.0, 3.0]
    slipping = [-0.3, -1.0, 0.45, 0.0, 0.05, limit_angle + 1e-4, 0.2, 2.0, 0.5, 1.0, 3.0]
    assert model.ntendon == 1 and model.neq == 1 and model.frictionloss_dofs == (wheel_dof,)
    # every constraint is in the solved system: the weld's 2 slots, the rope, the wheel's friction
    active = jax.jit(jax.vmap(lambda x: stepped(x).contact.active))(jnp.asarray([sticking, slipping]))
    assert np.asarray(active).sum(axis=1).tolist() == [4, 4]
    jacobians = _check_derivatives(next_state, [sticking, slipping])
    wheel_velocity = model.nq + wheel_dof
    assert jacobians[0][wheel_velocity, 9] == pytest.approx(0.0, abs=1e-12)  # held: torque moves nothing
    assert jacobians[1][wheel_velocity, 10] < 0  # slipping: more friction, slower


def test_bad_equality_and_friction_input_is_named():
    with pytest.raises(InvalidFrictionError, match="joint 'hinge'.*frictionloss -1"):
        _load(FRICTION_HINGE.format(frictionloss=-1.0))
    model = _load(GRIPPER)
    staggered = model.replace_options(solver=jc.contact.StaggeredProjections())
    with pytest.raises(NotImplementedError, match="StaggeredProjections.*bilateral"):
        jc.step(staggered, jc.init(staggered), jnp.zeros(1))
    # PGS and PrimalNewton solve the same rows: the fingers stay mirrored
    for solver in (jc.contact.PGS(max_iterations=200), jc.contact.PrimalNewton()):
        changed = model.replace_options(solver=solver)
        state = jax.jit(jc.step)(changed, jc.init(changed), jnp.asarray([0.5]))
        assert abs(float(state.q[0] + state.q[1])) < 1e-9 and abs(float(state.q[0])) > 0, solver


def test_incompatible_equalities_give_the_least_squares_compromise_and_a_bit():
    """A box welded to the world twice, at two poses 10 cm apart: no NaN, the
    EQUALITY_NOT_SATISFIED bit, and the box held between the two poses."""
    model = _load("""
<mujoco><option timestep="0.002"><flag contact="disable"/></option>
  <worldbody><body name="box" pos="0 0 1"><freejoint/><geom type="box" size=".1 .1 .1" mass="1"/></body></worldbody>
  <equality><weld body1="box"/><weld body1="box" relpose="0 0 -0.9 1 0 0 0"/></equality>
</mujoco>""")
    step = jax.jit(jc.step)
    state = jc.init(model)
    for _ in range(100):
        state = step(model, state)
    assert np.all(np.isfinite(np.asarray(state.q))) and np.all(np.isfinite(np.asarray(state.v)))
    assert int(state.error) & jc.ErrorFlag.EQUALITY_NOT_SATISFIED
    assert not int(state.error) & jc.ErrorFlag.NON_FINITE_STATE
    assert 0.9 < float(state.q[2]) < 1.0  # between the welds' targets z = 1 and z = 0.9
    consistent = _load(WELDED_PAIR)
    assert int(jax.jit(jc.step)(consistent, jc.init(consistent)).error) == 0


def test_no_nan_over_random_states_with_every_new_row_kind():
    """Random states of the weld + tendon limit + frictionloss model (angles in ±π, random
    orientations, velocities in ±5, torques in ±10): the step's values and its reverse-mode
    gradient are finite everywhere (issue 48 "Must show": 10⁴ states, run once with
    ``NAN_FUZZ_STATES=10000``, 100 s on one core; the suite runs 2,000, ~40 s)."""
    model = _load(THREE_MECHANISMS)
    count = int(os.environ.get("NAN_FUZZ_STATES", 2_000))
    rng = np.random.default_rng(0)
    q = np.tile(np.asarray(model.qpos0), (count, 1))
    hinge_q = [model.tree.joint_qpos_adr[j] for j in (0, 2, 3)]
    q[:, hinge_q] = rng.uniform(-np.pi, np.pi, (count, 3))
    free = model.tree.joint_qpos_adr[1]
    q[:, free:free + 3] += rng.normal(scale=0.3, size=(count, 3))
    quat = rng.normal(size=(count, 4))
    q[:, free + 3:free + 7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    v = rng.uniform(-5, 5, (count, model.nv))
    ctrl = rng.uniform(-10, 10, (count, model.nu))

    def loss(q, v, ctrl):
        state = jc.step(model, jc.State(q=q, v=v, time=jnp.zeros(()), error=jnp.zeros((), jnp.int32),
                                        contact=jc.init(model).contact), ctrl)
        return jnp.sum(state.q) + jnp.sum(state.v), state.error

    values_and_grads = jax.jit(jax.vmap(jax.value_and_grad(loss, argnums=(0, 1, 2), has_aux=True)))
    (value, error), grads = values_and_grads(jnp.asarray(q), jnp.asarray(v), jnp.asarray(ctrl))
    assert np.all(np.isfinite(np.asarray(value)))
    assert not np.any(np.asarray(error) & jc.ErrorFlag.NON_FINITE_STATE)
    for grad in grads:
        assert np.all(np.isfinite(np.asarray(grad)))


BAD_BASE = """<mujoco><worldbody><site name="s0"/><body name="b"><joint name="j"/>
  <geom name="box" type="box" size=".1 .1 .1"/><geom name="ball" size=".1" pos="1 0 0"/>
  <site name="s1" pos="0 0 1"/></body></worldbody>{extra}</mujoco>"""


@pytest.mark.parametrize("extra, pattern", [
    ('<tendon><spatial><site site="s0"/><site site="nope"/></spatial></tendon>', r"site 'nope' not found"),
    ('<tendon><spatial><site site="s0"/><geom geom="box"/><site site="s1"/></spatial></tendon>',
     r"geom 'box'.*not sphere or cylinder"),
    ('<equality><weld body1="b" body2="b"/></equality>', r"'b' is repeated in equality"),
    ('<equality><joint joint1="j" polycoef="nan 1 0 0 0"/></equality>', r"equality #0 has non-finite"),
])
def test_bad_tendon_and_equality_input_is_a_named_load_error(extra, pattern):
    """A tendon through a site that does not exist, a wrap geom that is not a sphere or cylinder,
    a weld of a body to itself, a polynomial with a non-finite coefficient: a ModelError naming
    the file and the element at load."""
    path = _write(BAD_BASE.format(extra=extra))
    with pytest.raises(jc.io.ModelError, match=pattern) as info:
        jc.load(path)
    assert str(path) in str(info.value)
