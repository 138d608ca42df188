"""Session fixtures for the dynamics tests: each scene is loaded and compiled once."""

from __future__ import annotations

import warnings

import pytest

import jaxsim_contact as jc
from dynamics_reference import SCENES, scene_path


@pytest.fixture(scope="session")
def scene():
    """``scene(name) -> (model, mjmodel)``, cached for the session. ``mjmodel`` is MuJoCo's
    compilation with the same loader options (the reference the model was converted from)."""
    cache = {}

    def get(name: str):
        if name not in cache:
            path, kwargs = scene_path(name), SCENES[name][1]
            with warnings.catch_warnings():
                # the Panda's finger mimic joint: dropping it is asserted in test_loading.py
                warnings.filterwarnings("ignore", message=".*ignoring equality constraint")
                cache[name] = (jc.load(path, **kwargs), jc.io.compile_mjmodel(path, **kwargs))
        return cache[name]

    return get
