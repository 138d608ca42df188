"""Seed 004 §IV-B (b) and the standing quadruped of issue 6's Jacobian checks.

The Go2 of ``examples/inverse_standing_quadruped.py`` (example-robot-data URDF, floating base,
12 joint motors, the four foot meshes colliding with a floor, Baumgarte off, ADMM at tolerance
1e-12), standing with its feet 10 µm into the floor:

* Gauss–Newton on ½‖v⁺(τ)‖² with ``∂v⁺/∂τ`` from ``jax.jacfwd`` and from ``jax.jacrev`` of
  ``jc.step`` (implicit contact derivatives) finds holding torques with ``‖v⁺‖ < 1e-6`` within
  20 iterations (the issue's criterion), and the torques really hold the robot: the feet stick,
  the floor carries its weight;
* at those torques (a sticking stance, no mode switch within ±1e-6), ``jacfwd``, ``jacrev`` and
  central finite differences of one step w.r.t. ``(q, v, ctrl, μ, mass)`` agree to 1e-5.

Compilation dominates the cost: the file compiles one program (a batch of steps with their
``jvp``s and ``vjp``s, see ``batched``), shared by every test.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from flat_step import make_batched

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "inverse_standing_quadruped.py"
RTOL = 1e-5
FD_STEP = 1e-6
#: absolute scale for blocks whose exact derivative is zero (sticking feet: v⁺ does not depend on
#: μ), as in test_step_gradients.py
FLOOR = 1e-3


@functools.cache
def example():
    spec = importlib.util.spec_from_file_location("inverse_standing_quadruped", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def quadruped():
    """``(model, standing q)`` of the example (float64), ADMM capped at 150 iterations: at the held
    stance ADMM stalls at a criterion of ~5e-12 (rounding) above its 1e-12 tolerance, and the
    example's cap of 500 would make every warm-started solve of this file run 500 iterations."""
    model, q = example().standing_go2(feet_only=True)
    solver = jc.contact.ADMM("ncp", **dict(example().TIGHT, max_iterations=150))
    return model.replace_options(solver=solver), q


#: The one compiled program of this file (compiling the Go2 step's derivatives dominates its
#: cost): a batch of next states, ``jvp``s and ``vjp``s. ``vmap`` of ``jvp`` over the input basis
#: is exactly how ``jax.jacfwd`` is built, ``vmap`` of ``vjp`` over the output basis is
#: ``jax.jacrev``; rows with zero tangents / cotangents serve the finite differences.
BATCH = 2 * 51  # central differences of x = (q 19, v 18, ctrl 12, μ, mass); every call is padded
batched = make_batched(BATCH)


def jacobians(x, model, contact):
    """``(J_fwd, J_rev, next state)`` of one step, ``x -> (q⁺, v⁺)``, at ``x``: ``jax.jacfwd``'s and
    ``jax.jacrev``'s constructions, one batched call each."""
    n, m = x.shape[0], model.nq + model.nv
    states, tangents, _ = batched(jnp.broadcast_to(x, (n, n)), model, contact,
                                  ts=jnp.eye(n, dtype=x.dtype))
    _, _, gradients = batched(jnp.broadcast_to(x, (m, n)), model, contact,
                              ws=jnp.eye(m, dtype=x.dtype))
    return tangents.T, gradients, jax.tree_util.tree_map(lambda a: a[0], states)


def flat(model, q, v, ctrl):
    mu = float(model.geom_friction[0, 0])
    return jnp.concatenate([q, v, ctrl, jnp.asarray([mu, float(model.body_mass[-1])], q.dtype)])


def velocity_jacobian(mode, model, q):
    """``τ -> (∂v⁺/∂τ (nv, nu), v⁺)`` at ``(q, v = 0)``: forward mode (``jvp`` along the 12
    torque directions) or reverse mode (``vjp`` of the 18 velocity directions). Each call warm
    starts the solver from the previous call's contact forces, as a controller stepping the
    robot would."""
    nq, nv, nu = model.nq, model.nv, model.nu
    cache = {"contact": jc.init(model).contact}

    def run(tau):
        x = flat(model, q, jnp.zeros(nv), tau)
        contact = cache["contact"]
        if mode == "jacfwd":
            ts = jnp.zeros((nu, x.shape[0]), x.dtype).at[:, nq + nv:nq + nv + nu].set(jnp.eye(nu))
            states, tangents, _ = batched(jnp.broadcast_to(x, ts.shape), model, contact, ts=ts)
            jac = tangents[:, nq:].T
        else:
            ws = jnp.zeros((nv, nq + nv), x.dtype).at[:, nq:].set(jnp.eye(nv))
            states, _, gradients = batched(jnp.broadcast_to(x, (nv, x.shape[0])), model, contact,
                                           ws=ws)
            jac = gradients[:, nq + nv:nq + nv + nu]
        nxt = jax.tree_util.tree_map(lambda a: a[0], states)
        cache["contact"] = nxt.contact
        return jac, nxt.v

    return run


@functools.cache
def holding_torques(mode: str):
    model, q = quadruped()
    return example().gauss_newton(velocity_jacobian(mode, model, q), jnp.zeros(model.nu),
                                  iterations=20, tolerance=1e-6)


@pytest.mark.parametrize("mode", ["jacfwd", "jacrev"])
def test_gauss_newton_finds_torques_that_hold_a_standing_quadruped(mode):
    model, q = quadruped()
    tau, history = holding_torques(mode)
    assert history[0] > 1e-2  # without torques the robot sags
    assert history[-1] < 1e-6 and len(history) - 1 <= 20, history
    # a cold solve at the found torques: the robot is held
    nxt, _, _ = batched(flat(model, q, jnp.zeros(model.nv), tau)[None], model, jc.init(model).contact)
    assert float(jnp.linalg.norm(nxt.v[0])) < 1e-6
    # the floor carries the robot's weight, through the four feet
    normal = np.asarray(nxt.contact.force[0, :, 2])
    weight = float(jnp.sum(model.body_mass)) * 9.81
    assert abs(normal.sum() - weight) < 1e-3 * weight
    assert int((normal > 1.0).sum()) == 4
    if mode == "jacrev":  # both modes find the same minimum-norm correction from τ = 0
        other, _ = holding_torques("jacfwd")
        np.testing.assert_allclose(np.asarray(tau), np.asarray(other), rtol=1e-8, atol=1e-8)


def rel(a, b) -> float:
    return float(jnp.linalg.norm(a - b) / max(float(jnp.linalg.norm(b)), FLOOR))


def test_standing_quadruped_step_jacobians_match_finite_differences():
    """``jax.jacfwd``, ``jax.jacrev`` and central differences of one step of the held quadruped
    agree block by block (q, v, ctrl, μ, mass) to 1e-5."""
    model, q = quadruped()
    tau, _ = holding_torques("jacfwd")
    x = flat(model, q, jnp.zeros(model.nv), tau)
    # warm start from the stance's own forces, as when stepping the held robot
    held, _, _ = batched(x[None], model, jc.init(model).contact)
    contact = jax.tree_util.tree_map(lambda a: a[0], held.contact)
    jf, jr, nxt = jacobians(x, model, contact)
    n = x.shape[0]
    eye = jnp.eye(n, dtype=x.dtype) * FD_STEP
    batch, _, _ = batched(jnp.concatenate([x + eye, x - eye]), model, contact)
    out = jnp.concatenate([batch.q, batch.v], axis=-1)
    fd = ((out[:n] - out[n:]) / (2 * FD_STEP)).T
    # every solve is tight (ADMM stalls at ~5e-12 here, the rounding floor of this stance, just
    # above its 1e-12 tolerance) and no perturbation changed the active set
    assert float(nxt.contact.residual) < 1e-10 and float(jnp.max(batch.contact.residual)) < 1e-10
    assert bool(jnp.all(batch.contact.active == nxt.contact.active))
    assert int(nxt.contact.num_active) == 4
    nq, nv, nu = model.nq, model.nv, model.nu
    blocks = {"q": slice(0, nq), "v": slice(nq, nq + nv), "ctrl": slice(nq + nv, nq + nv + nu),
              "mu": slice(nq + nv + nu, nq + nv + nu + 1), "mass": slice(nq + nv + nu + 1, None)}
    assert np.all(np.isfinite(np.asarray(jf))) and np.all(np.isfinite(np.asarray(jr)))
    for name, cols in blocks.items():
        ef, er = rel(jf[:, cols], fd[:, cols]), rel(jr[:, cols], fd[:, cols])
        assert ef < RTOL and er < RTOL, (name, ef, er, float(jnp.linalg.norm(fd[:, cols])))
    # the blocks are not trivially zero: the stance reacts to q, v, the torques and the mass
    for name in ("q", "v", "ctrl", "mass"):
        assert float(jnp.linalg.norm(fd[nq:, blocks[name]])) > 1e-3, name
