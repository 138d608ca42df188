"""Every ``<option>`` / ``<flag>`` is applied, refused or reported (jaxsim_contact.io._options).

A flag that switches physics off is compared with MuJoCo C 4.0.0 with the same flag: with the
feature off in both engines the scene has no constraint left, so 50 steps must agree to 1e-8.
"""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.io import IgnoredOptionWarning, UnsupportedFeatureError
from mujoco_comparison import assert_trajectory_equals_mujoco

STEPS = 50

#: springs, dampers, frictionloss, an equality, clamped controls, two actuator groups; no
#: collisions. Without the flag under test the frictionloss and the equality would be
#: constraints, which the hard model treats differently from MuJoCo: each flag's scene keeps
#: only what is comparable (``{extra_flags}``).
SCENE = """
<mujoco><option timestep="0.005" {options}><flag {flag}="disable" {extra_flags}/></option>
 <worldbody>
  <body pos="0 0 1"><joint name="a" type="hinge" axis="0 1 0" stiffness="4" damping="0.3" frictionloss="0.2"/>
   <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" contype="0" conaffinity="0"/>
   <body pos="0.4 0 0"><joint name="b" type="hinge" axis="0 1 0" stiffness="2" damping="0.2"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" contype="0" conaffinity="0"/></body></body>
 </worldbody>
 <tendon><fixed name="t" stiffness="3" damping="0.4"><joint joint="a" coef="1"/><joint joint="b" coef="-1"/></fixed></tendon>
 <equality><joint joint1="a" joint2="b" polycoef="0 0.5 0 0 0"/></equality>
 <actuator><motor joint="a" ctrlrange="-0.1 0.1" group="1"/><position joint="b" kp="3" kv="0.5" ctrlrange="-0.2 0.2"/></actuator>
</mujoco>"""

#: the flags under test and what else must be off for the comparison (constraint-free scenes)
FLAGS = {
    "equality": 'frictionloss="disable"',
    "frictionloss": 'equality="disable"',
    "spring": 'equality="disable" frictionloss="disable"',
    "damper": 'equality="disable" frictionloss="disable"',
    "clampctrl": 'equality="disable" frictionloss="disable"',
    "actuation": 'equality="disable" frictionloss="disable"',
    "eulerdamp": 'equality="disable" frictionloss="disable"',
}


def _compare_with_mujoco(path, ctrl):
    model, mj = jc.load(path), mujoco.MjModel.from_xml_path(str(path))
    rng = np.random.default_rng(0)
    assert_trajectory_equals_mujoco(mj, model, mj.qpos0 + 0.3 * rng.normal(size=mj.nq),
                                    rng.normal(size=mj.nv), ctrl, STEPS)
    return model


@pytest.mark.parametrize("flag", sorted(FLAGS))
def test_disable_flag_matches_mujoco(tmp_path, flag):
    path = tmp_path / "scene.xml"
    path.write_text(SCENE.format(options="", flag=flag, extra_flags=FLAGS[flag]))
    # controls beyond their ranges, so clampctrl matters
    model = _compare_with_mujoco(path, np.array([0.5, -0.7]))
    if flag == "equality":
        assert float(jnp.sum(model.equalities.active)) == 0.0
    if flag == "eulerdamp":
        assert not model.options.euler_damping


def test_actuator_group_disable_matches_mujoco(tmp_path):
    """``<option actuatorgroupdisable="1">``: the motor of group 1 applies no force."""
    path = tmp_path / "scene.xml"
    path.write_text(SCENE.format(options='actuatorgroupdisable="1"', flag="equality",
                                 extra_flags='frictionloss="disable"'))
    model = _compare_with_mujoco(path, np.array([0.05, -0.1]))
    assert float(jnp.abs(model.actuator_gain[0]).sum()) == 0.0


def test_override_writes_contact_friction_and_margin(tmp_path):
    path = tmp_path / "scene.xml"
    path.write_text("""<mujoco><option o_margin="0.003" o_friction="0.4 0.4 0.01 0.002 0.002">
      <flag override="enable"/></option><worldbody><geom type="plane" size="1 1 1" friction="1 0.1 0.1"/>
      <body pos="0 0 .2"><freejoint/><geom size=".1" friction="2 0.2 0.2"/></body></worldbody></mujoco>""")
    with pytest.warns(IgnoredOptionWarning, match="o_solref / o_solimp"):
        model = jc.load(path)
    np.testing.assert_allclose(model.geom_friction, [[0.4, 0.01, 0.002]] * 2)
    np.testing.assert_allclose(model.geom_margin, [0.003, 0.003])


def test_filterparent_disabled_is_refused_by_name(tmp_path):
    path = tmp_path / "scene.xml"
    path.write_text('<mujoco><option><flag filterparent="disable"/></option><worldbody>'
                    '<body><joint/><geom size=".1"/></body></worldbody></mujoco>')
    with pytest.raises(UnsupportedFeatureError, match="filterparent") as info:
        jc.load(path)
    assert str(path) in str(info.value)


def test_solver_settings_are_reported_not_silently_dropped(tmp_path):
    """MuJoCo's solver settings (no counterpart here) are named in one warning; a model with
    MuJoCo's defaults loads without it."""
    body = '<worldbody><body><joint/><geom size=".1"/></body></worldbody>'
    path = tmp_path / "tuned.xml"
    path.write_text(f'<mujoco><option iterations="50" impratio="10" noslip_iterations="3">'
                    f'<flag warmstart="disable"/></option>{body}</mujoco>')
    with pytest.warns(IgnoredOptionWarning) as record:
        jc.load(path)
    message = str(record[0].message)
    for name in ("iterations=50", "impratio=10.0", "noslip_iterations=3", "warmstart=disable"):
        assert name in message
    assert str(path) in message
    plain = tmp_path / "plain.xml"
    plain.write_text(f"<mujoco>{body}</mujoco>")
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredOptionWarning)
        jc.load(plain)


def test_sensors_are_named_not_silently_dropped(tmp_path):
    path = tmp_path / "sensed.xml"
    path.write_text('<mujoco><worldbody><body><joint name="j" range="-1 1"/><geom size=".1"/><site name="s"/>'
                    '</body></worldbody><sensor><jointpos joint="j"/><jointvel joint="j"/>'
                    '<accelerometer site="s"/><jointlimitpos joint="j"/><jointlimitvel joint="j"/>'
                    '<jointlimitpos joint="j"/></sensor></mujoco>')
    # computed kinds load silently; the others are named with their counts
    with pytest.warns(jc.io.IgnoredSensorWarning, match=r"3 sensor\(s\).*: jointlimitpos x2, jointlimitvel x1$") as record:
        jc.load(path)
    assert str(path) in str(record[0].message)
