"""jaxsim_contact._math helpers that replace slow XLA:CPU lowerings."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsim_contact._math import (
    argmax_first, argmax_packed, argmin_first, argmin_packed, coordinate_dot, first_true_indices,
    matrix_inverse_rotate, matrix_rotate, quat_normalize, quat_rotate, quat_to_matrix,
)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_argmax_first_and_argmin_first_equal_jnp_on_ties_and_every_axis(dtype):
    """Same indices as ``jnp.argmax`` / ``jnp.argmin`` (first extremum) on data full of ties
    (integers 0–3), with ±inf and ±max/4 entries (the masks the narrow phase and EPA use), on
    every axis, under ``jit`` and ``vmap``; int32 like them."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, size=(6, 7, 9)).astype(dtype)
    big = np.finfo(dtype).max / 4
    x[rng.random(x.shape) < 0.1] = big
    x[rng.random(x.shape) < 0.1] = -big
    x[rng.random(x.shape) < 0.05] = np.inf
    x[rng.random(x.shape) < 0.05] = -np.inf
    x[0, 0, :] = np.inf  # a slice that is all +inf: index 0, as argmin/argmax
    x = jnp.asarray(x)
    for axis in (0, 1, 2, -1, -2):
        for ours, theirs in ((argmax_first, jnp.argmax), (argmin_first, jnp.argmin)):
            got = jax.jit(ours, static_argnums=1)(x, axis)
            np.testing.assert_array_equal(got, theirs(x, axis=axis))
            assert got.dtype == jnp.int32
    batched = jax.vmap(lambda row: argmax_first(row))(x.reshape(-1, 9))
    np.testing.assert_array_equal(batched, jnp.argmax(x.reshape(-1, 9), axis=-1))


def test_argmax_first_stays_in_range_on_nan():
    """A slice with a NaN has no maximum: the index is still a valid index of the slice."""
    x = jnp.asarray([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan]])
    for fn in (argmax_first, argmin_first):
        got = np.asarray(fn(x))
        assert np.all((got >= 0) & (got < 3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_packed_argmax_and_argmin_pick_an_extremum_to_the_last_mantissa_bits(dtype):
    """``argmax_packed`` / ``argmin_packed`` (one float reduction, the index in the low mantissa
    bits): on values whose extremum is unique beyond ``2^b`` ulps they equal ``jnp.argmax`` /
    ``jnp.argmin``; on exact ties (integers, zeros of both signs, subnormals, ±inf, the ±max/4
    masks) they return the first of the tied entries, as ``jnp`` does — subnormals count as
    equal to the smallest normal, so a slice of zeros and subnormals gives index 0 — on every
    axis, under ``jit`` and ``vmap``. Wherever they differ from ``jnp`` the picked value is
    within ``2^(b+1)`` ulps of the extremum."""
    rng = np.random.default_rng(1)
    info = np.finfo(dtype)
    specials = np.asarray([0.0, -0.0, info.tiny / 8, -info.tiny / 8, np.inf, -np.inf, info.max / 4,
                           -info.max / 4], dtype)

    def clamped(v):  # what the keys see: subnormals as the smallest normal, infinities as max
        return np.clip(np.where(np.abs(v) < info.tiny, info.tiny, v), -info.max, info.max)

    for trial, shape in enumerate([(3, 384, 4), (3, 384, 4), (5, 7, 9), (5, 7, 9)]):
        if trial % 2:
            x = rng.integers(0, 4, size=shape).astype(dtype)  # ties everywhere
            special = rng.random(shape) < 0.2
            x[special] = rng.choice(specials, size=int(np.sum(special)))
        else:
            x = (rng.normal(size=shape) * 10.0 ** rng.integers(-30, 30)).astype(dtype)
        for axis in (0, 1, 2, -1):
            for ours, theirs in ((argmax_packed, jnp.argmax), (argmin_packed, jnp.argmin)):
                got = np.asarray(jax.jit(ours, static_argnums=1)(jnp.asarray(x), axis))
                want = np.asarray(theirs(jnp.asarray(clamped(x)), axis=axis))
                assert got.dtype == np.int32
                picked = clamped(np.take_along_axis(x, np.expand_dims(got, axis), axis))
                best = clamped(np.take_along_axis(x, np.expand_dims(want, axis), axis))
                bits = max(x.shape[axis] - 1, 1).bit_length()
                with np.errstate(over="ignore"):
                    ulps = np.abs(picked - best) / np.spacing(np.abs(best))
                assert np.all(ulps <= 2.0 ** (bits + 1)), (trial, axis, ours.__name__)
                if trial % 2:  # exact ties: the first one, as jnp on the clamped values
                    np.testing.assert_array_equal(got, want)
    x = jnp.asarray(rng.normal(size=(40, 300)), jnp.float64)
    np.testing.assert_array_equal(jax.vmap(argmax_packed)(x), jnp.argmax(x, axis=-1))
    np.testing.assert_array_equal(jax.vmap(argmin_packed)(x), jnp.argmin(x, axis=-1))


def test_packed_argmax_is_in_range_on_nan_and_exact_on_too_long_axes():
    """NaN slices give an index in range; an axis too long to pack (a float32 mesh hull of over
    2048 vertices: G1's, Centauro's hulls made the float32 corpus run raise) takes the exact
    two-reduction index instead of raising."""
    x = jnp.asarray([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan]])
    for fn in (argmax_packed, argmin_packed):
        got = np.asarray(fn(x))
        assert np.all((got >= 0) & (got < 3))
    long = jnp.asarray(np.random.default_rng(2).normal(size=(3, 1 << 12)), jnp.float32)
    for ours, theirs in ((argmax_packed, jnp.argmax), (argmin_packed, jnp.argmin)):
        got = jax.jit(ours)(long)
        assert got.dtype == jnp.int32
        np.testing.assert_array_equal(got, theirs(long, axis=-1))


def test_coordinate_dot_is_the_dot_product_over_coordinates():
    """Coordinate lists of point sets against a vector and against each other: the row-wise dot
    product, under jit and vmap."""
    rng = np.random.default_rng(3)
    points, other = rng.normal(size=(2, 5, 7, 3))
    direction = rng.normal(size=3)
    coords = lambda x: [x[..., i] for i in range(3)]  # noqa: E731
    np.testing.assert_allclose(coordinate_dot(coords(points), direction), points @ direction, rtol=1e-14)
    batched = jax.jit(jax.vmap(lambda p, o: coordinate_dot(coords(p), coords(o))))
    np.testing.assert_allclose(batched(points, other), np.sum(points * other, axis=-1), rtol=1e-14)


@pytest.mark.parametrize("n, size", [(768, 48), (256, 48), (5, 5), (1, 1)])
def test_first_true_indices_are_nonzeros_leading_entries(n, size):
    rng = np.random.default_rng(n)
    for density in (0.0, 0.02, 0.3, 1.0):
        mask = rng.random(n) < density
        count = min(int(mask.sum()), size)
        got = np.asarray(jax.jit(first_true_indices, static_argnums=1)(jnp.asarray(mask), size))
        assert got.shape == (size,) and got.dtype == np.int32
        np.testing.assert_array_equal(got[:count], np.flatnonzero(mask)[:count])
        # the positions past the count hold indices of False entries, in range
        assert np.all((got[count:] >= 0) & (got[count:] < n)) and not np.any(mask[got[count:]])
    batched = jax.vmap(lambda m: first_true_indices(m, size))(jnp.asarray(rng.random((3, n)) < 0.5))
    assert batched.shape == (3, size)


def test_first_true_indices_rejects_bad_shapes():
    with pytest.raises(ValueError, match="1-D mask"):
        first_true_indices(jnp.ones((2, 3), bool), 2)
    with pytest.raises(ValueError, match="0 < size"):
        first_true_indices(jnp.ones(3, bool), 4)


def test_matrix_rotations_equal_the_quaternion_rotation_and_its_inverse():
    rng = np.random.default_rng(7)
    quat = quat_normalize(jnp.asarray(rng.normal(size=4)))
    rotation = quat_to_matrix(quat)
    for shape in [(3,), (5, 3), (2, 4, 3)]:
        v = jnp.asarray(rng.normal(size=shape))
        np.testing.assert_allclose(matrix_rotate(rotation, v), quat_rotate(quat, v), atol=1e-14)
        np.testing.assert_allclose(matrix_inverse_rotate(rotation, matrix_rotate(rotation, v)), v,
                                   atol=1e-14)
        np.testing.assert_allclose(matrix_rotate(rotation, v), v @ np.asarray(rotation).T, atol=1e-14)


def test_matrix_rotations_reject_stacked_matrices():
    with pytest.raises(ValueError, match="one \\(3, 3\\) matrix"):
        matrix_rotate(jnp.eye(3)[None].repeat(2, 0), jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="one \\(3, 3\\) matrix"):
        matrix_inverse_rotate(jnp.eye(3), jnp.ones((2, 4)))
    batched = jax.vmap(matrix_rotate)(jnp.eye(3)[None].repeat(2, 0), jnp.ones((2, 3)))
    np.testing.assert_allclose(batched, np.ones((2, 3)))


def test_cross_equals_numpy_cross_with_broadcasting():
    """``math.cross`` (stacked on the last axis, no transpose kernels) is the cross product, with
    ``jnp.cross``'s broadcasting: ``(n, 1, 3) × (n, 3, 3)`` as in the contact Jacobian."""
    from jaxsim_contact._math import cross

    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(5, 1, 3)), rng.normal(size=(5, 4, 3))
    np.testing.assert_allclose(np.asarray(cross(jnp.asarray(a), jnp.asarray(b))), np.cross(a, b),
                               rtol=1e-15, atol=1e-15)
    e = np.eye(3)
    np.testing.assert_array_equal(np.asarray(cross(jnp.asarray(e[0]), jnp.asarray(e[1]))), e[2])
