"""Height fields (issue 44): MuJoCo ``hfield`` geoms against convex geoms, cell by cell as two
triangular prisms (``jaxsim_contact.collision._hfield``).

References: MuJoCo C's contacts (``mj_forward``) for spheres, capsules, ellipsoids and cylinders;
the separating-axis penetration of a box / convex mesh and a prism (exact for polytopes: MuJoCo's
own box–prism depths are shallower than the minimum translation on deep overlaps, so it is not the
reference there); the engine's GJK for the closed-form point–prism distance; the analytic rolling
of a ball on an incline; central differences for derivatives.
"""

import struct
import sys
import zlib
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.collision._geoms import hull_shape
from jaxsim_contact.collision._hfield import point_prism_distance, prism_vertices

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dynamics"))
from mujoco_comparison import assert_derivatives_match_central_differences  # noqa: E402


def _field_xml(nrow, ncol, size, elevation, bodies, extra_asset="", option="", field_pose=""):
    values = " ".join(f"{v:.17g}" for v in np.ravel(elevation))
    return (f"<mujoco><option {option}/><asset><hfield name='field' nrow='{nrow}' ncol='{ncol}' "
            f"size='{' '.join(map(str, size))}' elevation='{values}'/>{extra_asset}</asset><worldbody>"
            f"<geom name='terrain' type='hfield' hfield='field' {field_pose}/>{bodies}</worldbody></mujoco>")


def _write(tmp_path, name, xml):
    path = tmp_path / name
    path.write_text(xml)
    return path


def _narrow(model):
    def contacts(m, q):
        kin = jc.dynamics.forward_kinematics(m, q)
        return jc.collision.narrow_phase(m, m.collision, kin.body_pos, kin.body_quat, jnp.asarray(0.0))
    return jax.jit(contacts)


def test_point_prism_distance_outside_equals_gjk_and_inside_is_the_depth_below_the_surface():
    """The closed form used for spheres: outside a prism it equals the engine's GJK on the prism
    as a convex mesh (distance and normal, 1e-9); inside, it is minus the depth below the top
    triangle's plane along its normal (not the nearest wall: walls between prisms are inside the
    terrain)."""
    rng = np.random.default_rng(0)
    elevation = jnp.asarray(rng.uniform(0.0, 1.0, (3, 3)))
    size = jnp.asarray([0.4, 0.3, 0.25, 0.1])
    prisms = np.asarray(prism_vertices(elevation, size, jnp.zeros(3), (2, 2), 1.0))
    points = rng.uniform([-0.5, -0.4, -0.2], [0.5, 0.4, 0.4], (40, 3))
    closed = jax.jit(jax.vmap(jax.vmap(point_prism_distance, in_axes=(None, 0)), in_axes=(0, None)))
    distance, normal = (np.asarray(x) for x in closed(jnp.asarray(points), jnp.asarray(prisms)))

    def gjk(point, prism):  # the prism as a 6-vertex convex mesh (as the narrow phase builds it)
        hull = hull_shape(prism, jnp.ones((6,), bool))
        return jc.collision.distance(hull, jc._math.Transform.identity(jnp.float64),
                                     jc.geometry.Sphere(jnp.asarray(1e-3)),
                                     jc._math.Transform(point, jnp.asarray([1.0, 0, 0, 0])))

    reference = jax.jit(jax.vmap(jax.vmap(gjk, in_axes=(None, 0)), in_axes=(0, None)))(
        jnp.asarray(points), jnp.asarray(prisms))
    gjk_distance = np.asarray(reference.signed_distance) + 1e-3
    outside = gjk_distance > 1e-6
    np.testing.assert_allclose(distance[outside], gjk_distance[outside], atol=1e-9)
    np.testing.assert_allclose(normal[outside], np.asarray(reference.normal)[outside], atol=1e-7)
    inside = gjk_distance < -1e-6
    top = prisms[:, :3]
    up = np.cross(top[:, 1] - top[:, 0], top[:, 2] - top[:, 0])
    up /= np.linalg.norm(up, axis=-1, keepdims=True)
    below = np.einsum("pk,npk->np", up, top[None, :, 0] - points[:, None])
    np.testing.assert_allclose(distance[inside], -below[inside], atol=1e-12)
    np.testing.assert_allclose(normal[inside], np.broadcast_to(up, normal.shape)[inside], atol=1e-12)
    # some inside points are nearer a wall than the top face: there the two rules differ
    assert np.sum(inside) > 5 and np.any(np.abs(gjk_distance - distance)[inside] > 1e-3)


def _sat_depth(box, prism):
    """Penetration depth (> 0) of two convex polytopes given by vertices, by separating axes:
    the faces of the prism, the three box axes and the edge-edge cross products."""
    axes_box = [box[4] - box[0], box[2] - box[0], box[1] - box[0]]
    edges = [prism[1] - prism[0], prism[2] - prism[1], prism[0] - prism[2], np.array([0.0, 0.0, 1.0])]
    faces = [np.cross(prism[1] - prism[0], prism[2] - prism[0])] + [np.cross(e, edges[3]) for e in edges[:3]]
    best = np.inf
    for axis in axes_box + faces + [np.cross(a, e) for a in axes_box for e in edges]:
        length = np.linalg.norm(axis)
        if length < 1e-12:
            continue
        pa, pb = box @ (axis / length), prism @ (axis / length)
        best = min(best, pa.max() - pb.min(), pb.max() - pa.min())
    return best


def test_height_field_contacts_match_mujoco_and_separating_axes(tmp_path):
    """A random field turned and shifted in the world; geoms lowered until MuJoCo C reports a
    1–20 mm overlap: our deepest contact equals MuJoCo's for spheres, capsules (1e-12),
    ellipsoids and cylinders (1e-6: MuJoCo's own convergence), and the separating-axis depth of
    the deepest prism for boxes (1e-9)."""
    rng = np.random.default_rng(1)
    bodies = "".join(f"<body><freejoint/><geom type='{kind}' size='{size}' contype='2' conaffinity='1'/></body>"
                     for kind, size in [("sphere", ".12"), ("capsule", ".06 .1"), ("ellipsoid", ".1 .07 .05"),
                                        ("cylinder", ".08 .06"), ("box", ".1 .07 .05")])
    path = _write(tmp_path, "field.xml", _field_xml(8, 9, (1, 0.9, 0.3, 0.1), rng.uniform(0, 1, 72), bodies,
                                                     field_pose="pos='0.05 -0.02 0' euler='0 0 20'"))
    mj = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(mj)
    model = jc.load(path)
    narrow = _narrow(model)
    field = np.asarray(prism_vertices(model.hfield_data[0], model.hfield_size[0], jnp.zeros(3), (7, 8), 10.0))

    def deepest_mujoco(q, body):
        data.qpos[:] = q
        mujoco.mj_forward(mj, data)
        dist = [c.dist for c in data.contact[:data.ncon] if mj.geom_bodyid[c.geom2] == body]
        return min(dist, default=np.inf)

    for _ in range(3):
        q = np.array(mj.qpos0)
        for b in range(5):
            quat = rng.normal(size=4)
            q[7 * b:7 * b + 7] = [*rng.uniform(-0.75, 0.75, 2), 0.0, *(quat / np.linalg.norm(quat))]
        for b in range(5):
            low, high, target = -0.5, 1.0, -rng.uniform(0.001, 0.02)
            for _ in range(50):
                q[7 * b + 2] = 0.5 * (low + high)
                low, high = (q[7 * b + 2], high) if deepest_mujoco(q, b + 1) < target else (low, q[7 * b + 2])
            q[7 * b + 2] = high
        contacts = narrow(model, jnp.asarray(q))
        for b, tolerance in enumerate([1e-12, 1e-12, 1e-6, 1e-6, None]):
            ours = np.asarray(contacts.distance)[np.asarray(contacts.active) & (np.asarray(contacts.body_b) == b + 1)]
            assert ours.size, f"body {b + 1}: no contact"
            if tolerance is not None:
                assert abs(ours.min() - deepest_mujoco(q, b + 1)) < tolerance
            else:
                deepest_mujoco(q, b + 1)
                rot_field, pos_field = data.geom_xmat[0].reshape(3, 3), data.geom_xpos[0]
                corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * mj.geom_size[b + 1]
                box = (corners @ data.geom_xmat[b + 1].reshape(3, 3).T + data.geom_xpos[b + 1] - pos_field) @ rot_field
                assert abs(ours.min() + max(_sat_depth(box, prism) for prism in field)) < 1e-9


def test_ball_rolls_down_a_sloped_height_field_as_the_analytic_solution(tmp_path):
    """A ball on a 10° ramp made of a height field (8 × 8 cells) rolls without slipping: after
    0.5 s it has travelled ½ (5/7) g sin θ t² within 1 % (the semi-implicit step's own error is
    1/steps = 0.4 %), along the fall line, with ω r = |v| and its surface on the ramp."""
    theta, half, radius, n = np.deg2rad(10.0), 2.0, 0.1, 9
    ramp = np.tile(np.arange(n) / (n - 1), (n, 1))
    path = _write(tmp_path, "ramp.xml", _field_xml(
        n, n, (half, half, np.tan(theta) * 2 * half, 0.1), ramp,
        f"<body><freejoint/><geom type='sphere' size='{radius}' friction='1'/></body>", option="timestep='0.002'"))
    model = jc.load(path)
    x0 = 1.0
    q0 = jnp.asarray([x0, 0.3, np.tan(theta) * (x0 + half) + radius / np.cos(theta), 1.0, 0, 0, 0])
    steps = 250
    final, _ = jax.jit(jc.rollout)(model, jc.init(model, q=q0), jnp.zeros((steps, 0)))
    assert int(final.error) == 0
    travelled = np.asarray(final.q[:3] - q0[:3])
    expected = 0.5 * (5.0 / 7.0) * 9.81 * np.sin(theta) * (steps * 0.002) ** 2
    assert abs(np.linalg.norm(travelled) / expected - 1.0) < 0.01
    assert abs(travelled[1]) < 1e-9 and travelled[0] < 0  # down the fall line (-x)
    speed, spin = np.linalg.norm(np.asarray(final.v[:3])), np.linalg.norm(np.asarray(final.v[3:]))
    assert abs(spin * radius / speed - 1.0) < 1e-6
    x, _, z = np.asarray(final.q[:3])
    assert abs((z - np.tan(theta) * (x + half)) * np.cos(theta) - radius) < 1e-6


def test_step_derivatives_through_a_sphere_on_a_height_field(tmp_path):
    """One step of a sphere pressed 2 mm onto an edge between two prisms of a random field:
    jacfwd = jacrev = central differences with respect to q, v and the field's elevations."""
    rng = np.random.default_rng(3)
    path = _write(tmp_path, "bump.xml", _field_xml(
        5, 6, (0.6, 0.5, 0.2, 0.1), rng.uniform(0, 1, 30),
        "<body><freejoint/><geom type='sphere' size='.1' friction='0.8'/></body>", option="timestep='0.002'"))
    model = jc.load(path)
    mj = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(mj)
    q0 = np.array([0.07, -0.04, 1.0, 1, 0, 0, 0])
    for z in np.arange(1.0, -0.5, -1e-4):  # lower until MuJoCo reports 2 mm of overlap
        q0[2] = z
        data.qpos[:] = q0
        mujoco.mj_forward(mj, data)
        if data.ncon and min(c.dist for c in data.contact[:data.ncon]) < -0.002:
            break
    assert data.ncon == 2  # on the edge shared by two prisms
    v0 = jnp.asarray([0.3, -0.2, -0.5, 0.5, 1.0, -0.3])
    grid = model.hfield_data[0]

    def step(q, v, elevation):
        m = eqx.tree_at(lambda m: m.hfield_data, model, (elevation.reshape(grid.shape),))
        s = jc.step(m, jc.init(m, q=q, v=v))
        return jnp.concatenate([s.q, s.v])

    assert_derivatives_match_central_differences(step, (jnp.asarray(q0), v0, grid.ravel()), (1e-6, 1e-6, 1e-6),
                                                 rtol=1e-5)


def _png(path: Path, pixels: np.ndarray) -> None:
    """An 8-bit greyscale PNG (no dependency: zlib + the chunk layout)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    height, width = pixels.shape
    raw = b"".join(b"\x00" + row.astype(np.uint8).tobytes() for row in pixels)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_height_fields_load_from_png_files_and_inline_data(tmp_path):
    """A PNG height field and an inline one load with MuJoCo's compiled elevations; the loaded
    model's candidate pairs put the field first; dm_control-style terrain edits go through
    ``set_height_field``, which checks the shape and values."""
    rng = np.random.default_rng(4)
    _png(tmp_path / "terrain.png", rng.integers(0, 256, (6, 7)))
    xml = ("<mujoco><asset><hfield name='png' file='terrain.png' size='1 1 0.3 0.1'/>"
           "<hfield name='inline' nrow='3' ncol='4' size='1 1 0.3 0.1' elevation='0 1 2 3 4 5 6 7 8 9 10 11'/></asset>"
           "<worldbody><geom type='hfield' hfield='png'/><geom type='hfield' hfield='inline' pos='3 0 0'/>"
           "<body pos='0 0 1'><freejoint/><geom type='capsule' size='.05 .1'/></body></worldbody></mujoco>")
    path = _write(tmp_path, "terrain.xml", xml)
    mj = mujoco.MjModel.from_xml_path(str(path))
    model = jc.load(path)
    assert model.hfield_names == ("png", "inline")
    for h in range(2):
        nrow, ncol, start = mj.hfield_nrow[h], mj.hfield_ncol[h], mj.hfield_adr[h]
        np.testing.assert_array_equal(np.asarray(model.hfield_data[h]),
                                      mj.hfield_data[start:start + nrow * ncol].reshape(nrow, ncol))
    fields = [g for g in model.collision.groups if g.type_a == jc.GeomType.HFIELD]
    assert sorted(g.hfield for g in fields) == [0, 1] and all(g.type_b == jc.GeomType.CAPSULE for g in fields)
    flat = jc.io.set_height_field(model, "inline", np.zeros((3, 4)))
    assert float(jnp.max(flat.hfield_data[1])) == 0.0
    with pytest.raises(ValueError, match="3 rows and 4 columns"):
        jc.io.set_height_field(model, "inline", np.zeros((4, 3)))
    with pytest.raises(ValueError, match="finite"):
        jc.io.set_height_field(model, 1, np.full((3, 4), np.nan))
    with pytest.raises(ValueError, match="no height field 'rocks'"):
        jc.io.set_height_field(model, "rocks", np.zeros((3, 4)))


def test_height_field_bad_input_names_the_file_and_element(tmp_path):
    """Elevation data that does not match ``nrow × ncol`` (MuJoCo's compiler message, with our
    file) and a field of a single row are refused by name."""
    bodies = "<body><freejoint/><geom type='sphere' size='.1'/></body>"
    wrong = _write(tmp_path, "wrong.xml", _field_xml(3, 3, (1, 1, 0.3, 0.1), np.zeros(8), bodies))
    with pytest.raises(jc.io.ModelError, match="wrong.xml"):
        jc.load(wrong)
    thin = _write(tmp_path, "thin.xml", _field_xml(1, 4, (1, 1, 0.3, 0.1), np.zeros(4), bodies))
    with pytest.raises((jc.io.InvalidGeometryError, jc.io.ModelError), match="thin.xml"):
        jc.load(thin)


def test_feet_started_in_the_ground_are_pushed_out_of_a_height_field(tmp_path):
    """Three small spheres of one body (a tripod's feet, r = 1.4 cm, as MJX's barkour) start
    2–3 cm inside a rough field (0.14 m cells, 5 cm bumps), some near cell edges: they come out of
    the ground (penetration below 0.5 mm after 0.2 s) and the body rests on them without error
    bits. (With the nearest-wall depth of MuJoCo's prisms, two prisms pushed a buried foot towards
    each other: the hard problem was infeasible at every step and the robot sank through.)"""
    rng = np.random.default_rng(5)
    feet = "".join(f"<geom type='sphere' size='.014' pos='{x} {y} -0.1' friction='1'/>"
                   for x, y in [(0.21, 0.0), (-0.1, 0.17), (-0.1, -0.17)])
    path = _write(tmp_path, "rough.xml", _field_xml(
        30, 30, (2.0, 2.0, 0.05, 0.1), rng.uniform(0, 1, 900),
        f"<body pos='0.07 0.0 0.08'><freejoint/><geom type='box' size='.15 .15 .03' contype='0' conaffinity='0'/>"
        f"{feet}</body>", option="timestep='0.002'"))
    model = jc.load(path)
    mj = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(mj)
    mujoco.mj_forward(mj, data)
    assert min(c.dist for c in data.contact[:data.ncon]) < -0.02  # buried at the start
    final, trajectory = jax.jit(jc.rollout)(
        model, jc.init(model), jnp.zeros((100, 0)))
    assert int(final.error) == 0
    assert float(trajectory.contact.penetration[-1]) < 5e-4
    assert int(np.sum(np.asarray(trajectory.contact.iterations)[20:] >= int(model.options.solver.max_iterations))) == 0
