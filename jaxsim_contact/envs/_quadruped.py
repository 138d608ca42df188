"""Quadruped locomotion on the Unitree Go2 (URDF of ``example-robot-data``) with hard foot contact.

The Go2 URDF (floating base, mesh collision geoms, 12 revolute joints with hard limits) gets a
floor plane, self-collision off (as the robot tests of issue 5), and one joint position servo per
joint (MuJoCo ``general`` actuator: force = kp·(target - q) - kd·q̇, clamped to ±torque_limit).
By default only foot spheres and a trunk box collide
(:func:`go2_model`). An action in ``[-1, 1]^12`` sets the targets ``standing pose + action_scale · action``.

Task "run forward": reward per step

    R = v_x + upright_weight · (z_body · z_world) + alive_bonus - ctrl_weight · ‖a‖²

with ``v_x`` the base's forward velocity (m/s, world frame). The episode ends when the base falls
below ``min_height`` or tilts past 60° (``z_body · z_world < 0.5``), or after ``episode_length``
steps. Observation (35): base height, base quaternion (w, x, y, z), 12 joint angles, base linear
velocity (world), base angular velocity (body), 12 joint rates.

Initial state: the standing pose with uniform joint noise, a random base yaw, base 2 cm above the
height at which the feet touch the floor.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import mujoco

from ..dynamics import init as sim_init
from ..io import compile_spec, from_mjmodel, prepare_spec
from ..io._urdf import default_package_dirs
from ._base import Env

__all__ = ["Go2Run", "go2_model", "GO2_STANDING_POSE"]

#: hip, thigh, calf angles (rad) of the standing pose, repeated for FL, FR, RL, RR
GO2_STANDING_POSE = (0.0, 0.8, -1.5) * 4
_STANDING_BASE_HEIGHT = 0.33  # m; feet just above the floor in GO2_STANDING_POSE (see go2_model)


def _go2_urdf() -> Path:
    for root in default_package_dirs():
        path = root / "go2_description" / "urdf" / "go2.urdf"
        if path.is_file():
            return path
    raise FileNotFoundError(
        "the Go2 URDF ships with example-robot-data (pip install example-robot-data); "
        "go2_description/urdf/go2.urdf was not found in its package directories")


#: collision proxies of ``collision="feet"``: a sphere per foot (at the foot frame) and a box for
#: the trunk (half-extents in m, in the base frame)
_FOOT_RADIUS = 0.022
_TRUNK_HALF_EXTENTS = (0.19, 0.047, 0.057)


@functools.lru_cache(maxsize=8)
def _go2_mjmodel(kp: float, kd: float, torque_limit: float, collision: str):
    path = _go2_urdf()
    spec = prepare_spec(path, floating_base=True)
    if collision == "feet":
        # the URDF's convex meshes stay for display but stop colliding; four foot spheres and a
        # trunk box touch the floor (closed-form sphere/box–plane pairs instead of GJK on meshes)
        for body in spec.bodies:
            for geom in body.geoms:
                geom.contype, geom.conaffinity = 0, 0
            if body.name.endswith("_foot"):
                body.add_geom(name=f"{body.name}_sphere", type=mujoco.mjtGeom.mjGEOM_SPHERE,
                              size=[_FOOT_RADIUS, 0, 0], friction=[1.0, 0.005, 0.0001])
            elif body.name == "base":
                body.add_geom(name="trunk_box", type=mujoco.mjtGeom.mjGEOM_BOX,
                              size=list(_TRUNK_HALF_EXTENTS), friction=[1.0, 0.005, 0.0001])
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[20, 20, 0.1],
                            friction=[1.0, 0.005, 0.0001])
    bodies = [b.name for b in spec.bodies if b.name != "world"]
    for i, a in enumerate(bodies):  # self-collision off: the robot touches the floor only
        for b in bodies[i + 1:]:
            spec.add_exclude(bodyname1=a, bodyname2=b)
    for joint in spec.joints:
        if joint.type != mujoco.mjtJoint.mjJNT_HINGE:
            continue
        spec.add_actuator(
            name=f"{joint.name}_servo", target=joint.name, trntype=mujoco.mjtTrn.mjTRN_JOINT,
            gaintype=mujoco.mjtGain.mjGAIN_FIXED, gainprm=[kp] + [0.0] * 9,
            biastype=mujoco.mjtBias.mjBIAS_AFFINE, biasprm=[0.0, -kp, -kd] + [0.0] * 7,
            ctrllimited=True, ctrlrange=list(joint.range),
            forcelimited=True, forcerange=[-torque_limit, torque_limit])
    return compile_spec(spec, path)


def go2_model(*, kp: float = 30.0, kd: float = 1.0, torque_limit: float = 23.7,
              collision: str = "feet", dtype=None):
    """The Go2 on a floor with joint position servos (gains kp N·m/rad, kd N·m·s/rad, torques
    clamped to ±torque_limit N·m, the Go2's rated hip/thigh torque).

    Args:
      collision: ``"feet"`` (default): only four foot spheres (r = 22 mm) and a trunk box collide
        with the floor, as usual for locomotion RL (compiles and runs several times faster);
        ``"meshes"``: the URDF's 19 convex collision meshes (GJK/EPA against the floor).
    """
    if collision not in ("feet", "meshes"):
        raise ValueError(f"go2_model: collision must be 'feet' or 'meshes', got {collision!r}")
    mj = _go2_mjmodel(float(kp), float(kd), float(torque_limit), collision)
    return from_mjmodel(mj, source=str(_go2_urdf()), dtype=dtype)


class Go2Run(Env):
    """Go2 running forward; see the module docstring. ``action_size = 12``,
    ``observation_size = 35``.

    Attributes (beyond :class:`Env`; all dynamic):
      standing_pose: ``(12,)`` joint targets at zero action (rad).
      action_scale: scalar, rad of target offset per unit action.
      joint_noise: scalar half-width (rad) of the initial joint-angle noise.
      upright_weight, alive_bonus, ctrl_weight, min_height (m): reward and termination terms.
    """

    standing_pose: jax.Array
    action_scale: jax.Array
    joint_noise: jax.Array
    upright_weight: jax.Array
    alive_bonus: jax.Array
    ctrl_weight: jax.Array
    min_height: jax.Array

    def __init__(self, model=None, *, episode_length: int = 1000, frame_skip: int = 10,
                 action_scale: float = 0.5, joint_noise: float = 0.1, upright_weight: float = 0.5,
                 alive_bonus: float = 0.5, ctrl_weight: float = 0.01, min_height: float = 0.15,
                 collision: str = "feet", dtype=None):
        self.model = go2_model(collision=collision, dtype=dtype) if model is None else model
        if self.model.nq != 19 or self.model.nu != 12:
            raise ValueError(f"Go2Run needs the 12-servo Go2 of go2_model(); got nq={self.model.nq}, nu={self.model.nu}")
        self.episode_length = episode_length
        self.frame_skip = frame_skip
        dtype = self.model.dtype
        self.standing_pose = jnp.asarray(GO2_STANDING_POSE, dtype)
        self.action_scale = jnp.asarray(action_scale, dtype)
        self.joint_noise = jnp.asarray(joint_noise, dtype)
        self.upright_weight = jnp.asarray(upright_weight, dtype)
        self.alive_bonus = jnp.asarray(alive_bonus, dtype)
        self.ctrl_weight = jnp.asarray(ctrl_weight, dtype)
        self.min_height = jnp.asarray(min_height, dtype)

    def control(self, action):
        return self.standing_pose.astype(action.dtype) + self.action_scale.astype(action.dtype) * action

    def initial_sim(self, key):
        dtype = self.model.dtype
        k_joint, k_yaw = jax.random.split(key)
        joints = self.standing_pose + self.joint_noise * jax.random.uniform(k_joint, (12,), dtype, -1.0, 1.0)
        ranges = self.model.joint_range[1:]  # joint 0 is the free joint
        joints = jnp.clip(joints, ranges[:, 0], ranges[:, 1])
        yaw = jax.random.uniform(k_yaw, (), dtype, -jnp.pi, jnp.pi)
        quat = jnp.stack([jnp.cos(yaw / 2), jnp.zeros((), dtype), jnp.zeros((), dtype), jnp.sin(yaw / 2)])
        base = jnp.asarray([0.0, 0.0, _STANDING_BASE_HEIGHT + 0.02], dtype)
        q = jnp.concatenate([base, quat, joints])
        return sim_init(self.model, q=q), jnp.zeros((0,), dtype)

    @staticmethod
    def _upright(sim):
        x, y = sim.q[4], sim.q[5]
        return 1.0 - 2.0 * (x * x + y * y)  # z-axis of the base in world z (rotation entry R_zz)

    def observe(self, sim, task):
        return jnp.concatenate([sim.q[2:], sim.v])

    def reward(self, before, after, action, task):
        forward = after.v[0]
        upright = self._upright(after)
        reward = (forward + self.upright_weight * upright + self.alive_bonus
                  - self.ctrl_weight * jnp.sum(action**2))
        return reward, {"forward_velocity": forward, "height": after.q[2], "upright": upright}

    def terminated(self, sim, task):
        return (sim.q[2] < self.min_height) | (self._upright(sim) < 0.5)
