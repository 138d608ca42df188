"""JAX transformations of the dynamics: no recompilation for new parameter values, vmap over
states and over Model leaves, gradients (forward and reverse) against finite differences, float32."""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import jaxsim_contact as jc
from jaxsim_contact import dynamics
from dynamics_reference import MODELS, random_configuration


@functools.cache
def double_pendulum():
    return jc.load(MODELS / "double_pendulum.xml")


def test_changing_dynamic_parameters_does_not_recompile(scene):
    model, _ = scene("all_joints")
    traces = []

    @jax.jit
    def stepped(model, state, ctrl):
        traces.append(1)
        return jc.step(model, state, ctrl)

    state, ctrl = jc.init(model), jnp.zeros(model.nu)
    first = stepped(model, state, ctrl)
    stepped(model, first, ctrl)
    heavier = eqx.tree_at(lambda m: m.body_mass, model, model.body_mass * 1.5)
    moon = heavier.replace_options(dt=0.005, gravity=[0.0, 0.0, -1.62])
    on_moon = stepped(moon, state, ctrl)
    assert len(traces) == 1
    assert not np.allclose(np.asarray(on_moon.q), np.asarray(first.q))
    assert float(on_moon.time) == 0.005


def test_vmap_over_states_equals_single_steps(scene):
    model, mj = scene("all_joints")
    rng = np.random.default_rng(3)
    qs = jnp.asarray(np.stack([random_configuration(mj, rng) for _ in range(4)]))
    vs = jnp.asarray(rng.standard_normal((4, model.nv)))
    ctrls = jnp.asarray(rng.standard_normal((4, model.nu)))
    step = jax.jit(jc.step)
    batched = jax.jit(jax.vmap(jc.step, in_axes=(None, 0, 0)))(
        model, jax.vmap(lambda q, v: jc.init(model, q, v))(qs, vs), ctrls
    )
    for i in range(4):
        start = jc.init(model, qs[i], vs[i])
        single = step(model, start, ctrls[i])
        np.testing.assert_allclose(np.asarray(batched.q[i]), np.asarray(single.q), rtol=1e-12, atol=1e-12)
        # batched and single kernels round differently; a backward-stable solve with M moves v by
        # up to ~ε cond(M) relative (random configurations reach cond(M) ~ 1e6: 1.4e-12 measured)
        mass = jc.dynamics.smooth_dynamics(model, start, ctrls[i]).mass_matrix
        bound = np.finfo(np.float64).eps * float(jnp.linalg.cond(mass)) * float(jnp.max(jnp.abs(single.v)))
        np.testing.assert_allclose(np.asarray(batched.v[i]), np.asarray(single.v), rtol=0,
                                   atol=max(bound, 1e-12))


def test_vmap_over_model_leaves_is_domain_randomisation():
    model = double_pendulum()
    scales = jnp.array([0.5, 1.0, 2.0])

    def with_mass_scale(scale):
        return eqx.tree_at(lambda m: m.body_mass, model, model.body_mass * scale)

    def final_q(model):
        state = jc.init(model, q=jnp.array([0.5, -0.3]))
        return jc.rollout(model, state, jnp.zeros((50, 0)))[0].q

    batched = jax.jit(jax.vmap(lambda s: final_q(with_mass_scale(s))))(scales)
    one = jax.jit(final_q)
    for i, scale in enumerate(scales):
        np.testing.assert_allclose(np.asarray(batched[i]), np.asarray(one(with_mass_scale(scale))), rtol=1e-12)
    # scaling both masses (and inertias not) changes the motion: the batch is not degenerate
    assert not np.allclose(np.asarray(batched[0]), np.asarray(batched[2]))


def test_rollout_gradients_match_finite_differences():
    model = double_pendulum()
    steps = 100

    def loss(v0, link_mass, damping):
        m = eqx.tree_at(lambda m: (m.body_mass, m.dof_damping), model,
                        (model.body_mass.at[1].set(link_mass), damping))
        state = jc.init(m, q=jnp.array([0.6, -0.4]), v=v0)
        final, _ = jc.rollout(m, state, jnp.zeros((steps, 0)))
        return jnp.sum(jnp.sin(final.q)) + 0.1 * jnp.sum(final.v**2)

    args = (jnp.array([0.3, -0.7]), jnp.asarray(model.body_mass[1]), jnp.array([0.05, 0.02]))
    grad = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(*args)
    fwd = jax.jit(jax.jacfwd(loss, argnums=(0, 1, 2)))(*args)
    loss_jit = jax.jit(loss)
    eps = 1e-6
    for which, g, f in zip(range(3), grad, fwd):
        base = np.asarray(args[which], dtype=np.float64)
        fd = np.zeros_like(base)
        for k in np.ndindex(base.shape):
            up, down = base.copy(), base.copy()
            up[k] += eps
            down[k] -= eps
            a_up = list(args); a_up[which] = jnp.asarray(up)
            a_dn = list(args); a_dn[which] = jnp.asarray(down)
            fd[k] = (float(loss_jit(*a_up)) - float(loss_jit(*a_dn))) / (2 * eps)
        np.testing.assert_allclose(np.asarray(g), fd, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(np.asarray(f), np.asarray(g), rtol=1e-10, atol=1e-12)


def test_mass_matrix_and_bias_derivatives_match_finite_differences(scene):
    # forward (jvp) and reverse (vjp) derivatives along random directions against central
    # differences; quaternion blocks of q are perturbed like any coordinate (the functions
    # normalise them, so the derivative is the projected one in both computations)
    model, mj = scene("all_joints")
    rng = np.random.default_rng(5)
    q = jnp.asarray(random_configuration(mj, rng))
    v = jnp.asarray(rng.standard_normal(model.nv))

    def forces(q, v):
        return jnp.concatenate([jc.mass_matrix(model, q).ravel(), jc.bias_forces(model, q, v)])

    dq = jnp.asarray(rng.standard_normal(model.nq))
    dv = jnp.asarray(rng.standard_normal(model.nv))
    value, tangent = jax.jit(lambda q, v: jax.jvp(forces, (q, v), (dq, dv)))(q, v)
    cotangent = jnp.asarray(rng.standard_normal(value.shape))
    grad_q, grad_v = jax.jit(lambda q, v: jax.vjp(forces, q, v)[1](cotangent))(q, v)
    f = jax.jit(forces)
    eps = 1e-6
    central = (f(q + eps * dq, v + eps * dv) - f(q - eps * dq, v - eps * dv)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(tangent), np.asarray(central), rtol=1e-6, atol=1e-7)
    # reverse mode is the transpose of forward mode: <cotangent, J t> = <J^T cotangent, t>
    np.testing.assert_allclose(
        float(cotangent @ tangent), float(grad_q @ dq + grad_v @ dv), rtol=1e-10
    )
    assert np.abs(np.asarray(tangent)).max() > 1e-3


def test_integration_derivatives_are_finite_at_zero_angular_velocity(scene):
    model, mj = scene("all_joints")
    q = jnp.asarray(mj.qpos0)
    jac = jax.jacfwd(lambda v: dynamics.integrate_positions(model, q, v, 0.01))(jnp.zeros(model.nv))
    assert np.all(np.isfinite(np.asarray(jac)))
    # d quat / d omega at rest is half the (left-multiplied) quaternion matrix: nonzero
    assert np.abs(np.asarray(jac)[3:7, 3:6]).max() > 1e-3


def test_float32_model_runs_and_stays_close_to_float64(scene):
    model64, _ = scene("all_joints")
    model32 = model64.astype(jnp.float32)
    rng = np.random.default_rng(11)
    v0 = rng.standard_normal(model64.nv)
    ctrls = rng.standard_normal((200, model64.nu))
    rollout = jax.jit(jc.rollout)
    final32, traj32 = rollout(model32, jc.init(model32, v=v0), jnp.asarray(ctrls, jnp.float32))
    final64, _ = rollout(model64, jc.init(model64, v=v0), jnp.asarray(ctrls))
    assert traj32.q.dtype == jnp.float32 and final32.v.dtype == jnp.float32
    assert int(final32.error) == 0
    np.testing.assert_allclose(np.asarray(final32.q), np.asarray(final64.q), atol=2e-4)
    m32 = jax.jit(jc.mass_matrix)(model32, final64.q.astype(jnp.float32))
    m64 = jax.jit(jc.mass_matrix)(model64, final64.q)
    assert m32.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(m32), np.asarray(m64), atol=1e-5 * float(jnp.max(jnp.abs(m64))))


def test_float32_mass_matrix_far_from_the_origin_matches_float64():
    """A body 200 m from the world origin (a robot after a 6 s free fall): its float32 mass matrix
    equals float64's to float32 precision and stays positive definite. Formed about the origin,
    the ``m |c|²`` terms (4e4 kg m² per kg) cancel to the body's 1.7e-3 kg m² below float32's
    resolution: the corpus' free-falling humanoid lost positive definiteness there (its Cholesky
    factor was NaN, issue 42); float32 now takes the model's centre of mass as the reference."""
    model64 = jc.scenes.load("tower", count=1, gap=1e-3, dtype=jnp.float64)
    model32 = model64.astype(jnp.float32)
    angle = 0.3
    q = np.array([150.0, -40.0, -200.0, np.cos(angle / 2), 0.0, np.sin(angle / 2), 0.0])
    m64 = np.asarray(jax.jit(jc.mass_matrix)(model64, jnp.asarray(q)))
    m32 = np.asarray(jax.jit(jc.mass_matrix)(model32, jnp.asarray(q, jnp.float32)), np.float64)
    rotational = m64[3:, 3:]
    assert np.max(np.abs(rotational)) < 1e-2  # a light body: its rotational block is tiny
    np.testing.assert_allclose(m32, m64, atol=1e-3 * np.max(np.abs(rotational)))
    assert np.all(np.isfinite(np.asarray(jnp.linalg.cholesky(jnp.asarray(m32, jnp.float32)))))
