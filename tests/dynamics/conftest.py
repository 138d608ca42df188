"""Session fixtures for the dynamics tests: each scene is loaded and compiled once."""

from __future__ import annotations

import pytest

from dynamics_reference import load_scene


@pytest.fixture(scope="session")
def scene():
    """``scene(name) -> (model, mjmodel)``, cached for the session (``dynamics_reference.load_scene``)."""
    return load_scene
