"""An infeasible start recovers within 0.1 s without any speed above 2 m/s (issue 43, "Must
show"): two 0.1 m boxes 50 % interpenetrated, and a hinge 0.5 rad outside its limit.

The boxes separate at the contact push-out cap (``max_correction_speed`` 0.5 m/s relative, so
0.25 m/s each): 5 cm take 0.1 s, and the Baumgarte tail leaves 1.0 mm at that moment (0 at
0.2 s). The hinge comes back at the limit's own cap (``limit_correction_speed`` 10 rad/s; a
0.1 m link moves at 1 m/s); with the contacts' cap it would take a second.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim_contact as jc

DT = 2e-3
STEPS = 50  # 0.1 s

BOXES = """<mujoco><option timestep="0.002" gravity="0 0 0"/><worldbody>
<body pos="0 0 1"><freejoint/><geom type="box" size="0.05 0.05 0.05" mass="1"/></body>
<body pos="0.05 0 1"><freejoint/><geom type="box" size="0.05 0.05 0.05" mass="1"/></body>
</worldbody></mujoco>"""

HINGE = """<mujoco><option timestep="0.002" gravity="0 0 0"/><worldbody>
<body pos="0 0 1"><joint name="hinge" type="hinge" axis="0 1 0" range="-0.5 0.5"/>
<geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01" mass="0.2"/></body>
</worldbody></mujoco>"""


def _rollout(tmp_path, xml, q0=None):
    path = tmp_path / "start.xml"
    path.write_text(xml)
    model = jc.load(path, dtype=jnp.float64)
    state = jc.init(model, q=None if q0 is None else jnp.asarray(q0, jnp.float64))
    return model, jax.jit(lambda s: jc.rollout(model, s, jnp.zeros((STEPS, model.nu)))[1])(state)


def test_half_interpenetrated_boxes_separate_within_a_tenth_of_a_second(tmp_path):
    _, traj = _rollout(tmp_path, BOXES)
    penetration = np.asarray(traj.contact.penetration)
    assert penetration[0] > 0.045  # they did start 5 cm into each other
    assert penetration[-1] <= 1.5e-3  # measured 1.0 mm: the last of the Baumgarte tail
    v = np.asarray(traj.v).reshape(STEPS, 2, 6)
    assert np.max(np.linalg.norm(v[:, :, :3], axis=-1)) <= 2.0
    assert np.all(np.isfinite(np.asarray(traj.q)))


def test_hinge_half_a_radian_outside_its_limit_comes_back_within_a_tenth_of_a_second(tmp_path):
    model, traj = _rollout(tmp_path, HINGE, q0=[1.0])
    angle = np.asarray(traj.q)[:, 0]
    assert angle[-1] <= 0.5 + 1e-3
    tip_speed = 0.1 * np.max(np.abs(np.asarray(traj.v)[:, 0]))  # m/s at the link's end
    assert tip_speed <= 2.0
    slow = model.replace_options(limit_correction_speed=float(model.options.max_correction_speed))
    slow_traj = jax.jit(lambda s: jc.rollout(slow, s, jnp.zeros((STEPS, 0)))[1])(
        jc.init(slow, q=jnp.asarray([1.0], jnp.float64)))
    assert np.asarray(slow_traj.q)[-1, 0] > 0.9  # the contacts' cap: 0.05 rad in 0.1 s
