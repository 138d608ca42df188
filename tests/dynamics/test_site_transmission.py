"""Site actuator transmissions (MuJoCo ``mjTRN_SITE``: ``<general site=...>``, ``<motor site=...>``,
with and without ``refsite``).

Reference: MuJoCo C 4.0.0 (``actuator_length``, ``actuator_velocity``, ``qfrc_actuator``,
``mj_step``) on ``tests/models/site_actuators.xml``: a free-floating body and a hinge-ball-hinge
arm; site actuators with translational, rotational and mixed 6-vector gears, without a reference
site, with one on the same chain, on the world and on another tree, with affine gains / biases,
a force range and a filter activation; plus a joint motor. Central differences for the
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
from jaxsim_contact.dynamics._rnea import actuator_forces, actuator_terms
from jaxsim_contact.io import InvalidActuatorError, ModelError, UnsupportedFeatureError
from mujoco_comparison import (assert_derivatives_match_central_differences,
                               assert_trajectory_equals_mujoco)

MODEL = pathlib.Path(__file__).parent.parent / "models" / "site_actuators.xml"


def _load(integrator: str = "Euler"):
    mj = mujoco.MjModel.from_xml_path(str(MODEL))
    mj.opt.integrator = int(getattr(mujoco.mjtIntegrator, "mjINT_" + integrator.upper()))
    return mj, jc.io.from_mjmodel(mj, source=str(MODEL))


def _random_state(mj, data, rng, scale=1.0):
    data.qpos[:] = scale * rng.normal(size=mj.nq)
    for j in range(mj.njnt):  # unit quaternions of the free and ball joints
        kind, adr = int(mj.jnt_type[j]), int(mj.jnt_qposadr[j])
        if kind in (0, 1):
            adr += 3 if kind == 0 else 0
            data.qpos[adr:adr + 4] /= np.linalg.norm(data.qpos[adr:adr + 4])
    data.qvel[:] = rng.normal(size=mj.nv)
    data.ctrl[:] = rng.normal(size=mj.nu)
    data.act[:] = rng.normal(size=mj.na)


def test_loader_reads_the_site_transmissions():
    mj, model = _load()
    assert model.actuator_on_site == (True,) * 7 + (False,)
    site = {name: i for i, name in enumerate(model.site_names)}
    assert model.actuator_target[:7] == tuple(site[n] for n in (
        "float_site", "float_site", "tip", "tip", "float_site", "mid", "float_corner"))
    assert model.actuator_refsite == (-1, -1, -1, site["upper"], site["anchor"], site["anchor"],
                                      site["tip"], -1)
    np.testing.assert_array_equal(model.actuator_site_gear, mj.actuator_gear)
    # a model without site actuators keeps the static fields empty
    plain = jc.load(pathlib.Path(__file__).parent.parent / "models" / "actuated.xml")
    assert plain.actuator_on_site == () and plain.actuator_refsite == ()


def test_length_velocity_and_forces_equal_mujoco():
    """On 50 random states, controls and activations: ``actuator_length``,
    ``actuator_velocity``, ``actuator_force`` and ``qfrc_actuator`` equal MuJoCo's to 1e-10."""
    mj, model = _load()
    terms = jax.jit(lambda q, v, u, a: (actuator_terms(model, q, v, u, act=a),
                                        actuator_forces(model, q, v, u, act=a)))
    rng = np.random.default_rng(0)
    data = mujoco.MjData(mj)
    for _ in range(50):
        _random_state(mj, data, rng)
        mujoco.mj_forward(mj, data)
        (length, velocity, force), qfrc = terms(
            *(jnp.asarray(x) for x in (data.qpos, data.qvel, data.ctrl, data.act)))
        np.testing.assert_allclose(length, data.actuator_length, rtol=0, atol=1e-10)
        np.testing.assert_allclose(velocity, data.actuator_velocity, rtol=0, atol=1e-10)
        np.testing.assert_allclose(force, data.actuator_force, rtol=0, atol=1e-10)
        np.testing.assert_allclose(qfrc, data.qfrc_actuator, rtol=0, atol=1e-10)
    # every site actuator had a nonzero moment, the refsite ones a nonzero length
    assert np.all(np.abs(data.actuator_velocity[:7]) > 0)
    assert np.all(np.abs(data.actuator_length[3:7]) > 0)


def test_actuator_sensors_read_site_transmissions(tmp_path):
    """``actuatorpos`` / ``actuatorvel`` / ``actuatorfrc`` of site actuators equal MuJoCo's."""
    text = MODEL.read_text().replace("</mujoco>", """  <sensor>
    <actuatorpos actuator="reach"/><actuatorvel actuator="reach"/><actuatorfrc actuator="reach"/>
    <actuatorpos actuator="tether"/><actuatorvel actuator="wrench"/><actuatorfrc actuator="hover"/>
  </sensor>
</mujoco>""")
    path = tmp_path / "sensed.xml"
    path.write_text(text)
    mj = mujoco.MjModel.from_xml_path(str(path))
    model = jc.load(path)
    data = mujoco.MjData(mj)
    _random_state(mj, data, np.random.default_rng(3))
    mujoco.mj_forward(mj, data)
    state = jc.init(model, q=jnp.asarray(data.qpos), v=jnp.asarray(data.qvel), act=jnp.asarray(data.act))
    values = jc.sensors(model, state, jnp.asarray(data.ctrl))
    np.testing.assert_allclose(values, data.sensordata, rtol=0, atol=1e-10)


@pytest.mark.parametrize("integrator", ["Euler", "implicitfast", "implicit", "RK4"])
def test_trajectory_equals_mujoco(integrator):
    """200 contact-free steps (qpos, qvel, act) equal ``mj_step``'s to 1e-8; the implicit
    integrators differentiate the velocity terms through the site moments, and, like MuJoCo,
    drop the entries between the two trees that ``tether`` (a reference site on the other tree)
    couples."""
    mj, model = _load(integrator)
    rng = np.random.default_rng(1)
    data = mujoco.MjData(mj)
    _random_state(mj, data, rng, scale=0.3)
    data.qvel[:] *= 0.5
    data.act[:] = 0.2
    assert_trajectory_equals_mujoco(mj, model, data.qpos.copy(), data.qvel.copy(), data.ctrl.copy(),
                                    200, act0=data.act.copy())


def test_step_derivatives_match_central_differences():
    """``jacfwd``, ``jacrev`` and central differences of one step's ``(q, v)`` with respect to
    ``q``, ``v`` and ``ctrl`` agree (1e-6 relative to the Jacobian's scale)."""
    mj, model = _load()
    data = mujoco.MjData(mj)
    _random_state(mj, data, np.random.default_rng(2), scale=0.3)
    act = jnp.asarray([0.2])

    def next_state(q, v, ctrl):
        nxt = jc.step(model, jc.init(model, q=q, v=v, act=act), ctrl)
        return jnp.concatenate([nxt.q, nxt.v])

    ctrl = np.clip(data.ctrl, -1.5, 1.5)  # inside the control range of the limited actuator
    inputs = tuple(jnp.asarray(x) for x in (data.qpos, data.qvel, ctrl))
    assert_derivatives_match_central_differences(next_state, inputs, steps=(1e-6, 1e-6, 1e-6))


def _write(tmp_path, actuator: str) -> pathlib.Path:
    path = tmp_path / "model.xml"
    path.write_text('<mujoco><worldbody><body name="b"><joint name="j" type="slide"/><geom size=".1"/>'
                    '<site name="s"/></body></worldbody>'
                    f'<actuator>{actuator}</actuator></mujoco>')
    return path


def test_bad_site_transmissions_are_named(tmp_path):
    path = _write(tmp_path, '<motor name="m" site="nowhere"/>')
    with pytest.raises(ModelError, match="nowhere") as info:
        jc.load(path)
    assert str(path) in str(info.value)
    path = _write(tmp_path, '<motor name="m" site="s" refsite="nowhere"/>')
    with pytest.raises(ModelError, match="nowhere") as info:
        jc.load(path)
    assert str(path) in str(info.value)
    # adhesion (a body transmission) stays refused, by name
    path = _write(tmp_path, '<adhesion name="glue" body="b" ctrlrange="0 1"/>')
    with pytest.raises(UnsupportedFeatureError, match="adhesion name='glue'.*body transmission") as info:
        jc.load(path)
    assert str(path) in str(info.value)
    assert issubclass(InvalidActuatorError, ModelError)
