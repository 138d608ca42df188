"""The io tests load the dynamics tests' scenes (``tests/dynamics/dynamics_reference.py``) and the
reliability tests' small scenes (``tests/reliability/scenes.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
for folder in ("dynamics", "reliability"):
    if str(TESTS / folder) not in sys.path:
        sys.path.insert(0, str(TESTS / folder))

from dynamics_reference import load_scene  # noqa: E402


@pytest.fixture(scope="session")
def scene():
    """``scene(name) -> (model, mjmodel)``, cached for the session (``dynamics_reference.load_scene``)."""
    return load_scene
