"""Determinism (issue 8): repeated runs are bitwise identical, and an environment's trajectory does
not depend on the batch it runs in (sizes 1, 7 and 256, at different positions in the batch).

On XLA:CPU, plain ``jax.vmap`` does *not* give bitwise batch-size independence: XLA vectorises
reductions over small axes differently per batch extent (``jnp.sum(x**2, -1)`` on ``(B, 4, 4)``
sums pairwise for B = 256, sequentially for B = 7), so trajectories differ in the last bits
(measured over these 12 steps: |Δq| ≤ 1e-16, |Δv| ≤ 2e-14, |Δforce| ≤ 1.2e-12 N; see
``benchmarks/batch_size_determinism.py``). ``jc.chunked_vmap`` (fixed-size chunks under
``lax.map``) is bitwise batch-size independent, which is asserted here; plain ``vmap`` is asserted
within a bound 100x above the measured differences, with identical discrete outcomes (active
contacts, solver iterations, error bits).

Scene: the seed-001 dragged cube (slide x/y/z + ball joint, box on a plane: four contact points,
one actuator), so kinematics, the box–plane manifold, the Delassus matrix, the ADMM solve and the
manifold integration all run with non-trivial sizes.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim_contact as jc

HORIZON = 12
BIG = 256
#: environments of the 256-batch that also run in a batch of 7 (lanes 0..6 there)
SUBSET = np.array([0, 5, 50, 101, 200, 254, 255])


@functools.cache
def setup():
    model = jc.scenes.load("dragged_cube", dtype=jnp.float64)
    rng = np.random.default_rng(7)
    q0 = np.tile(np.asarray(model.qpos0), (BIG, 1))
    q0[:, 0] = rng.uniform(-0.5, 0.5, BIG)
    q0[:, 2] = rng.uniform(-4e-3, 4e-3, BIG)  # slightly inside or above the floor
    axis_angle = rng.normal(scale=0.02, size=(BIG, 3))  # small tilts: one to four corners touch
    half = np.linalg.norm(axis_angle, axis=1, keepdims=True) / 2
    q0[:, 3:7] = np.concatenate([np.cos(half), np.sinc(half / np.pi) * axis_angle / 2], axis=1)
    ctrls = rng.uniform(0.0, 8.0, (BIG, HORIZON, model.nu))
    return model, jnp.asarray(q0), jnp.asarray(ctrls)


def simulate(model, q0, ctrls):
    return jc.rollout(model, jc.init(model, q=q0), ctrls)[1]


def _chunked(q0, ctrls):
    model = setup()[0]
    return jc.chunked_vmap(lambda q, u: simulate(model, q, u))(q0, ctrls)


def _plain(q0, ctrls):
    model = setup()[0]
    return jax.vmap(lambda q, u: simulate(model, q, u))(q0, ctrls)


chunked = jax.jit(_chunked)  # batches of 1 and 7 both pad to one chunk: one compilation
plain = jax.jit(_plain)


def leaves(tree):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


def first_mismatch(a, b):
    """``None`` if bitwise equal, else a description (leaf, max |difference|)."""
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(a)[0]]
    for path, x, y in zip(paths, leaves(a), leaves(b), strict=True):
        if x.tobytes() != y.tobytes():
            diff = np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))
            return f"{path}: max |difference| {diff:.3e}"
    return None


def rows(tree, index):
    return jax.tree_util.tree_map(lambda x: x[index], tree)


@functools.cache
def big_run():
    _, q0, ctrls = setup()
    return chunked(q0, ctrls)


def test_the_scene_is_in_contact_and_moving():
    traj = big_run()
    # no environment frozen (tilted boxes can hit the solver's iteration cap: a warning bit only)
    assert np.all(np.asarray(traj.error) & jc.ErrorFlag.FREEZE == 0)
    active = np.asarray(traj.contact.num_active)
    # most boxes touch the floor at the end (those starting up to 4 mm above it may still fall)
    assert np.sum(active[:, -1] >= 1) > BIG // 2 and np.max(active) == 4
    assert np.ptp(np.asarray(traj.q)[:, -1, 0]) > 0.5  # pushed by different forces


def test_repeated_runs_are_bitwise_identical():
    _, q0, ctrls = setup()
    assert first_mismatch(big_run(), chunked(q0, ctrls)) is None


def test_chunked_results_do_not_depend_on_batch_size():
    _, q0, ctrls = setup()
    big = big_run()
    assert first_mismatch(chunked(q0[SUBSET], ctrls[SUBSET]), rows(big, SUBSET)) is None
    for env in (0, 101, 255):
        one = chunked(q0[env:env + 1], ctrls[env:env + 1])
        assert first_mismatch(one, rows(big, slice(env, env + 1))) is None, env


def test_plain_vmap_differs_from_the_batch_of_256_only_in_the_last_bits():
    """Batch of 7 under plain ``jax.vmap`` against the same environments in the (bitwise batch-size
    independent) chunked batch of 256: discrete outcomes equal, values within the bound."""
    _, q0, ctrls = setup()
    seven, big = plain(q0[SUBSET], ctrls[SUBSET]), rows(big_run(), SUBSET)
    bounds = {".q": 1e-14, ".v": 2e-12, ".time": 0.0, ".contact.distance": 1e-14, ".contact.point": 1e-14,
              ".contact.frame": 1e-13, ".contact.friction": 0.0, ".contact.force": 1e-10,
              ".contact.generalized_force": 1e-10,
              ".contact.residual": 1e-8, ".contact.penetration": 1e-14}
    for (path, got), (_, want) in zip(jax.tree_util.tree_flatten_with_path(seven)[0],
                                      jax.tree_util.tree_flatten_with_path(big)[0], strict=True):
        name, got, want = jax.tree_util.keystr(path), np.asarray(got), np.asarray(want)
        if np.issubdtype(got.dtype, np.floating):
            np.testing.assert_allclose(got, want, rtol=0, atol=bounds[name], err_msg=name)
        else:  # keys, active flags, iteration counts, convergence, error bits
            np.testing.assert_array_equal(got, want, err_msg=name)
