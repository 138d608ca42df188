"""Cart-pole swing-up (seed 004 §IV-C and appendix F, eq. 60).

A cart on a rail (slide joint, hard limits at ±2 m) carries a hinged pole. The pole starts hanging
down; one action pushes the cart. Observation (5): cart position ``x`` (m), velocity ``ẋ`` (m/s),
``sin θ``, ``cos θ`` and ``θ̇`` (rad/s), with ``θ = 0`` upright. Reward (eq. 60, ``θ`` wrapped
to ``(-π, π]``):

    R = -θ² - 0.1 θ̇² - 0.05 x² - 0.01 ẋ²

Episodes last 240 steps without early termination, from randomly sampled initial states
(appendix F). The rail limit is a hard unilateral joint-limit constraint solved by the contact
solver, not a spring: this is the non-smooth part of the task.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..dynamics import init as sim_init
from .._model import State
from ._mjcf import load_mjcf_text
from ._base import Env

__all__ = ["CartpoleSwingup", "CARTPOLE_XML"]

#: 1 kg cart, 0.5 kg pole of length 1 m (uniform capsule), ±30 N on the cart, 1/60 s steps.
CARTPOLE_XML = """<mujoco model="cartpole">
  <option timestep="0.0166666666666667" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="cart" pos="0 0 1">
      <joint name="slider" type="slide" axis="1 0 0" limited="true" range="-2 2" damping="0.1"/>
      <geom name="cart" type="box" size="0.2 0.15 0.1" mass="1" contype="0" conaffinity="0"/>
      <body name="pole" pos="0 0 0">
        <joint name="hinge" type="hinge" axis="0 1 0" damping="0.01"/>
        <geom name="pole" type="capsule" fromto="0 0 0 0 0 1" size="0.03" mass="0.5" contype="0" conaffinity="0"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="push" joint="slider" gear="30" ctrllimited="true" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
"""


class CartpoleSwingup(Env):
    """Cart-pole swing-up; see the module docstring. ``action_size = 1``, ``observation_size = 5``.

    Attributes (beyond :class:`Env`):
      init_noise: dynamic ``(4,)`` half-widths of the uniform initial-state noise on
        ``(x [m], θ [rad], ẋ [m/s], θ̇ [rad/s])`` around the hanging pose ``(0, π, 0, 0)``.
    """

    init_noise: jax.Array

    def __init__(self, model=None, *, episode_length: int = 240, frame_skip: int = 1,
                 init_noise=(0.2, 0.3, 0.1, 0.1), dtype=None):
        self.model = load_mjcf_text(CARTPOLE_XML, "cartpole", dtype) if model is None else model
        self.episode_length = episode_length
        self.frame_skip = frame_skip
        self.init_noise = jnp.asarray(init_noise, self.model.dtype)

    def initial_sim(self, key):
        dtype = self.model.dtype
        u = jax.random.uniform(key, (4,), dtype, -1.0, 1.0) * self.init_noise.astype(dtype)
        q = jnp.stack([u[0], jnp.pi + u[1]])
        v = u[2:]
        return sim_init(self.model, q=q, v=v), jnp.zeros((0,), dtype)

    def observe(self, sim: State, task):
        x, theta = sim.q[0], sim.q[1]
        return jnp.stack([x, sim.v[0], jnp.sin(theta), jnp.cos(theta), sim.v[1]])

    def reward(self, before, after, action, task):
        x, theta = after.q[0], after.q[1]
        xdot, thetadot = after.v[0], after.v[1]
        wrapped = jnp.arctan2(jnp.sin(theta), jnp.cos(theta))
        reward = -wrapped**2 - 0.1 * thetadot**2 - 0.05 * x**2 - 0.01 * xdot**2  # eq. 60
        return reward, {"pole_angle": jnp.abs(wrapped), "cart_position": x}

    def terminated(self, sim, task):
        return jnp.zeros((), bool)  # appendix F: no early termination
