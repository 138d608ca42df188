"""``jc.sensors``: MuJoCo's ``sensordata`` layout, against MuJoCo C 4.0.0 on MJX's sensor test
models (``sensor/sensor.xml``: 75 sensors, frames of xbodies, bodies, geoms and sites in reference
frames of each type, accelerometers, force / torque sensors, rangefinders; ``actuator/tendon_force_clamp.xml``)
and MJX's barkour quadruped (an IMU); the acceleration-stage sensors with contacts and joint limits
against closed forms (a box resting on the floor, an arm held by its joint limit)."""

from __future__ import annotations

import pathlib
import warnings

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.dynamics._sensors import COMPUTED_SENSORS
from mujoco_comparison import assert_derivatives_match_central_differences

MJX_DATA = pathlib.Path(mujoco.__file__).parent / "mjx" / "test_data"


def _random_data(mj, rng):
    data = mujoco.MjData(mj)
    data.qpos[:] = mj.qpos0 + 0.4 * rng.normal(size=mj.nq)
    mujoco.mj_normalizeQuat(mj, data.qpos)
    data.qvel[:] = rng.normal(size=mj.nv)
    data.ctrl[:] = rng.uniform(-1.0, 1.0, size=mj.nu)
    data.act[:] = rng.uniform(0.0, 1.0, size=mj.na)
    data.time = float(rng.uniform(0.0, 2.0))
    mujoco.mj_forward(mj, data)
    return data


def _without_contacts(relative, tmp_path):
    """A copy of an MJX test model with contacts disabled (MuJoCo's soft contact forces are not
    the hard model's; every other force is the same)."""
    spec = mujoco.MjSpec.from_file(str(MJX_DATA / relative))
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    path = tmp_path / pathlib.Path(relative).name
    path.write_text(spec.to_xml())
    return path


@pytest.mark.parametrize("relative", ["sensor/sensor.xml", "actuator/tendon_force_clamp.xml"])
def test_computed_sensors_equal_mujoco(relative, tmp_path):
    """Every sensor of a computed kind equals MuJoCo's ``sensordata`` to 1e-10 on 10 random
    states (positions, velocities, controls, time), accelerometers, frame accelerations and
    force / torque sensors included (contacts disabled in both engines)."""
    path = _without_contacts(relative, tmp_path)
    if relative == "sensor/sensor.xml":
        with pytest.warns(jc.io.IgnoredSensorWarning):
            model = jc.load(path)
    else:
        model = jc.load(path)
    mj = mujoco.MjModel.from_xml_path(str(path))
    chosen = tuple(i for i, kind in enumerate(model.sensors.kind) if kind in COMPUTED_SENSORS)
    assert len(chosen) == {"sensor/sensor.xml": 73, "actuator/tendon_force_clamp.xml": 4}[relative]
    read = jax.jit(lambda state, ctrl: jc.sensors(model, state, ctrl, select=chosen))
    rng = np.random.default_rng(0)
    for _ in range(10):
        data = _random_data(mj, rng)
        state = jc.init(model, q=jnp.asarray(data.qpos), v=jnp.asarray(data.qvel),
                        act=jnp.asarray(data.act) if mj.na else None)
        state = jc.State(q=state.q, v=state.v, time=jnp.asarray(data.time), error=state.error,
                         contact=state.contact, act=state.act)
        expected = np.concatenate([data.sensordata[mj.sensor_adr[i]:mj.sensor_adr[i] + mj.sensor_dim[i]]
                                   for i in chosen])
        np.testing.assert_allclose(read(state, jnp.asarray(data.ctrl)), expected, rtol=1e-10, atol=1e-10)


def test_sensor_kinds_not_computed_are_named():
    with pytest.warns(jc.io.IgnoredSensorWarning, match="camprojection x2"):
        model = jc.load(MJX_DATA / "sensor" / "sensor.xml")
    with pytest.raises(NotImplementedError, match="camprojection"):
        jc.sensors(model, jc.init(model))
    with pytest.raises(KeyError, match="no sensor named 'nope'"):
        jc.sensors(model, jc.init(model), select=["nope"])


def test_cutoff_and_selection_by_name(tmp_path):
    """A cutoff clamps a real sensor (MuJoCo ``apply_cutoff``); ``select`` reads sensors by name
    in the given order."""
    path = tmp_path / "cut.xml"
    path.write_text('<mujoco><worldbody><body><joint name="j" type="slide"/><geom size=".1"/>'
                    '</body></worldbody><sensor><jointpos name="p" joint="j" cutoff="0.5"/>'
                    '<jointvel name="w" joint="j"/></sensor></mujoco>')
    with warnings.catch_warnings():  # every sensor is computed: no warning
        warnings.simplefilter("error", jc.io.IgnoredSensorWarning)
        model = jc.load(path)
    state = jc.init(model, q=jnp.asarray([2.0]), v=jnp.asarray([-3.0]))
    np.testing.assert_array_equal(jc.sensors(model, state), [0.5, -3.0])
    np.testing.assert_array_equal(jc.sensors(model, state, select=["w", "p"]), [-3.0, 0.5])


def test_imu_of_a_corpus_quadruped_equals_mujoco():
    """MJX's barkour quadruped (27 sensors: joint positions and velocities, the torso IMU's gyro,
    accelerometer and orientation) in the air at 5 random states: ``sensordata`` of MuJoCo C to
    1e-8 (no contact and no limit is active, so the accelerations are MuJoCo's exactly)."""
    path = MJX_DATA / "barkour_v0" / "assets" / "barkour_v0_mjx.xml"
    mj = mujoco.MjModel.from_xml_path(str(path))
    # in the air no contact can be active: the collision pipeline is not compiled for nothing
    model = jc.load(path).replace_options(enable_contacts=False)
    assert {"accelerometer", "gyro", "framequat"} <= set(model.sensors.kind)
    read = jax.jit(lambda state, ctrl: jc.sensors(model, state, ctrl))
    rng = np.random.default_rng(1)
    data = mujoco.MjData(mj)
    low, high = mj.jnt_range[1:, 0], mj.jnt_range[1:, 1]
    for _ in range(5):
        data.qpos[:3] = [0.0, 0.0, 2.0]
        data.qpos[3:7] = rng.normal(size=4)
        data.qpos[7:] = rng.uniform(low + 0.1, high - 0.1)  # inside the limits: no limit row
        mujoco.mj_normalizeQuat(mj, data.qpos)
        data.qvel[:] = rng.normal(size=mj.nv)
        data.ctrl[:] = rng.uniform(mj.actuator_ctrlrange[:, 0], mj.actuator_ctrlrange[:, 1])
        mujoco.mj_forward(mj, data)
        assert data.ncon == 0 and data.nefc == 0
        state = jc.init(model, q=jnp.asarray(data.qpos), v=jnp.asarray(data.qvel))
        np.testing.assert_allclose(read(state, jnp.asarray(data.ctrl)), data.sensordata,
                                   rtol=0, atol=1e-8)


RESTING_BOX = """<mujoco><option timestep="0.002"/><worldbody>
  <geom type="plane" size="2 2 .1"/>
  <body name="box" pos="0 0 .1"><freejoint/><geom type="box" size=".1 .1 .1" mass="2"/>
    <site name="imu" pos=".03 .02 .05"/><site name="bottom" type="box" pos="0 0 -.1" size=".12 .12 .02"/>
    <site name="top" type="box" pos="0 0 .1" size=".12 .12 .02"/>
  </body></worldbody>
  <sensor><accelerometer site="imu"/><force site="imu"/><torque site="imu"/>
    <touch site="bottom"/><touch site="top"/></sensor></mujoco>"""

HELD_ARM = """<mujoco><option timestep="0.002"/><worldbody>
  <body name="arm"><joint name="hinge" axis="0 1 0" range="-10 0"/><site name="root"/>
    <geom type="capsule" fromto="0 0 0 .4 0 0" size=".02" mass="1.5"/>
  </body></worldbody>
  <sensor><torque site="root"/><force site="root"/><jointlimitfrc joint="hinge"/>
    <frameangacc objtype="body" objname="arm"/><framelinacc objtype="body" objname="arm"/></sensor></mujoco>"""


def test_acceleration_sensors_see_the_hard_constraint_forces(tmp_path):
    """With contacts and limits the acceleration-stage sensors read this engine's constraint
    forces (closed forms): a 2 kg box resting on the floor feels gravity upwards in its
    accelerometer (``+g``, MuJoCo's convention), no parent force (a free body: the floor's
    push is external), its weight in a touch zone around its bottom face and nothing on top; an arm lying horizontally on its joint limit is held by the limit
    (``jointlimitfrc`` = torque sensor = ``m g L/2``, force sensor = ``m g`` up) and does not
    accelerate."""
    g = 9.81
    box_path = tmp_path / "box.xml"
    box_path.write_text(RESTING_BOX)
    box = jc.load(box_path)
    values = np.asarray(jax.jit(lambda state: jc.sensors(box, state))(
        jc.init(box)))  # at rest on the floor
    accelerometer, force, torque, (bottom, top) = np.split(values[:9], 3) + [values[9:]]
    np.testing.assert_allclose(bottom, 2.0 * g, rtol=1e-6)  # the floor carries the weight
    assert top == 0.0
    np.testing.assert_allclose(accelerometer, [0.0, 0.0, g], atol=1e-6)
    np.testing.assert_allclose(force, 0.0, atol=1e-6)
    np.testing.assert_allclose(torque, 0.0, atol=1e-6)

    arm_path = tmp_path / "arm.xml"
    arm_path.write_text(HELD_ARM)
    arm = jc.load(arm_path)
    values = np.asarray(jax.jit(lambda state: jc.sensors(arm, state))(
        jc.init(arm)))
    torque, force, limit, angular_acc, linear_acc = values[:3], values[3:6], values[6], values[7:10], values[10:]
    moment = 1.5 * g * 0.2
    # gravity pulls the arm down (-z at x > 0 turns it by +y): the limit at 0 holds it
    np.testing.assert_allclose(limit, moment, rtol=1e-9)
    np.testing.assert_allclose(torque, [0.0, -moment, 0.0], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(force, [0.0, 0.0, 1.5 * g], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(angular_acc, 0.0, atol=1e-9)
    np.testing.assert_allclose(linear_acc, [0.0, 0.0, g], atol=1e-9)


def test_acceleration_sensor_derivatives_match_central_differences(tmp_path):
    """``jacfwd``, ``jacrev`` and central differences agree on the accelerometer, force, torque
    and frame-acceleration sensors of MJX's sensor model (contacts disabled) w.r.t. ``q``, ``v``
    and the controls."""
    path = _without_contacts("sensor/sensor.xml", tmp_path)
    with pytest.warns(jc.io.IgnoredSensorWarning):
        model = jc.load(path)
    kinds = {"accelerometer", "force", "torque", "framelinacc", "frameangacc"}
    chosen = tuple(i for i, kind in enumerate(model.sensors.kind) if kind in kinds)
    rng = np.random.default_rng(2)
    q = jnp.asarray(np.asarray(model.qpos0) + 0.3 * rng.normal(size=model.nq))
    v = jnp.asarray(rng.normal(size=model.nv))
    ctrl = jnp.asarray(rng.uniform(-0.9, 0.9, size=model.nu))

    def read(q, v, ctrl):
        state = jc.State(q=q, v=v, time=jnp.zeros(()), error=jnp.zeros((), jnp.int32))
        return jc.sensors(model, state, ctrl, select=chosen)

    # quaternion entries of q move off the unit sphere: the sensors normalise as MuJoCo does
    assert_derivatives_match_central_differences(read, (q, v, ctrl), (1e-6, 1e-6, 1e-6), rtol=1e-5)


def test_static_and_mocap_accelerometers_read_gravity_as_mujoco(tmp_path):
    """Accelerometers and frame accelerations on the world, a static body and a mocap body: the
    world's upward acceleration ``−g`` in each frame, as MuJoCo 4.0.0 (to 1e-12)."""
    path = tmp_path / "static.xml"
    path.write_text("""<mujoco><worldbody><site name="w" pos="1 0 0"/>
      <body pos="0 0 1" euler="30 0 0"><geom size=".1"/><site name="s" euler="0 20 0"/></body>
      <body mocap="true" pos="0 1 0"><site name="m"/></body></worldbody>
      <sensor><accelerometer site="w"/><accelerometer site="s"/><accelerometer site="m"/>
      <framelinacc objtype="site" objname="s"/><frameangacc objtype="site" objname="s"/></sensor></mujoco>""")
    mj = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(mj)
    mujoco.mj_forward(mj, data)
    model = jc.load(path)
    np.testing.assert_allclose(jc.sensors(model, jc.init(model)), data.sensordata, rtol=0, atol=1e-12)


def test_touch_sensors_of_mjx_sensor_model_equal_mujoco():
    """MJX's touch sensors (sphere, box, capsule and ellipsoid zones at one end of four capsules of
    condim 1, 3 and 6 lying on a plane): each reads half its capsule's weight, as MuJoCo C does
    after the capsules settle (measured ``m g / 2`` to 1e-8 there), here at the resting state from
    the hard contact solve (1e-6)."""
    path = MJX_DATA / "sensor" / "sensor.xml"
    mj = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(mj)
    for _ in range(500):
        mujoco.mj_step(mj, data)
    with pytest.warns(jc.io.IgnoredSensorWarning):
        model = jc.load(path)
    touch = [i for i, kind in enumerate(model.sensors.kind) if kind == "touch"]
    assert len(touch) == 6
    mujoco_touch = data.sensordata[[mj.sensor_adr[i] for i in touch]]
    capsules = np.flatnonzero(mj.body_jntnum > 0)[-4:]
    np.testing.assert_allclose(mujoco_touch, mj.body_mass[capsules[0]] * 9.81 / 2, rtol=1e-8)
    q = np.asarray(model.qpos0).copy()
    for body in capsules:  # resting on the plane (MuJoCo's file starts them half sunk in it)
        q[mj.jnt_qposadr[mj.body_jntadr[body]] + 2] += 0.0125
    state = jc.init(model, q=jnp.asarray(q))
    ours = jax.jit(lambda s: jc.sensors(model, s, select=touch))(state)
    np.testing.assert_allclose(ours, mujoco_touch, rtol=1e-6)


def test_energy_sensors_equal_mujoco(tmp_path):
    """``e_potential`` (gravity, joint and tendon springs) and ``e_kinetic`` equal MuJoCo's
    ``sensordata`` to 1e-10 on random states."""
    path = tmp_path / "energy.xml"
    path.write_text("""<mujoco><worldbody><site name="anchor" pos="0 0 2"/>
      <body pos="0 0 1"><joint type="hinge" axis="0 1 0" stiffness="3" springref="0.2"/>
        <geom type="capsule" fromto="0 0 0 .4 0 0" size=".03"/><site name="tip" pos=".4 0 0"/>
        <body pos=".4 0 0"><joint type="ball" stiffness="1"/><geom size=".05" pos="0 0 -.2"/></body></body>
      <body pos="1 0 1"><freejoint/><geom type="box" size=".1 .2 .05"/></body></worldbody>
      <tendon><spatial stiffness="5" springlength=".5"><site site="anchor"/><site site="tip"/></spatial></tendon>
      <sensor><e_potential/><e_kinetic/></sensor></mujoco>""")
    mj = mujoco.MjModel.from_xml_path(str(path))
    model = jc.load(path)
    read = jax.jit(lambda state: jc.sensors(model, state))
    rng = np.random.default_rng(4)
    for _ in range(3):
        data = _random_data(mj, rng)
        state = jc.init(model, q=jnp.asarray(data.qpos), v=jnp.asarray(data.qvel))
        np.testing.assert_allclose(read(state), data.sensordata, rtol=1e-10, atol=1e-10)


def test_tendon_limit_force_holds_a_hanging_weight(tmp_path):
    """A 0.7 kg slider hanging on a rope (spatial tendon at its length limit): ``tendonlimitfrc``
    reads the rope's tension ``m g`` and the slider does not accelerate (closed form, 1e-9)."""
    path = tmp_path / "rope.xml"
    path.write_text("""<mujoco><option timestep="0.002"/><worldbody><site name="anchor" pos="0 0 1"/>
      <body><joint type="slide" axis="0 0 1"/><geom size=".05" mass="0.7" contype="0" conaffinity="0"/>
        <site name="hook"/></body></worldbody>
      <tendon><spatial name="rope" limited="true" range="0 1"><site site="anchor"/><site site="hook"/></spatial></tendon>
      <sensor><tendonlimitfrc tendon="rope"/><framelinacc objtype="site" objname="hook"/></sensor></mujoco>""")
    model = jc.load(path)
    values = jax.jit(lambda state: jc.sensors(model, state))(jc.init(model))
    np.testing.assert_allclose(values[0], 0.7 * 9.81, rtol=1e-9)
    np.testing.assert_allclose(values[1:], [0.0, 0.0, 9.81], atol=1e-9)  # at rest: it reads -g


def test_torque_sensor_sees_torsional_and_rolling_contact_torques(tmp_path):
    """Under ``constraint_model="mujoco"`` with the elliptic cone, a ``condim`` 6 wheel (slide,
    pitch and yaw joints) spinning on the floor: its site's torque and force sensors equal MuJoCo
    C's ``sensordata`` — the contact's torsional and rolling torques (spin slots) are part of the
    body's external wrench. Without them the torque reads 14 N·m off (measured)."""
    path = tmp_path / "wheel.xml"
    path.write_text("""<mujoco><option timestep="0.002" cone="elliptic" tolerance="1e-15" iterations="1000"/>
      <worldbody><geom name="floor" type="plane" size="5 5 .1" friction="0.8 0.05 0.02"/>
      <body name="wheel" pos="0 0 0.099">
        <joint type="slide" axis="1 0 0"/><joint type="hinge" axis="0 1 0"/><joint type="hinge" axis="0 0 1"/>
        <geom type="sphere" size=".1" condim="6" friction="0.7 0.05 0.03"/><site name="hub"/>
      </body></worldbody><sensor><torque site="hub"/><force site="hub"/></sensor></mujoco>""")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jc.io.IgnoredOptionWarning)
        model = jc.load(path, constraint_model="mujoco")
    mj = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(mj)
    data.qvel[:] = [0.3, 2.0, -3.0]
    mujoco.mj_forward(mj, data)
    state = jc.init(model, q=jnp.asarray(data.qpos), v=jnp.asarray(data.qvel))
    ours = jax.jit(lambda s: jc.sensors(model, s))(state)
    spin = jc.constraints.slot_ranges(model)["contact_spin"]
    torques = np.asarray(jax.jit(jc.step)(model, state).contact.force)[spin]
    assert np.abs(torques).max() > 1.0  # the rolling / torsional torques act (N·m)
    # measured 1.4e-14
    np.testing.assert_allclose(ours, data.sensordata, rtol=0, atol=1e-8)
