"""MuJoCo's integrators (``<option integrator>``): Euler, RK4, implicitfast, implicit.

References: MuJoCo C 4.0.0 ``mj_step`` with the same integrator on contact-free trajectories
(float64, 1e-8 over 200 steps), closed forms for the hard-contact RK4 step at rest, central
differences for the derivatives of one step.
"""

from __future__ import annotations

import pathlib

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact._model import Integrator
from mujoco_comparison import (assert_derivatives_match_central_differences,
                               assert_trajectory_equals_mujoco)

GYM_ASSETS = pathlib.Path(__import__("gymnasium").__file__).parent / "envs" / "mujoco" / "assets"
STEPS = 200

NO_COLLISION = 'contype="0" conaffinity="0"'
#: every dof kind and every velocity-dependent force the integrators treat differently: a free
#: body alone in its tree (implicitfast keeps its gyroscopic derivative), a floating chain (it
#: does not), a ball joint, joint and tendon damping, velocity-dependent actuators on a joint
#: and on a spatial tendon, a tendon spring; a damped tendon with a velocity actuator across two
#: trees (MuJoCo's qDeriv drops its cross-tree entries, and so does the engine's ∂f/∂v)
SCENE = f"""
<mujoco><option timestep="0.01" integrator="{{integrator}}"/>
 <worldbody>
  <site name="anchor" pos="0.5 0 2"/>
  <body pos="0 0 1"><joint name="hinge" type="hinge" axis="0 1 0" damping="0.3"/>
   <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" {NO_COLLISION}/>
   <body pos="0.4 0 0"><joint type="ball" damping="0.1"/>
    <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03" {NO_COLLISION}/>
    <site name="tip" pos="0 0 -0.3"/></body></body>
  <body pos="1 0 1"><freejoint/><geom type="box" size="0.1 0.05 0.02" {NO_COLLISION}/>
   <site name="corner" pos="0.1 0.05 0"/></body>
  <body pos="0 1 1"><freejoint/><geom type="box" size="0.1 0.05 0.02" {NO_COLLISION}/>
   <body pos="0.1 0 0"><joint type="hinge" axis="0 1 0"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" {NO_COLLISION}/></body></body>
 </worldbody>
 <tendon><spatial name="rope" damping="0.5" stiffness="3"><site site="tip"/><site site="anchor"/></spatial>
  <fixed damping="0.2"><joint joint="hinge" coef="1"/></fixed>
  <spatial name="across" damping="0.4"><site site="tip"/><site site="corner"/></spatial></tendon>
 <actuator><velocity joint="hinge" kv="2"/><position tendon="rope" kp="5" kv="1"/>
  <damper joint="hinge" kv="0.5" ctrlrange="0 1"/><motor joint="hinge" gear="2"/>
  <velocity tendon="across" kv="0.7"/></actuator>
</mujoco>"""


def _random_start(mj, seed: int = 0, scale: float = 0.3):
    rng = np.random.default_rng(seed)
    q0 = mj.qpos0 + scale * rng.normal(size=mj.nq)
    mujoco.mj_normalizeQuat(mj, q0)
    return q0, 2.0 * scale * rng.normal(size=mj.nv), rng.uniform(0.0, 1.0, size=mj.nu)


@pytest.mark.parametrize("integrator", ["Euler", "RK4", "implicitfast", "implicit"])
def test_contact_free_trajectory_equals_mujoco(tmp_path, integrator):
    """200 steps of every integrator on :data:`SCENE` equal ``mj_step``'s to 1e-8 (qpos, qvel)."""
    path = tmp_path / "scene.xml"
    path.write_text(SCENE.format(integrator=integrator))
    model, mj = jc.load(path), mujoco.MjModel.from_xml_path(str(path))
    assert model.options.integrator == Integrator(integrator.lower())
    q0, v0, ctrl = _random_start(mj)
    assert_trajectory_equals_mujoco(mj, model, q0, v0, ctrl, STEPS)


@pytest.mark.parametrize("name", ["inverted_double_pendulum.xml", "reacher.xml"])
def test_gymnasium_rk4_models_equal_mujoco_with_contacts_and_limits_off(name):
    """gymnasium's RK4 models (the loader used to run them with Euler, silently), contact and
    limit constraints disabled in both engines: 200 steps equal ``mj_step`` to 1e-8."""
    mj = mujoco.MjModel.from_xml_path(str(GYM_ASSETS / name))
    assert mj.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4
    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_LIMIT)
    model = jc.io.from_mjmodel(mj, source=name)
    assert model.options.integrator == Integrator.RK4
    q0, v0, ctrl = _random_start(mj, seed=1, scale=0.1)
    assert_trajectory_equals_mujoco(mj, model, q0, v0, ctrl, STEPS)


@pytest.mark.parametrize("name, integrator", [("ant.xml", "rk4"), ("hopper.xml", "rk4"),
                                              ("walker2d.xml", "rk4"), ("half_cheetah.xml", "euler")])
def test_loader_takes_the_models_integrator(name, integrator):
    assert jc.load(GYM_ASSETS / name).options.integrator == Integrator(integrator)


BOX_ON_FLOOR = """
<mujoco><option timestep="0.01" integrator="RK4"/>
 <worldbody><geom type="plane" size="5 5 0.1"/>
  <body pos="0 0 0.1"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1"/></body>
 </worldbody></mujoco>"""


def test_rk4_hard_contact_box_rests_exactly(tmp_path):
    """A box resting on the floor under RK4: the hard contact's impulse, held as a constant force
    over the step, cancels the RK4 free motion (``v̄ = ½ h g``, ``Δv = −h g``), so the box
    neither sinks nor reports a velocity beyond the solver tolerance. (Applying the impulse
    fully to the positions instead would sink it by ``½ h² g`` a step, and the push-out would
    then hold it at a velocity of ``½ h g``.)"""
    path = tmp_path / "box.xml"
    path.write_text(BOX_ON_FLOOR)
    model = jc.load(path)
    state = jc.init(model)
    final, trajectory = jax.jit(jc.rollout)(
        model, state, jnp.zeros((100, 0)))
    assert int(final.error) == 0
    # what is left is the contact solver's tolerance (Euler: 1.6e-10 m, 2.7e-8 m/s)
    np.testing.assert_allclose(np.asarray(trajectory.q[:, 2]), 0.1, atol=1e-9)
    assert float(jnp.abs(trajectory.v).max()) < 1e-7


def test_rk4_hard_contact_stops_a_falling_box(tmp_path):
    """Dropped from 5 cm, the RK4 box lands, does not tunnel, and settles at rest on the floor
    (penetration after the impact at most ``½ h |v|``, then pushed out)."""
    path = tmp_path / "box.xml"
    path.write_text(BOX_ON_FLOOR.replace('pos="0 0 0.1"', 'pos="0 0 0.15"'))
    model = jc.load(path)
    final, trajectory = jax.jit(jc.rollout)(
        model, jc.init(model), jnp.zeros((150, 0)))
    height = np.asarray(trajectory.q[:, 2])
    impact_speed = np.sqrt(2 * 9.81 * 0.05)
    assert height.min() > 0.1 - 0.5 * 0.01 * impact_speed - 1e-6
    assert abs(height[-1] - 0.1) < 1e-4 and float(jnp.abs(final.v).max()) < 1e-3


DERIVATIVE_SCENE = f"""
<mujoco><option timestep="0.01" integrator="{{integrator}}"/>
 <worldbody>
  <body pos="0 0 1"><joint name="shoulder" type="hinge" axis="0 1 0" damping="0.3"/>
   <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" {NO_COLLISION}/>
   <body pos="0.4 0 0"><joint type="ball" damping="0.1"/>
    <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03" {NO_COLLISION}/></body></body>
  <body pos="1 0 1"><freejoint/><geom type="box" size="0.1 0.05 0.02" {NO_COLLISION}/>
   <site name="corner" pos="0.1 0.05 0"/></body>
 </worldbody>
 <actuator><velocity joint="shoulder" kv="2"/></actuator>
</mujoco>"""


@pytest.mark.parametrize("integrator", ["RK4", "implicitfast", "implicit"])
def test_step_derivatives_forward_reverse_and_central_differences_agree(tmp_path, integrator):
    """``jacfwd``, ``jacrev`` and central differences of one step's ``(q, v)`` with respect to
    ``v`` and ``ctrl`` agree to 1e-6 (relative to the Jacobian's scale)."""
    path = tmp_path / "scene.xml"
    path.write_text(DERIVATIVE_SCENE.format(integrator=integrator))
    model = jc.load(path)
    mj = mujoco.MjModel.from_xml_path(str(path))
    q0, v0, ctrl0 = _random_start(mj, seed=2)
    q0 = jnp.asarray(q0)

    def next_state(v, ctrl):
        nxt = jc.step(model, jc.init(model, q=q0, v=v), ctrl)
        return jnp.concatenate([nxt.q, nxt.v])

    assert_derivatives_match_central_differences(
        next_state, (jnp.asarray(v0), jnp.asarray(ctrl0)), steps=(1e-6, 1e-6))
