"""Gradients through ``jc.step`` / ``jc.rollout`` (issue #6; seed 004 §III, §IV-B).

Configurations without a mode switch within the step, float64, a tight solver (ADMM, tolerance
1e-12) so that central finite differences are not dominated by solver noise:

* the dragged cube of seed 001 (slide x/y/z + ball joint, 4 box–plane contacts) in free flight,
  sticking (push below μ m g), sliding (initial tangential velocity; push above μ m g), and tilted
  by 0.1 rad on one edge (2 contacts, tipping over while the edge slips);
* a pendulum lying on the floor (hinge, one sphere–plane contact).

The cube rests on a face, 0.01 mm into the floor (the Baumgarte term pushes it out): box–plane
contacts are a closed form of the pipeline (plain JAX: corner heights, a constant plane normal),
so the derivatives w.r.t. ``q`` include the exact variation of the contact points. An exactly
resting cube (φ = 0) sits on the kink of ``max(φ, 0)`` in the reference velocity — a mode boundary
in ``q`` — and is only used in the NaN sweep.

Each check differentiates one function of the flat vector ``x = (q, v, ctrl, μ, mass)`` with
``jax.jacfwd``, ``jax.jacrev`` and central differences, compared block by block with a
norm-relative error. Compilation dominates the cost, so the file compiles four programs only
(see ``batched``).
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from flat_step import make_batched, step_fn

TIGHT = jc.contact.ADMM("ncp", max_iterations=500, tolerance=1e-12, factorization="cholesky")
MU, MASS, HALF, G = 0.4, 1.0, 0.1, 9.81
RTOL = 1e-5
FD_STEP = 1e-6
#: the flat cube starts this far into the floor (> FD_STEP: every perturbed state is on the same
#: side of the kink of max(φ, 0); small enough that the Baumgarte push, β φ / dt = 2 mm/s, does not
#: lift the friction bound much)
PENETRATION = 1e-5


def _quat_z(angle: float) -> np.ndarray:
    return np.array([np.cos(angle / 2), 0.0, 0.0, np.sin(angle / 2)])


@functools.cache
def cube(gradient: str = "implicit"):
    model = jc.scenes.load("dragged_cube", dtype=jnp.float64, mass=MASS, size=2 * HALF, friction=MU)
    return model.replace_options(solver=TIGHT, gradient=gradient)


PENDULUM_XML = """<mujoco model="resting_pendulum">
  <option timestep="0.001" gravity="0 0 -9.81"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="0.8 0.005 0.0001"/>
    <body name="arm" pos="0 0 0.05">
      <joint name="hinge" type="hinge" axis="0 1 0" damping="0.01"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.01" mass="0.1" contype="0" conaffinity="0"/>
      <geom name="bob" type="sphere" pos="0.4 0 0" size="0.05" mass="1" friction="0.8 0.005 0.0001"/>
    </body>
  </worldbody>
  <actuator><motor name="torque" joint="hinge"/></actuator>
</mujoco>
"""


@functools.cache
def pendulum():
    """A horizontal pendulum (hinge about y, 5 cm above the floor) whose bob lies on the floor:
    gravity turns it into the floor (positive angles lower the bob)."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pendulum.xml"
        path.write_text(PENDULUM_XML)
        model = jc.load(path, dtype=jnp.float64)
    return model.replace_options(solver=TIGHT)


def _bob_resting_angle(penetration: float) -> float:
    """Hinge angle at which the bob (r = 5 cm, 0.4 m from a pivot 5 cm high) is ``penetration``
    into the floor: 0.4 sin θ = penetration."""
    return float(np.arcsin(penetration / 0.4))


# ---- one step as a function of x = (q, v, ctrl, mu, mass): tests/dynamics/flat_step.py ---------

#: Compiled programs, shared by every test of a model (compilation dominates the cost of this
#: file, ~20-30 s per program on the shared 2-core machine): the literal ``jax.jacfwd`` of one
#: step, and one batched program of states, ``jvp``s and ``vjp``s that serves the finite
#: differences, the reverse-mode Jacobians (``vmap`` of ``vjp`` over the output basis, which is
#: exactly how ``jax.jacrev`` is built), the pendulum's forward Jacobian (``vmap`` of ``jvp`` over
#: the input basis, ``jax.jacfwd``'s construction), the NaN sweep and the Gauss–Newton test.
jac_fwd = jax.jit(jax.jacfwd(step_fn))
BATCH = 64  # every call of batched is padded to this size (one compilation)
batched = make_batched(BATCH)


def central_differences(x, model, contact, h=FD_STEP):
    """``(J_fd (out, in), state at x)`` from one batched call."""
    eye = jnp.eye(x.shape[0], dtype=x.dtype) * h
    batch, _, _ = batched(jnp.concatenate([x + eye, x - eye, x[None]]), model, contact)
    out = jnp.concatenate([batch.q, batch.v], axis=-1)
    n = x.shape[0]
    fd = ((out[:n] - out[n:2 * n]) / (2 * h)).T
    return fd, jax.tree_util.tree_map(lambda a: a[-1], batch)


def batched_jacobians(x, model, contact):
    """``(J_fwd, J_rev)`` from ``vmap`` of ``jvp`` over the input basis and of ``vjp`` over the
    output basis (the constructions of ``jax.jacfwd`` / ``jax.jacrev``), one batched call each."""
    n, m = x.shape[0], model.nq + model.nv
    xs = jnp.broadcast_to(x, (n, n))
    _, tangents, _ = batched(xs, model, contact, ts=jnp.eye(n, dtype=x.dtype))
    _, _, gradients = batched(jnp.broadcast_to(x, (m, n)), model, contact,
                              ws=jnp.eye(m, dtype=x.dtype))
    return tangents.T, gradients


#: Relative errors are measured against ``max(‖reference‖, FLOOR)``: blocks whose exact
#: derivative is zero (a sticking cube's ``v⁺`` does not depend on ``v``, the push, μ or the
#: mass) are compared absolutely at the scale ``dt / m = 1e-3`` of the smallest non-zero block.
FLOOR = 1e-3


def rel(a, b) -> float:
    """Norm-relative error ``‖a − b‖ / max(‖b‖, FLOOR)``."""
    return float(jnp.linalg.norm(a - b) / max(float(jnp.linalg.norm(b)), FLOOR))


def _x(model, q, v, ctrl, mu, mass):
    return jnp.concatenate([jnp.asarray(q, jnp.float64), jnp.asarray(v, jnp.float64),
                            jnp.asarray(ctrl, jnp.float64).reshape(model.nu),
                            jnp.asarray([mu, mass], jnp.float64)])


def cube_config(name: str):
    """``x`` of a named configuration; the cube rests on its bottom face, rotated 0.3 rad about z
    so that the contact frames are generic, ``PENETRATION`` into the floor."""
    quat = _quat_z(0.3)
    z = -PENETRATION
    v = np.zeros(6)
    ctrl = 0.0
    if name == "free_flight":
        z = 0.5
        quat = np.array([0.9, 0.2, -0.3, 0.25])
        quat /= np.linalg.norm(quat)
        v = np.array([0.3, -0.2, 0.5, 1.0, -2.0, 0.7])
        ctrl = 2.0
    elif name == "sticking":
        ctrl = 0.5 * MU * MASS * G
    elif name == "sliding_velocity":
        v = np.array([0.5, 0.2, 0.0, 0.0, 0.0, 0.0])
        ctrl = 1.0
    elif name == "sliding_push":
        ctrl = 2.0 * MU * MASS * G
    elif name == "tipping_edge":
        # tilted 0.1 rad about x: one bottom edge in contact (2 corners), the cube starts to
        # rotate about it; the other corners are 2 cm up (beyond the 1 mm margin)
        angle = 0.1
        quat = np.array([np.cos(angle / 2), np.sin(angle / 2), 0.0, 0.0])
        z = HALF * (np.cos(angle) + np.sin(angle)) - HALF - PENETRATION
        ctrl = 0.1 * MU * MASS * G
    else:
        raise ValueError(name)
    q = np.concatenate([[0.0, 0.0, z], quat])
    return _x(cube(), q, v, ctrl, MU, MASS)


def check_jacobians(model, x, contact, literal=True):
    """jacfwd, jacrev and central differences of one step at ``x``: the forward Jacobian from
    ``jax.jacfwd`` (``literal=True``) or :func:`batched_jacobians`, the reverse one from
    :func:`batched_jacobians`.

    Returns ``(J_fwd, J_rev, J_fd, state at x, errors)`` with ``errors[block] = (fwd vs fd,
    rev vs fd, ‖fd block‖)`` for the blocks q, v, ctrl, mu, mass of ``x``.
    """
    jf, jr = batched_jacobians(x, model, contact)
    if literal:
        jf = jac_fwd(x, model, contact)
    fd, nxt = central_differences(x, model, contact)
    nq, nv, nu = model.nq, model.nv, model.nu
    blocks = {"q": slice(0, nq), "v": slice(nq, nq + nv), "ctrl": slice(nq + nv, nq + nv + nu),
              "mu": slice(nq + nv + nu, nq + nv + nu + 1), "mass": slice(nq + nv + nu + 1, None)}
    assert np.all(np.isfinite(np.asarray(jf))) and np.all(np.isfinite(np.asarray(jr)))
    errors = {name: (rel(jf[:, c], fd[:, c]), rel(jr[:, c], fd[:, c]), float(jnp.linalg.norm(fd[:, c])))
              for name, c in blocks.items()}
    return jf, jr, fd, nxt, errors


# ---- tests ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["free_flight", "sticking", "sliding_velocity", "sliding_push",
                                  "tipping_edge"])
def test_cube_step_jacobians_match_finite_differences(name):
    model = cube()
    x = cube_config(name)
    contact = jc.init(model).contact
    _, _, fd, nxt, errors = check_jacobians(model, x, contact)
    active = int(nxt.contact.num_active)
    if name == "free_flight":
        assert active == 0
    elif name == "tipping_edge":
        assert active == 2 and bool(nxt.contact.converged)
        assert float(nxt.v[3]) < -1e-2  # rotating down about the edge
    else:
        assert active == 4 and bool(nxt.contact.converged)
        speed = float(jnp.linalg.norm(nxt.v[:2]))
        if name == "sticking":
            assert float(jnp.max(jnp.abs(nxt.v.at[2].set(0.0)))) < 1e-9  # only the Baumgarte lift
        else:
            assert speed > 1e-3  # still sliding after the step
            # the friction coefficient matters while sliding: a non-trivial block is compared
            assert errors["mu"][2] > 1e-3
    for block, (ef, er, scale) in errors.items():
        assert ef < RTOL and er < RTOL, (name, block, ef, er, scale)


def test_pendulum_resting_on_the_floor_jacobians_match_finite_differences():
    """A horizontal hinge pendulum whose bob (one sphere–plane contact) lies on the floor: gravity
    turns it into the floor, the contact holds it (sticking; the contact's Delassus matrix has
    rank 1 — one dof, three force components — and the bob moves along the normal)."""
    model = pendulum()
    contact = jc.init(model).contact
    theta = _bob_resting_angle(PENETRATION)
    base = _x(model, [theta], [0.0], [0.05], 0.8, float(model.body_mass[-1]))
    _, _, fd, nxt, errors = check_jacobians(model, base, contact, literal=False)
    assert int(nxt.contact.num_active) == 1 and bool(nxt.contact.converged)
    # the floor carries the bob: torque balance about the pivot, λ_N·0.4 ≈ g (0.4·1 + 0.2·0.1)
    assert float(nxt.contact.force[0, 2]) > 9.0 and abs(float(nxt.v[0])) < 0.1
    for block, (ef, er, scale) in errors.items():
        assert ef < RTOL and er < RTOL, ("pendulum", block, ef, er, scale)
    # the pendulum is held, but v⁺ still depends on the state through the Baumgarte term
    assert errors["q"][2] > 1.0


def test_implicit_and_unrolled_step_jacobians_agree():
    """``Options.gradient="unrolled"`` (autodiff through 500 ADMM iterations, tolerance 1e-12)
    and the implicit rule give the same step Jacobian, sticking and sliding."""
    implicit, unrolled = cube(), cube("unrolled")
    assert unrolled.options.gradient == "unrolled" and implicit.options.gradient == "implicit"
    contact = jc.init(implicit).contact
    for name in ("sticking", "sliding_velocity", "sliding_push"):
        x = cube_config(name)
        a = jac_fwd(x, implicit, contact)
        b = jac_fwd(x, unrolled, contact)
        assert np.all(np.isfinite(np.asarray(b)))
        nq, nv = implicit.nq, implicit.nv
        for cols in (slice(0, nq), slice(nq, nq + nv), slice(nq + nv, None)):
            assert rel(a[:, cols], b[:, cols]) < RTOL, (name, cols, rel(a[:, cols], b[:, cols]))


def _random_cube_states(n: int, seed: int = 0):
    """``n`` states of the cube near contact make/break: heights from 2 mm into the floor to 2 mm
    above it (the contact margin is 1 mm), a quarter exactly touching (φ = 0), half of them tilted
    by up to 0.05 rad (an edge or a corner touches first), a quarter at rest, pushes around
    μ m g (stick/slip)."""
    rng = np.random.default_rng(seed)
    z = rng.uniform(-2e-3, 2e-3, n)
    z[: n // 4] = 0.0
    axis = rng.normal(size=(n, 3))
    axis[:, 2] *= 0.1
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    angle = rng.uniform(0.0, 0.05, n) * (rng.uniform(size=n) < 0.5)
    quat = np.concatenate([np.cos(angle / 2)[:, None], np.sin(angle / 2)[:, None] * axis], axis=1)
    # a tilted cube is lifted so that its lowest corner is at height z
    lift = HALF * (np.abs(1 - 2 * (quat[:, 1] ** 2 + quat[:, 2] ** 2))
                   + np.abs(2 * (quat[:, 1] * quat[:, 3] - quat[:, 0] * quat[:, 2]))
                   + np.abs(2 * (quat[:, 2] * quat[:, 3] + quat[:, 0] * quat[:, 1]))) - HALF
    q = np.concatenate([np.zeros((n, 2)), (z + lift)[:, None], quat], axis=1)
    v = 0.3 * rng.normal(size=(n, 6))
    v[n // 2: 3 * n // 4] = 0.0
    ctrl = rng.uniform(0.0, 2.0 * MU * MASS * G, (n, 1))
    ctrl[::7] = MU * MASS * G
    mu = np.full((n, 1), MU)
    mass = np.full((n, 1), MASS)
    return jnp.asarray(np.concatenate([q, v, ctrl, mu, mass], axis=1))


def test_no_nan_in_step_derivatives_near_make_break_and_touching():
    model = cube()
    n = 256
    x = _random_cube_states(n)
    contact = jc.init(model).contact
    rng = np.random.default_rng(1)
    t = jnp.asarray(rng.normal(size=x.shape))
    w = jnp.asarray(rng.normal(size=(n, model.nq + model.nv)))
    parts = [batched(x[k:k + BATCH], model, contact, t[k:k + BATCH], w[k:k + BATCH])
             for k in range(0, n, BATCH)]
    tangent = jnp.concatenate([p[1] for p in parts])
    gradient = jnp.concatenate([p[2] for p in parts])
    active = jnp.concatenate([p[0].contact.num_active for p in parts])
    assert bool(jnp.all(jnp.isfinite(tangent))) and bool(jnp.all(jnp.isfinite(gradient)))
    # forward and reverse mode are transposes of each other on every state: w·(J t) = (Jᵀ w)·t
    np.testing.assert_allclose(np.einsum("bo,bo->b", w, tangent), np.einsum("bi,bi->b", gradient, t),
                               rtol=1e-6, atol=1e-6)
    # the batch covers separated, partly touching and fully resting states
    active = np.asarray(active)
    assert (active == 0).any() and (active == 4).any() and ((active > 0) & (active < 4)).any()


def _landing_flat_cube_states(n: int, seed: int = 3):
    """``n`` states of the flat cube exactly touching the floor (φ = 0 at all 4 corners), random
    yaw, landing (v_z in [−0.3, −0.1] m/s) while sliding and spinning about every axis, random push.
    All 4 corners slide within the step: the implicit system of seed 004 eq. 11 is singular (the
    normal-force distribution of a hyperstatic box is undetermined) and its right-hand side is not
    in its range — the states on which forward and reverse mode used to disagree (issue 6)."""
    model = cube()
    rng = np.random.default_rng(seed)
    xs = []
    for _ in range(n):
        v = rng.normal(0.0, 0.3, 6)
        v[2] = -rng.uniform(0.1, 0.3)
        q = np.concatenate([[0.0, 0.0, 0.0], _quat_z(rng.uniform(-np.pi, np.pi))])
        xs.append(_x(model, q, v, rng.uniform(0.0, 2.0 * MU * MASS * G), MU, MASS))
    return jnp.stack(xs)


def test_forward_and_reverse_mode_agree_on_a_landing_sliding_spinning_cube():
    """``w·(J t) = (Jᵀ w)·t`` where the implicit system is singular. Before the fix, the damped
    (Tikhonov) solve amplified the rounding-level zero singular value of the 4-sliding-corner system
    by ~1e4 and its reverse-mode solve was not the transpose of the forward one: relative mismatch
    up to 16 on these states (10 of 16 above 1e-2); now ≤ 1e-14."""
    model = cube()
    n = 16
    x = _landing_flat_cube_states(n)
    contact = jc.init(model).contact
    rng = np.random.default_rng(1)
    t = jnp.asarray(rng.normal(size=x.shape))
    w = jnp.asarray(rng.normal(size=(n, model.nq + model.nv)))
    states, tangent, gradient = batched(x, model, contact, t, w)
    assert np.all(np.asarray(states.contact.num_active) == 4)
    assert bool(jnp.all(jnp.isfinite(tangent))) and bool(jnp.all(jnp.isfinite(gradient)))
    np.testing.assert_allclose(np.einsum("bo,bo->b", w, tangent), np.einsum("bi,bi->b", gradient, t),
                               rtol=1e-9, atol=1e-9)


# ---- seed 004 §IV-B (a): initial velocity of a sliding cube from its final pose ------------------
#
# The full problem (Gauss–Newton on jax.jacfwd of a 100-step jc.rollout) is
# examples/inverse_sliding_cube.py: it converges in 4 iterations to ‖q_T − q*‖ ≈ 3e-16 but
# compiling the rollout Jacobian alone takes ~30 s on the shared test machine. The test below
# solves the same problem over a shorter horizon with the already compiled step Jacobian,
# chaining d(q, v)_{k+1}/d(q, v)_k along the trajectory (the chain rule jacfwd applies to the
# rollout), so it adds no compilation.

HORIZON = 20


def _final_pose_and_jacobian(theta, model, contact):
    """``q_T`` after ``HORIZON`` steps from rest on the floor launched at tangential velocity
    ``theta (2,)``, and ``dq_T/dθ``, by chaining one-step Jacobians (warm starts carried)."""
    nq, nv = model.nq, model.nv
    q = jnp.asarray(model.qpos0)
    v = jnp.zeros(nv).at[:2].set(theta)
    sens = jnp.zeros((nq + nv, 2)).at[nq:nq + 2].set(jnp.eye(2))  # d(q, v)/dθ
    for _ in range(HORIZON):
        x = _x(model, q, v, [0.0], MU, MASS)
        jac = jac_fwd(x, model, contact)[:, :nq + nv]
        states, _, _ = batched(x[None], model, contact)
        nxt = jax.tree_util.tree_map(lambda a: a[0], states)
        sens = jac @ sens
        q, v, contact = nxt.q, nxt.v, nxt.contact
    return q, sens[:nq]


def test_gauss_newton_recovers_initial_velocity_of_sliding_cube():
    model = cube()
    contact = jc.init(model).contact
    truth = jnp.asarray([0.9, -0.4])
    target, _ = _final_pose_and_jacobian(truth, model, contact)
    assert float(jnp.linalg.norm(target[:2])) > 0.01  # it travelled
    theta = jnp.asarray([0.6, 0.1])
    errors = []
    for _ in range(21):
        q_T, jac = _final_pose_and_jacobian(theta, model, contact)
        errors.append(float(jnp.linalg.norm(q_T - target)))
        if errors[-1] < 1e-10:
            break
        step, *_ = jnp.linalg.lstsq(jac, target - q_T)
        theta = theta + step
    assert errors[0] > 1e-3
    assert errors[-1] < 1e-8 and len(errors) <= 21, errors
    assert float(jnp.linalg.norm(theta - truth)) < 1e-6, theta


# ---- Options.gradient ------------------------------------------------------------------------------

def test_gradient_option_is_validated_at_construction():
    model = cube()
    assert model.options.gradient == "implicit"
    assert jc.scenes.load("dragged_cube").options.gradient == "implicit"  # the default
    assert model.replace_options(gradient="unrolled").options.gradient == "unrolled"
    with pytest.raises(ValueError, match="'analytic'"):
        model.replace_options(gradient="analytic")
    with pytest.raises(ValueError, match="gradient"):
        model.replace_options(gradient=None)
    with pytest.raises(ValueError, match="RelaxedComplementarity"):
        model.replace_options(gradient="smoothed")

    class Uncapped(jc.contact.ContactSolver):  # the solver protocol without an iteration cap
        tolerance: jax.Array = eqx.field(default_factory=lambda: jnp.asarray(1e-6))
        max_iterations: None = eqx.field(static=True, default=None)
        formulation: str = eqx.field(static=True, default="ncp")

        def init(self, problem, warm_force, warm_rho):
            raise NotImplementedError

        def step(self, problem, state):
            raise NotImplementedError

        def criterion(self, problem, state):
            raise NotImplementedError

    with pytest.raises(ValueError, match="fixed iteration cap"):
        model.replace_options(solver=Uncapped(), gradient="unrolled")
    assert model.replace_options(solver=Uncapped()).options.gradient == "implicit"
