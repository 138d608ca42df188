"""The public surface is the contract (DESIGN §5): the names users call resolve from ``jc.*`` and the
documented sub-namespaces, and the former ``jc.pipeline`` names still resolve, with a
``DeprecationWarning`` naming their new place."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import jaxsim_contact as jc

CONTRACT = {
    "": ["Transform", "Sphere", "Ellipsoid", "Box", "Capsule", "Cylinder", "Cone", "Plane",
         "ConvexMesh", "support", "load", "init", "step", "rollout", "body_poses", "mass_matrix",
         "reset_where", "save", "restore", "Model", "State", "Options", "ErrorFlag", "compile_report",
         "CompileReport", "ConstraintModel", "FrictionCone"],
    "collision": ["distance", "intersects", "Smoothing", "CollisionResult"],
    "contact": ["ContactProblem", "solve", "residuals", "PGS", "ADMM", "StaggeredProjections",
                "Raisim", "PrimalNewton", "ContactSolver", "ContactSolution"],
    "envs": ["make"],
    "viz": ["to_html"],
    "io": ["load", "add_floor", "set_collision"],
    "constraints": ["contact_slots", "num_constraint_slots", "PRODUCERS", "RowBlock"],
    "testing": ["problems", "fuzz"],
}


@pytest.mark.parametrize("namespace", list(CONTRACT))
def test_contract_names_resolve(namespace):
    module = getattr(jc, namespace) if namespace else jc
    missing = [name for name in CONTRACT[namespace] if not hasattr(module, name)]
    assert not missing, f"jc.{namespace} lacks {missing}"
    if namespace:
        assert namespace in jc.__all__
        assert set(CONTRACT[namespace]) <= set(getattr(module, "__all__", CONTRACT[namespace]))


@pytest.mark.parametrize("old, new", [
    ("add_floor", jc.io.add_floor), ("set_collision", jc.io.set_collision),
    ("contact_slots", jc.constraints.contact_slots), ("narrow_phase", jc.collision.narrow_phase),
    ("CollisionStructure", jc.collision.CollisionStructure),
])
def test_the_former_pipeline_names_warn_and_resolve(old, new):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert getattr(jc.pipeline, old) is new
    assert any(issubclass(w.category, DeprecationWarning) and old in str(w.message) for w in caught)
    with pytest.raises(AttributeError, match="no_such_name"):
        jc.pipeline.no_such_name


#: the package's modules a user may import by name; every other module is private (``_name``)
PUBLIC_MODULES = {
    "", "cli", "pipeline", "scenes", "collision", "constraints", "contact", "dynamics", "envs",
    "envs.gym", "envs.brax", "geometry", "io", "testing", "testing.fuzz", "testing.problems", "viz",
}


def test_internals_live_in_private_modules():
    root = Path(jc.__file__).parent
    public = set()
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(part.startswith("_") for part in parts):
            public.add(".".join(parts))
    assert public == PUBLIC_MODULES, (
        f"public modules outside the contract: {sorted(public - PUBLIC_MODULES)}; "
        f"contract modules missing: {sorted(PUBLIC_MODULES - public)}")
