"""Manipulation: a fingertip pushes a box on a table to a goal pose (position and yaw).

A spherical fingertip (r = 2 cm, 0.1 kg) moves in the horizontal plane on two slide joints driven
by force motors (±10 N, viscous joint damping 4 N·s/m); a free 10 cm cube (0.2 kg, friction 0.5)
rests on the floor. The fingertip hovers 1 cm above the floor, so it only touches the cube: every
motion of the cube comes from hard frictional sphere–box and box–floor contacts.

Task parameters (drawn at reset, ``state.task``): goal ``(x, y, yaw)`` of the cube (m, m, rad).
Reward per step:

    R = -‖p_xy - g_xy‖ - yaw_weight · |wrap(yaw - g_yaw)| - reach_weight · ‖tip_xy - p_xy‖

(the reach term guides the fingertip to the cube). No early termination; ``metrics["success"]``
is 1 when the cube is within 2 cm and 0.2 rad of the goal. Observation (22): fingertip position
and velocity (4), cube position (3), quaternion (4), linear and angular velocity (6), goal (3),
cube-to-goal xy offset (2).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..dynamics import init as sim_init
from ._mjcf import load_mjcf_text
from ._base import Env

__all__ = ["PushBox", "PUSH_XML"]

PUSH_XML = """<mujoco model="push_box">
  <option timestep="0.01" gravity="0 0 -9.81"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" friction="0.5 0.005 0.0001"/>
    <body name="fingertip" pos="0 0 0.03">
      <joint name="tip_x" type="slide" axis="1 0 0" limited="true" range="-1 1" damping="4"/>
      <joint name="tip_y" type="slide" axis="0 1 0" limited="true" range="-1 1" damping="4"/>
      <geom name="tip" type="sphere" size="0.02" mass="0.1" friction="0.5 0.005 0.0001"/>
    </body>
    <body name="cube" pos="0 0 0.05">
      <freejoint name="cube"/>
      <geom name="cube" type="box" size="0.05 0.05 0.05" mass="0.2" friction="0.5 0.005 0.0001"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="push_x" joint="tip_x" gear="10" ctrllimited="true" ctrlrange="-1 1"/>
    <motor name="push_y" joint="tip_y" gear="10" ctrllimited="true" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
"""


def _yaw(quat):
    """Yaw (rad) of a quaternion ``(w, x, y, z)`` (rotation about world z of the ZYX angles)."""
    w, x, y, z = quat[0], quat[1], quat[2], quat[3]
    return jnp.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def _wrap(angle):
    return jnp.arctan2(jnp.sin(angle), jnp.cos(angle))


class PushBox(Env):
    """Fingertip pushing a cube to a goal pose; see the module docstring. ``action_size = 2``,
    ``observation_size = 22``, ``state.task = (goal_x, goal_y, goal_yaw)``.

    Attributes (beyond :class:`Env`; all dynamic):
      goal_range: ``(3,)`` half-widths of the uniform goal distribution around the origin
        ``(x [m], y [m], yaw [rad])``.
      start_range: scalar half-width (m) of the uniform cube start position around the origin.
      yaw_weight, reach_weight: reward weights (1/rad, dimensionless).
    """

    goal_range: jax.Array
    start_range: jax.Array
    yaw_weight: jax.Array
    reach_weight: jax.Array

    def __init__(self, model=None, *, episode_length: int = 200, frame_skip: int = 2,
                 goal_range=(0.3, 0.3, 0.5), start_range: float = 0.05, yaw_weight: float = 0.1,
                 reach_weight: float = 0.1, dtype=None):
        self.model = load_mjcf_text(PUSH_XML, "push_box", dtype) if model is None else model
        self.episode_length = episode_length
        self.frame_skip = frame_skip
        dtype = self.model.dtype
        self.goal_range = jnp.asarray(goal_range, dtype)
        self.start_range = jnp.asarray(start_range, dtype)
        self.yaw_weight = jnp.asarray(yaw_weight, dtype)
        self.reach_weight = jnp.asarray(reach_weight, dtype)

    def initial_sim(self, key):
        model, dtype = self.model, self.model.dtype
        k_cube, k_tip, k_goal = jax.random.split(key, 3)
        cube_xy = self.start_range * jax.random.uniform(k_cube, (2,), dtype, -1.0, 1.0)
        # fingertip on a circle 12-20 cm around the cube (never inside it)
        angle, radius = jax.random.uniform(k_tip, (2,), dtype, 0.0, 1.0)
        angle, radius = 2 * jnp.pi * angle, 0.12 + 0.08 * radius
        tip = cube_xy + radius * jnp.stack([jnp.cos(angle), jnp.sin(angle)])
        goal = self.goal_range * jax.random.uniform(k_goal, (3,), dtype, -1.0, 1.0)
        q = model.qpos0.at[0:2].set(tip).at[2:4].set(cube_xy)
        return sim_init(model, q=q), goal

    def observe(self, sim, task):
        cube_pos, cube_quat = sim.q[2:5], sim.q[5:9]
        return jnp.concatenate([sim.q[0:2], sim.v[0:2], cube_pos, cube_quat, sim.v[2:8], task,
                                task[:2] - cube_pos[:2]])

    def reward(self, before, after, action, task):
        cube_xy, tip_xy = after.q[2:4], after.q[0:2]
        # safe norms: zero distance (cube exactly at the goal) must not give a NaN gradient
        dist = jnp.sqrt(jnp.sum((cube_xy - task[:2]) ** 2) + 1e-12)
        reach = jnp.sqrt(jnp.sum((tip_xy - cube_xy) ** 2) + 1e-12)
        yaw_error = jnp.abs(_wrap(_yaw(after.q[5:9]) - task[2]))
        reward = -dist - self.yaw_weight * yaw_error - self.reach_weight * reach
        success = ((dist < 0.02) & (yaw_error < 0.2)).astype(dist.dtype)
        return reward, {"distance": dist, "yaw_error": yaw_error, "success": success}

    def terminated(self, sim, task):
        return jnp.zeros((), bool)
