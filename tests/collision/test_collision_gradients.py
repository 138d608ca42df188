"""Derivatives of ``jc.collision.distance`` (#3; seed 000 "Differentiable Collision Detection").

Compilation dominates the cost here (one GJK/EPA instance per compiled function), so every test
goes through a handful of jitted, vmapped kernels cached at module level: each kernel evaluates
a batch of configurations (finite-difference stencils, degenerate cases, noise/key sweeps) in one
call. Outputs are stacked as ``(signed_distance, point_a, point_b, normal)`` → 10 rows; inputs are
the two pose twists (translation, rotation vector; world frame) and, for the exact-rule tests,
the shape sizes.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import trimesh

import jaxsim_contact as jc
from jaxsim_contact.dynamics._integration import quat_exp_increment
from jaxsim_contact.collision._smoothing import local_support_hessian

Smoothing = jc.collision.Smoothing
FD_STEP = 1e-6


def expq(v):
    """Unit quaternion of a rotation vector (the integrator's exponential map)."""
    return quat_exp_increment(v, 1.0)


def poses(x):
    return jc.Transform(x[0:3], expq(x[3:6])), jc.Transform(x[6:9], expq(x[9:12]))


def outputs(r):
    return jnp.concatenate([r.signed_distance[None], r.point_a, r.point_b, r.normal])


def both_jacobians(f, x):
    """Value, forward-mode and reverse-mode Jacobians with one trace of the primal."""
    y, lin = jax.linearize(f, x)
    jf = jax.vmap(lin, out_axes=1)(jnp.eye(x.shape[0], dtype=x.dtype))
    transpose = jax.linear_transpose(lin, x)
    jr = jax.vmap(lambda c: transpose(c)[0])(jnp.eye(y.shape[0], dtype=y.dtype))
    return y, jf, jr


def smoothing_for(estimator, noise, samples=64):
    return {
        "exact": lambda: None,
        "gauss1": lambda: Smoothing(order=1, distribution="gaussian", noise=noise, num_samples=samples),
        "gumbel1": lambda: Smoothing(order=1, distribution="gumbel", noise=noise, num_samples=1),
        "zeroth": lambda: Smoothing(order=0, distribution="gaussian", noise=noise, num_samples=samples),
    }[estimator]()


# -- exact rule vs finite differences (sphere and ellipsoid pairs, sizes differentiated) ----------


def _sphere_pair(x):
    pa, pb = poses(x)
    return outputs(jc.collision.distance(jc.Sphere(x[12]), pa, jc.Sphere(x[13]), pb))


def _ellipsoid_pair(x):
    pa, pb = poses(x)
    return outputs(jc.collision.distance(jc.Ellipsoid(x[12:15]), pa, jc.Ellipsoid(x[15:18]), pb))


PAIR_FN = {"sphere": _sphere_pair, "ellipsoid": _ellipsoid_pair}


@functools.lru_cache(maxsize=None)
def exact_kernel(kind):
    """Batched (value, forward-mode, reverse-mode Jacobian) of the exact rule; inputs x =
    (twists, sizes). Spheres: literally ``jax.jacfwd`` and ``jax.jacrev``. Ellipsoids: one
    linearisation and its transpose (what ``jax.jvp`` / ``jax.vjp`` do; one trace of the
    GJK/EPA primal instead of two, to keep compilation short)."""
    f = PAIR_FN[kind]
    if kind == "sphere":
        return jax.jit(jax.vmap(lambda x: (f(x), jax.jacfwd(f)(x), jax.jacrev(f)(x))))
    return jax.jit(jax.vmap(lambda x: both_jacobians(f, x)))


def stencil(x, h=FD_STEP):
    n = x.shape[0]
    eye = np.eye(n)
    return jnp.asarray(np.concatenate([x[None], x + h * eye, x - h * eye]))


def run_stencil(kind, x):
    values, jf, jr = exact_kernel(kind)(stencil(np.asarray(x, np.float64)))
    n = len(x)
    fd = (np.asarray(values[1:1 + n]) - np.asarray(values[1 + n:])).T / (2 * FD_STEP)
    return np.asarray(values[0]), np.asarray(jf[0]), np.asarray(jr[0]), fd


POSE = [0.1, 0.0, 0.05, 0.2, 0.1, -0.3]
EXACT_CASES = {
    # kind, pose b translation, sizes
    "sphere separated": ("sphere", [0.9, 0.2, 0.1], [0.3, 0.4]),
    "sphere penetrating": ("sphere", [0.5, 0.2, 0.1], [0.3, 0.4]),
    "ellipsoid separated": ("ellipsoid", [0.9, 0.2, 0.1], [0.3, 0.4, 0.5, 0.5, 0.2, 0.3]),
    "ellipsoid penetrating": ("ellipsoid", [0.5, 0.2, 0.1], [0.3, 0.4, 0.5, 0.5, 0.2, 0.3]),
}


@pytest.mark.parametrize("case", list(EXACT_CASES))
def test_exact_rule_matches_finite_differences(case):
    kind, pos_b, sizes = EXACT_CASES[case]
    x = np.array(POSE + pos_b + [-0.1, 0.4, 0.2] + sizes)
    value, jf, jr, fd = run_stencil(kind, x)
    assert (value[0] > 0) == ("separated" in case)
    scale = np.max(np.abs(fd))
    assert scale > 0.1
    # forward and reverse mode against central differences, 1e-6 relative
    np.testing.assert_allclose(jf, fd, rtol=1e-6, atol=1e-6 * scale)
    np.testing.assert_allclose(jr, fd, rtol=1e-6, atol=1e-6 * scale)
    np.testing.assert_allclose(jf, jr, rtol=1e-12, atol=1e-12 * scale)
    # the size columns are informative: d(signed distance)/d(size) = -(n-component of support)
    assert np.all(np.abs(jf[0, 12:]) > 0) if kind == "sphere" else np.any(np.abs(jf[0, 12:15]) > 1e-3)


def test_sphere_derivatives_closed_form():
    """d(signed)/d(pos_b) = n, d(signed)/d(radius) = -1, dn/dpos_b = (I - n nᵀ)/|c|."""
    x = np.array([0, 0, 0, 0, 0, 0, 0.6, 0.8, 0.0, 0.3, -0.2, 0.1, 0.3, 0.4])
    value, jf, _, _ = run_stencil("sphere", x)
    n = np.array([0.6, 0.8, 0.0])
    np.testing.assert_allclose(value[0], 0.3, atol=1e-12)
    np.testing.assert_allclose(jf[0, 6:9], n, atol=1e-12)
    np.testing.assert_allclose(jf[0, 12:14], [-1.0, -1.0], atol=1e-12)
    np.testing.assert_allclose(jf[7:10, 6:9], np.eye(3) - np.outer(n, n), atol=1e-12)
    np.testing.assert_allclose(jf[0, 9:12], 0.0, atol=1e-12)  # rotating a sphere changes nothing


def test_jacfwd_equals_jacrev_at_every_lane():
    """Forward and reverse mode agree at every lane of the (jitted, vmapped) stencil batch."""
    for kind, sizes in (("sphere", [0.3, 0.4]), ("ellipsoid", [0.3, 0.4, 0.5, 0.5, 0.2, 0.3])):
        x = np.array(POSE + [0.9, 0.2, 0.1, -0.1, 0.4, 0.2] + sizes)
        _, jf, jr = exact_kernel(kind)(stencil(x))
        assert float(jnp.abs(jf).max()) > 0.1
        np.testing.assert_allclose(jf, jr, atol=1e-12 * float(jnp.abs(jf).max()))


def test_grad_matches_jacobian_row():
    """``jax.grad`` of the signed distance (sphere pair, small compile) = row 0 of jacfwd."""
    x = jnp.array([0] * 6 + [0.6, 0.8, 0.1, 0.3, -0.2, 0.1, 0.3, 0.4], float)
    grad = jax.jit(jax.grad(lambda x: _sphere_pair(x)[0]))(x)
    _, jf, _, _ = run_stencil("sphere", x)
    np.testing.assert_allclose(grad, jf[0], atol=1e-12)


# -- smoothing converges to the exact rule on ellipsoids --------------------------------------

RADII_A, RADII_B = np.array([0.3, 0.4, 0.5]), np.array([0.5, 0.2, 0.3])
X_SMOOTH = np.array(POSE + [0.9, 0.2, 0.1, -0.1, 0.4, 0.2])


@functools.lru_cache(maxsize=None)
def ellipsoid_kernel(estimator, samples):
    """Batched Jacobians w.r.t. the pose twists of one estimator on ellipsoid pairs; the radii,
    noise and key are per-lane inputs."""

    def one(radii_a, radii_b, x, noise, key):
        sm = smoothing_for(estimator, noise, samples)

        def f(x):
            pa, pb = poses(x)
            r = jc.collision.distance(jc.Ellipsoid(radii_a), pa, jc.Ellipsoid(radii_b), pb, smoothing=sm, key=key)
            return outputs(r)

        return both_jacobians(f, x)

    return jax.jit(jax.vmap(one))


def exact_pose_jacobian():
    x = np.concatenate([X_SMOOTH, RADII_A, RADII_B])
    return run_stencil("ellipsoid", x)[1][:, :12]


def _error_curve(estimator, schedule, samples=64):
    """Relative error of the mean Jacobian over K keys (= one estimate with K·M samples for the
    linear 0th-order estimator) at each (noise, K) of ``schedule``."""
    lanes = [(noise, k) for noise, count in schedule for k in range(count)]
    n = len(lanes)
    keys = jax.vmap(jax.random.PRNGKey)(jnp.arange(n))
    _, jf, jr = ellipsoid_kernel(estimator, samples)(
        jnp.tile(RADII_A, (n, 1)), jnp.tile(RADII_B, (n, 1)), jnp.tile(X_SMOOTH, (n, 1)),
        jnp.array([noise for noise, _ in lanes]), keys,
    )
    np.testing.assert_allclose(jf, jr, atol=1e-10)
    exact = exact_pose_jacobian()
    errors, start = [], 0
    for noise, count in schedule:
        mean = np.mean(np.asarray(jf[start:start + count]), axis=0)
        errors.append(np.linalg.norm(mean - exact) / np.linalg.norm(exact))
        start += count
    return errors


GAUSS_SCHEDULE = [(0.3, 1), (0.1, 4), (0.03, 16), (0.01, 64)]
ZEROTH_SCHEDULE = [(0.1, 1), (0.03, 8), (0.01, 64)]
# every call of an ellipsoid kernel uses the same lane count (and strongly typed float64 inputs:
# a weakly typed ``jnp.full(n, 0.05)`` is another signature), so each kernel compiles once
LANES = {"gauss1": sum(c for _, c in GAUSS_SCHEDULE), "zeroth": sum(c for _, c in ZEROTH_SCHEDULE)}


def _pad(a, lanes):
    a = jnp.asarray(a)
    return jnp.concatenate([a, jnp.repeat(a[:1], lanes - a.shape[0], axis=0)])


def test_first_order_gaussian_converges_on_ellipsoids():
    errors = _error_curve("gauss1", GAUSS_SCHEDULE)
    assert all(b < a for a, b in zip(errors, errors[1:])), errors
    assert errors[0] > 3e-2, errors  # large noise, few samples: visibly biased / noisy
    assert errors[-1] < 2.5e-2, errors  # MC error of 4096 samples: ~1/sqrt(4096)


def test_zeroth_order_converges_on_ellipsoids():
    errors = _error_curve("zeroth", ZEROTH_SCHEDULE)
    assert all(b < a for a, b in zip(errors, errors[1:])), errors
    assert errors[0] > 0.1, errors
    assert errors[-1] < 0.1, errors


@pytest.mark.parametrize("distribution", ["gaussian", "gumbel"])
def test_support_hessian_estimators_converge(distribution):
    """Eq. 26 with Gaussian or Gumbel noise → the analytic ellipsoid Hessian (error curve)."""
    shape = jc.Ellipsoid(jnp.array([0.3, 0.5, 0.8]))
    u = jnp.array([0.3, -0.5, 0.7]) / np.linalg.norm([0.3, -0.5, 0.7])
    exact = np.asarray(jc.geometry._shapes.support_hessian(shape, u))
    errors = []
    for noise, samples in [(0.3, 16), (0.1, 256), (0.03, 4096), (0.01, 65536)]:
        sm = Smoothing(order=1, distribution=distribution, noise=noise, num_samples=samples)
        est = jax.jit(local_support_hessian)(shape, u, sm, jax.random.PRNGKey(0))
        errors.append(np.linalg.norm(np.asarray(est) - exact) / np.linalg.norm(exact))
    assert all(b < a for a, b in zip(errors, errors[1:])), errors
    assert errors[-1] < 2e-2, errors


def test_gumbel_closed_form_is_the_softmax_hessian():
    """Eqs. 27–28 against autodiff of the softmax-weighted support of the same polytope."""
    rng = np.random.default_rng(3)
    mesh = jc.ConvexMesh.from_points(rng.normal(size=(30, 3)) * [0.3, 0.4, 0.5])
    u = jnp.array([0.2, 0.9, -0.3]) / np.linalg.norm([0.2, 0.9, -0.3])
    noise = 0.05
    temperature = noise * float(mesh.bounding_radius())
    soft = lambda d: jax.nn.softmax(jnp.where(mesh.vertex_mask, mesh.vertices @ d / temperature, -jnp.inf)) @ mesh.vertices  # noqa: E731
    reference = np.asarray(jax.jacfwd(soft)(u))
    proj = np.eye(3) - np.outer(u, u)
    reference = proj @ (0.5 * (reference + reference.T)) @ proj
    est = local_support_hessian(mesh, u, Smoothing(1, "gumbel", noise, 1), None)
    np.testing.assert_allclose(est, reference, atol=1e-10)
    assert np.linalg.norm(reference) > 1e-3
    # depth-1 neighbourhood (seed 000 Fig. 2): the softmax over the witness vertex and its ring
    vertices = np.asarray(mesh.vertices)[np.asarray(mesh.vertex_mask)]
    hull = trimesh.convex.convex_hull(vertices)
    witness = int(np.argmax(vertices @ np.asarray(u)))
    ring = vertices[[witness] + list(hull.vertex_neighbors[witness])]
    local = lambda d: jax.nn.softmax(ring @ d / temperature) @ ring  # noqa: E731
    ref_local = np.asarray(jax.jacfwd(local)(u))
    ref_local = proj @ (0.5 * (ref_local + ref_local.T)) @ proj
    est_local = local_support_hessian(mesh, u, Smoothing(1, "gumbel", noise, 1, neighborhood=1), None)
    np.testing.assert_allclose(est_local, ref_local, atol=1e-10)
    assert np.linalg.norm(ref_local - reference) > 1e-6  # the neighbourhood changes the estimate


# -- polytopes: curvature-aware Jacobians where the exact Hessian is zero -----------------------

V_MAX, K_MAX, F_MAX = 162, 8, 320


def _mesh(points):
    return jc.ConvexMesh.from_points(points, max_vertices=V_MAX, max_neighbors=K_MAX, max_faces=F_MAX)


def _box_mesh(half):
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
    return _mesh(corners * np.asarray(half, float))


def _poly_sphere(radius):
    return _mesh(trimesh.creation.icosphere(subdivisions=2, radius=radius).vertices)


R_A, R_B = 0.3, 0.4
ROT = [-0.1, 0.4, 0.2]
MESH_CASES = {
    # name: (mesh a, mesh b, pose a twist, pose b twist)
    "polyhedral spheres": (lambda: _poly_sphere(R_A), lambda: _poly_sphere(R_B), [0] * 6, [0.6, 0.75, 0.1, 0.0, 0.0, 0.0]),
    "touching faces": (lambda: _box_mesh([0.5] * 3), lambda: _box_mesh([0.5] * 3), [0] * 6, [1.0, 0, 0, 0, 0, 0]),
    "parallel faces apart": (lambda: _box_mesh([0.5] * 3), lambda: _box_mesh([0.5] * 3), [0] * 6, [1.3, 0.2, 0, 0, 0, 0]),
    "parallel faces overlapping": (lambda: _box_mesh([0.5] * 3), lambda: _box_mesh([0.5] * 3), [0] * 6, [0.9, 0, 0, 0, 0, 0]),
    "coincident centres": (lambda: _box_mesh([0.5] * 3), lambda: _box_mesh([0.5] * 3), [0] * 6, [0] * 6),
    "deep penetration": (lambda: _box_mesh([0.5, 0.4, 0.3]), lambda: _poly_sphere(0.3), [0] * 6, [0.01, 0.02, 0, 0.1, 0, 0]),
    "vertex on face": (lambda: _box_mesh([0.5] * 3), lambda: _box_mesh([0.5] * 3), [0] * 6, [0.5 + 0.5 * np.sqrt(3), 0, 0, 0.0, 0.9553166, 0.7853982]),
    "tiny": (lambda: _box_mesh([1e-4] * 3), lambda: _poly_sphere(1e-4), [0] * 6, [2.05e-4, 0, 0, 0, 0, 0]),
    "large": (lambda: _box_mesh([1e3] * 3), lambda: _poly_sphere(1e3), [0] * 6, [1.9e3, 3e2, 0, 0, 0.2, 0]),
}
MESH_NOISE = {"exact": 1.0, "gauss1": 0.3, "gumbel1": 0.05, "zeroth": 0.05}


@functools.lru_cache(maxsize=None)
def mesh_batch():
    shapes_a = [case[0]() for case in MESH_CASES.values()]
    shapes_b = [case[1]() for case in MESH_CASES.values()]
    stack = lambda items: jax.tree.map(lambda *xs: jnp.stack(xs), *items)  # noqa: E731
    x = jnp.asarray([np.array(c[2] + c[3], float) for c in MESH_CASES.values()])
    return stack(shapes_a), stack(shapes_b), x


@functools.lru_cache(maxsize=None)
def mesh_jacobians(estimator):
    def one(mesh_a, mesh_b, x, noise, key):
        sm = smoothing_for(estimator, noise)

        def f(x):
            pa, pb = poses(x)
            return outputs(jc.collision.distance(mesh_a, pa, mesh_b, pb, smoothing=sm, key=key))

        return both_jacobians(f, x)

    shapes_a, shapes_b, x = mesh_batch()
    n = x.shape[0]
    noise = jnp.full(n, MESH_NOISE[estimator])
    keys = jax.vmap(jax.random.PRNGKey)(jnp.arange(n))
    y, jf, jr = jax.jit(jax.vmap(one))(shapes_a, shapes_b, x, noise, keys)
    return np.asarray(y), np.asarray(jf), np.asarray(jr)


def _exact_sphere_jacobian(pos_b):
    x = np.array([0] * 6 + list(pos_b) + [0.0] * 3 + [R_A, R_B])
    return run_stencil("sphere", x)[1][:, :12]


@pytest.mark.parametrize("estimator", ["exact", "gauss1", "gumbel1", "zeroth"])
def test_mesh_estimators_finite_at_degenerate_configurations(estimator):
    y, jf, jr = mesh_jacobians(estimator)
    names = list(MESH_CASES)
    for i, name in enumerate(names):
        assert np.all(np.isfinite(y[i])), (name, y[i])
        assert np.all(np.isfinite(jf[i])), (name, estimator)
        assert np.all(np.isfinite(jr[i])), (name, estimator)
    scale = np.abs(jf).max()
    np.testing.assert_allclose(jf, jr, atol=1e-9 * scale)
    # signed distance vs translation of b along the normal: exactly 1 for the rules built on the
    # optimality condition (envelope theorem); the zeroth-order estimate is only finite here
    for i, name in enumerate(names):
        if name in ("coincident centres",) or estimator == "zeroth":
            continue
        n = y[i, 7:10]
        np.testing.assert_allclose(jf[i, 0, 6:9] @ n, 1.0, atol=1e-6, err_msg=name)


def test_smoothing_gives_curvature_on_polyhedral_spheres():
    """Exact rule on a 162-vertex polyhedral sphere: H = 0, the witness point on a does not move
    when b moves. First-order smoothing recovers the round sphere's Jacobian (eqs. 26–28)."""
    pos_b = MESH_CASES["polyhedral spheres"][3][:3]
    sphere = _exact_sphere_jacobian(pos_b)
    block = lambda j: j[1:4, 6:12]  # d point_a / d pose_b  # noqa: E731
    exact = mesh_jacobians("exact")[1][0]
    assert np.linalg.norm(block(exact)) < 1e-9
    assert np.linalg.norm(block(sphere)) > 0.1
    for estimator in ("gauss1", "gumbel1", "zeroth"):
        smoothed = mesh_jacobians(estimator)[1][0]
        rel = np.linalg.norm(block(smoothed) - block(sphere)) / np.linalg.norm(block(sphere))
        assert np.linalg.norm(block(smoothed)) > 0.2 * np.linalg.norm(block(sphere)), estimator
        # first order: the round sphere's Jacobian within 30 %; zeroth order (64 samples of the
        # whole query): non-zero, but too noisy for a tolerance
        if estimator != "zeroth":
            assert rel < 0.3, (estimator, rel)


# -- planes (closed form) --------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def plane_jacobians(estimator):
    mesh = _poly_sphere(R_B)

    def one(x, noise, key):
        sm = smoothing_for(estimator, noise)

        def f(x):
            pa, pb = poses(x)
            return outputs(jc.collision.distance(jc.Plane(), pa, mesh, pb, smoothing=sm, key=key))

        return both_jacobians(f, x)

    x = jnp.array([[0, 0, 0, 0.1, -0.2, 0, 0.1, 0.2, 0.5, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0, R_B, 0, 0, 0]], float)
    noise = jnp.full(2, MESH_NOISE[estimator])
    keys = jax.vmap(jax.random.PRNGKey)(jnp.arange(2))
    return [np.asarray(a) for a in jax.jit(jax.vmap(one))(x, noise, keys)]


@pytest.mark.parametrize("estimator", ["exact", "gauss1", "gumbel1", "zeroth"])
def test_plane_pairs(estimator):
    y, jf, jr = plane_jacobians(estimator)
    assert np.all(np.isfinite(jf)) and np.all(np.isfinite(jr))
    np.testing.assert_allclose(jf, jr, atol=1e-9)
    # tilting the plane moves the deepest point of a round shape along the surface: only smoothing
    # sees it on the polyhedral sphere (exact: R_B per radian)
    moved = np.linalg.norm(jf[0, 4:7, 3:6])
    if estimator == "exact":
        assert moved < 1e-9
    elif estimator != "zeroth":
        assert 0.5 * R_B < moved < 2.5 * R_B, moved


# -- ellipsoid degenerate configurations, every estimator -------------------------------------

ELLIPSOID_DEGENERATE = {
    # radii a, radii b, twist a, twist b
    "touching spheres": ([0.5] * 3, [0.5] * 3, [0] * 6, [1.0, 0, 0, 0, 0, 0]),
    "coincident spheres": ([0.5] * 3, [0.3] * 3, [0] * 6, [0] * 6),
    "identical ellipsoids": ([0.3, 0.4, 0.5], [0.3, 0.4, 0.5], [0, 0, 0, 0, 0, 0.7], [0, 0, 0, 0, 0, 0.7]),
    "deep penetration": ([0.3, 0.4, 0.5], [0.5, 0.2, 0.3], [0] * 6, [0.02, 0.01, 0, 0.3, 0, 0]),
    "tiny": ([1e-4, 2e-4, 1e-4], [1e-4] * 3, [0] * 6, [2.2e-4, 0, 0, 0, 0, 0]),
    "large": ([1e3, 2e3, 1e3], [1e3] * 3, [0] * 6, [2.5e3, 0, 0, 0, 0, 0]),
}


@pytest.mark.parametrize("estimator", ["exact", "gauss1", "zeroth"])
def test_ellipsoid_estimators_finite_at_degenerate_configurations(estimator):
    cases = list(ELLIPSOID_DEGENERATE.values())
    n = len(cases)
    if estimator == "exact":  # the finite-difference kernel (sizes are inputs there): pad the batch
        x = np.array([c[2] + c[3] + c[0] + c[1] for c in cases], float)
        x = np.concatenate([x, np.repeat(x[:1], 37 - n, axis=0)])
        y, jf, jr = (np.asarray(a)[:n] for a in exact_kernel("ellipsoid")(jnp.asarray(x)))
        jf, jr = jf[:, :, :12], jr[:, :, :12]
    else:
        radii_a = jnp.array([c[0] for c in cases], float)
        radii_b = jnp.array([c[1] for c in cases], float)
        x = jnp.array([c[2] + c[3] for c in cases], float)
        lanes = LANES[estimator]
        keys = jax.vmap(jax.random.PRNGKey)(jnp.arange(lanes))
        out = ellipsoid_kernel(estimator, 64)(
            _pad(radii_a, lanes), _pad(radii_b, lanes), _pad(x, lanes), jnp.full(lanes, 0.05, float), keys
        )
        y, jf, jr = (np.asarray(a)[:n] for a in out)
    for i, name in enumerate(ELLIPSOID_DEGENERATE):
        assert np.all(np.isfinite(y[i])), name
        assert np.all(np.isfinite(jf[i])), (name, estimator)
        assert np.all(np.isfinite(jr[i])), (name, estimator)
        scale = max(np.abs(jf[i]).max(), 1.0)
        np.testing.assert_allclose(jf[i], jr[i], atol=1e-9 * scale, err_msg=name)
    # signed distance vs translation of b along the normal: 1 (not at coincident centres)
    for i, name in enumerate(ELLIPSOID_DEGENERATE):
        if name in ("coincident spheres", "identical ellipsoids") or estimator == "zeroth":
            continue
        n_i = y[i, 7:10]
        np.testing.assert_allclose(jf[i, 0, 6:9] @ n_i, 1.0, atol=1e-6, err_msg=name)


def test_exact_rule_at_touching_and_coincident_spheres():
    """Sphere class, sizes differentiated: touching is regular (FD agrees), coincident centres
    (normal undefined) are finite."""
    touching = np.array([0] * 6 + [0.7, 0, 0] + [0.1, 0.2, 0.3] + [0.3, 0.4])
    value, jf, jr, fd = run_stencil("sphere", touching)
    np.testing.assert_allclose(value[0], 0.0, atol=1e-12)
    np.testing.assert_allclose(jf, fd, atol=1e-6)
    coincident = np.array([0] * 12 + [0.3, 0.4])
    value, jf, jr, _ = run_stencil("sphere", coincident)
    assert np.all(np.isfinite(jf)) and np.all(np.isfinite(jr))
    np.testing.assert_allclose(value[0], -0.7, atol=1e-12)
    np.testing.assert_allclose(jf[0, 12:], [-1.0, -1.0], atol=1e-12)


# -- determinism and bad input ----------------------------------------------------------------


def test_deterministic_for_a_given_key():
    kernel = ellipsoid_kernel("gauss1", 64)
    lanes = LANES["gauss1"]
    args = lambda seeds: (  # noqa: E731
        jnp.tile(RADII_A, (lanes, 1)), jnp.tile(RADII_B, (lanes, 1)), jnp.tile(X_SMOOTH, (lanes, 1)),
        jnp.full(lanes, 0.3, float), jax.vmap(jax.random.PRNGKey)(_pad(jnp.asarray(seeds), lanes)),
    )
    _, a, _ = kernel(*args([5, 5, 6]))
    _, b, _ = kernel(*args([5, 5, 6]))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[0], a[1])
    assert np.abs(np.asarray(a[0] - a[2])).max() > 1e-6


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(noise=0.0), "noise must be finite and positive"),
        (dict(noise=-1e-3), "noise must be finite and positive"),
        (dict(noise=float("nan")), "noise must be finite and positive"),
        (dict(num_samples=0), "num_samples must be a positive int"),
        (dict(num_samples=-3), "num_samples must be a positive int"),
        (dict(num_samples=2.5), "num_samples must be a positive int"),
        (dict(distribution="uniform"), "unknown distribution"),
        (dict(order=2), "order must be 0 or 1"),
        (dict(neighborhood=0), "neighborhood must be None or a positive int"),
    ],
)
def test_smoothing_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Smoothing(**kwargs)


def test_smoothing_is_a_final_module_with_static_fields():
    sm = Smoothing(order=1, distribution="gumbel", noise=1e-2, num_samples=8)
    leaves = jax.tree_util.tree_leaves(sm)
    assert len(leaves) == 1 and float(leaves[0]) == pytest.approx(1e-2)
    assert (sm.order, sm.distribution, sm.num_samples) == (1, "gumbel", 8)
    with pytest.raises(TypeError, match="final"):
        type("Sub", (Smoothing,), {})


def test_missing_key_raises_type_error():
    s = jc.Ellipsoid([0.3, 0.4, 0.5])
    pa, pb = jc.Transform(jnp.zeros(3)), jc.Transform(jnp.array([1.0, 0.0, 0.0]))
    for sm in (Smoothing(order=1), Smoothing(order=0), Smoothing(order=1, distribution="gumbel")):
        with pytest.raises(TypeError, match="needs a PRNG key"):
            jc.collision.distance(s, pa, s, pb, smoothing=sm)
    with pytest.raises(TypeError, match="Smoothing"):
        jc.collision.distance(s, pa, s, pb, smoothing="gaussian")
    # the Gumbel closed form on polytopes is deterministic: no key needed
    box = jc.Box([0.3, 0.3, 0.3])
    r = jc.collision.distance(jc.Plane(), pa, box, pb, smoothing=Smoothing(order=1, distribution="gumbel"))
    np.testing.assert_allclose(r.signed_distance, -0.3, atol=1e-12)
