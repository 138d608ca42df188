"""Rigid-body dynamics: kinematics, CRBA mass matrix, RNEA bias, manifold integration, stepping."""

from ._batching import chunked_vmap
from ._crba import composite_inertias, mass_matrix
from ._energy import kinetic_energy, potential_energy, spatial_momentum
from ._integration import integrate_positions
from ._kinematics import Kinematics, body_poses, body_velocities, forward_kinematics, motion_axes
from ._rnea import actuator_forces, bias_forces, passive_forces
from ._reset import reset_where
from ._sensors import sensors
from ._step import SmoothDynamics, init, rollout, smooth_dynamics, step

__all__ = [
    "Kinematics",
    "forward_kinematics",
    "body_poses",
    "motion_axes",
    "body_velocities",
    "composite_inertias",
    "mass_matrix",
    "bias_forces",
    "passive_forces",
    "actuator_forces",
    "integrate_positions",
    "kinetic_energy",
    "potential_energy",
    "spatial_momentum",
    "SmoothDynamics",
    "smooth_dynamics",
    "init",
    "step",
    "rollout",
    "reset_where",
    "chunked_vmap",
    "sensors",
]
