"""Loading models (MJCF and URDF through the MuJoCo compiler, with host-side validation), editing
a loaded scene (:func:`add_floor`, :func:`set_collision`), checkpoints of models and states
(:mod:`._checkpoint`; no pickle anywhere in this package), and a model's step or rollout exported
as bytes that load without tracing again (:mod:`._export`)."""

from ._checkpoint import (
    CheckpointError,
    CheckpointStructureError,
    CheckpointVersionError,
    CorruptCheckpointError,
    NotACheckpointError,
    restore,
    save,
)
from ._errors import (
    DegenerateMeshError,
    ClampedParameterWarning,
    PairParameterWarning,
    IgnoredOptionWarning,
    IgnoredSensorWarning,
    InvalidActuatorError,
    InvalidFluidError,
    InvalidGeometryError,
    InvalidFrictionError,
    InvalidInertiaError,
    InvalidMassError,
    MissingAssetError,
    ModelError,
    ModelParseError,
    SelfOverlapWarning,
    UnsupportedFeatureError,
)
from ._export import ExportError, ExportedProgram, export_rollout, export_step, load_exported
from ._loader import compile_mjmodel, compile_spec, from_mjmodel, load, mujoco_compatible, prepare_spec
from ._overlaps import self_overlaps, welded_overlap_geom_pairs
from ._scene import add_floor, set_collision, set_height_field

__all__ = [
    "load",
    "save",
    "restore",
    "CheckpointError",
    "NotACheckpointError",
    "CheckpointVersionError",
    "CorruptCheckpointError",
    "CheckpointStructureError",
    "export_step",
    "export_rollout",
    "load_exported",
    "ExportedProgram",
    "ExportError",
    "compile_mjmodel",
    "prepare_spec",
    "compile_spec",
    "from_mjmodel",
    "mujoco_compatible",
    "add_floor",
    "set_collision",
    "set_height_field",
    "self_overlaps",
    "welded_overlap_geom_pairs",
    "ModelError",
    "ModelParseError",
    "MissingAssetError",
    "InvalidMassError",
    "InvalidInertiaError",
    "InvalidFrictionError",
    "InvalidGeometryError",
    "DegenerateMeshError",
    "UnsupportedFeatureError",
    "SelfOverlapWarning",
    "IgnoredOptionWarning",
    "ClampedParameterWarning",
    "PairParameterWarning",
    "IgnoredSensorWarning",
    "InvalidActuatorError",
    "InvalidFluidError",
]
