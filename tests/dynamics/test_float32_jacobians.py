"""float32 step Jacobians against float64's (issue 42, "Must show"): on the scenes of the
gradient tests (``test_step_gradients``: the cube in free flight, sticking, sliding with a
velocity, sliding under a push, tipping on an edge; the pendulum resting on the floor), away from
mode switches, ``jax.jacfwd`` and ``jax.jacrev`` of one step in float32 — the model, the state and
the solve in float32, default solver options — agree with float64's to 1e-3 relative.

Relative to the whole step Jacobian ``∂(q⁺, v⁺)/∂(q, v, ctrl, μ, mass)``, and for each block
whose float64 norm is at least 1e-3 of the whole, relative to that block: an exactly-zero block
(a sticking cube's ``v⁺`` does not depend on ``v``) only has round-off to compare.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim_contact as jc
from flat_step import step_fn
from test_step_gradients import (HALF, MASS, MU, PENDULUM_XML, PENETRATION, _bob_resting_angle,
                                 _x, cube_config)

CUBE_STATES = ["free_flight", "sticking", "sliding_velocity", "sliding_push", "tipping_edge"]
RELATIVE = 1e-3


def _pendulum(dtype):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pendulum.xml"
        path.write_text(PENDULUM_XML)
        return jc.load(path, dtype=dtype)


def _jacobians(model, xs):
    """``(forward, reverse)`` ``(batch, out, in)`` Jacobians of one step at each row of ``xs``."""
    contact = jc.init(model).contact
    xs = xs.astype(model.dtype)
    forward = jax.jit(jax.vmap(jax.jacfwd(step_fn), (0, None, None)))(xs, model, contact)
    reverse = jax.jit(jax.vmap(jax.jacrev(step_fn), (0, None, None)))(xs, model, contact)
    assert forward.dtype == model.dtype  # no float64 leaked into the float32 program
    return np.asarray(forward, np.float64), np.asarray(reverse, np.float64)


def _compare(name, model, j32, j64):
    nq, nv, nu = model.nq, model.nv, model.nu
    blocks = {"q": slice(0, nq), "v": slice(nq, nq + nv), "ctrl": slice(nq + nv, nq + nv + nu),
              "mu": slice(nq + nv + nu, nq + nv + nu + 1), "mass": slice(nq + nv + nu + 1, None)}
    whole = np.linalg.norm(j64)
    assert np.all(np.isfinite(j32))
    assert np.linalg.norm(j32 - j64) <= RELATIVE * whole, (name, np.linalg.norm(j32 - j64) / whole)
    for block, columns in blocks.items():
        reference = np.linalg.norm(j64[:, columns])
        if reference >= 1e-3 * whole:
            error = np.linalg.norm(j32[:, columns] - j64[:, columns]) / reference
            assert error <= RELATIVE, (name, block, error)


def test_float32_step_jacobians_agree_with_float64():
    cube64, cube32 = (jc.scenes.load("dragged_cube", dtype=dtype, mass=MASS, size=2 * HALF, friction=MU)
                      for dtype in (jnp.float64, jnp.float32))
    xs = jnp.stack([cube_config(name) for name in CUBE_STATES])
    forward64, reverse64 = _jacobians(cube64, xs)
    forward32, reverse32 = _jacobians(cube32, xs)
    for index, name in enumerate(CUBE_STATES):
        np.testing.assert_allclose(forward64[index], reverse64[index], rtol=1e-9, atol=1e-12)
        _compare((name, "jacfwd"), cube64, forward32[index], forward64[index])
        _compare((name, "jacrev"), cube64, reverse32[index], reverse64[index])

    pendulum64, pendulum32 = _pendulum(jnp.float64), _pendulum(jnp.float32)
    x = _x(pendulum64, [_bob_resting_angle(PENETRATION)], [0.0], [0.05], 0.8,
           float(pendulum64.body_mass[-1]))[None]
    (forward64,), (reverse64,) = _jacobians(pendulum64, x)
    (forward32,), (reverse32,) = _jacobians(pendulum32, x)
    _compare(("pendulum", "jacfwd"), pendulum64, forward32, forward64)
    _compare(("pendulum", "jacrev"), pendulum64, reverse32, reverse64)
