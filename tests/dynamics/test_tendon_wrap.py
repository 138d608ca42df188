"""Tendon wrapping (``jaxsim_contact.dynamics._tendon_wrap.wrap``) against MuJoCo C's ``mju_wrap``.

The reference is MuJoCo itself: small models with one spatial tendon
``site - wrap geom (sphere or cylinder, with or without side site) - site`` whose sites and geom
sit on jointed bodies, so random ``qpos`` moves them. MuJoCo's ``mj_tendon`` records the path in
``wrap_xpos`` (4 points when the tendon wraps, 2 when it does not) and its length in
``ten_length``; the JAX function gets the same sites in the geom frame.

Compilation dominates the run time. Every float64 value check goes through one jitted, vmapped
program with the geometry flags passed as traced booleans and the batch padded to a fixed size;
every derivative check through a second one (values, ``jax.jacfwd`` and ``jax.jacrev``). The
derivative checks form one test item, first in the file, so that under pytest-xdist one worker
compiles the derivative program while the other runs the value checks.
The usual static-flag call is checked on its own, small programs (float64, and float32).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from jaxsim_contact.dynamics._tendon_wrap import wrap

SPHERE_RADIUS = 0.3
CYLINDER_RADIUS = 0.25
CONFIGURATIONS_PER_GROUP = 100
BATCH = 320  # float64 evaluations run in chunks of this many rows (padded): one compilation
NAN_CHECK_INPUTS = 2500  # per variant: 10^4 random and degenerate inputs in all

# (geom type, side site) of every model under test
VARIANTS = [("sphere", False), ("sphere", True), ("cylinder", False), ("cylinder", True)]
# evaluator outputs: arc length, tangent0 (3), tangent1 (3), tendon length; inputs: end0 (3),
# end1 (3), side (3), radius
OUTPUTS, INPUTS = 8, 10

_MOVABLE_POINT = """
    <body name="{name}_body">
      <inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>
      <joint name="{name}_x" type="slide" axis="1 0 0"/>
      <joint name="{name}_y" type="slide" axis="0 1 0"/>
      <joint name="{name}_z" type="slide" axis="0 0 1"/>
      <site name="{name}"/>
    </body>"""


def model_xml(geom_type: str, has_side: bool) -> str:
    """MJCF: sites ``end0``, ``end1`` (and ``side``) on 3-slide bodies (qpos = world position),
    the wrap geom on a free body (qpos = position + quaternion)."""
    radius = SPHERE_RADIUS if geom_type == "sphere" else CYLINDER_RADIUS
    size = f"{radius}" if geom_type == "sphere" else f"{radius} 0.4"
    sidesite = ' sidesite="side"' if has_side else ""
    side_body = _MOVABLE_POINT.format(name="side") if has_side else ""
    return f"""
<mujoco>
  <worldbody>{_MOVABLE_POINT.format(name="end0")}{_MOVABLE_POINT.format(name="end1")}
    <body name="obstacle_body">
      <freejoint/>
      <geom name="obstacle" type="{geom_type}" size="{size}" contype="0" conaffinity="0"/>
    </body>{side_body}
  </worldbody>
  <tendon>
    <spatial name="tendon">
      <site site="end0"/>
      <geom geom="obstacle"{sidesite}/>
      <site site="end1"/>
    </spatial>
  </tendon>
</mujoco>"""


@functools.cache
def mujoco_model(geom_type: str, has_side: bool) -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(model_xml(geom_type, has_side))


def model_radius(geom_type: str, has_side: bool) -> float:
    model = mujoco_model(geom_type, has_side)
    return float(model.geom_size[model.geom("obstacle").id, 0])


def random_unit(rng: np.random.Generator, count: int) -> np.ndarray:
    vectors = rng.normal(size=(count, 3))
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def random_configurations(geom_type: str, has_side: bool, seed: int) -> np.ndarray:
    """``(N, nq)`` qpos: geom at a random pose near the origin; end sites either anywhere in a box
    or roughly on opposite sides of the geom (mostly wrapping); the side site far outside, inside,
    or anywhere within twice the radius (MuJoCo picks the wrap mode from where it is)."""
    model = mujoco_model(geom_type, has_side)
    radius = model_radius(geom_type, has_side)
    rng = np.random.default_rng(seed)
    count = (3 if has_side else 2) * CONFIGURATIONS_PER_GROUP
    centre = rng.uniform(-0.2, 0.2, size=(count, 3))
    quat = rng.normal(size=(count, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)

    direction = random_unit(rng, count)
    end0 = centre + direction * rng.uniform(1.0, 3.0, size=(count, 1)) * radius
    end1 = centre - direction * rng.uniform(1.0, 3.0, size=(count, 1)) * radius
    end0 += rng.normal(scale=0.6 * radius, size=(count, 3))
    end1 += rng.normal(scale=0.6 * radius, size=(count, 3))
    half = count // 2
    end0[:half] = rng.uniform(-1.0, 1.0, size=(half, 3))
    end1[:half] = rng.uniform(-1.0, 1.0, size=(half, 3))

    qpos = np.zeros((count, model.nq))
    qpos[:, 0:3], qpos[:, 3:6], qpos[:, 6:9], qpos[:, 9:13] = end0, end1, centre, quat
    if has_side:
        group = np.arange(count) % 3  # side site outside, inside, anywhere within 2 radii
        low = np.where(group == 0, 1.2, 0.0)[:, None]
        high = np.select([group == 0, group == 1], [3.0, 0.95], 2.0)[:, None]
        distance = rng.uniform(low, high) * radius
        qpos[:, 13:16] = centre + random_unit(rng, count) * distance
    return qpos


def mujoco_reference(model: mujoco.MjModel, qpos: np.ndarray) -> dict[str, np.ndarray]:
    """Per configuration: site and geom poses, and MuJoCo's wrap result from ``mj_tendon``."""
    data = mujoco.MjData(model)
    sites = {
        name: mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, name)
        for name in ("end0", "end1", "side")
    }
    geom = model.geom("obstacle").id
    keys = ("end0", "end1", "side", "geom_pos", "geom_mat", "wrapnum", "path", "length")
    out = {key: [] for key in keys}
    for q in qpos:
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        mujoco.mj_tendon(model, data)
        for name, site in sites.items():
            out[name].append(data.site_xpos[site].copy() if site >= 0 else np.zeros(3))
        out["geom_pos"].append(data.geom_xpos[geom].copy())
        out["geom_mat"].append(data.geom_xmat[geom].reshape(3, 3).copy())
        wrapnum, start = int(data.ten_wrapnum[0]), int(data.ten_wrapadr[0])
        path = np.zeros((4, 3))
        path[:wrapnum] = data.wrap_xpos.reshape(-1, 3)[start : start + wrapnum]
        out["wrapnum"].append(wrapnum)
        out["path"].append(path)
        out["length"].append(float(data.ten_length[0]))
    return {key: np.asarray(value) for key, value in out.items()}


def to_geom_frame(points: np.ndarray, geom_pos: np.ndarray, geom_mat: np.ndarray) -> np.ndarray:
    """``R^T (x - p)`` per configuration, in MuJoCo's summation order (``mju_mulMatTVec3``)."""
    offset = points - geom_pos
    return (
        geom_mat[:, 0, :] * offset[:, 0:1]
        + geom_mat[:, 1, :] * offset[:, 1:2]
        + geom_mat[:, 2, :] * offset[:, 2:3]
    )


def to_world(points: np.ndarray, geom_pos: np.ndarray, geom_mat: np.ndarray) -> np.ndarray:
    return np.einsum("nij,nj->ni", geom_mat, points) + geom_pos


def _norm(vector: jax.Array) -> jax.Array:
    """Euclidean norm with finite derivatives at 0 (test-side tendon length)."""
    square = jnp.sum(vector * vector)
    positive = square > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, square, 1.0)), 0.0)


def _outputs(end0, end1, side, radius, cylinder, has_side):
    """``(8,)`` arc length, tangent0, tangent1, tendon length (geom frame); and ``wraps``."""
    result = wrap(end0, end1, radius, cylinder=cylinder, side=side, has_side=has_side)
    wrapped = _norm(end0 - result.tangent0) + result.arc_length + _norm(result.tangent1 - end1)
    length = jnp.where(result.wraps, wrapped, _norm(end0 - end1))
    vector = jnp.concatenate(
        [result.arc_length[None], result.tangent0, result.tangent1, length[None]]
    )
    return vector, result.wraps


def _values(end0, end1, side, radius, cylinder, has_side):
    return _outputs(end0, end1, side, radius, cylinder, has_side)[0]


def _with_derivatives(end0, end1, side, radius, cylinder, has_side):
    """Values, wraps, and ``jax.jacfwd`` / ``jax.jacrev`` ``(8, 10)`` of the values with respect
    to ``(end0, end1, side, radius)``."""
    vector, wraps = _outputs(end0, end1, side, radius, cylinder, has_side)
    args = (end0, end1, side, radius, cylinder, has_side)
    forward = jax.jacfwd(_values, argnums=(0, 1, 2, 3))(*args)
    reverse = jax.jacrev(_values, argnums=(0, 1, 2, 3))(*args)
    stack = lambda jac: jnp.concatenate([jac[0], jac[1], jac[2], jac[3][:, None]], axis=1)
    return vector, wraps, stack(forward), stack(reverse)


@functools.cache
def _compiled(derivatives: bool):
    """Jitted and vmapped over rows (flags traced, shared by the batch)."""
    function = _with_derivatives if derivatives else _outputs
    return jax.jit(
        jax.vmap(function, in_axes=(0, 0, 0, 0, None, None))
    )


def evaluate(end0, end1, side, radius, *, cylinder: bool, has_side: bool, derivatives=False):
    """Float64 numpy results for any number ``N`` of rows (``radius``: scalar or ``(N,)``):
    ``(vector (N, 8), wraps (N,))``, with ``derivatives`` also ``jacfwd``, ``jacrev``
    ``(N, 8, 10)``. Rows run in padded chunks of ``BATCH`` (one compilation per program)."""
    end0, end1, side = (np.asarray(x, np.float64).reshape(-1, 3) for x in (end0, end1, side))
    count = len(end0)
    radius = np.broadcast_to(np.asarray(radius, np.float64), (count,))
    results = []
    for start in range(0, count, BATCH):
        chunk = [x[start : start + BATCH] for x in (end0, end1, side, radius)]
        pad = BATCH - len(chunk[0])
        chunk = [np.concatenate([x, np.ones((pad,) + x.shape[1:])]) for x in chunk]
        out = _compiled(derivatives)(*chunk, jnp.asarray(cylinder), jnp.asarray(has_side))
        results.append([np.asarray(x)[: BATCH - pad] for x in out])
    return tuple(np.concatenate(parts) for parts in zip(*results))


@functools.cache
def mujoco_configurations(geom_type: str, has_side: bool):
    """MuJoCo reference for the random configurations of one model, the sites in the geom
    frame, and the radius."""
    model = mujoco_model(geom_type, has_side)
    seed = VARIANTS.index((geom_type, has_side))
    reference = mujoco_reference(model, random_configurations(geom_type, has_side, seed))
    pose = (reference["geom_pos"], reference["geom_mat"])
    local = {key: to_geom_frame(reference[key], *pose) for key in ("end0", "end1", "side")}
    return reference, local, model_radius(geom_type, has_side)


@functools.cache
def jax_results(geom_type: str, has_side: bool, derivatives: bool = False):
    _, local, radius = mujoco_configurations(geom_type, has_side)
    return evaluate(
        local["end0"], local["end1"], local["side"], radius,
        cylinder=geom_type == "cylinder", has_side=has_side, derivatives=derivatives,
    )


def _degenerate_inputs(radius: float, count: int, seed: int):
    """Random and deliberately degenerate ``(end0, end1, side)`` in the geom frame."""
    rng = np.random.default_rng(seed)
    end0 = rng.uniform(-3, 3, size=(count, 3)) * radius
    end1 = rng.uniform(-3, 3, size=(count, 3)) * radius
    side = rng.uniform(-2, 2, size=(count, 3)) * radius
    kind = np.arange(count) % 12
    on_surface = random_unit(rng, count) * radius
    end0[kind == 1] = on_surface[kind == 1]  # end point on the sphere
    end1[kind == 2] = end0[kind == 2]  # coincident end points
    end0[kind == 3] *= 0.2  # end point inside
    side[kind == 4] = 0.0  # side site at the centre
    end0[kind == 5] = 0.0  # end point at the centre
    end1[kind == 6] = -2.0 * end0[kind == 6]  # end points collinear with the centre
    end1[kind == 7] = 3.0 * end0[kind == 7]  # ... on one ray
    end0[kind == 8] = on_surface[kind == 8]  # both on the surface, opposite
    end1[kind == 8] = -on_surface[kind == 8]
    end1[kind == 9, :2] = end0[kind == 9, :2]  # same xy (cylinder: coincident projections)
    end0[kind == 10, :2] = on_surface[kind == 10, :2]  # cylinder: xy on the circle
    side[kind == 11, :2] = 0.0  # side site on the cylinder axis
    return end0, end1, side


# ------------------------------------------------------------------------------------------
# derivatives: one test item, first in the file, so that a single pytest-xdist worker compiles the
# derivative program while the other takes the value checks below


def test_derivatives():
    """Forward and reverse Jacobians are finite and agree; they match central differences;
    no NaN in values or derivatives over 10^4 random and degenerate inputs."""
    check_forward_and_reverse_derivatives_are_finite_and_agree()
    check_derivatives_match_central_differences()
    check_no_nan_on_random_and_degenerate_inputs()


def check_forward_and_reverse_derivatives_are_finite_and_agree():
    """On the random configurations of all four models."""
    for geom_type, has_side in VARIANTS:
        variant = f"{geom_type}, side site: {has_side}"
        vector, wraps, forward, reverse = jax_results(geom_type, has_side, derivatives=True)
        assert np.isfinite(forward).all() and np.isfinite(reverse).all(), variant
        np.testing.assert_allclose(forward, reverse, rtol=1e-9, atol=1e-9, err_msg=variant)
        if not has_side:
            assert (forward[:, :, 6:9] == 0).all(), variant  # no (absent) side-site dependence
        # the derivative program's values are the value program's
        np.testing.assert_array_equal(wraps, jax_results(geom_type, has_side)[1], variant)
        np.testing.assert_allclose(
            vector, jax_results(geom_type, has_side)[0], rtol=0, atol=1e-12, err_msg=variant
        )


def check_derivatives_match_central_differences():
    """Wrapping configurations (with a side site: both wrap modes), compared where the function
    is smooth: an entry whose central differences at steps h and h/4 disagree straddles a switch
    (wrap or not, candidate choice, one Newton step more or less) and is skipped."""
    steps = (1e-6, 2.5e-7)
    for geom_type, has_side in VARIANTS:
        variant = f"{geom_type}, side site: {has_side}"
        _, local, radius = mujoco_configurations(geom_type, has_side)
        _, wraps, forward, _ = jax_results(geom_type, has_side, derivatives=True)
        chosen = np.flatnonzero(wraps)[:10]
        if has_side:
            inside = np.linalg.norm(local["side"], axis=1) < radius
            chosen = np.r_[
                np.flatnonzero(wraps & inside)[:5], np.flatnonzero(wraps & ~inside)[:5]
            ]
        inputs = np.concatenate(
            [local["end0"][chosen], local["end1"][chosen], local["side"][chosen],
             np.full((len(chosen), 1), radius)], axis=1,
        )  # (n, 10): end0, end1, side, radius

        shifted = np.broadcast_to(inputs, (len(steps), INPUTS, 2) + inputs.shape).copy()
        for s, step in enumerate(steps):
            for k in range(INPUTS):
                shifted[s, k, 0, :, k] += step
                shifted[s, k, 1, :, k] -= step
        flat = shifted.reshape(-1, INPUTS)
        vector, _ = evaluate(
            flat[:, 0:3], flat[:, 3:6], flat[:, 6:9], flat[:, 9],
            cylinder=geom_type == "cylinder", has_side=has_side,
        )
        values = vector[:, :7].reshape(len(steps), INPUTS, 2, len(chosen), 7)
        scale = (2 * np.asarray(steps))[:, None, None, None]
        coarse, fine = (np.moveaxis(d, 0, -1) for d in (values[:, :, 0] - values[:, :, 1]) / scale)
        smooth = np.abs(coarse - fine) <= 1e-6 * (1 + np.abs(coarse))  # (n, 7, 10)
        assert smooth.mean() > 0.95, variant
        error = np.abs(forward[chosen, :7, :] - coarse) / (1 + np.abs(coarse))
        assert error[smooth].max() < 1e-6, (variant, error[smooth].max())


def check_no_nan_on_random_and_degenerate_inputs():
    """10^4 random and degenerate inputs (2500 per variant), and a zero radius."""
    for geom_type, has_side in VARIANTS:
        variant = f"{geom_type}, side site: {has_side}"
        flags = dict(cylinder=geom_type == "cylinder", has_side=has_side, derivatives=True)
        seed = 10 + VARIANTS.index((geom_type, has_side))
        end0, end1, side = _degenerate_inputs(SPHERE_RADIUS, NAN_CHECK_INPUTS, seed)
        vector, wraps, forward, reverse = evaluate(end0, end1, side, SPHERE_RADIUS, **flags)
        assert np.isfinite(vector).all(), variant
        assert np.isfinite(forward).all() and np.isfinite(reverse).all(), variant
        assert wraps.any() and not wraps.all(), variant
        assert (vector[~wraps, :7] == 0).all(), variant
        # a zero radius never wraps and stays finite
        vector, wraps, forward, reverse = evaluate(end0[:50], end1[:50], side[:50], 0.0, **flags)
        assert not wraps.any(), variant
        assert np.isfinite(vector).all(), variant
        assert np.isfinite(forward).all() and np.isfinite(reverse).all(), variant


# ------------------------------------------------------------------------------------------
# values against MuJoCo


@pytest.mark.parametrize("geom_type,has_side", VARIANTS)
def test_matches_mujoco(geom_type, has_side):
    reference, local, radius = mujoco_configurations(geom_type, has_side)
    vector, wraps = jax_results(geom_type, has_side)
    assert set(reference["wrapnum"]) <= {2, 4}
    mujoco_wraps = reference["wrapnum"] == 4
    np.testing.assert_array_equal(wraps, mujoco_wraps)
    # the sample exercises both outcomes and, with a side site, both wrap modes
    assert 50 <= mujoco_wraps.sum() <= len(mujoco_wraps) - 50
    if has_side:
        side_inside = np.linalg.norm(local["side"], axis=1) < radius
        inside = mujoco_wraps & side_inside
        assert inside.sum() >= 30 and (mujoco_wraps & ~side_inside).sum() >= 30
        # inside wrap: one touching point, zero arc
        np.testing.assert_array_equal(vector[inside, 0], 0.0)
        np.testing.assert_array_equal(reference["path"][inside, 1], reference["path"][inside, 2])

    pose = (reference["geom_pos"][mujoco_wraps], reference["geom_mat"][mujoco_wraps])
    tangent0 = to_world(vector[mujoco_wraps, 1:4], *pose)
    tangent1 = to_world(vector[mujoco_wraps, 4:7], *pose)
    tangent_error = max(
        np.abs(tangent0 - reference["path"][mujoco_wraps, 1]).max(),
        np.abs(tangent1 - reference["path"][mujoco_wraps, 2]).max(),
    )
    assert tangent_error < 1e-10, tangent_error

    # tendon length from the world-frame points, summed as mj_tendon does
    end0, end1 = reference["end0"], reference["end1"]
    length = np.linalg.norm(end0 - end1, axis=1)
    length[mujoco_wraps] = (
        np.linalg.norm(end0[mujoco_wraps] - tangent0, axis=1)
        + vector[mujoco_wraps, 0]
        + np.linalg.norm(tangent1 - end1[mujoco_wraps], axis=1)
    )
    relative_error = np.abs(length - reference["length"]) / reference["length"]
    assert relative_error.max() < 1e-10, relative_error.max()
    # and the length computed in the geom frame inside JAX
    np.testing.assert_allclose(vector[:, 7], reference["length"], rtol=1e-10)


@pytest.mark.parametrize("geom_type,has_side", VARIANTS)
def test_degenerate_configurations_match_mujoco(geom_type, has_side):
    """Exactly representable set-ups, geom at the origin with identity orientation: end points on
    the surface, collinear with the centre, on one ray, coincident, at the centre; side site at
    the centre, on the cylinder axis, behind or beside a segment that misses the geom."""
    model = mujoco_model(geom_type, has_side)
    r = model_radius(geom_type, has_side)
    cases = [
        ((r, 0, 0), (0, r, 0), (0, 0, 0)),  # both ends on the surface
        ((r, 0, 0), (-2 * r, 0, 0), (0, 0, 0)),  # collinear through the centre, one on surface
        ((2 * r, 0, 0), (-3 * r, 0, 0), (0, 0.5 * r, 0)),  # collinear through the centre
        ((0, 0, 2 * r), (0, 0, -3 * r), (0, 0, 0)),  # along z (cylinder: both on the axis)
        ((2 * r, 0, 0), (4 * r, 0, 0), (0, 0, 0)),  # one ray from the centre
        ((2 * r, r, 0), (2 * r, r, 0), (0, 0, 0)),  # coincident
        ((0, 0, 0), (2 * r, 0, 0), (0, 0, 0)),  # end point at the centre
        ((2 * r, 0, 1), (-2 * r, 0.1 * r, -1), (0, 0, 0.5 * r)),  # side site on the axis
        ((2 * r, 0, 1), (-2 * r, 0.1 * r, -1), (0, 0, 3 * r)),  # side site on the axis, far
        ((2 * r, 2 * r, 0), (-2 * r, 2 * r, 0), (0, -2 * r, 0)),  # misses, side behind the geom
        ((2 * r, 2 * r, 0), (-2 * r, 2 * r, 0), (3 * r, -2 * r, 0)),  # misses, side off to one side
        ((2 * r, 0.5 * r, 0), (-2 * r, 0.5 * r, 0), (0, -0.5 * r, 0)),  # inside, segment crosses
        ((2 * r, 2 * r, 0.3), (-3 * r, 2 * r, -0.2), (0.1 * r, 0, 0)),  # inside wrap
    ]
    qpos = np.zeros((len(cases), model.nq))
    qpos[:, 9] = 1.0  # identity orientation; geom at the origin
    for row, (end0, end1, side) in enumerate(cases):
        qpos[row, 0:3], qpos[row, 3:6] = end0, end1
        if has_side:
            qpos[row, 13:16] = side
    reference = mujoco_reference(model, qpos)
    vector, wraps = evaluate(
        reference["end0"], reference["end1"], reference["side"], r,
        cylinder=geom_type == "cylinder", has_side=has_side,
    )
    mujoco_wraps = reference["wrapnum"] == 4
    np.testing.assert_array_equal(wraps, mujoco_wraps)
    assert mujoco_wraps.any() and not mujoco_wraps.all()
    path = reference["path"][mujoco_wraps]
    np.testing.assert_allclose(vector[mujoco_wraps, 1:4], path[:, 1], rtol=0, atol=1e-10)
    np.testing.assert_allclose(vector[mujoco_wraps, 4:7], path[:, 2], rtol=0, atol=1e-10)
    np.testing.assert_allclose(vector[:, 7], reference["length"], rtol=1e-10)


def _static_flag_results(geom_type: str, has_side: bool, dtype, rows: int):
    """``wrap`` called as usual (Python-bool flags; ``side=None`` without a side site), jitted
    and vmapped over the first ``rows`` random configurations of one model, in ``dtype``."""
    _, local, radius = mujoco_configurations(geom_type, has_side)
    call = functools.partial(
        wrap, radius=jnp.asarray(radius, dtype), cylinder=geom_type == "cylinder",
        has_side=has_side,
    )
    if has_side:
        function = jax.vmap(lambda a, b, s: call(a, b, side=s))
    else:
        function = jax.vmap(lambda a, b, s: call(a, b, side=None))
    inputs = [jnp.asarray(local[key][:rows], dtype) for key in ("end0", "end1", "side")]
    return jax.jit(function)(*inputs)


@pytest.mark.parametrize("geom_type,has_side", [("sphere", False), ("cylinder", True)])
def test_static_flags_give_the_traced_flag_results(geom_type, has_side):
    """The usual call against the traced-flag program (between these two variants every static
    branch is taken)."""
    rows = 50
    result = _static_flag_results(geom_type, has_side, jnp.float64, rows)
    vector, wraps = (x[:rows] for x in jax_results(geom_type, has_side))
    np.testing.assert_array_equal(np.asarray(result.wraps), wraps)
    np.testing.assert_allclose(np.asarray(result.arc_length), vector[:, 0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(result.tangent0), vector[:, 1:4], rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(result.tangent1), vector[:, 4:7], rtol=0, atol=1e-12)


@pytest.mark.parametrize("geom_type,has_side", [("sphere", True), ("cylinder", False)])
def test_float32(geom_type, has_side):
    """Float32 in, float32 out (static flags): finite, the same decisions almost everywhere,
    values close to float64."""
    result = _static_flag_results(geom_type, has_side, jnp.float32, rows=1000)
    assert result.tangent0.dtype == jnp.float32 and result.arc_length.dtype == jnp.float32
    vector, wraps = jax_results(geom_type, has_side)
    wraps32 = np.asarray(result.wraps)
    vector32 = np.concatenate(
        [np.asarray(result.arc_length)[:, None], result.tangent0, result.tangent1], axis=1
    )
    assert np.isfinite(vector32).all()
    same = wraps32 == wraps
    assert same.mean() > 0.98
    both = same & wraps
    difference = np.abs(vector32[both] - vector[both, :7])
    assert np.median(difference) < 1e-6 and np.quantile(difference, 0.99) < 1e-4
