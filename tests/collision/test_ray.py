"""Ray casting (``jaxsim_contact.collision._ray``) against MuJoCo C 4.0.0: ``mju_rayGeom`` for the
primitives, ``mj_rayHfield``, ``mj_ray`` on a scene of every geom type (a non-convex mesh, a
height field, transparent geoms, excluded bodies, static geoms on and off), the rangefinder sensor
against ``sensordata`` (MJX's ``sensor/sensor.xml``, dm_control's quadruped on random terrain);
derivatives against central differences.

Tolerance: distances agree to ``1e-10 · max(1, t)`` — the two computations round differently
(e.g. MuJoCo maps the ray into the geom frame with ``geom_xmat`` from its own quaternion
product), and a ray nearly parallel to a plane has a long, ill-conditioned ``t``.
"""

import warnings
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.collision._ray import ray_geom, ray_hfield, ray_primitive, ray_scene
from jaxsim_contact.dynamics._kinematics import forward_kinematics
from jaxsim_contact._types import GeomType

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dynamics"))
from mujoco_comparison import assert_derivatives_match_central_differences  # noqa: E402

MJX_DATA = Path(mujoco.__file__).parent / "mjx" / "test_data"
MJ_GEOM = {GeomType.PLANE: mujoco.mjtGeom.mjGEOM_PLANE, GeomType.SPHERE: mujoco.mjtGeom.mjGEOM_SPHERE,
           GeomType.CAPSULE: mujoco.mjtGeom.mjGEOM_CAPSULE,
           GeomType.ELLIPSOID: mujoco.mjtGeom.mjGEOM_ELLIPSOID,
           GeomType.CYLINDER: mujoco.mjtGeom.mjGEOM_CYLINDER, GeomType.BOX: mujoco.mjtGeom.mjGEOM_BOX}


def _assert_distances_equal(distance, hit, reference):
    """Our ``(distance, hit)`` against MuJoCo's distance-or-−1, to ``1e-10 · max(1, t)``."""
    distance, hit, reference = np.asarray(distance), np.asarray(hit), np.asarray(reference)
    np.testing.assert_array_equal(hit, reference >= 0)
    error = np.abs(np.where(hit, distance, -1.0) - reference) / np.maximum(1.0, np.abs(reference))
    assert error.max() <= 1e-10, error.max()


def _random_rotations(rng, count):
    rotations = np.empty((count, 9))
    for i in range(count):
        quat = rng.normal(size=4)
        mujoco.mju_quat2Mat(rotations[i], quat / np.linalg.norm(quat))
    return rotations.reshape(count, 3, 3)


@pytest.mark.parametrize("geom_type", list(MJ_GEOM))
def test_primitive_rays_equal_mju_rayGeom(geom_type):
    """600 random rays per type (random poses, sizes, direction lengths; a quarter along a geom
    axis, i.e. parallel to faces; origins inside) and hand-made grazing rays (along a box face's
    plane, through an edge, into a plane from below, beyond a finite plane) equal
    ``mju_rayGeom``."""
    rng = np.random.default_rng(int(geom_type))
    count = 600
    pos = 0.3 * rng.normal(size=(count, 3))
    rot = _random_rotations(rng, count)
    size = rng.uniform(0.2, 1.0, size=(count, 3))
    if geom_type == GeomType.PLANE:
        size[: count // 2, :2] = 0.0  # unbounded planes, then finite ones
    origin = rng.normal(size=(count, 3))
    direction = rng.normal(size=(count, 3)) * rng.uniform(0.3, 3.0, size=(count, 1))
    along = count // 4
    axes = rng.integers(0, 3, size=along)
    direction[:along] = rot[np.arange(along), :, axes] * rng.choice([-1.0, 1.0], size=(along, 1))
    # hand-made: identity pose, unit box / plane / round shapes of size (1, 1, 1)
    grazing = [([-3, 1, 0], [1, 0, 0]), ([-3, 1, 1], [1, 0, 0]), ([-3, 0, 0], [1, 0, 0]),
               ([0, 0, -1], [0, 0, 1]), ([0, 0, 1], [0, 0, -1]), ([5, 0, 1], [0, 0, -1]),
               ([0, 0, 0], [1e-9, 0, 0]), ([1, 1, 2], [0, 0, -1]), ([0, 0, 0], [0, 0, 1])]
    origin = np.concatenate([origin, [o for o, _ in grazing]])
    direction = np.concatenate([direction, [d for _, d in grazing]]).astype(np.float64)
    pos = np.concatenate([pos, np.zeros((len(grazing), 3))])
    rot = np.concatenate([rot, np.tile(np.eye(3), (len(grazing), 1, 1))])
    size = np.concatenate([size, np.ones((len(grazing), 3))])
    cast = jax.jit(jax.vmap(lambda o, d, p, r, s: ray_geom(o, d, p, r, s, geom_type)))
    distance, hit = cast(origin, direction, pos, rot, size)
    reference = np.array([mujoco.mju_rayGeom(pos[i], rot[i].ravel(), size[i], origin[i], direction[i],
                                             int(MJ_GEOM[geom_type])) for i in range(len(origin))])
    _assert_distances_equal(distance, hit, reference)
    assert 40 < np.sum(reference >= 0) < len(origin) - 100
    if geom_type != GeomType.PLANE:  # some origins inside: the exit distance, as MuJoCo
        inside = np.array([mujoco.mju_rayGeom(pos[i], rot[i].ravel(), size[i], origin[i], -direction[i],
                                              int(MJ_GEOM[geom_type])) >= 0 for i in range(len(origin))])
        assert np.sum(inside & (reference >= 0)) > 10


_SCENE = """<mujoco><asset>
<hfield name="hf" nrow="7" ncol="9" size=".8 .6 .3 .2"/>
<mesh name="star" vertex="0 0 .3  0 0 -.3  .5 0 0  0 .15 0  -.5 0 0  0 -.15 0  .1 .4 0  -.1 -.4 0"
 face="0 2 3  0 3 6  0 6 4  0 4 5  0 5 7  0 7 2  1 3 2  1 6 3  1 4 6  1 5 4  1 7 5  1 2 7"/>
<material name="clear" rgba="1 1 1 0"/>
</asset><worldbody>
<geom name="floor" type="plane" size="3 3 .1" pos="0 0 -1"/>
<geom name="field" type="hfield" hfield="hf" pos="1 1 -.5" euler="10 5 30"/>
<geom name="ghost" type="sphere" size=".3" pos="-1 1 0" rgba="1 1 1 0"/>
<geom name="ghost_material" type="box" size=".3 .3 .3" pos="-1 -1 0" material="clear"/>
<body name="welded" pos="-1 0 -.3"><geom name="stone" type="box" size=".2 .2 .2"/></body>
<body name="a" pos="0 0 .5"><freejoint/>
  <geom name="sphere" type="sphere" size=".2"/>
  <geom name="capsule" type="capsule" size=".1 .2" pos=".4 0 0" euler="30 0 0"/>
</body>
<body name="b" pos=".5 -.5 .2"><joint type="ball"/>
  <geom name="ellipsoid" type="ellipsoid" size=".1 .2 .3"/>
  <geom name="cylinder" type="cylinder" size=".15 .2" pos="0 .4 0" euler="0 40 0"/>
  <geom name="box" type="box" size=".1 .2 .15" pos=".3 0 .1" euler="20 20 20"/>
</body>
<body name="c" pos="-.4 .3 .1"><joint type="hinge" axis="0 1 0"/>
  <geom name="mesh" type="mesh" mesh="star"/>
</body>
</worldbody></mujoco>"""


def _scene(tmp_path, rng):
    path = tmp_path / "ray_scene.xml"
    path.write_text(_SCENE)
    mj = mujoco.MjModel.from_xml_path(str(path))
    mj.hfield_data[:] = rng.uniform(0.0, 1.0, size=mj.hfield_data.shape)
    model = jc.io.set_height_field(jc.load(path), "hf", np.asarray(mj.hfield_data, np.float64).reshape(7, 9))
    return mj, model


@pytest.mark.parametrize("include_static", [True, False])
def test_scene_rays_equal_mj_ray(tmp_path, include_static):
    """``ray_scene`` equals ``mj_ray(m, d, pnt, vec, NULL, flg_static, bodyexclude, geomid)`` in
    distance and geom on 3 random states × 400 rays (half aimed at geoms, random excluded bodies),
    every non-transparent geom hit at least once, the transparent ones never."""
    rng = np.random.default_rng(1)
    mj, model = _scene(tmp_path, rng)
    assert model.transparent_geoms == (2, 3)

    def cast(q, origin, direction, exclude):
        kinematics = forward_kinematics(model, q)
        return ray_scene(model, kinematics.body_pos, kinematics.body_quat, origin, direction,
                         exclude_body=exclude, include_static=include_static)

    cast = jax.jit(jax.vmap(cast, in_axes=(None, 0, 0, 0)))
    data = mujoco.MjData(mj)
    hit_geoms = set()
    for _ in range(3):
        data.qpos[:] = mj.qpos0 + 0.3 * rng.normal(size=mj.nq)
        mujoco.mj_normalizeQuat(mj, data.qpos)
        mujoco.mj_forward(mj, data)
        count = 400
        origin = rng.uniform(-1.5, 1.5, size=(count, 3))
        direction = rng.normal(size=(count, 3))
        target = data.geom_xpos[rng.integers(0, mj.ngeom, size=count)] + 0.2 * rng.normal(size=(count, 3))
        direction[: count // 2] = (target - origin)[: count // 2]
        exclude = rng.integers(-1, mj.nbody, size=count)
        distance, geom, hit = cast(jnp.asarray(data.qpos), origin, direction, exclude)
        reference, reference_geom = np.empty(count), np.empty(count, np.int32)
        for i in range(count):
            found = np.zeros(1, np.int32)
            reference[i] = mujoco.mj_ray(mj, data, origin[i], direction[i], None, int(include_static),
                                         int(exclude[i]), found)
            reference_geom[i] = found[0]
        _assert_distances_equal(distance, hit, reference)
        np.testing.assert_array_equal(geom, reference_geom)
        hit_geoms |= set(reference_geom[reference_geom >= 0].tolist())
    movable = {g for g in range(mj.ngeom) if mj.body_weldid[mj.geom_bodyid[g]] != 0}
    expected = (set(range(mj.ngeom)) if include_static else movable) - {2, 3}
    assert hit_geoms == expected


def test_hfield_sides_surface_and_base_equal_mj_rayHfield():
    """2000 rays at a tilted 5 × 6 height field, mostly horizontal in its frame and from all
    around, equal ``mj_rayHfield``; MuJoCo's normals show that the top-box sides (under the border
    profile), the surface and the base's bottom were all hit."""
    rng = np.random.default_rng(2)
    mj = mujoco.MjModel.from_xml_string(
        '<mujoco><asset><hfield name="hf" nrow="5" ncol="6" size=".8 .6 .3 .2"/></asset><worldbody>'
        '<geom type="hfield" hfield="hf" pos=".1 .2 -.1" euler="10 5 30"/></worldbody></mujoco>')
    mj.hfield_data[:] = rng.uniform(0.0, 1.0, size=mj.hfield_data.shape)
    data = mujoco.MjData(mj)
    mujoco.mj_forward(mj, data)
    pos, rot = data.geom_xpos[0].copy(), data.geom_xmat[0].reshape(3, 3).copy()
    elevation = np.asarray(mj.hfield_data, np.float64).reshape(5, 6)
    count = 2000
    local_origin = rng.uniform([-1.2, -1.0, -0.3], [1.2, 1.0, 0.4], size=(count, 3))
    local_direction = rng.normal(size=(count, 3))
    local_direction[: count // 2, 2] *= 0.1
    origin, direction = pos + local_origin @ rot.T, local_direction @ rot.T
    cast = jax.jit(jax.vmap(lambda o, d: ray_hfield(o, d, pos, rot, mj.hfield_size[0], elevation)))
    distance, hit = cast(origin, direction)
    reference, kinds = np.empty(count), {"side": 0, "top": 0, "bottom": 0}
    normal = np.zeros(3)
    for i in range(count):
        reference[i] = mujoco.mj_rayHfield(mj, data, 0, origin[i], direction[i], normal)
        if reference[i] >= 0:
            local_normal = rot.T @ normal
            kinds["side" if abs(local_normal[2]) < 1e-12 else "top" if local_normal[2] > 0 else "bottom"] += 1
    _assert_distances_equal(distance, hit, reference)
    assert min(kinds.values()) > 50, kinds


def test_distance_derivatives_equal_central_differences():
    """``jacfwd`` = ``jacrev`` = central differences (step 1e-5) of the hit distance with respect
    to the ray origin and the geom position for a sphere, a box face, a mesh triangle and a
    height-field triangle (smooth hits: no face change within the step)."""
    rot = np.zeros(9)  # a tilt of 0.3 rad: the ray still crosses the mesh and height field
    mujoco.mju_axisAngle2Quat(quat := np.zeros(4), np.array([1.0, 2.0, 3.0]) / np.sqrt(14.0), 0.3)
    mujoco.mju_quat2Mat(rot, quat)
    rot = jnp.asarray(rot.reshape(3, 3))
    direction = jnp.asarray([0.2, 0.1, -1.0])
    origin = jnp.asarray([0.05, -0.03, 2.0])
    pos = jnp.asarray([0.01, 0.02, 0.03])
    triangles = jnp.asarray([[[-1.0, -1.0, 0.1], [1.0, -0.8, -0.2], [0.0, 1.0, 0.3]],
                             [[-1.0, -1.0, 0.5], [1.0, -0.8, 0.6], [0.0, 1.0, 0.7]]])
    elevation = jnp.asarray(np.random.default_rng(4).uniform(0.0, 1.0, size=(4, 5)))
    hfield_size = jnp.asarray([0.8, 0.6, 0.3, 0.2])
    cases = {
        "sphere": dict(size=jnp.asarray([0.5, 0.0, 0.0]), geom_type=GeomType.SPHERE),
        "box": dict(size=jnp.asarray([0.4, 0.5, 0.3]), geom_type=GeomType.BOX),
        "mesh": dict(size=jnp.zeros(3), geom_type=GeomType.MESH, triangles=triangles),
        "hfield": dict(size=jnp.zeros(3), geom_type=GeomType.HFIELD, hfield_size=hfield_size,
                       elevation=elevation),
    }
    for name, case in cases.items():
        def distance(origin, pos, case=case):
            value, hit = ray_geom(origin, direction, pos, rot, **case)
            return jnp.where(hit, value, jnp.nan)[None]

        assert np.isfinite(distance(origin, pos)[0]), name
        assert_derivatives_match_central_differences(distance, (origin, pos), (1e-5, 1e-5), rtol=1e-7)


def test_no_hit_has_finite_zero_gradient():
    """A missed ray reads ``hit = False``, distance 0 and a zero (not NaN) gradient."""
    def distance(origin):
        value, hit = ray_primitive(origin, jnp.asarray([0.0, 0.0, 1.0]), jnp.zeros(3), jnp.eye(3),
                                   jnp.asarray([0.5, 0.5, 0.5]), GeomType.CAPSULE)
        return value, hit

    value, hit = distance(jnp.asarray([2.0, 0.0, 0.0]))
    assert not hit and value == 0.0
    gradient = jax.grad(lambda o: distance(o)[0])(jnp.asarray([2.0, 0.0, 0.0]))
    np.testing.assert_array_equal(gradient, np.zeros(3))


def _rangefinder_states(mj, model, rng, count):
    """``count`` random MuJoCo data / engine states (a free root gets a random orientation)."""
    data = mujoco.MjData(mj)
    for _ in range(count):
        data.qpos[:] = mj.qpos0 + 0.4 * rng.normal(size=mj.nq)
        if mj.njnt and mj.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE:
            data.qpos[3:7] = rng.normal(size=4)
        mujoco.mj_normalizeQuat(mj, data.qpos)
        data.qvel[:] = rng.normal(size=mj.nv)
        mujoco.mj_forward(mj, data)
        yield data, jc.init(model, q=jnp.asarray(data.qpos), v=jnp.asarray(data.qvel))


@pytest.mark.parametrize("source", ["sensor", "testdata"])
def test_rangefinders_equal_mujoco(source):
    """Every rangefinder equals MuJoCo's ``sensordata`` (to 1e-8) on 5 random states: MJX's
    ``sensor/sensor.xml`` (2) and MuJoCo's ``testdata/model.xml`` (1, over a random height field,
    randomly oriented)."""
    path = (MJX_DATA / "sensor" / "sensor.xml" if source == "sensor"
            else MJX_DATA.parent.parent / "testdata" / "model.xml")
    mj = mujoco.MjModel.from_xml_path(str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jc.io.IgnoredSensorWarning)  # sensor.xml's cameras
        model = jc.load(path)
    rng = np.random.default_rng(5)
    if mj.nhfield:
        # bumps up to 5 % of the elevation scale (0.25 m): the robot stands above the terrain
        mj.hfield_data[:] = rng.uniform(0.0, 0.05, size=mj.hfield_data.shape)
        model = jc.io.set_height_field(model, 0, np.asarray(mj.hfield_data, np.float64).reshape(
            int(mj.hfield_nrow[0]), int(mj.hfield_ncol[0])))
    chosen = tuple(i for i, kind in enumerate(model.sensors.kind) if kind == "rangefinder")
    assert len(chosen) == {"sensor": 2, "testdata": 1}[source]
    read = jax.jit(lambda state: jc.sensors(model, state, select=chosen))
    readings = []
    for data, state in _rangefinder_states(mj, model, rng, 5):
        expected = np.array([data.sensordata[mj.sensor_adr[i]] for i in chosen])
        np.testing.assert_allclose(read(state), expected, rtol=0, atol=1e-8)
        readings.append(expected)
    readings = np.concatenate(readings)
    assert np.any(readings > 0)
    assert np.any(readings == -1.0) == (source == "testdata")  # misses as well as hits


def test_rangefinder_cutoff_and_transparent_geoms(tmp_path):
    """MuJoCo 4.0.0 treats a rangefinder as a real sensor: a cutoff clamps the distance and also
    the −1 of a miss (to −cutoff); rays pass through a geom with rgba alpha 0; the site's own
    body is ignored."""
    path = tmp_path / "rangefinder.xml"
    path.write_text(
        '<mujoco><worldbody><geom type="plane" size="1 1 .1"/>'
        '<geom type="box" size=".5 .5 .1" pos="0 0 1" rgba="1 1 1 0"/>'
        '<body pos="0 0 2"><freejoint/><geom size=".1"/><site name="down" euler="180 0 0"/>'
        '<site name="up"/></body></worldbody><sensor><rangefinder site="down" cutoff="0.5"/>'
        '<rangefinder site="up" cutoff="0.5"/><rangefinder site="down"/><rangefinder site="up"/>'
        '</sensor></mujoco>')
    mj = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(mj)
    mujoco.mj_forward(mj, data)
    model = jc.load(path)
    np.testing.assert_allclose(data.sensordata, [0.5, -0.5, 2.0, -1.0])
    read = jax.jit(lambda state: jc.sensors(model, state))
    np.testing.assert_allclose(read(jc.init(model)), data.sensordata, atol=1e-12)
