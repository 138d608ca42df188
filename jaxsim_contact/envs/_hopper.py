"""Planar hopper (seed 004 §IV-C and appendix F, eqs. 61–63).

The MuJoCo/Gymnasium hopper (torso, thigh, leg and foot capsules; root slide x, slide z and hinge
y; three torque motors of gear 200) on a floor with hard frictional contact. Observation (11):
torso height change ``h`` (m), torso pitch ``θ`` (rad), the three joint angles, then the six
velocities (``ẋ``, ``ż``, ``θ̇``, joint rates). Reward (eqs. 61–63, the smooth reward of SHAC):

    R = v_x + R_height + R_posture - 0.1 ‖a‖²
    Δh = clip(h + 0.3, -1, 0.3);   R_height = -200 Δh² if Δh < 0 else Δh
    R_posture = 1 - (θ / 30°)²

``h`` is the torso height relative to its initial 1.25 m (SHAC's dflex convention, where the root
joint starts at 0). An episode ends after 1000 steps or when ``h < -0.45`` (the torso below 0.8 m).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..dynamics import init as sim_init
from ._mjcf import load_mjcf_text
from ._base import Env

__all__ = ["Hopper", "HOPPER_XML"]

#: Gymnasium's Hopper-v5 geometry and actuators (MIT licence), semi-implicit Euler at 2 ms instead
#: of RK4, hard contact instead of MuJoCo's soft contact, no visual elements.
HOPPER_XML = """<mujoco model="hopper">
  <compiler angle="degree" inertiafromgeom="true"/>
  <default>
    <joint armature="1" damping="1" limited="true"/>
    <geom contype="1" conaffinity="1" margin="0.001"/>
    <motor ctrllimited="true" ctrlrange="-1 1"/>
  </default>
  <option timestep="0.002" gravity="0 0 -9.81"/>
  <worldbody>
    <geom name="floor" pos="0 0 0" size="20 20 .125" type="plane" friction="0.9 0.005 0.0001"/>
    <body name="torso" pos="0 0 1.25">
      <joint armature="0" axis="1 0 0" damping="0" limited="false" name="rootx" pos="0 0 -1.25" stiffness="0" type="slide"/>
      <joint armature="0" axis="0 0 1" damping="0" limited="false" name="rootz" pos="0 0 -1.25" stiffness="0" type="slide"/>
      <joint armature="0" axis="0 1 0" damping="0" limited="false" name="rooty" pos="0 0 0" stiffness="0" type="hinge"/>
      <geom friction="0.9" name="torso_geom" size="0.05 0.2" type="capsule"/>
      <body name="thigh" pos="0 0 -0.2">
        <joint axis="0 -1 0" name="thigh_joint" pos="0 0 0" range="-150 0" type="hinge"/>
        <geom friction="0.9" pos="0 0 -0.225" name="thigh_geom" size="0.05 0.225" type="capsule"/>
        <body name="leg" pos="0 0 -0.7">
          <joint axis="0 -1 0" name="leg_joint" pos="0 0 0.25" range="-150 0" type="hinge"/>
          <geom friction="0.9" name="leg_geom" size="0.04 0.25" type="capsule"/>
          <body name="foot" pos="0.13 0 -0.35">
            <joint axis="0 -1 0" name="foot_joint" pos="-0.13 0 0.1" range="-45 45" type="hinge"/>
            <geom friction="2.0" pos="-0.065 0 0.1" quat="0.70710678118654757 0 -0.70710678118654746 0" name="foot_geom" size="0.06 0.195" type="capsule"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor gear="200" joint="thigh_joint"/>
    <motor gear="200" joint="leg_joint"/>
    <motor gear="200" joint="foot_joint"/>
  </actuator>
</mujoco>
"""

_INITIAL_HEIGHT = 1.25  # m, torso height at q = qpos0
_TERMINATION_HEIGHT = -0.45  # m, relative to the initial height (appendix F)


class Hopper(Env):
    """Planar hopper; see the module docstring. ``action_size = 3``, ``observation_size = 11``.

    Attributes (beyond :class:`Env`):
      init_noise: dynamic scalar half-width of the uniform noise added to ``qpos0`` (m or rad) and
        to the zero initial velocity (m/s or rad/s), as Gymnasium's ``reset_noise_scale``.
    """

    init_noise: jax.Array

    def __init__(self, model=None, *, episode_length: int = 1000, frame_skip: int = 4,
                 init_noise: float = 5e-3, dtype=None):
        self.model = load_mjcf_text(HOPPER_XML, "hopper", dtype) if model is None else model
        self.episode_length = episode_length
        self.frame_skip = frame_skip
        self.init_noise = jnp.asarray(init_noise, self.model.dtype)

    def initial_sim(self, key):
        model, dtype = self.model, self.model.dtype
        kq, kv = jax.random.split(key)
        scale = self.init_noise.astype(dtype)
        q = model.qpos0 + scale * jax.random.uniform(kq, (model.nq,), dtype, -1.0, 1.0)
        v = scale * jax.random.uniform(kv, (model.nv,), dtype, -1.0, 1.0)
        return sim_init(model, q=q, v=v), jnp.zeros((0,), dtype)

    def height(self, sim):
        """Torso height relative to the initial 1.25 m (m)."""
        return sim.q[1] - self.model.qpos0[1]

    def observe(self, sim, task):
        return jnp.concatenate([self.height(sim)[None], sim.q[2:], sim.v])

    def reward(self, before, after, action, task):
        height = self.height(after)
        forward = after.v[0]
        delta = jnp.clip(height + 0.3, -1.0, 0.3)  # eq. 62
        r_height = jnp.where(delta < 0, -200.0 * delta**2, delta)
        r_posture = 1.0 - (after.q[2] / jnp.deg2rad(30.0)) ** 2  # eq. 63
        reward = forward + r_height + r_posture - 0.1 * jnp.sum(action**2)  # eq. 61
        return reward, {"forward_velocity": forward, "height": height, "pitch": after.q[2]}

    def terminated(self, sim, task):
        return self.height(sim) < _TERMINATION_HEIGHT
