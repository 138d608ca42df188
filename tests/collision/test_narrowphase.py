"""Narrow phase: closed forms against GJK/EPA, manifolds that let boxes and meshes rest on a face,
candidate-pair filtering, bounding-sphere culling with its overflow flag."""

from __future__ import annotations

import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.geometry import Box, Capsule, Cone, Plane, Sphere
from jaxsim_contact._math import Transform, quat_from_axis_angle, quat_to_matrix
from jaxsim_contact.collision import pair_function
from jaxsim_contact.collision._geoms import GeomData
from jaxsim_contact._types import GeomType as T

RNG = np.random.default_rng(42)


def geom(pos, quat, size, vertices=None):
    pos, quat = jnp.asarray(pos, float), jnp.asarray(quat, float)
    quat = quat / jnp.linalg.norm(quat)
    verts = jnp.zeros((1, 3)) if vertices is None else jnp.asarray(vertices, float)
    return GeomData(pos, quat, quat_to_matrix(quat), jnp.asarray(size, float), verts,
                    jnp.ones(verts.shape[0], bool) if vertices is not None else jnp.zeros(1, bool))


def shape(type_, size):
    return {T.SPHERE: lambda: Sphere(size[0]), T.CAPSULE: lambda: Capsule(size[0], size[1]),
            T.BOX: lambda: Box(jnp.asarray(size)), T.PLANE: lambda: Plane()}[type_]()


def random_quat():
    q = RNG.normal(size=4)
    return q / np.linalg.norm(q)


CLOSED_FORMS = [(T.PLANE, T.SPHERE), (T.PLANE, T.CAPSULE), (T.PLANE, T.BOX), (T.SPHERE, T.SPHERE),
                (T.SPHERE, T.CAPSULE), (T.SPHERE, T.BOX), (T.CAPSULE, T.CAPSULE), (T.BOX, T.BOX)]
SIZES = {T.PLANE: [1.0, 1.0, 0.1], T.SPHERE: [0.3, 0, 0], T.CAPSULE: [0.15, 0.25, 0],
         T.BOX: [0.3, 0.2, 0.25]}


@pytest.mark.parametrize("types", CLOSED_FORMS, ids=lambda t: f"{t[0].name}-{t[1].name}".lower())
def test_closed_form_deepest_point_matches_gjk_epa(types):
    # the deepest manifold point is the signed distance that GJK/EPA computes, for separated and
    # penetrating random poses (the closed forms replace GJK/EPA, so they must agree with it)
    ta, tb = types
    fn, _ = pair_function(ta, tb)
    fn = jax.jit(fn)
    shape_a, shape_b = shape(ta, SIZES[ta]), shape(tb, SIZES[tb])
    reference = jax.jit(lambda a, b: jc.collision.distance(
        shape_a, Transform(a.pos, a.quat), shape_b, Transform(b.pos, b.quat)))
    checked = 0
    for trial in range(12):
        qa = np.array([1.0, 0, 0, 0]) if ta == T.PLANE else random_quat()
        qb = random_quat()
        pa = np.zeros(3)
        pb = RNG.normal(size=3) * 0.3 + (np.array([0, 0, 0.45]) if ta == T.PLANE else 0.0)
        a, b = geom(pa, qa, SIZES[ta]), geom(pb, qb, SIZES[tb])
        manifold = fn(a, b, jnp.asarray(0.0))
        ref = reference(a, b)
        if not bool(ref.converged):
            continue
        deepest = float(jnp.min(jnp.where(manifold.valid, manifold.distance, jnp.inf)))
        # SAT (box-box) is exact when penetrating; separated boxes only need a lower bound
        if (ta, tb) == (T.BOX, T.BOX) and float(ref.signed_distance) > 0:
            assert deepest <= float(ref.signed_distance) + 1e-9
        else:
            assert deepest == pytest.approx(float(ref.signed_distance), abs=1e-6)
            k = int(jnp.argmin(jnp.where(manifold.valid, manifold.distance, jnp.inf)))
            if abs(float(ref.signed_distance)) > 1e-3:
                np.testing.assert_allclose(np.asarray(manifold.normal[k]), np.asarray(ref.normal), atol=1e-5)
        checked += 1
    assert checked >= 8


def test_box_resting_on_box_gets_its_four_face_corners():
    # a small box on a larger one, rotated 30° about z and sunk 1 mm: the contact polygon is the
    # small box's bottom face (all 4 corners, depth 1 mm, normal +z from a to b)
    fn = jax.jit(pair_function(T.BOX, T.BOX)[0])
    quat = np.asarray(quat_from_axis_angle(jnp.array([0.0, 0, 1]), jnp.asarray(np.pi / 6)))
    a = geom([0, 0, 0], [1, 0, 0, 0], [0.5, 0.5, 0.1])
    b = geom([0.05, -0.02, 0.1 + 0.1 - 1e-3], quat, [0.1, 0.1, 0.1])
    m = fn(a, b, jnp.asarray(1e-3))
    assert bool(jnp.all(m.valid))
    np.testing.assert_allclose(np.asarray(m.distance), -1e-3, atol=1e-12)
    np.testing.assert_allclose(np.asarray(m.normal), np.tile([0, 0, 1.0], (4, 1)), atol=1e-12)
    corners = np.asarray(m.point)[:, :2]
    rot = np.asarray(quat_to_matrix(jnp.asarray(quat)))[:2, :2]
    expected = np.array([[sx, sy] for sx in (-0.1, 0.1) for sy in (-0.1, 0.1)]) @ rot.T + [0.05, -0.02]
    for c in expected:
        assert np.min(np.linalg.norm(corners - c, axis=1)) < 1e-12
    # the overlap of two equal boxes shifted sideways: corners of the intersection rectangle
    b2 = geom([0.45, 0.45, 0.1 + 0.1 - 1e-3], [1, 0, 0, 0], [0.1, 0.1, 0.1])
    m2 = fn(a, b2, jnp.asarray(1e-3))
    pts = np.asarray(m2.point)[np.asarray(m2.valid)][:, :2]
    assert len(pts) == 4
    np.testing.assert_allclose(np.sort(pts[:, 0]), [0.35, 0.35, 0.5, 0.5], atol=1e-12)
    np.testing.assert_allclose(np.sort(pts[:, 1]), [0.35, 0.35, 0.5, 0.5], atol=1e-12)


def test_box_box_edge_on_edge_is_one_point():
    fn = jax.jit(pair_function(T.BOX, T.BOX)[0])
    # two cubes rotated 45° about perpendicular axes, touching edge to edge
    qa = np.asarray(quat_from_axis_angle(jnp.array([1.0, 0, 0]), jnp.asarray(np.pi / 4)))
    qb = np.asarray(quat_from_axis_angle(jnp.array([0.0, 1, 0]), jnp.asarray(np.pi / 4)))
    h = 0.1 * np.sqrt(2)
    a, b = geom([0, 0, 0], qa, [0.1] * 3), geom([0, 0, 2 * h - 1e-3], qb, [0.1] * 3)
    m = fn(a, b, jnp.asarray(0.0))
    assert int(jnp.sum(m.valid)) == 1
    assert float(m.distance[0]) == pytest.approx(-1e-3, abs=1e-9)
    np.testing.assert_allclose(np.asarray(m.normal[0]), [0, 0, 1], atol=1e-9)
    np.testing.assert_allclose(np.asarray(m.point[0]), [0, 0, h - 5e-4], atol=1e-9)


def test_plane_mesh_and_generic_mesh_box_rest_on_a_face():
    # a cube-shaped convex mesh (hull of a cube plus points on its faces) on a plane and on a box:
    # 4 contacts at the corners of the bottom face
    corners = np.array([[x, y, z] for x in (-0.1, 0.1) for y in (-0.1, 0.1) for z in (-0.1, 0.1)])
    verts = np.concatenate([corners, [[0.0, 0.0, 0.1], [0.05, 0.0, -0.1]]])  # 2 non-extreme points
    mesh = geom([0.3, 0.2, 0.1 - 2e-4], [1, 0, 0, 0], [0, 0, 0], vertices=verts)
    plane = geom([0, 0, 0], [1, 0, 0, 0], SIZES[T.PLANE])
    m = jax.jit(pair_function(T.PLANE, T.MESH)[0])(plane, mesh, jnp.asarray(1e-3))
    assert bool(jnp.all(m.valid))
    np.testing.assert_allclose(np.asarray(m.distance), -2e-4, atol=1e-12)
    assert sorted(map(tuple, np.round(np.asarray(m.point)[:, :2] - [0.3, 0.2], 9))) == \
        sorted(map(tuple, np.round(corners[corners[:, 2] < 0][:, :2], 9)))
    # generic GJK/EPA pair (box a, mesh b) with perturbed queries: the same 4 corners
    box = geom([0.3, 0.2, -0.5], [1, 0, 0, 0], [1.0, 1.0, 0.5])
    fn, points = pair_function(T.BOX, T.MESH)
    assert points == 4
    g = jax.jit(fn)(box, mesh, jnp.asarray(1e-3))
    assert int(jnp.sum(g.valid)) == 4
    np.testing.assert_allclose(np.asarray(g.distance)[np.asarray(g.valid)], -2e-4, atol=1e-6)
    got = np.asarray(g.point)[np.asarray(g.valid)][:, :2] - [0.3, 0.2]
    for c in corners[corners[:, 2] < 0][:, :2]:
        assert np.min(np.linalg.norm(got - c, axis=1)) < 1e-3 * 0.1 + 1e-6



def test_plane_mesh_manifold_derivatives_match_finite_differences():
    """Depths and points of a tilted hull's contacts w.r.t. its pose (position and a rotation
    vector), forward and reverse mode, against central differences: the vertex choice is made
    on values without derivatives and the chosen vertices are recomputed from the pose, which
    must give the derivative of the full computation away from a change of the chosen vertices."""
    from jax.test_util import check_grads

    from jaxsim_contact._math import quat_mul

    verts = RNG.normal(size=(40, 3)) * [0.1, 0.07, 0.05]
    plane = geom([0, 0, 0.01], quat_from_axis_angle(jnp.array([1.0, 0.0, 0.0]), 0.1), SIZES[T.PLANE])
    base_quat = jnp.asarray(random_quat())
    fn = pair_function(T.PLANE, T.MESH)[0]

    def manifold(x):  # x = (position (3,), rotation vector (3,))
        quat = quat_mul(quat_from_axis_angle(x[3:] / jnp.linalg.norm(x[3:]), jnp.linalg.norm(x[3:])),
                        base_quat)
        mesh = GeomData(x[:3], quat, quat_to_matrix(quat), jnp.zeros(3), jnp.asarray(verts),
                        jnp.ones(40, bool))
        m = fn(plane, mesh, jnp.asarray(0.05))
        return jnp.concatenate([m.distance, m.point.ravel()])

    x0 = jnp.asarray([0.2, -0.1, 0.05, 0.3, -0.2, 0.1])
    m = fn(plane, GeomData(x0[:3], base_quat, quat_to_matrix(base_quat), jnp.zeros(3), jnp.asarray(verts),
                           jnp.ones(40, bool)), jnp.asarray(0.05))
    assert int(jnp.sum(m.valid)) >= 2  # several vertices within the margin
    check_grads(manifold, (x0,), order=1, modes=("fwd", "rev"), eps=1e-6, atol=1e-7, rtol=1e-7)
    np.testing.assert_allclose(jax.jacfwd(manifold)(x0), jax.jacrev(manifold)(x0), atol=1e-12)


FILTER_XML = textwrap.dedent("""
    <mujoco>
      <worldbody>
        <geom name="floor" type="plane" size="5 5 0.1"/>
        <geom name="wall" type="box" pos="2 0 0.5" size="0.1 1 0.5"/>
        <body name="a" pos="0 0 1">
          <freejoint/>
          <geom name="a_box" type="box" size="0.1 0.1 0.1"/>
          <body name="b" pos="0 0 0.3">
            <joint type="hinge" axis="0 1 0"/>
            <geom name="b_sphere" type="sphere" size="0.1"/>
            <body name="c" pos="0 0 0.3">
              <joint type="hinge" axis="0 1 0"/>
              <geom name="c_capsule" type="capsule" size="0.05 0.1"/>
              <geom name="c_ghost" type="sphere" size="0.05" contype="2" conaffinity="2"/>
            </body>
          </body>
        </body>
        <body name="d" pos="1 0 1">
          <freejoint/>
          <geom name="d_box" type="box" size="0.1 0.1 0.1"/>
        </body>
      </worldbody>
      <contact><exclude body1="a" body2="d"/></contact>
    </mujoco>""")


def test_candidate_pairs_follow_mujoco_filtering(tmp_path):
    path = tmp_path / "filter.xml"
    path.write_text(FILTER_XML)
    model = jc.load(path)
    names = model.geom_names
    pairs = {frozenset((names[a], names[b])) for g in model.collision.groups
             for a, b in zip(g.geom_a, g.geom_b)}
    # world geoms never collide with each other; parent/child (a-b, b-c) are filtered but the
    # grandparent pair a-c is kept; bitmasks drop c_ghost (contype 2 vs conaffinity 1); the
    # explicit exclusion drops a-d
    expected = {frozenset(p) for p in [
        ("floor", "a_box"), ("floor", "b_sphere"), ("floor", "c_capsule"), ("floor", "d_box"),
        ("wall", "a_box"), ("wall", "b_sphere"), ("wall", "c_capsule"), ("wall", "d_box"),
        ("a_box", "c_capsule"), ("b_sphere", "d_box"), ("c_capsule", "d_box"),
    ]}
    assert pairs == expected
    # groups are ordered by type with the plane first in its pairs
    for g in model.collision.groups:
        assert g.type_a <= g.type_b
        assert all(model.geom_type[a] == g.type_a and model.geom_type[b] == g.type_b
                   for a, b in zip(g.geom_a, g.geom_b))


def test_culling_budget_overflow_is_flagged_and_keeps_the_closest_pairs():
    model = jc.scenes.load("pile", nx=2, ny=2, nz=1, gap=1e-4)
    import dataclasses

    kin = jc.dynamics.forward_kinematics(model, model.qpos0)
    narrow = jax.jit(lambda m: jc.collision.narrow_phase(m, m.collision, kin.body_pos, kin.body_quat, m.options.contact_margin))
    full = narrow(model)
    assert not bool(full.overflow)
    # 4 cubes on the floor (4 points each) and 4 side-by-side neighbour pairs within the margin
    assert int(jnp.sum(full.active)) == 4 * 4 + 4 * 4
    # a budget of 2 box-box pairs per step: overflow flagged, the 2 kept pairs are near ones
    groups = tuple(dataclasses.replace(g, narrow_budget=2) if g.type_a == T.BOX else g
                   for g in model.collision.groups)
    small = dataclasses.replace(model, collision=dataclasses.replace(model.collision, groups=groups))
    culled = narrow(small)
    assert bool(culled.overflow)
    assert int(jnp.sum(culled.active)) == 4 * 4 + 2 * 4
    # the diagonal pairs (farther than the margin) are never active
    assert np.all(np.asarray(full.distance)[np.asarray(full.active)] <= 1e-3 + 1e-12)


def _hull_points(count: int, radius: float, seed: int) -> str:
    """``count`` points on a sphere (all on the hull), as an MJCF ``vertex`` attribute."""
    rng = np.random.default_rng(seed)
    points = rng.normal(size=(count, 3))
    points = radius * points / np.linalg.norm(points, axis=1, keepdims=True)
    return " ".join(f"{x:.9f}" for x in points.ravel())


def test_mesh_pairs_in_hull_size_buckets_equal_one_padded_batch(tmp_path, monkeypatch):
    # three meshes of 8, 40 and 300 hull vertices sink 1 mm into a floor (contype 2: meshes touch
    # the floor only): bucketed by hull size (collision._narrowphase.width_buckets), the narrow
    # phase must give the candidates of one vmap over hulls all padded to 300 vertices (up to
    # rounding: other vector widths), in the same order (keys, warm starts)
    from jaxsim_contact.collision import _narrowphase as narrowphase

    cube = " ".join(f"{x} {y} {z}" for x in (-0.1, 0.1) for y in (-0.1, 0.1) for z in (-0.1, 0.1))
    xml = f"""
    <mujoco>
      <asset>
        <mesh name="cube" vertex="{cube}"/>
        <mesh name="ball40" vertex="{_hull_points(40, 0.1, 1)}"/>
        <mesh name="ball300" vertex="{_hull_points(300, 0.1, 2)}"/>
      </asset>
      <worldbody>
        <geom name="floor" type="plane" size="5 5 0.1"/>
        <body pos="0 0 0.099"><freejoint/><geom type="mesh" mesh="cube" contype="2"/></body>
        <body pos="0.5 0 0.099" euler="10 20 30"><freejoint/><geom type="mesh" mesh="ball40" contype="2"/></body>
        <body pos="1 0 0.099"><freejoint/><geom type="mesh" mesh="ball300" contype="2"/></body>
        <body pos="1.5 0 0.099" euler="5 0 0"><freejoint/><geom type="mesh" mesh="cube" contype="2"/></body>
      </worldbody>
    </mujoco>"""
    path = tmp_path / "meshes.xml"
    path.write_text(xml)
    model = jc.load(path)
    (group,) = model.collision.groups
    assert (group.type_a, group.type_b) == (T.PLANE, T.MESH)
    buckets = narrowphase.width_buckets(model, model.collision, group)
    assert len(buckets) == 3 and sorted(np.concatenate(buckets)) == list(range(4))
    kin = jc.dynamics.forward_kinematics(model, model.qpos0)

    def narrow():
        return jax.jit(lambda m: jc.collision.narrow_phase(m, m.collision, kin.body_pos, kin.body_quat, m.options.contact_margin))(model)

    bucketed = narrow()
    monkeypatch.setattr(narrowphase, "width_buckets", lambda model, structure, group: [np.arange(group.num_pairs)])
    padded = narrow()
    # 4 corners of the cube faces, at least one point of each ball
    assert int(jnp.sum(bucketed.active)) >= 4 + 1 + 1 + 4
    for name in ("active", "key", "body_b"):
        np.testing.assert_array_equal(getattr(bucketed, name), getattr(padded, name), err_msg=name)
    for name in ("distance", "point", "normal"):
        np.testing.assert_allclose(getattr(bucketed, name), getattr(padded, name), rtol=0, atol=1e-12,
                                   err_msg=name)


MIXED_SIZES = {T.SPHERE: [0.3, 0, 0], T.CAPSULE: [0.15, 0.25, 0], T.ELLIPSOID: [0.3, 0.2, 0.1],
               T.CYLINDER: [0.2, 0.3, 0], T.BOX: [0.3, 0.2, 0.25], T.CONE: [0.2, 0.3, 0], T.MESH: [0, 0, 0]}


@pytest.mark.parametrize("kind", list(MIXED_SIZES), ids=lambda t: t.name.lower())
def test_mixed_shape_lane_equals_its_own_geometry_class(kind):
    # one lane of the narrow phase's MixedShape (all non-plane kinds as members, hulls padded)
    # gives its own class's support, Hessian, inflation, bounding radius and centre; derivatives
    # w.r.t. the direction and the size stay finite although every other member's branch is also
    # evaluated on this lane's parameters
    from jaxsim_contact.collision._geoms import to_shape
    from jaxsim_contact.collision._mixed import mixed_shapes

    verts = np.asarray(RNG.normal(size=(12, 3)) * 0.2) if kind == T.MESH else None
    g = geom([0.1, -0.2, 0.3], random_quat(), MIXED_SIZES[kind], vertices=verts)
    members = tuple(MIXED_SIZES)
    batched = jax.tree_util.tree_map(lambda x: x[None], g)
    mixed = jax.tree_util.tree_map(lambda x: x[0], mixed_shapes(batched, kind, members, 20))
    # MJCF has no cone geom (to_shape has none); the member still follows jc.geometry.Cone
    own = Cone(g.size[0], g.size[1]) if kind == T.CONE else to_shape(g, kind)
    assert float(mixed.inflation) == float(own.inflation)
    np.testing.assert_allclose(mixed.bounding_radius(), own.bounding_radius(), rtol=1e-15)
    np.testing.assert_allclose(mixed.center, own.center, atol=1e-15)
    for _ in range(8):
        d = jnp.asarray(RNG.normal(size=3))
        np.testing.assert_allclose(mixed.support(d), own.support(d), atol=1e-15)
        np.testing.assert_allclose(mixed.support_hessian(d), own.support_hessian(d), atol=1e-12)

    def support_of(size, d):
        one = GeomData(g.pos, g.quat, g.rot, size, g.vertices, g.vertex_mask)
        lanes = mixed_shapes(jax.tree_util.tree_map(lambda x: x[None], one), kind, members, 20)
        return jax.tree_util.tree_map(lambda x: x[0], lanes).support(d)

    d = jnp.asarray(RNG.normal(size=3))
    for jac in (jax.jacfwd, jax.jacrev):
        derivatives = jac(support_of, argnums=(0, 1))(g.size, d)
        assert all(bool(jnp.all(jnp.isfinite(x))) for x in derivatives)


def test_general_pair_groups_share_one_query_program_with_equal_results(tmp_path, monkeypatch):
    # capsule-box (5 perturbed queries per pair) and box-ellipsoid (one query) have no closed form:
    # the narrow phase runs them as lanes of one GJK/EPA program (collision/_mixed.py). At random
    # overlapping poses its candidates equal those of one program per group (the old path)
    from jaxsim_contact.collision import _narrowphase as narrowphase

    xml = """
    <mujoco>
      <worldbody>
        <body><freejoint/><geom type="box" size="0.2 0.15 0.1" contype="1" conaffinity="6"/></body>
        <body><freejoint/><geom type="capsule" size="0.08 0.15" contype="2" conaffinity="1"/></body>
        <body><freejoint/><geom type="ellipsoid" size="0.15 0.1 0.08" contype="4" conaffinity="1"/></body>
      </worldbody>
    </mujoco>"""
    path = tmp_path / "general.xml"
    path.write_text(xml)
    model = jc.load(path)
    groups = {(g.type_a, g.type_b) for g in model.collision.groups}
    assert groups == {(T.CAPSULE, T.BOX), (T.ELLIPSOID, T.BOX)}, groups
    batch = 24
    qs = np.tile(np.asarray(model.qpos0), (batch, 1))
    for body in range(3):
        qs[:, 7 * body:7 * body + 3] = RNG.uniform(-0.15, 0.15, (batch, 3))
        quat = RNG.normal(size=(batch, 4))
        qs[:, 7 * body + 3:7 * body + 7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)

    def narrow():
        def one(q):
            kin = jc.dynamics.forward_kinematics(model, q)
            return jc.collision.narrow_phase(model, model.collision, kin.body_pos, kin.body_quat, jnp.asarray(0.01))
        return jax.jit(jax.vmap(one))(jnp.asarray(qs))

    merged = narrow()
    monkeypatch.setattr(narrowphase, "mergeable", lambda type_a, type_b: False)
    separate = narrow()
    assert int(jnp.sum(merged.active)) >= batch  # most poses overlap
    for name in ("active", "key", "body_a", "body_b"):
        np.testing.assert_array_equal(getattr(merged, name), getattr(separate, name), err_msg=name)
    for name in ("distance", "point", "normal"):
        np.testing.assert_allclose(getattr(merged, name), getattr(separate, name), rtol=0, atol=1e-12,
                                   err_msg=name)


FAR_SCENE = """<mujoco><option timestep="0.01"/><worldbody>
  <geom name="floor" type="plane" size="5 5 0.1"/>
  <body pos="0 0 1"><freejoint/><geom type="sphere" size="0.3"/></body>
  <body pos="0.1 0 2"><freejoint/><geom type="sphere" size="0.25"/></body>
</worldbody></mujoco>"""


def test_pairs_out_of_reach_report_a_lower_bound_and_step_like_a_scene_without_contacts(tmp_path):
    """No pair near: every candidate is inactive and its distance a lower bound of the true one
    (the pair functions are skipped by a cond); the step and its Jacobians are free flight's
    (closed form); vmapped and unbatched steps agree."""
    path = tmp_path / "far.xml"
    path.write_text(FAR_SCENE)
    model = jc.load(path, dtype=jnp.float64)
    kin = jc.dynamics.forward_kinematics(model, model.qpos0)
    cands = jax.jit(lambda m: jc.collision.narrow_phase(m, m.collision, kin.body_pos, kin.body_quat, m.options.contact_margin))(model)
    assert not bool(jnp.any(cands.active))
    # true distances: plane-sphere 1 - 0.3 and 2 - 0.25, sphere-sphere |(0.1, 0, 1)| - 0.55
    true = {(0, 1): 0.7, (0, 2): 1.75, (1, 2): float(np.hypot(0.1, 1.0)) - 0.55}
    body_a, body_b = np.asarray(cands.body_a), np.asarray(cands.body_b)
    for pair, exact in true.items():
        rows = (body_a == pair[0]) & (body_b == pair[1]) | (body_a == pair[1]) & (body_b == pair[0])
        assert rows.any()
        assert np.all(np.asarray(cands.distance)[rows] <= exact + 1e-12)
        assert np.all(np.asarray(cands.distance)[rows] > 0.0)

    state = jc.init(model)
    v = jnp.asarray(np.random.default_rng(0).normal(size=model.nv))
    state = jc.State(q=state.q, v=v, time=state.time, error=state.error, contact=state.contact)

    def next_v(x):
        s = jc.State(q=x[:model.nq], v=x[model.nq:], time=state.time, error=state.error,
                     contact=state.contact)
        return jc.step(model, s).v

    # two spheres in free flight (isotropic inertia: no gyroscopic term): v⁺ = v + Δt g, so
    # ∂v⁺/∂q = 0 and ∂v⁺/∂v = I — nothing of the skipped contact stage may leak into either
    dt = float(model.options.dt)
    gravity = np.tile(np.r_[0.0, 0.0, -9.81, 0.0, 0.0, 0.0], 2)
    x = jnp.concatenate([state.q, v])
    out = jax.jit(jc.step)(model, state)
    assert not bool(jnp.any(out.contact.active))
    np.testing.assert_array_equal(np.asarray(out.contact.force), 0.0)
    np.testing.assert_allclose(np.asarray(out.v), np.asarray(v) + dt * gravity, rtol=0, atol=1e-13)
    expected = np.concatenate([np.zeros((model.nv, model.nq)), np.eye(model.nv)], axis=1)
    for jac in (jax.jacrev, jax.jacfwd):
        np.testing.assert_allclose(np.asarray(jax.jit(jac(next_v))(x)), expected, rtol=0, atol=1e-13)
    # under vmap the conds become selects: the same values
    batched = jax.jit(jax.vmap(jc.step, in_axes=(None, 0)))(
        model, jax.tree_util.tree_map(lambda a: jnp.stack([a, a]), state))
    for leaf_b, leaf in zip(jax.tree_util.tree_leaves(batched), jax.tree_util.tree_leaves(out)):
        np.testing.assert_array_equal(np.asarray(leaf_b)[1], np.asarray(leaf))


@pytest.mark.parametrize("types", [(T.CAPSULE, T.CAPSULE), (T.SPHERE, T.CAPSULE)])
def test_culling_bound_never_exceeds_the_distance_and_is_tight_for_long_capsules(types):
    """The culling bound (capsules: from their segments) is a lower bound of the closed-form
    distance over random poses — a pair culled as far can never touch — and much tighter than
    bounding spheres for long capsules side by side."""
    from jaxsim_contact.collision._narrowphase import pair_bound

    ta, tb = types
    count = 300
    size_of = {T.CAPSULE: lambda: [RNG.uniform(0.02, 0.2), RNG.uniform(0.05, 0.8), 0.0],
               T.SPHERE: lambda: [RNG.uniform(0.02, 0.3), 0.0, 0.0]}
    pairs = [(geom(RNG.uniform(-1, 1, 3), random_quat(), size_of[ta]()),
              geom(RNG.uniform(-1, 1, 3), random_quat(), size_of[tb]())) for _ in range(count)]
    stack = lambda gs: jax.tree_util.tree_map(lambda *x: jnp.stack(x), *gs)  # noqa: E731
    geoms_a, geoms_b = stack([a for a, _ in pairs]), stack([b for _, b in pairs])
    gap, normal, _ = jax.jit(pair_bound, static_argnums=(1, 3))(geoms_a, ta, geoms_b, tb)
    manifold = jax.vmap(pair_function(ta, tb)[0], in_axes=(0, 0, None))(geoms_a, geoms_b, jnp.asarray(10.0))
    exact = np.min(np.where(np.asarray(manifold.valid), np.asarray(manifold.distance), np.inf), axis=1)
    assert np.all(np.isfinite(exact))
    positive = exact > 0
    assert positive.sum() > count // 3
    assert np.all(np.asarray(gap)[positive] <= exact[positive] + 1e-12)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(normal), axis=1), 1.0, atol=1e-12)
    # beside the middle of a long capsule (radius 0.05, half-length 0.5) at 0.2 from its axis: a
    # sphere of radius 0.05 (true distance 0.1, bound 0.1) or a short capsule (half-length 0.01:
    # bound 0.09); the bounding spheres alone overlap (gap ≈ -0.4)
    long = geom([0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.05, 0.5, 0.0])
    short = geom([0.2, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.05, 0.01 if ta == T.CAPSULE else 0.0, 0.0])
    tight = float(pair_bound(stack([short]), ta, stack([long]), tb)[0][0])
    assert tight == pytest.approx(0.09 if ta == T.CAPSULE else 0.1, abs=1e-12)


def test_oriented_box_bound_never_exceeds_the_box_distance():
    """The separating-axis bound of two oriented boxes is a lower bound of their distance (the
    closed-form box–box answer) over random poses, with a unit normal from a to b."""
    from jaxsim_contact.collision._narrowphase import _box_bound

    count = 300
    pairs = [(geom(RNG.uniform(-1, 1, 3), random_quat(), RNG.uniform(0.02, 0.4, 3)),
              geom(RNG.uniform(-1, 1, 3), random_quat(), RNG.uniform(0.02, 0.4, 3))) for _ in range(count)]
    stack = lambda gs: jax.tree_util.tree_map(lambda *x: jnp.stack(x), *gs)  # noqa: E731
    boxes_a, boxes_b = stack([a for a, _ in pairs]), stack([b for _, b in pairs])
    gap, normal, _ = jax.jit(_box_bound)(boxes_a, boxes_b)
    manifold = jax.vmap(pair_function(T.BOX, T.BOX)[0], in_axes=(0, 0, None))(boxes_a, boxes_b, jnp.asarray(10.0))
    exact = np.min(np.where(np.asarray(manifold.valid), np.asarray(manifold.distance), np.inf), axis=1)
    positive = np.isfinite(exact) & (exact > 0)
    assert positive.sum() > count // 3
    assert np.all(np.asarray(gap)[positive] <= exact[positive] + 1e-12)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(normal), axis=1), 1.0, atol=1e-12)
    between = np.asarray(boxes_b.pos - boxes_a.pos)
    assert np.all(np.sum(np.asarray(normal) * between, axis=1) >= 0)


PLATES = 12  # 66 mesh pairs: more than the GJK/EPA budget of 64 per step


def test_plates_whose_spheres_overlap_stay_out_of_the_gjk_budget(tmp_path, monkeypatch):
    """A stack of 12 thin mesh plates 1 cm apart: every pair's bounding spheres overlap (radius
    21 cm), so sphere culling passes all 66 pairs to a narrow phase capped at 64 and flags the
    budget overflow on every step (Talos standing: 119 of its 996 mesh pairs). Their oriented
    boxes are 1 cm apart: no pair is near, no overflow, and the lower bound is ~1 cm."""
    import dataclasses

    from jaxsim_contact.collision import _narrowphase

    corners = " ".join(f"{x} {y} {z}" for x in (-0.15, 0.15) for y in (-0.15, 0.15) for z in (-0.001, 0.001))
    bodies = "".join(f'<body pos="0 0 {0.5 + 0.012 * i}"><freejoint/><geom type="mesh" mesh="plate"/></body>'
                     for i in range(PLATES))
    path = tmp_path / "plates.xml"
    path.write_text(f'<mujoco><asset><mesh name="plate" vertex="{corners}"/></asset>'
                    f'<worldbody>{bodies}</worldbody></mujoco>')
    model = jc.load(path)
    [group] = [g for g in model.collision.groups if g.type_a == T.MESH and g.type_b == T.MESH]
    assert group.num_pairs == PLATES * (PLATES - 1) // 2 > group.narrow_budget
    kin = jc.dynamics.forward_kinematics(model, model.qpos0)

    def narrow(m):
        return jax.jit(lambda m: jc.collision.narrow_phase(
            m, m.collision, kin.body_pos, kin.body_quat, m.options.contact_margin))(m)

    boxed = narrow(model)
    assert not bool(boxed.overflow) and not bool(jnp.any(boxed.active))
    assert float(jnp.min(boxed.distance)) == pytest.approx(0.01, abs=1e-9)
    monkeypatch.setattr(_narrowphase, "_BOXED", ())
    spheres = narrow(dataclasses.replace(model))
    assert bool(spheres.overflow)
