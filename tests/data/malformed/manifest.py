"""Expected outcome of loading every file of the malformed-input corpus with ``jc.load``.

Each case either fails with a specific exception from ``jaxsim_contact.io._errors`` (or
``FileNotFoundError`` for a missing model file) whose message contains every string of
``message`` — the model file's name, the offending element or asset, and the value — or loads,
emits a ``UserWarning`` containing every string of ``message``, applies the documented fallback,
and then survives a 1000-step drop test (tests/io/test_malformed_corpus.py).

``make_corpus.py`` writes the files and regenerates the README table from ``CASES``.
"""

from __future__ import annotations

from typing import NamedTuple


class Case(NamedTuple):
    file: str
    what: str  # what is wrong with it
    outcome: str  # "error" or "loads"
    exception: str  # exception class name ("" when it loads)
    message: tuple[str, ...]  # substrings of the error message / of a warning
    fallback: str = ""  # documented fallback when it loads


def error(file, what, exception, *message):
    return Case(file, what, "error", exception, (file, *message))


def loads(file, what, fallback, *message):
    return Case(file, what, "loads", "", (file, *message), fallback)


PLANAR = "extruded along its normal to 1 % of its largest extent (warning names mesh and file)"
HULL_INERTIA = "mass properties from the convex hull (MuJoCo inertia='convex'), as collision uses"
SCALE = "none needed: loads unchanged; warning names the geom and its bounding radius"

CASES = (
    # --- meshes ---------------------------------------------------------------------------------
    loads("mesh_planar.xml", "planar 4-vertex OBJ mesh", PLANAR, "mesh 'asset'", "mesh_planar.obj",
          "coplanar", "thickness of 0.001 m"),
    loads("mesh_planar_stl.xml", "planar binary STL mesh", PLANAR, "mesh 'asset'", "mesh_planar.stl",
          "coplanar"),
    loads("mesh_triangle.xml", "3-vertex mesh (one triangle)", PLANAR, "mesh 'asset'",
          "mesh_triangle.obj", "3 vertices are coplanar"),
    error("mesh_collinear.xml", "collinear vertices", "DegenerateMeshError", "mesh 'asset'",
          "mesh_collinear.obj", "collinear", "singular values"),
    error("mesh_coincident.xml", "all 4 vertices coincide", "DegenerateMeshError", "mesh 'asset'",
          "mesh_coincident.obj", "coincide at [0.1, 0.1, 0.1]"),
    loads("mesh_duplicate_vertices.xml", "duplicate vertices forming a doubled, reversed face",
          HULL_INERTIA, "mesh 'asset'", "mesh_duplicate_vertices.obj", "not a closed manifold"),
    loads("mesh_inverted.xml", "inverted (inward) faces, OBJ", HULL_INERTIA, "mesh 'asset'",
          "mesh_inverted.obj", "inverted", "negative volume"),
    loads("mesh_inverted_stl.xml", "inverted faces, binary STL", HULL_INERTIA, "mesh 'asset'",
          "mesh_inverted.stl", "inverted"),
    loads("mesh_non_manifold.xml", "non-manifold (dangling double face)", HULL_INERTIA,
          "mesh 'asset'", "mesh_non_manifold.obj", "not a closed manifold"),
    loads("mesh_open.xml", "open mesh (a face missing)", HULL_INERTIA, "mesh 'asset'",
          "mesh_open.obj", "not a closed manifold"),
    error("mesh_nonfinite.xml", "NaN vertex coordinate", "DegenerateMeshError", "mesh 'asset'",
          "mesh_nonfinite.obj", "vertex 3", "nan"),
    error("mesh_empty.xml", "empty OBJ file", "DegenerateMeshError", "mesh 'asset'",
          "mesh_empty.obj", "no readable vertices"),
    error("mesh_truncated_stl.xml", "binary STL cut after 120 bytes", "DegenerateMeshError",
          "mesh 'asset'", "no readable vertices"),
    error("mesh_scale_1e-6.xml", "valid tetrahedron at scale 1e-6", "DegenerateMeshError",
          "mesh 'asset'", "mesh_tetrahedron.obj", "scale [1e-06, 1e-06, 1e-06]", "volume 1.67e-22"),
    loads("mesh_scale_1e6.xml", "valid tetrahedron at scale 1e6", SCALE, "geom 'hull'",
          "bounding radius"),
    error("mesh_scale_zero.xml", "mesh scale with a zero component", "DegenerateMeshError",
          "mesh 'asset'", "scale [1.0, 1.0, 0.0]"),
    error("mesh_missing_file.xml", "mesh file does not exist", "MissingAssetError", "mesh 'asset'",
          "does_not_exist.obj"),
    # --- primitives ---------------------------------------------------------------------------
    error("sphere_zero_radius.xml", "sphere of radius 0", "InvalidGeometryError", "geom 'ball'",
          "size [0.0]"),
    error("sphere_negative_radius.xml", "sphere of radius -0.1", "InvalidGeometryError",
          "geom 'ball'", "size [-0.1]"),
    error("sphere_nonfinite_radius.xml", "sphere of radius NaN", "InvalidGeometryError",
          "geom 'ball'", "size [nan]"),
    error("box_zero_extent.xml", "box with a zero half-extent", "InvalidGeometryError",
          "geom 'slab'", "size [0.1, 0.1, 0.0]"),
    error("capsule_zero_radius.xml", "capsule of radius 0", "InvalidGeometryError", "geom 'rod'",
          "size [0.0, 0.1]"),
    error("cylinder_zero_length.xml", "cylinder of half-length 0", "InvalidGeometryError",
          "geom 'disc'", "size [0.1, 0.0]"),
    error("ellipsoid_zero_axis.xml", "ellipsoid with a zero semi-axis", "InvalidGeometryError",
          "geom 'egg'", "size [0.1, 0.0, 0.1]"),
    error("sphere_scale_1e-6.xml", "sphere of radius 1e-6 whose mass comes from its size",
          "InvalidMassError", "'dropped'", "mjMINVAL"),
    loads("sphere_scale_1e-6_inertial.xml", "sphere of radius 1e-6 with an explicit inertial",
          SCALE, "geom 'speck'", "bounding radius 1e-06"),
    loads("box_scale_1e6.xml", "box of half-extent 1e6 m", SCALE, "geom 'continent'",
          "bounding radius 1.73e+06"),
    # --- mass and inertia ---------------------------------------------------------------------
    error("mass_zero.xml", "moving body with mass 0", "InvalidMassError", "body 'dropped'",
          "mass 0.0"),
    error("mass_negative.xml", "body with mass -1", "InvalidMassError", "body 'dropped'",
          "mass -1.0"),
    error("geom_mass_zero.xml", "only geom has mass 0", "InvalidMassError", "'dropped'", "mjMINVAL"),
    error("geom_mass_negative.xml", "geom with mass -1", "InvalidMassError", "geom 'box'",
          "mass -1.0"),
    error("geom_density_negative.xml", "geom with density -1000", "InvalidMassError", "geom 'box'",
          "density -1000.0"),
    error("inertia_negative.xml", "diagonal inertia with a negative moment", "InvalidInertiaError",
          "body 'dropped'", "[0.01, -0.01, 0.01]", "not positive definite"),
    error("inertia_zero.xml", "zero inertia on a moving body", "InvalidInertiaError",
          "body 'dropped'", "[0.0, 0.0, 0.0]"),
    error("fullinertia_indefinite.xml", "full inertia with an indefinite off-diagonal",
          "InvalidInertiaError", "body 'dropped'", "not positive definite"),
    error("inertia_triangle_violation.xml", "moments 0.01, 0.01, 0.05 (A + B < C)",
          "InvalidInertiaError", "body 'dropped'", "[0.01, 0.01, 0.05]", "triangle inequality"),
    # --- friction -----------------------------------------------------------------------------
    error("friction_negative.xml", "friction -0.5", "InvalidFrictionError", "geom 'box'", "-0.5"),
    error("friction_nonfinite.xml", "friction inf", "InvalidFrictionError", "geom 'box'", "inf"),
    # --- joints and elements ------------------------------------------------------------------
    error("joint_unknown_type.xml", "joint type 'screw'", "UnsupportedFeatureError", "'twist'",
          "'screw'"),
    error("unknown_element.xml", "unknown element <wobble>", "ModelParseError", "wobble"),
    # --- broken files -------------------------------------------------------------------------
    error("truncated.xml", "MJCF cut after 150 characters", "ModelParseError", "line 6"),
    error("empty.xml", "empty file", "ModelParseError", "line 1"),
    error("wrong_root.xml", "root element <scene>", "ModelParseError", "<scene>"),
    error("include_missing.xml", "<include> of a file that does not exist", "MissingAssetError",
          "does_not_exist_include.xml"),
    error("no_such_model.xml", "the model file itself does not exist (not in the corpus)",
          "FileNotFoundError"),
    # --- URDF ---------------------------------------------------------------------------------
    error("urdf_mass_zero.urdf", "link with mass 0", "InvalidMassError", "body 'dropped'",
          "mass 0.0"),
    error("urdf_mass_negative.urdf", "link with mass -2", "InvalidMassError", "body 'dropped'",
          "mass -2.0"),
    error("urdf_inertia_non_pd.urdf", "ixx = -0.01", "InvalidInertiaError", "body 'dropped'",
          "-0.01", "not positive definite"),
    error("urdf_inertia_indefinite.urdf", "ixy = 0.02 > ixx", "InvalidInertiaError",
          "body 'dropped'", "not positive definite"),
    error("urdf_joint_unknown_type.urdf", "joint type 'wobbly'", "UnsupportedFeatureError",
          "'base_to_dropped'", "'wobbly'"),
    error("urdf_joint_planar.urdf", "joint type 'planar' (not simulated)",
          "UnsupportedFeatureError", "'base_to_dropped'", "'planar'"),
    error("urdf_truncated.urdf", "URDF cut after 200 characters", "ModelParseError", "line"),
    error("urdf_missing_mesh.urdf", "collision mesh file does not exist", "MissingAssetError",
          "does_not_exist.stl"),
    loads("urdf_planar_mesh.urdf", "planar binary STL collision mesh", PLANAR, "mesh 'mesh_planar'",
          "mesh_planar.stl", "coplanar"),
    error("urdf_box_zero_size.urdf", "collision box with a zero side", "InvalidGeometryError",
          "(box)", "size [0.05, 0.0, 0.05]"),
)


def readme_table() -> str:
    """The README of the corpus: one row per case."""
    lines = [
        "# Malformed-input corpus",
        "",
        "Bad meshes and models for `jc.load` (issue 8). `make_corpus.py` writes every file and this",
        "README from `manifest.py`, which `tests/io/test_malformed_corpus.py` checks: each",
        "file either fails with the listed exception (from `jaxsim_contact.io._errors`; message",
        "contains the listed strings: file, element or asset, value) or loads with a `UserWarning`",
        "containing the listed strings, applies the documented fallback, and survives a 1000-step",
        "drop test with finite `q` and `v`. Fallbacks are documented in `jaxsim_contact/io/_meshes.py`",
        "(meshes) and `jaxsim_contact/io/_validation.py` (scales).",
        "",
        f"{len(CASES)} cases, {sum(c.outcome == 'loads' for c in CASES)} of which load.",
        "",
        "| file | what is wrong | outcome | message contains | fallback |",
        "|---|---|---|---|---|",
    ]
    for case in CASES:
        outcome = case.exception if case.outcome == "error" else "loads + warning"
        message = ", ".join(f"`{m}`" for m in case.message[1:]) or "—"
        lines.append(f"| `{case.file}` | {case.what} | {outcome} | {message} | {case.fallback or '—'} |")
    return "\n".join(lines) + "\n"
