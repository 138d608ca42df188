"""NaN fuzz, test-sized (issue 8): a sample of ``jaxsim_contact.testing.fuzz`` — random collision
configurations (touching, coincident centres, parallel faces, edge–edge, scales 1e-3 to 1e3) and
random contact problems (degenerate Delassus, zero friction, magnitudes 1e-6 to 1e6) — must give
no non-finite value, forward-mode or reverse-mode derivative. ``benchmarks/nan_fuzz.py`` runs the
same code at 10⁵ configurations per pair; this file keeps a few pairs small enough for CI."""

from __future__ import annotations


import pytest

from jaxsim_contact.testing import fuzz as nan_fuzz

SAMPLES = 2000
CHUNK = 1000


# one GJK/EPA pair of polytopes (parallel faces, edge–edge) and one closed-form plane pair
@pytest.mark.parametrize("pair", [("box", "mesh"), ("plane", "cylinder")], ids="-".join)
def test_collision_values_and_derivatives_are_finite(pair):
    (row,) = nan_fuzz.run_collision([pair], SAMPLES, CHUNK, seed=1, log=lambda s: None)
    assert row["samples"] == SAMPLES
    assert (row["values"], row["jvp"], row["vjp"]) == (0, 0, 0), row["example"]


def test_contact_solver_values_and_derivatives_are_finite():
    row = nan_fuzz.run_generic("solver", 0, nan_fuzz.solver_samples, nan_fuzz.solver_fn(), SAMPLES,
                               CHUNK, seed=1, log=lambda s: None)
    assert row["samples"] == SAMPLES
    assert (row["values"], row["jvp"], row["vjp"]) == (0, 0, 0), row["example"]
