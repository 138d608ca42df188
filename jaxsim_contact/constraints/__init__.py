"""Constraint rows of a step and their solve (DESIGN §2 stages 4–5).

One producer module per constraint kind yields a typed row block (:mod:`.rows`): contacts
(:mod:`.contact_rows`, cone slots), hinge/slide joint limits (:mod:`.limit_rows`), ball-joint
limits (:mod:`.ball_limit_rows`) and tendon limits (:mod:`.tendon_limit_rows`), all unilateral
slots, dry friction (:mod:`.friction_rows`, box slots) and equality constraints
(:mod:`.equality_rows`, bilateral slots). The
assembler (:mod:`.assembler`) stacks the blocks into one contact problem and splits the solved
force back per block; :func:`contact_stage` (:mod:`.stage`) runs rows → problem → solve →
constrained velocity inside ``jc.step``.
"""

from .assembler import PRODUCERS, num_constraint_slots, slot_ranges, split_forces
from .ball_limit_rows import BallLimitRows, limited_ball_joints
from .contact_rows import ContactRows, contact_slots, default_contact_budget
from .limit_rows import LimitRows, limited_joints
from .rows import RowBlock, RowKind
from .tendon_limit_rows import TendonLimitRows, limited_tendons
from .stage import contact_stage, initial_contact_data

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
