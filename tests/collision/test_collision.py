"""GJK / EPA against closed forms and coal (float64), degenerate inputs, recompilation, bad input."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import trimesh

import jaxsim_contact as jc
from collision_reference import make_pairs, stable_seed, world_support_value

METHODS = ("vanilla", "polyak", "nesterov")
TARGETS = (-0.1, -0.01, 0.0, 0.01, 0.1, 1.0)
SAMPLES = 4


def pose(pos, quat=(1.0, 0.0, 0.0, 0.0)):
    return jc.Transform(jnp.asarray(pos, jnp.float64), jnp.asarray(quat, jnp.float64))


# Jitted entry points shared by all tests: each pair of shape types compiles once.
distance = jax.jit(jc.collision.distance, static_argnames=("method", "max_iterations", "epa_max_vertices"))
intersects = jax.jit(jc.collision.intersects, static_argnames=("method", "max_iterations"))


@functools.lru_cache(maxsize=None)
def batched_distance(method: str):
    return jax.jit(jax.vmap(functools.partial(jc.collision.distance, method=method)))


@functools.lru_cache(maxsize=None)
def batched_intersects(method: str):
    return jax.jit(jax.vmap(functools.partial(jc.collision.intersects, method=method)))


# -- closed forms -----------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_sphere_sphere_closed_form(method):
    ra, rb = 0.3, 0.7
    centers = np.array([[2.0, 0.0, 0.0], [0.5, 0.6, -0.2], [0.0, 0.0, 1.0], [0.1, 0.0, 0.0]])
    for c in centers:
        r = distance(jc.Sphere(ra), pose([0, 0, 0]), jc.Sphere(rb), pose(c), method=method)
        expected = np.linalg.norm(c) - ra - rb
        np.testing.assert_allclose(r.signed_distance, expected, atol=1e-12)
        np.testing.assert_allclose(r.normal, c / np.linalg.norm(c), atol=1e-12)
        np.testing.assert_allclose(r.point_a, ra * c / np.linalg.norm(c), atol=1e-12)
        assert bool(r.converged)


@pytest.mark.parametrize("method", METHODS)
def test_sphere_box_closed_form(method):
    half = np.array([0.5, 0.3, 0.2])
    radius = 0.25
    box = jc.Box(half)
    for center in ([1.0, 0.1, 0.05], [0.9, 0.6, 0.0], [0.8, 0.5, 0.4], [0.6, 0.0, 0.0], [0.0, 0.0, 0.3]):
        center = np.asarray(center)
        r = distance(box, pose([0, 0, 0]), jc.Sphere(radius), pose(center), method=method)
        outside = np.maximum(np.abs(center) - half, 0.0)
        if np.any(outside > 0):
            expected = np.linalg.norm(outside) - radius
        else:  # centre inside the box: depth to the nearest face
            expected = -(np.min(half - np.abs(center)) + radius)
        np.testing.assert_allclose(r.signed_distance, expected, atol=1e-9)
        assert bool(r.converged)


@pytest.mark.parametrize("method", METHODS)
def test_aligned_boxes_closed_form(method):
    ha, hb = np.array([0.5, 0.4, 0.3]), np.array([0.2, 0.3, 0.25])
    for offset in ([1.0, 0.1, 0.0], [0.8, 0.8, 0.7], [0.6, 0.2, 0.1], [0.1, 0.0, 0.4]):
        offset = np.asarray(offset)
        r = distance(jc.Box(ha), pose([0, 0, 0]), jc.Box(hb), pose(offset), method=method)
        gap = np.abs(offset) - ha - hb
        if np.any(gap > 0):
            expected = np.linalg.norm(np.maximum(gap, 0.0))
        else:  # overlap: the minimal separating translation is along one axis
            expected = np.max(gap)
        np.testing.assert_allclose(r.signed_distance, expected, atol=1e-9)
        np.testing.assert_allclose(jnp.linalg.norm(r.point_a - r.point_b), abs(expected), atol=1e-9)


def test_plane_closed_form():
    plane_pose = jc.Transform(jnp.array([0.0, 0.0, 0.5]), jc._math.quat_from_axis_angle(jnp.array([1.0, 0.0, 0.0]), 0.3))
    normal = np.asarray(plane_pose.rotate(jnp.array([0.0, 0.0, 1.0])))
    center = np.array([0.2, 1.0, 2.0])
    r = distance(jc.Plane(), plane_pose, jc.Sphere(0.4), pose(center))
    expected = np.dot(normal, center - np.array([0, 0, 0.5])) - 0.4
    np.testing.assert_allclose(r.signed_distance, expected, atol=1e-12)
    np.testing.assert_allclose(r.normal, normal, atol=1e-12)
    # swapped order flips the normal
    r2 = distance(jc.Sphere(0.4), pose(center), jc.Plane(), plane_pose)
    np.testing.assert_allclose(r2.signed_distance, expected, atol=1e-12)
    np.testing.assert_allclose(r2.normal, -normal, atol=1e-12)
    # a box resting 1 cm into the ground
    rb = distance(jc.Plane(), pose([0, 0, 0]), jc.Box([0.1, 0.2, 0.3]), pose([0, 0, 0.29]))
    np.testing.assert_allclose(rb.signed_distance, -0.01, atol=1e-12)


# -- against coal on random shapes -----------------------------------------------------------

PAIRS = [
    ("ellipsoid", "ellipsoid"),
    ("box", "box"),
    ("capsule", "cylinder"),
    ("cylinder", "cylinder"),
    ("cone", "cone"),
    ("hull100", "hull100"),
    ("hull1000", "hull1000"),
    ("ellipsoid", "box"),
    ("cone", "hull100"),
    ("sphere", "capsule"),
]


@pytest.fixture(scope="module", params=PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
def pair_batch(request):
    kind_a, kind_b = request.param
    seed = stable_seed(kind_a, kind_b)
    return make_pairs(kind_a, kind_b, TARGETS, SAMPLES, seed)


def _check_against_reference(result, shapes_a, poses_a, shapes_b, poses_b, reference):
    d = np.asarray(result.signed_distance)
    targets = np.repeat(TARGETS, SAMPLES)
    assert np.all(np.isfinite(d))
    assert np.all(np.asarray(result.converged)), np.flatnonzero(~np.asarray(result.converged))
    separated = targets > 0
    np.testing.assert_allclose(d[separated], targets[separated], atol=1e-6)
    np.testing.assert_allclose(d[separated], reference[separated], atol=1e-6)
    touching = targets == 0
    np.testing.assert_allclose(d[touching], 0.0, atol=1e-6)
    penetrating = targets < 0
    # reference: the best certified depth bound of an independent search (collision_reference)
    np.testing.assert_allclose(d[penetrating], reference[penetrating], atol=1e-5)
    # Witness points: |pa - pb| = |d|, each on its shape's support plane along the normal, and the
    # shapes' overlap along the normal equals -d. The last two make d itself certified: the
    # overlap along any direction bounds the depth from above and the distance from below.
    gap = np.linalg.norm(np.asarray(result.point_a - result.point_b), axis=-1)
    np.testing.assert_allclose(gap, np.abs(d), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(result.normal, axis=-1), 1.0, atol=1e-9)
    h_a = np.asarray(jax.vmap(world_support_value)(shapes_a, poses_a, result.normal))
    h_b = np.asarray(jax.vmap(world_support_value)(shapes_b, poses_b, -result.normal))
    on_a = np.asarray(jnp.sum(result.normal * result.point_a, -1))
    on_b = np.asarray(-jnp.sum(result.normal * result.point_b, -1))
    np.testing.assert_allclose(on_a + on_b, -d, atol=1e-9)
    # Separated pairs are held to the GJK tolerance. Penetrating pairs come from EPA, whose
    # polytope lies within the EPA tolerance (1e-6·L) of the surface, and so do touching pairs:
    # there GJK's direction |x|/x is rounding noise and contact is resolved at EPA accuracy.
    for mask, atol in ((separated, 1e-6), (~separated, 1e-5)):
        np.testing.assert_allclose(on_a[mask], h_a[mask], atol=atol)
        np.testing.assert_allclose(on_b[mask], h_b[mask], atol=atol)


def test_nesterov_matches_coal(pair_batch):
    shapes_a, shapes_b, poses_a, poses_b, reference = pair_batch
    result = batched_distance("nesterov")(shapes_a, poses_a, shapes_b, poses_b)
    _check_against_reference(result, shapes_a, poses_a, shapes_b, poses_b, reference)
    # Boolean query agrees with the sign of the distance away from contact
    inter = batched_intersects("nesterov")(shapes_a, poses_a, shapes_b, poses_b)
    d = np.asarray(result.signed_distance)
    decided = np.abs(d) > 1e-7
    np.testing.assert_array_equal(np.asarray(inter)[decided], d[decided] < 0)


def test_batched_epa_equals_single_queries():
    """Under ``vmap`` EPA starts in a small polytope and continues in the full one where a lane
    runs out of room (``_batched_first_vertices``); single queries use the full one from the
    start. Both must give the same answer, including lanes that needed the continuation."""
    shapes_a, shapes_b, poses_a, poses_b, _ = make_pairs(
        "ellipsoid", "ellipsoid", TARGETS, SAMPLES, stable_seed("ellipsoid", "ellipsoid")
    )
    batched = batched_distance("nesterov")(shapes_a, poses_a, shapes_b, poses_b)
    iterations = np.asarray(batched.epa_iterations)
    first = jc.collision._epa.FIRST_TIER_VERTICES
    assert np.any(iterations > first), iterations  # some lanes continued in the full polytope
    assert np.any((iterations > 0) & (iterations < first - 4)), iterations  # some did not
    for i in range(len(iterations)):
        lane = jax.tree.map(lambda x: x[i], (shapes_a, poses_a, shapes_b, poses_b))
        single = distance(*lane, method="nesterov")
        assert int(single.epa_iterations) == iterations[i], i
        np.testing.assert_allclose(single.signed_distance, batched.signed_distance[i], rtol=0, atol=1e-12)
        np.testing.assert_allclose(single.normal, batched.normal[i], rtol=0, atol=1e-9)
        np.testing.assert_allclose(single.point_a, batched.point_a[i], rtol=0, atol=1e-9)


@pytest.mark.parametrize("method", ["vanilla", "polyak"])
# pairs (and batch size) of PAIRS: the Nesterov reference program is the one test_nesterov_matches_coal
# already compiled (the suite shares compiled programs across tests)
@pytest.mark.parametrize("kinds", [("ellipsoid", "ellipsoid"), ("cone", "hull100")], ids=lambda p: f"{p[0]}-{p[1]}")
def test_all_variants_agree(method, kinds):
    shapes_a, shapes_b, poses_a, poses_b, reference = make_pairs(*kinds, TARGETS, SAMPLES, seed=7)
    result = batched_distance(method)(shapes_a, poses_a, shapes_b, poses_b)
    _check_against_reference(result, shapes_a, poses_a, shapes_b, poses_b, reference)
    nesterov = batched_distance("nesterov")(shapes_a, poses_a, shapes_b, poses_b)
    np.testing.assert_allclose(result.signed_distance, nesterov.signed_distance, atol=1e-6)
    inter = batched_intersects(method)(shapes_a, poses_a, shapes_b, poses_b)
    d = np.asarray(result.signed_distance)
    decided = np.abs(d) > 1e-7
    np.testing.assert_array_equal(np.asarray(inter)[decided], d[decided] < 0)


# -- degenerate configurations: never NaN ------------------------------------------------------


def _degenerate_cases():
    rot = jc._math.quat_from_axis_angle(jnp.array([0.0, 0.0, 1.0]), 0.7)
    cases = {
        "touching spheres": (jc.Sphere(0.5), pose([0, 0, 0]), jc.Sphere(0.5), pose([1.0, 0, 0])),
        "coincident spheres": (jc.Sphere(0.5), pose([0, 0, 0]), jc.Sphere(0.3), pose([0, 0, 0])),
        "coincident boxes": (jc.Box([0.5, 0.5, 0.5]), pose([0, 0, 0]), jc.Box([0.5, 0.5, 0.5]), pose([0, 0, 0])),
        "parallel faces touching": (jc.Box([0.5, 0.5, 0.5]), pose([0, 0, 0]), jc.Box([0.5, 0.5, 0.5]), pose([1.0, 0, 0])),
        "parallel faces apart": (jc.Box([0.5, 0.5, 0.5]), pose([0, 0, 0]), jc.Box([0.5, 0.5, 0.5]), pose([1.3, 0.2, 0])),
        "parallel faces overlapping": (jc.Box([0.5, 0.5, 0.5]), pose([0, 0, 0]), jc.Box([0.5, 0.5, 0.5]), pose([0.9, 0.0, 0])),
        "identical ellipsoids": (jc.Ellipsoid([0.3, 0.4, 0.5]), pose([0, 0, 0], rot), jc.Ellipsoid([0.3, 0.4, 0.5]), pose([0, 0, 0], rot)),
        "deep capsules": (jc.Capsule(0.2, 0.5), pose([0, 0, 0]), jc.Capsule(0.2, 0.5), pose([0.01, 0, 0])),
        "coincident cylinders": (jc.Cylinder(0.3, 0.3), pose([0, 0, 0]), jc.Cylinder(0.3, 0.3), pose([0, 0, 0])),
        "cone apex on cone": (jc.Cone(0.3, 0.3), pose([0, 0, 0]), jc.Cone(0.3, 0.3), pose([0, 0, 0.6])),
        "tiny boxes": (jc.Box([1e-3, 1e-3, 1e-3]), pose([0, 0, 0]), jc.Box([1e-3, 1e-3, 1e-3]), pose([1.5e-3, 0, 0])),
        "huge ellipsoids": (jc.Ellipsoid([1e3, 2e3, 1e3]), pose([0, 0, 0]), jc.Ellipsoid([1e3, 1e3, 1e3]), pose([2.5e3, 0, 0])),
        "huge overlapping boxes": (jc.Box([1e3, 1e3, 1e3]), pose([0, 0, 0]), jc.Box([1e3, 1e3, 1e3]), pose([1e3, 5e2, 0])),
        "sphere touching box edge": (jc.Box([0.5, 0.5, 0.5]), pose([0, 0, 0]), jc.Sphere(0.5), pose([0.5 + 0.5 / np.sqrt(2), 0.5 + 0.5 / np.sqrt(2), 0])),
    }
    return cases


#: Exact signed distances of the degenerate cases (closed forms by inspection).
DEGENERATE_VALUES = {
    "touching spheres": 0.0,
    "coincident spheres": -0.8,
    "coincident boxes": -1.0,
    "parallel faces touching": 0.0,
    "parallel faces apart": 0.3,
    "parallel faces overlapping": -0.1,
    "deep capsules": -0.39,
    "coincident cylinders": -0.6,
    "cone apex on cone": 0.0,
    "tiny boxes": -0.5e-3,
    "huge ellipsoids": 0.5e3,
    "huge overlapping boxes": -1e3,
    "sphere touching box edge": 0.0,
}


@pytest.mark.parametrize("method", METHODS)
def test_degenerate_configurations_are_finite_and_exact(method):
    """Every degenerate case gives finite fields, a unit normal and an ``intersects`` consistent
    with the sign; every case with a closed form gives it, with every GJK variant (one test per
    variant so each compiles its distance programs once)."""
    # Coincident cylinders: every radial direction and both caps tie at depth 0.6. EPA must
    # resolve a whole circle of directions (~r/tol vertices); with its 128-vertex budget it stops
    # short and says so. Its polytope lies inside D, so the depth it reports is a lower bound.
    budget_limited = {"coincident cylinders"}
    for name, (sa, pa, sb, pb) in _degenerate_cases().items():
        r = distance(sa, pa, sb, pb, method=method)
        for field, value in r._asdict().items():
            assert np.all(np.isfinite(np.asarray(value))), (name, field, value)
        np.testing.assert_allclose(jnp.linalg.norm(r.normal), 1.0, atol=1e-9, err_msg=name)
        inter = intersects(sa, pa, sb, pb, method=method)
        if abs(float(r.signed_distance)) > 1e-6:
            assert bool(inter) == (float(r.signed_distance) < 0), name
        if name not in DEGENERATE_VALUES:
            continue
        value = DEGENERATE_VALUES[name]
        if name in budget_limited:
            assert not bool(r.converged), name
            assert value <= float(r.signed_distance) <= value + 1e-3, name  # depth ≤ 0.6
            continue
        assert bool(r.converged), name
        np.testing.assert_allclose(r.signed_distance, value, atol=1e-6 * max(1.0, abs(value)),
                                   err_msg=(name, method))


# -- float32, vmap over shapes, no recompilation ----------------------------------------------


def test_float32_runs_and_agrees():
    shapes_a, shapes_b, poses_a, poses_b, reference = make_pairs("ellipsoid", "box", TARGETS, 2, seed=3)
    to32 = lambda t: jax.tree.map(lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else x, t)  # noqa: E731
    r = batched_distance("nesterov")(to32(shapes_a), to32(poses_a), to32(shapes_b), to32(poses_b))
    assert r.signed_distance.dtype == jnp.float32
    assert np.all(np.isfinite(np.asarray(r.signed_distance)))
    np.testing.assert_allclose(r.signed_distance, reference, atol=2e-3)


def test_no_recompilation_on_new_values():
    traces = []

    def query(sa, pa, sb, pb, tolerance):
        traces.append(1)
        return jc.collision.distance(sa, pa, sb, pb, tolerance=tolerance).signed_distance

    fn = jax.jit(query)
    rng = np.random.default_rng(0)
    for _ in range(4):
        sa = jc.Ellipsoid(rng.uniform(0.1, 1.0, 3))
        sb = jc.Box(rng.uniform(0.1, 1.0, 3))
        pa = pose(rng.normal(size=3))
        pb = pose(rng.normal(size=3), jc._math.quat_normalize(jnp.asarray(rng.normal(size=4))))
        fn(sa, pa, sb, pb, jnp.asarray(rng.uniform(1e-9, 1e-6))).block_until_ready()
    assert len(traces) == 1


def test_hill_climbing_matches_dense_support():
    rng = np.random.default_rng(1)
    mesh = jc.ConvexMesh.from_points(rng.normal(size=(1000, 3)) * [0.3, 0.5, 0.2])
    directions = jnp.asarray(rng.normal(size=(64, 3)))
    dense = jax.vmap(lambda d: jnp.argmax(mesh.vertices @ d))(directions)
    climb = jax.vmap(lambda d: jc.geometry.hill_climbing_support_index(mesh, d, 0))(directions)
    values = lambda idx: jnp.sum(mesh.vertices[idx] * directions, -1)  # noqa: E731
    np.testing.assert_allclose(values(climb), values(dense), atol=1e-12)


def test_warm_start_is_used_and_consistent():
    sa, sb = jc.Ellipsoid([0.4, 0.3, 0.2]), jc.Ellipsoid([0.2, 0.5, 0.3])
    pa, pb = pose([0, 0, 0]), pose([0.9, 0.1, 0.05])
    cold = distance(sa, pa, sb, pb)
    warm = distance(sa, pa, sb, pb, warm_start=cold.point_a - cold.point_b)
    np.testing.assert_allclose(warm.signed_distance, cold.signed_distance, atol=1e-8)
    assert int(warm.iterations) <= int(cold.iterations)


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "points, message",
    [
        (np.zeros((3, 3)), "at least 4"),
        (np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0.0]]), "affinely independent"),
        (np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.0], [0.5, 0.2, 0]]), "affinely independent"),
        (np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, np.nan]]), "non-finite"),
        (np.ones((6, 3)), "affinely independent"),
        (np.zeros((4, 2)), "shape"),
    ],
)
def test_mesh_bad_points(points, message):
    with pytest.raises(ValueError, match=message):
        jc.ConvexMesh.from_points(points)


def test_empty_trimesh():
    with pytest.raises(ValueError, match="empty"):
        jc.ConvexMesh.from_trimesh(trimesh.Trimesh())


@pytest.mark.parametrize(
    "factory, message",
    [
        (lambda: jc.Sphere(-1.0), "Sphere: radius"),
        (lambda: jc.Sphere(float("inf")), "Sphere: radius"),
        (lambda: jc.Box([1.0, float("nan"), 1.0]), "Box: half_extents"),
        (lambda: jc.Ellipsoid([1.0, 0.0, 1.0]), "Ellipsoid: radii"),
        (lambda: jc.Capsule(0.1, -0.5), "Capsule: half_length"),
        (lambda: jc.Cylinder(-0.1, 0.5), "Cylinder: radius"),
        (lambda: jc.Cone(0.1, 0.0), "Cone: half_length"),
        (lambda: jc.Box([1.0, 1.0]), "trailing shape"),
    ],
)
def test_bad_shape_sizes(factory, message):
    with pytest.raises(ValueError, match=message):
        factory()


def test_bad_query_arguments():
    s = jc.Sphere(1.0)
    with pytest.raises(ValueError, match="unknown GJK method"):
        distance(s, pose([0, 0, 0]), s, pose([3, 0, 0]), method="fast")
    with pytest.raises(ValueError, match="plane-plane"):
        distance(jc.Plane(), pose([0, 0, 0]), jc.Plane(), pose([0, 0, 1]))
    with pytest.raises(TypeError, match="shape_b"):
        distance(s, pose([0, 0, 0]), "sphere", pose([0, 0, 1]))
    for budget in (3, 64.0, True):  # EPA's tetrahedron needs 4 slots; a static int
        with pytest.raises(ValueError, match="epa_max_vertices must be an int >= 4"):
            jc.collision.distance(s, pose([0, 0, 0]), s, pose([1, 0, 0]), epa_max_vertices=budget)


def test_traced_nonfinite_pose_does_not_raise():
    s = jc.Box([0.5, 0.5, 0.5])
    r = jax.jit(jc.collision.distance)(s, pose([0, 0, 0]), s, pose([np.nan, 0, 0]))
    assert not bool(r.converged)
