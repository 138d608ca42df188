"""Behaviour is unchanged bit for bit: 100-step float64 trajectories (``q``, ``v``, contact forces)
and one step Jacobian of the demo, the humanoid, the Go2, the Panda and the 10-box tower equal the
recorded ones (``tests/golden.py``, ``tests/data/golden/``).

A failure names the arrays that differ and by how much; if the change is intended, regenerate with
``python tests/golden.py --write`` and state the size of the difference and its cause in the note.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import golden


@pytest.mark.parametrize("name", golden.SCENES)
def test_trajectory_and_step_jacobian_are_bitwise_unchanged(name):
    stored_digests = json.loads((golden.GOLDEN_DIR / f"{name}.json").read_text())
    stored = np.load(golden.GOLDEN_DIR / f"{name}.npz")
    now = golden.compute(name)
    assert sorted(now) == sorted(stored_digests)
    changed = {}
    for key, value in now.items():
        if golden.digest(value) != stored_digests[key]:
            reference = stored[key]
            size = (float(np.max(np.abs(value - reference)))
                    if value.shape == reference.shape else f"shape {value.shape} != {reference.shape}")
            changed[key] = size
    assert not changed, f"{name}: arrays differ from the recorded ones (max |difference|): {changed}"
