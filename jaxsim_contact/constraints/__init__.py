"""Constraint rows of a step and their solve (DESIGN §2 stages 4–5).

One producer module per constraint kind yields a typed row block (:mod:`._rows`): contacts
(:mod:`._contact_rows`, cone slots), hinge/slide joint limits (:mod:`._limit_rows`), ball-joint
limits (:mod:`._ball_limit_rows`) and tendon limits (:mod:`._tendon_limit_rows`), all unilateral
slots, dry friction (:mod:`._friction_rows`, box slots) and equality constraints
(:mod:`._equality_rows`, bilateral slots). The
assembler (:mod:`._assembler`) stacks the blocks into one contact problem and splits the solved
force back per block; :func:`contact_stage` (:mod:`._stage`) runs rows → problem → solve →
constrained velocity inside ``jc.step``.
"""

from ._assembler import PRODUCERS, num_constraint_slots, slot_ranges, split_forces
from ._ball_limit_rows import BallLimitRows, limited_ball_joints
from ._contact_rows import ContactRows, contact_slots, default_contact_budget
from ._limit_rows import LimitRows, limited_joints
from ._rows import RowBlock, RowKind
from ._tendon_limit_rows import TendonLimitRows, limited_tendons
from ._stage import contact_stage, initial_contact_data

__all__ = [
    "contact_slots",
    "contact_stage",
    "default_contact_budget",
    "initial_contact_data",
    "num_constraint_slots",
    "limited_joints",
    "limited_ball_joints",
    "limited_tendons",
    "PRODUCERS",
    "RowBlock",
    "RowKind",
    "ContactRows",
    "LimitRows",
    "BallLimitRows",
    "TendonLimitRows",
    "slot_ranges",
    "split_forces",
]
