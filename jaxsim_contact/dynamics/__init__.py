"""Rigid-body dynamics: kinematics, CRBA mass matrix, RNEA bias, manifold integration, stepping."""

from .batching import chunked_vmap
from .crba import composite_inertias, mass_matrix
from .energy import kinetic_energy, potential_energy, spatial_momentum
from .integration import integrate_positions
from .kinematics import Kinematics, body_poses, body_velocities, forward_kinematics, motion_axes
from .rnea import actuator_forces, bias_forces, passive_forces
from .reset import reset_where
from .sensors import sensors
from .step import SmoothDynamics, init, rollout, smooth_dynamics, step

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
