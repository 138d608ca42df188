"""``jc.sensors``: MuJoCo's ``sensordata`` layout, against MuJoCo C 4.0.0 on MJX's sensor test
models (``sensor/sensor.xml``: 75 sensors, 55 of the computed kinds, frames of xbodies, bodies,
geoms and sites in reference frames of each type; ``actuator/tendon_force_clamp.xml``)."""

from __future__ import annotations

import pathlib

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.dynamics.sensors import COMPUTED_SENSORS
from mujoco_comparison import FAST_COMPILE

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


@pytest.mark.parametrize("relative", ["sensor/sensor.xml", "actuator/tendon_force_clamp.xml"])
def test_computed_sensors_equal_mujoco(relative):
    """Every sensor of a computed kind equals MuJoCo's ``sensordata`` to 1e-10 on 10 random
    states (positions, velocities, controls, time)."""
    path = MJX_DATA / relative
    with pytest.warns(jc.io.IgnoredSensorWarning):
        model = jc.load(path)
    mj = mujoco.MjModel.from_xml_path(str(path))
    chosen = tuple(i for i, kind in enumerate(model.sensors.kind) if kind in COMPUTED_SENSORS)
    assert len(chosen) == {"sensor/sensor.xml": 55, "actuator/tendon_force_clamp.xml": 4}[relative]
    read = jax.jit(lambda state, ctrl: jc.sensors(model, state, ctrl, select=chosen),
                   compiler_options=FAST_COMPILE)
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
    with pytest.warns(jc.io.IgnoredSensorWarning, match="accelerometer"):
        model = jc.load(MJX_DATA / "sensor" / "sensor.xml")
    with pytest.raises(NotImplementedError, match="accelerometer"):
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
    with pytest.warns(jc.io.IgnoredSensorWarning):
        model = jc.load(path)
    state = jc.init(model, q=jnp.asarray([2.0]), v=jnp.asarray([-3.0]))
    np.testing.assert_array_equal(jc.sensors(model, state), [0.5, -3.0])
    np.testing.assert_array_equal(jc.sensors(model, state, select=["w", "p"]), [-3.0, 0.5])
