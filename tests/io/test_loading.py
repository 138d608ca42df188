"""``jc.load``: structure of the loaded Model, URDF package resolution, and every bad-input path
(a specific exception naming the file, the element and the value)."""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.io import (
    InvalidFrictionError,
    InvalidInertiaError,
    InvalidMassError,
    MissingAssetError,
    ModelParseError,
    UnsupportedFeatureError,
)
from jaxsim_contact.collision._pairs import build_collision_structure, collision_structure
from jaxsim_contact.io._scene import rebuild_collision
from jaxsim_contact._types import GeomType
from dynamics_reference import MODELS, robots_dir, scene_path


def write(tmp_path: Path, text: str, name: str = "model.xml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def mjcf(body: str, extra: str = "") -> str:
    return f"<mujoco>{extra}<worldbody>{body}</worldbody></mujoco>"


def write_binary_stl(path: Path, size: float = 0.1) -> None:
    """A closed tetrahedron as a binary STL (what MuJoCo reads natively)."""
    v = np.array([[0, 0, 0], [size, 0, 0], [0, size, 0], [0, 0, size]], dtype=np.float32)
    faces = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
    with open(path, "wb") as handle:
        handle.write(b"\0" * 80 + struct.pack("<I", len(faces)))
        for a, b, c in faces:
            handle.write(struct.pack("<3f", 0, 0, 0) + v[a].tobytes() + v[b].tobytes() + v[c].tobytes())
            handle.write(b"\0\0")


# --- structure ---------------------------------------------------------------------------------


def test_model_structure_is_static_and_parameters_are_dynamic(scene):
    model, mj = scene("all_joints")
    assert (model.nbody, model.njnt, model.nq, model.nv, model.nu, model.ngeom) == (
        mj.nbody, mj.njnt, mj.nq, mj.nv, mj.nu, mj.ngeom)
    # tree levels partition the non-world bodies by depth, parents one level up
    depth = {0: 0}
    for level_index, level in enumerate(model.tree.levels):
        for body in level:
            depth[body] = level_index + 1
            assert depth[model.tree.body_parent[body]] == level_index
    assert sorted(depth) == list(range(model.nbody))
    # every leaf is an array (dynamic); no array hides in the static part
    leaves = jax.tree_util.tree_leaves(model)
    assert all(isinstance(x, jax.Array) for x in leaves)
    assert any(x is model.body_mass for x in leaves) and any(x is model.options.dt for x in leaves)
    static = eqx.filter(model, eqx.is_array, inverse=True)
    assert not any(isinstance(x, (np.ndarray, jax.Array)) for x in jax.tree_util.tree_leaves(static))
    hash(model.tree)  # hashable: usable as a jit cache key
    np.testing.assert_allclose(np.asarray(model.options.gravity), [0.3, -0.2, -9.81])
    assert float(model.options.dt) == 0.002
    assert model.geom_type[model.geom_names.index("floor")] == jc.GeomType.PLANE
    assert model.geom_type[model.geom_names.index("hand")] == jc.GeomType.ELLIPSOID
    np.testing.assert_allclose(np.asarray(model.geom_friction[model.geom_names.index("base_box")]),
                               [0.8, 0.01, 0.001])


def test_contact_exclusions_are_kept_as_body_pairs(tmp_path):
    body = ('<body name="a"><freejoint/><geom size="0.1"/></body>'
            '<body name="b"><freejoint/><geom size="0.1"/>'
            '<body name="c"><joint/><geom size="0.1"/></body></body>')
    path = write(tmp_path, mjcf(body, '<contact><exclude body1="a" body2="c"/></contact>'))
    model = jc.load(path)
    assert model.exclude_body_pairs == ((model.body_names.index("a"), model.body_names.index("c")),)


PAIR_XML = """<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1" contype="0" conaffinity="0"/>
    <body name="ball" pos="0 0 0.3"><freejoint/>
      <geom name="ball" type="sphere" size="0.1" contype="0" conaffinity="0"/></body>
    <body name="box" pos="0.5 0 0.3"><freejoint/>
      <geom name="box" type="box" size="0.1 0.1 0.1" contype="0" conaffinity="0"/></body>
  </worldbody>
  <contact>%s</contact>
</mujoco>"""


def _pairs(model):
    return sorted((g.type_a.name, g.type_b.name, a, b) for g in model.collision.groups
                  for a, b in zip(g.geom_a, g.geom_b))


def test_explicit_contact_pairs_become_candidates(tmp_path):
    # contype = conaffinity = 0 everywhere (as in MuJoCo's humanoid): only <pair> makes contacts
    assert _pairs(jc.load(write(tmp_path, PAIR_XML % ""))) == []
    model = jc.load(write(tmp_path, PAIR_XML % '<pair geom1="ball" geom2="floor"/>'))
    assert model.contact_geom_pairs == ((0, 1),)  # MuJoCo orders the pair by geom type
    assert _pairs(model) == [("PLANE", "SPHERE", 0, 1)]
    # a rebuilt structure, and the one derived from the static fields, keep the pair
    assert _pairs(rebuild_collision(model)) == [("PLANE", "SPHERE", 0, 1)]
    derived = collision_structure(dataclasses.replace(model, collision=None))
    assert _pairs(dataclasses.replace(model, collision=derived)) == [("PLANE", "SPHERE", 0, 1)]
    # the ball rests on the floor instead of falling through it
    final, _ = jax.jit(jc.rollout)(model, jc.init(model), jnp.zeros((200, 0)))
    assert abs(float(final.q[2]) - 0.1) < 2e-3 and int(final.error) == 0
    assert float(final.q[9]) < -0.4  # the box, without a pair, falls through (free fall: -0.48)


def test_explicit_pair_settings_the_engine_ignores_are_named(tmp_path):
    path = write(tmp_path, PAIR_XML % '<pair name="slippery" geom1="ball" geom2="floor" friction="0.1 0.1 0.005 0.0001 0.0001"/>')
    with pytest.warns(UserWarning, match="slippery.*friction 0.1.*geoms' friction 1.0"):
        jc.load(path)
    with pytest.raises(ValueError, match="two different geoms"):
        build_collision_structure(
            geom_type=(GeomType.SPHERE,), geom_body=(1,), geom_contype=(1,),
            geom_conaffinity=(1,), body_parent=(0, 0), body_joint_num=(0, 1),
            contact_geom_pairs=((0, 0),))


def test_dtype_option_and_astype():
    model32 = jc.load(MODELS / "pendulum.xml", dtype=jnp.float32)
    assert all(x.dtype == jnp.float32 for x in jax.tree_util.tree_leaves(model32)
               if jnp.issubdtype(x.dtype, jnp.floating))
    assert jc.load(MODELS / "pendulum.xml").astype(jnp.float32).body_mass.dtype == jnp.float32


def test_replace_options_changes_dynamic_values_only():
    model = jc.load(MODELS / "pendulum.xml")
    faster = model.replace_options(dt=0.01, gravity=[0.0, 0.0, -1.62])
    assert float(faster.options.dt) == 0.01 and float(faster.options.gravity[2]) == -1.62
    assert faster.tree is model.tree
    with pytest.raises(TypeError, match="unknown option"):
        model.replace_options(timestep=0.1)


def test_urdf_package_uris_resolve_through_search_dirs(tmp_path):
    package = tmp_path / "share" / "my_robot"
    (package / "meshes").mkdir(parents=True)
    write_binary_stl(package / "meshes" / "tip.stl")
    urdf = """<robot name="r">
      <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="tip"><inertial><mass value="0.5"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
        <collision><geometry><mesh filename="package://my_robot/meshes/tip.stl"/></geometry></collision></link>
      <joint name="hinge" type="revolute"><parent link="base"/><child link="tip"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
    </robot>"""
    path = write(tmp_path, urdf, "robot.urdf")
    with pytest.raises(MissingAssetError, match=r"package://my_robot/meshes/tip.stl") as info:
        jc.load(path)
    assert str(path) in str(info.value) and isinstance(info.value, FileNotFoundError)
    model = jc.load(path, package_dirs=[tmp_path / "share"])
    assert model.nv == 1 and jc.GeomType.MESH in model.geom_type
    assert model.mesh_vertices[0].shape == (4, 3)
    floating = jc.load(path, package_dirs=[tmp_path / "share"], floating_base=True)
    assert floating.tree.joint_type == (jc.JointType.FREE, jc.JointType.HINGE)


def test_ascii_stl_meshes_are_read_through_trimesh(tmp_path):
    ascii_stl = "solid t\n" + "".join(
        f"facet normal 0 0 0\nouter loop\nvertex {a}\nvertex {b}\nvertex {c}\nendloop\nendfacet\n"
        for a, b, c in [("0 0 0", "0 .1 0", ".1 0 0"), ("0 0 0", ".1 0 0", "0 0 .1"),
                        ("0 0 0", "0 0 .1", "0 .1 0"), (".1 0 0", "0 .1 0", "0 0 .1")]
    ) + "endsolid t\n"
    (tmp_path / "tet.stl").write_text(ascii_stl)
    path = write(tmp_path, mjcf('<body><freejoint/><geom type="mesh" mesh="tet" mass="1"/></body>',
                                '<asset><mesh name="tet" file="tet.stl"/></asset>'))
    model = jc.load(path)
    assert model.geom_type == (jc.GeomType.MESH,) and model.mesh_vertices[0].shape == (4, 3)


def test_example_robot_data_is_found_without_search_dirs():
    # the installed example-robot-data tree is a default package search directory
    model = jc.load(robots_dir() / "ur_description/urdf/ur5_robot.urdf")
    assert model.nv == 6 and len(model.mesh_vertices) > 0


def test_panda_mimic_joint_is_a_joint_equality_unless_ignored():
    """The URDF ``mimic`` of the Panda's second finger becomes MuJoCo's joint equality (issue 48);
    ``ignore_equality=True`` still drops it, with a warning."""
    model = jc.load(scene_path("panda"))
    assert model.nv == 9 and model.equalities.kind == (jc._model.EqualityKind.JOINT,)
    with pytest.warns(UserWarning, match="ignoring equality constraint"):
        assert jc.load(scene_path("panda"), ignore_equality=True).neq == 0


def test_allegro_inertia_triangle_violation_needs_balance_inertia():
    with pytest.raises(InvalidInertiaError, match=r"link_3\.0.*(triangle inequality|A \+ B >= C).*balance_inertia"):
        jc.load(scene_path("allegro"))


# --- bad input ---------------------------------------------------------------------------------


def test_missing_model_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.xml"):
        jc.load(tmp_path / "nowhere.xml")


def test_malformed_xml_names_file_and_line(tmp_path):
    path = write(tmp_path, "<mujoco>\n<worldbody>\n<body>\n</worldbod>\n</mujoco>")
    with pytest.raises(ModelParseError, match=r"line 4") as info:
        jc.load(path)
    assert str(path) in str(info.value)


def test_unknown_root_element(tmp_path):
    with pytest.raises(ModelParseError, match=r"<scene>"):
        jc.load(write(tmp_path, "<scene/>"))


def test_missing_mesh_file_names_mesh_and_file(tmp_path):
    path = write(tmp_path, mjcf('<body><freejoint/><geom type="mesh" mesh="hull"/></body>',
                                '<asset><mesh name="hull" file="no_such_mesh.stl"/></asset>'))
    with pytest.raises(MissingAssetError, match=r"mesh 'hull'.*no_such_mesh\.stl") as info:
        jc.load(path)
    assert str(path) in str(info.value) and isinstance(info.value, FileNotFoundError)


@pytest.mark.parametrize(
    "inertial, pattern",
    [
        ('<inertial pos="0 0 0" mass="0" diaginertia="1 1 1"/>', r"body 'arm'.*mass 0\.0"),
        ('<inertial pos="0 0 0" mass="-2" diaginertia="1 1 1"/>', r"body 'arm'.*mass -2\.0"),
    ],
)
def test_non_positive_mass_of_a_moving_body(tmp_path, inertial, pattern):
    path = write(tmp_path, mjcf(f'<body name="arm"><joint type="hinge"/>{inertial}</body>'))
    with pytest.raises(InvalidMassError, match=pattern) as info:
        jc.load(path)
    assert str(path) in str(info.value)


def test_negative_mass_of_a_welded_body(tmp_path):
    path = write(tmp_path, mjcf('<body name="plate"><inertial pos="0 0 0" mass="-1" diaginertia="1 1 1"/></body>'))
    with pytest.raises(InvalidMassError, match=r"body 'plate'.*mass -1\.0"):
        jc.load(path)


def test_zero_mass_welded_frame_is_fine(tmp_path):
    body = ('<body name="arm"><joint type="hinge"/><geom size="0.1"/>'
            '<body name="tool_frame" pos="0 0 0.1"><inertial pos="0 0 0" mass="0" diaginertia="0 0 0"/></body></body>')
    assert jc.load(write(tmp_path, mjcf(body))).nbody == 3


@pytest.mark.parametrize(
    "inertia, pattern",
    [
        ('fullinertia="1 1 1 2 0 0"', r"body 'arm'.*not positive definite"),
        ('diaginertia="1 -1 1"', r"body 'arm'.*not positive definite"),
        ('diaginertia="1 1 5"', r"body 'arm'.*triangle inequality"),
    ],
)
def test_non_positive_definite_inertia(tmp_path, inertia, pattern):
    path = write(tmp_path, mjcf(f'<body name="arm"><joint type="hinge"/><inertial pos="0 0 0" mass="1" {inertia}/></body>'))
    with pytest.raises(InvalidInertiaError, match=pattern) as info:
        jc.load(path)
    assert str(path) in str(info.value)


def test_negative_friction_names_geom_and_value(tmp_path):
    path = write(tmp_path, mjcf('<body><freejoint/><geom name="pad" size="0.1" friction="-0.5 0.005 0.0001"/></body>'))
    with pytest.raises(InvalidFrictionError, match=r"geom 'pad'.*-0\.5") as info:
        jc.load(path)
    assert str(path) in str(info.value)


def test_unsupported_mjcf_joint_type(tmp_path):
    path = write(tmp_path, mjcf('<body><joint name="twist" type="screw"/><geom size="0.1"/></body>'))
    with pytest.raises(NotImplementedError, match=r"joint name='twist'.*'screw'") as info:
        jc.load(path)
    assert isinstance(info.value, UnsupportedFeatureError) and str(path) in str(info.value)


def test_unsupported_urdf_joint_type(tmp_path):
    urdf = """<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/>
      <inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="glide" type="planar"><parent link="a"/><child link="b"/></joint></robot>"""
    path = write(tmp_path, urdf, "r.urdf")
    with pytest.raises(NotImplementedError, match=r"URDF joint 'glide'.*'planar'") as info:
        jc.load(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    "extra, pattern",
    [
        ('<actuator><general joint="h" dyntype="user"/></actuator>', r"activation dynamics mjDYN_USER"),
        ('<actuator><adhesion body="b" ctrlrange="0 1"/></actuator>', r"actuator <adhesion"),
    ],
)
def test_unsupported_elements_name_element_and_file(tmp_path, extra, pattern):
    path = write(tmp_path, mjcf('<body><joint name="h"/><geom size="0.1"/></body>', extra))
    with pytest.raises(NotImplementedError, match=pattern) as info:
        jc.load(path)
    assert str(path) in str(info.value)


def test_stiffness_on_ball_joint_is_a_spring(tmp_path):
    """Free / ball joint stiffness is simulated (tests/dynamics/test_tendons.py compares it with
    MuJoCo C); the loader records the joint."""
    path = write(tmp_path, mjcf('<body><joint name="shoulder" type="ball" stiffness="3"/><geom size="0.1"/></body>'))
    assert jc.load(path).rotational_spring_joints == (0,)


def test_singular_mass_matrix_is_refused_with_file_and_joint(tmp_path):
    """Four slides on three axes (MJX's general_dyntype.xml): MuJoCo only warns and regularises,
    our factorisation would be NaN at the first step, so the loader names the problem."""
    body = ('<body><joint name="x" type="slide" axis="1 0 0"/><joint type="slide" axis="0 1 0"/>'
            '<joint type="slide" axis="0 0 1"/><joint name="xy" type="slide" axis="1 1 0"/>'
            '<geom type="box" size=".05 .05 .05" mass="1"/></body>')
    path = write(tmp_path, mjcf(body))
    with pytest.raises(InvalidInertiaError, match=r"mass matrix is singular at qpos0.*joint 'x'") as info:
        jc.load(path)
    assert str(path) in str(info.value)
