"""Behaviour is unchanged: 100-step float64 trajectories (``q``, ``v``, contact forces) and one step
Jacobian of the demo, the humanoid, the Go2, the Panda and the 10-box tower equal the recorded ones
(``tests/golden.py``, ``tests/data/golden/``) — bit for bit on a machine whose digests are
recorded, and over the first steps to rounding on any other (``golden.machine_key`` says why).

A failure names the arrays that differ and by how much; if the change is intended, regenerate with
``python tests/golden.py --write`` and state the size of the difference and its cause in the note.
"""

from __future__ import annotations

import numpy as np
import pytest

import golden


@pytest.fixture(scope="module")
def machine_key():
    return golden.machine_key()


@pytest.mark.parametrize("name", golden.SCENES)
def test_trajectory_and_step_jacobian_are_unchanged(name, machine_key):
    recorded = golden.load_record(name)["machines"]
    stored = np.load(golden.GOLDEN_DIR / f"{name}.npz")
    now = golden.compute(name)
    assert sorted(now) == sorted(stored.files)
    if machine_key in recorded:
        digests = recorded[machine_key]
        assert sorted(now) == sorted(digests)
        changed = {}
        for key, value in now.items():
            if golden.digest(value) != digests[key]:
                reference = stored[key]
                changed[key] = (float(np.max(np.abs(value - reference))) if value.shape == reference.shape
                                else f"shape {value.shape} != {reference.shape}")
        assert not changed, (f"{name}: arrays differ bitwise from those recorded on this machine "
                             f"({machine_key}); max |difference| to the stored arrays: {changed}")
    else:
        over = golden.prefix_differences(now, stored)
        assert not over, (
            f"{name}: no digests recorded for this machine ({machine_key}; recorded: {sorted(recorded)}), "
            f"and the first {golden.PREFIX_STEPS} steps differ from the stored arrays beyond "
            f"{golden.PREFIX_RTOL:g} of their scale: {over}")


def test_prefix_check_catches_a_change_that_bitwise_rounding_does_not_make():
    """The cross-machine check is not vacuous: the demo's stored arrays pass against themselves, a
    rounding-sized perturbation (1e-14 relative) passes, and a change of one contact force by 1e-6
    of the scale at step 10 fails."""
    stored = dict(np.load(golden.GOLDEN_DIR / "tower.npz"))
    assert golden.prefix_differences(stored, stored) == {}
    rounded = {key: value * (1.0 + 1e-14) for key, value in stored.items()}
    assert golden.prefix_differences(rounded, stored) == {}
    changed = {key: value.copy() for key, value in stored.items()}
    scale = np.max(np.abs(stored["force"][:golden.PREFIX_STEPS]))
    changed["force"][10].flat[np.argmax(np.abs(changed["force"][10]))] += 1e-6 * scale
    assert set(golden.prefix_differences(changed, stored)) == {"force"}


def test_machine_key_is_stable_within_a_process(machine_key):
    assert golden.machine_key() == machine_key
    assert len(machine_key) == 12
