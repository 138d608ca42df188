"""Malformed-input corpus (issue 8): every file of ``tests/data/malformed`` either fails with the
specific error its manifest entry names (message naming the file, the asset and the value) or
loads with a warning naming the asset and survives a 1000-step drop test without a non-finite
value."""

from __future__ import annotations

import dataclasses
import sys
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import jaxsim_contact as jc
from jaxsim_contact.io import _errors as errors

CORPUS = Path(__file__).resolve().parents[1] / "data" / "malformed"
sys.path.insert(0, str(CORPUS))
from manifest import CASES, readme_table  # noqa: E402

sys.path.remove(str(CORPUS))

DROP_STEPS = 1000
# Padded vertex count of every loadable corpus mesh (largest: the extruded planar quad, 8), so the
# mesh models share one compiled rollout.
MESH_PAD = 8
_rollout = jax.jit(jc.rollout)


def _load(case):
    """Load a case, returning (model or exception, recorded warnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = jc.load(CORPUS / case.file)
        except Exception as err:  # the test inspects the type
            result = err
    return result, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def _canonical(model):
    """The same physics with the static names removed and mesh vertices padded (repeating a
    vertex never changes a support point), so that equal structures reuse one compilation."""
    vertices = tuple(
        jnp.concatenate([v, jnp.repeat(v[:1], MESH_PAD - v.shape[0], axis=0)])
        for v in model.mesh_vertices
    )
    collision = dataclasses.replace(
        model.collision, mesh_hull=tuple(tuple(range(MESH_PAD)) for _ in vertices)
    )
    return dataclasses.replace(
        model, mesh_vertices=vertices, collision=collision, source="",
        body_names=("",) * model.nbody, joint_names=("",) * model.njnt,
        geom_names=("",) * model.ngeom,
    )


def test_corpus_is_complete_and_readme_matches_manifest():
    assert len(CASES) >= 30
    assert len({c.file for c in CASES}) == len(CASES)
    for case in CASES:
        assert (CORPUS / case.file).is_file() != (case.file == "no_such_model.xml"), case.file
    assert (CORPUS / "README.md").read_text() == readme_table()


@pytest.mark.parametrize("case", [c for c in CASES if c.outcome == "error"], ids=lambda c: c.file)
def test_bad_file_fails_with_a_specific_error(case):
    result, _ = _load(case)
    expected = FileNotFoundError if case.exception == "FileNotFoundError" else getattr(
        errors, case.exception)
    assert isinstance(result, expected), f"{case.file}: {result!r}"
    # the generic base class alone is not specific enough
    assert type(result) is not errors.ModelError
    for text in case.message:
        assert text in str(result), f"{case.file}: {text!r} not in {str(result)!r}"


_LOADABLE = [c for c in CASES if c.outcome == "loads"]


@pytest.mark.parametrize("case", _LOADABLE, ids=lambda c: c.file)
def test_loadable_file_warns_and_survives_a_drop(case):
    model, caught = _load(case)
    assert isinstance(model, jc.Model), f"{case.file}: {model!r}"
    assert any(all(text in w for text in case.message) for w in caught), (case.file, caught)
    model = _canonical(model)
    state = jc.init(model)
    final, traj = _rollout(model, state, jnp.zeros((DROP_STEPS, model.nu), state.q.dtype))
    assert bool(jnp.all(jnp.isfinite(traj.q))) and bool(jnp.all(jnp.isfinite(traj.v)))
    assert not int(final.error) & int(jc.ErrorFlag.NON_FINITE_STATE)
    # it fell: the dropped body is lower than where it started and (MJCF: a floor) came to rest
    assert float(final.q[2]) < float(state.q[2])
    if jc.GeomType.PLANE in model.geom_type:
        assert float(jnp.max(jnp.abs(final.v))) < 0.5


def test_planar_fallback_extrudes_to_documented_thickness():
    """The planar 0.1 m quad becomes a slab 1 % of its extent (1 mm) thick."""
    model, _ = _load(next(c for c in CASES if c.file == "mesh_planar.xml"))
    vertices = model.mesh_vertices[0]
    extent = jnp.max(vertices, axis=0) - jnp.min(vertices, axis=0)
    assert jnp.allclose(jnp.sort(extent), jnp.array([1e-3, 0.1, 0.1]), rtol=1e-9)


def test_hull_inertia_fallback_matches_the_closed_mesh():
    """The open tetrahedron (one face missing) gets the mass properties of the closed one, which
    MuJoCo's default face integration does not give it (centre of mass 0.0222 vs 0.025 m)."""
    import mujoco

    text = (CORPUS / "mesh_open.xml").read_text()

    def mujoco_body(mesh_file):
        compiled = mujoco.MjModel.from_xml_string(
            text.replace('file="mesh_open.obj"', f'file="{CORPUS / mesh_file}"'))
        return jnp.asarray(compiled.body_inertia[1]), jnp.asarray(compiled.body_ipos[1])

    loaded, _ = _load(next(c for c in CASES if c.file == "mesh_open.xml"))
    closed_inertia, closed_com = mujoco_body("mesh_tetrahedron.obj")
    _, open_com = mujoco_body("mesh_open.obj")
    assert not jnp.allclose(open_com, closed_com, atol=1e-4)  # the defect the fallback repairs
    assert jnp.allclose(loaded.body_inertia[1], closed_inertia, rtol=1e-6)
    assert jnp.allclose(loaded.body_ipos[1], closed_com, atol=1e-9)
