"""The constraint tests share the step tests' compiled functions (``tests/dynamics/compiled.py``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "dynamics"))
