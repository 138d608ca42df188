"""Smoothed gradients: ``gradient=jc.contact.RelaxedComplementarity(relaxation=ρ)`` (seed 002 §V-D)
and ``gradient=jc.contact.RandomizedSmoothing(key, noise_scale)`` (seed 000 §III-A; section (d)).

The forward force is the exact solution; the derivative is that of the relaxed-complementarity
solution ``λ_ρ`` (``λ ∘ σ̄ = ρ e``). References, all float64:

* (a) the relaxed problem solved forward *here*, independently of the library: its residual is
  written again in numpy and solved by ``scipy.optimize.root`` (MINPACK hybrd) from the exact
  solution pushed into the cone; central finite differences of that solution are compared with
  ``jax.jacfwd`` / ``jax.jacrev`` / ``jax.jvp`` / ``jax.vjp`` of ``solve(..., gradient=rule)``;
* (b) as ``ρ → 0`` the smoothed derivative converges (linearly in ``ρ``) to the implicit one on a
  problem without a mode switch;
* (c) a ball falling onto the floor, swept through the height where the contact is made within the
  step: the implicit ``d v⁺_z / d h`` jumps from ``0`` to ``−1/dt``, the smoothed one is finite,
  non-zero at the switch and varies smoothly, and agrees with the implicit one away from it;
* (d) randomized smoothing: the derivative equals the average of implicit Jacobians computed
  separately (cold-started solves of the perturbed problems, the same ``z_j`` drawn from the same
  key), forward and reverse mode are exact transposes, it tends to the implicit derivative as the
  noise vanishes on a problem without a mode switch, and on the ball sweep of (c) it is smooth
  where the implicit one jumps.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

import jaxsim_contact as jc

C = jc.contact


# ---- independent reference: the relaxed problem, numpy + scipy ---------------------------------

def _reference_residual(formulation, z, A, g, mu, rho):
    n = mu.shape[0]
    lam, s = z[: 3 * n].reshape(n, 3), z[3 * n:].reshape(n, 3)
    sigma = (A @ lam.reshape(-1) + g).reshape(n, 3)
    if formulation == "ncp":
        sigma = sigma + np.stack([0 * mu, 0 * mu, mu * np.linalg.norm(sigma[:, :2], axis=1)], 1)
    comp_n = np.sum(lam * s, axis=1) - rho  # Jordan product, first component
    comp_t = s[:, 2:3] * lam[:, :2] + (mu ** 2 * lam[:, 2])[:, None] * s[:, :2]
    return np.concatenate([(s - sigma).reshape(-1), np.concatenate([comp_t, comp_n[:, None]], 1).reshape(-1)])


def reference_relaxed_force(formulation, G, g, mu, R, rho, start):
    """``(n, 3)`` relaxed solution by MINPACK from ``start``; asserts convergence and interiority."""
    A = np.asarray(G) + np.diag(np.asarray(R))
    g, mu, start = np.asarray(g), np.asarray(mu), np.asarray(start)
    n = mu.shape[0]
    lam0 = start.copy()
    lam0[:, 2] = np.maximum(lam0[:, 2], np.linalg.norm(lam0[:, :2], axis=1) / mu) + np.sqrt(rho)
    s0 = (A @ lam0.reshape(-1) + g).reshape(n, 3)
    s0[:, 2] = np.maximum(s0[:, 2], mu * np.linalg.norm(s0[:, :2], axis=1)) + np.sqrt(rho)
    z0 = np.concatenate([lam0.reshape(-1), s0.reshape(-1)])
    out = scipy.optimize.root(lambda z: _reference_residual(formulation, z, A, g, mu, rho), z0,
                              method="hybr", options={"xtol": 1e-15})
    res = _reference_residual(formulation, out.x, A, g, mu, rho)
    assert np.max(np.abs(res)) < 1e-11, res
    lam, s = out.x[: 3 * n].reshape(n, 3), out.x[3 * n:].reshape(n, 3)
    assert np.all(mu * lam[:, 2] > np.linalg.norm(lam[:, :2], axis=1))  # interior of K_μ
    assert np.all(s[:, 2] > mu * np.linalg.norm(s[:, :2], axis=1))  # interior of K_μ*
    return lam


PROBLEM = jc.testing.problems.random_problem(np.random.default_rng(3), 3)  # full-rank G, 3 contacts
RHO = 1e-3


def _solver(formulation):
    return C.ADMM(formulation, max_iterations=2000, tolerance=1e-13)


def _force(formulation, gradient, G, g, mu, R, rho=RHO):
    rule = C.RelaxedComplementarity(rho) if gradient == "smoothed" else gradient
    problem = C.ContactProblem(G, g, mu, compliance=R)
    return C.solve(problem, _solver(formulation), gradient=rule).force


_jit_force = jax.jit(_force, static_argnums=(0, 1))


def _data():
    p = PROBLEM
    R = jnp.full((9,), 0.05)
    return p.delassus, p.free_velocity, p.friction, R


@pytest.mark.parametrize("formulation", ["ncp", "ccp"])
def test_smoothed_derivative_is_the_derivative_of_the_relaxed_solution(formulation):
    """(a) ``jacfwd`` and ``jacrev`` w.r.t. ``g`` and ``jvp``/``vjp`` along a random direction of
    ``(G, g, μ, R, ρ)`` equal central finite differences of the independently solved relaxed
    problem (float64, 1e-6 relative)."""
    G, g, mu, R = _data()
    exact = np.asarray(_jit_force(formulation, "implicit", G, g, mu, R))
    ref = functools.partial(reference_relaxed_force, formulation, start=exact)
    f = lambda g_: _force(formulation, "smoothed", G, g_, mu, R).reshape(-1)  # noqa: E731
    jac_fwd, jac_rev = jax.jit(lambda g_: (jax.jacfwd(f)(g_), jax.jacrev(f)(g_)))(g)
    h = 1e-6
    fd = np.stack([(ref(G, g.at[i].add(h), mu, R, RHO) - ref(G, g.at[i].add(-h), mu, R, RHO)).reshape(-1) / (2 * h)
                   for i in range(g.shape[0])], axis=1)
    scale = np.max(np.abs(fd))
    assert scale > 0.1
    np.testing.assert_allclose(jac_fwd, fd, atol=1e-6 * scale)
    np.testing.assert_allclose(jac_rev, fd, atol=1e-6 * scale)

    # every differentiable input at once, forward and reverse mode, along one random direction
    rng = np.random.default_rng(7)
    dG = rng.normal(size=G.shape)
    dG = 0.1 * (dG + dG.T)
    direction = (jnp.asarray(dG), jnp.asarray(rng.normal(size=9)), jnp.asarray(0.1 * rng.normal(size=3)),
                 jnp.asarray(0.01 * rng.uniform(size=9)), jnp.asarray(RHO))
    theta = (G, g, mu, R, jnp.asarray(RHO))
    w = jnp.asarray(rng.normal(size=(3, 3)))
    full = lambda *t: _force(formulation, "smoothed", *t)  # noqa: E731

    @jax.jit
    def both_modes(theta, direction, w):
        _, tangent = jax.jvp(full, theta, direction)
        out, pullback = jax.vjp(full, *theta)
        return out, tangent, pullback(w)

    out, tangent, cotangent = both_modes(theta, direction, w)
    # the forward value is the exact solution, not the relaxed one (they differ by ~ρ): the same
    # solve in another program, so equal to round-off (1e-12 of the force scale), not bit for bit
    np.testing.assert_allclose(out, exact, rtol=0, atol=1e-12 * np.max(np.abs(exact)))
    along = lambda e: ref(*(np.asarray(t) + e * np.asarray(d) for t, d in zip(theta, direction)))  # noqa: E731
    fd_dir = (along(h) - along(-h)) / (2 * h)
    np.testing.assert_allclose(tangent, fd_dir, atol=1e-6 * np.max(np.abs(fd_dir)))
    np.testing.assert_allclose(sum(jnp.vdot(c, d) for c, d in zip(cotangent, direction)),
                               jnp.vdot(w, fd_dir), rtol=1e-6)


@pytest.mark.parametrize("formulation,rhos,tight", [("ncp", (1e-6, 1e-8, 1e-10), 1e-3),
                                                    ("ccp", (1e-4, 1e-6, 1e-8), 1e-5)])
def test_smoothed_converges_to_implicit_as_relaxation_vanishes(formulation, rhos, tight):
    """(b) On a problem whose contacts are clear of mode switches (rigid, NCP: one breaking and two
    sliding contacts; CCP: three sliding) ``‖J_ρ − J_implicit‖ / ‖J_implicit‖`` (``J = dλ/dg``)
    shrinks at least 10× for every 100× smaller ``ρ`` and is below ``tight`` at the smallest.
    The NCP converges later: its breaking contact has a small ``σ̄_N``, so its relaxed
    ``λ_N = ρ/σ̄_N`` responds to ``g`` up to smaller ``ρ``."""
    G, g, mu, _ = _data()
    R = jnp.zeros_like(g)
    exact = _jit_force(formulation, "implicit", G, g, mu, R)
    modes = np.asarray(C.contact_modes(C.ContactProblem(G, g, mu), exact, formulation, 1e-13))
    expected = [C.BREAKING, C.SLIDING, C.SLIDING] if formulation == "ncp" else [C.SLIDING] * 3
    np.testing.assert_array_equal(modes, expected)
    implicit = jax.jit(jax.jacfwd(lambda g_: _force(formulation, "implicit", G, g_, mu, R)))(g)
    smoothed = jax.jit(jax.jacfwd(lambda g_, rho: _force(formulation, "smoothed", G, g_, mu, R, rho)))
    errors = [float(jnp.max(jnp.abs(smoothed(g, rho) - implicit)) / jnp.max(jnp.abs(implicit))) for rho in rhos]
    assert all(b < a / 10 for a, b in zip(errors, errors[1:])), errors
    assert errors[-1] < tight, errors


# ---- (c) contact make within the step: a ball above the floor (jc.scenes.pushed_ball) ----------------------------------

#: relaxation in the pipeline's units (force problems: N · m/s²); the transition width in height
#: is about 2√(ρ/m)·dt² = 0.2 mm here
BALL_RHO = 1.0
#: randomized smoothing of the same sweep: σ in m/s² (the gap is perturbed by σ·dt² = 0.2 mm)
BALL_NOISE = 2.0
BALL_SAMPLES = 32
BALL_KEY = 0


def _ball_rule(kind: str):
    if kind == "smoothed":
        return C.RelaxedComplementarity(BALL_RHO)
    if kind == "randomized":
        return C.RandomizedSmoothing(jax.random.key(BALL_KEY), noise_scale=BALL_NOISE,
                                     num_samples=BALL_SAMPLES)
    return kind


@functools.cache
def _ball(kind: str):
    """The ball scene with ``gradient`` ``"implicit"``, ``"smoothed"`` (relaxed, ``ρ = BALL_RHO``)
    or ``"randomized"`` (``σ = BALL_NOISE``, ``M = BALL_SAMPLES``)."""
    model = jc.scenes.load("pushed_ball", dtype=jnp.float64)  # its motor stays at 0
    # a 2 cm speculative margin: the contact is active (in the problem) over the whole sweep, so
    # the only switch is the complementarity one (λ_N = 0 ↔ λ_N > 0), the one smoothing targets
    return model.replace_options(contact_margin=0.02, solver=C.ADMM("ncp", max_iterations=200, tolerance=1e-12),
                                 gradient=_ball_rule(kind))


SWEEP_HEIGHTS = np.linspace(0.5e-3, 3.5e-3, 151)
#: time step (s) of the pushed-ball scene and the height (m) where its contact switches on
#: within a step: h* = (0.1 + 9.81·dt)·dt (the sweep's start velocity is 0.1 m/s down)
SWEEP_DT = 0.01
SWITCH_HEIGHT = (0.1 + 9.81 * SWEEP_DT) * SWEEP_DT
#: extra heights for the randomized rule's no-NaN check: exact touching, a 0.1 mm penetration and
#: the make point itself
TOUCHING_HEIGHTS = np.asarray([0.0, -1e-4, SWITCH_HEIGHT])


def _sweep_derivatives(model, heights, velocity, reverse: bool):
    """``d v⁺_z / d h`` of the ball ``model`` at ``heights`` (and by reverse mode if ``reverse``).
    ``model`` must be built outside the trace (``_ball`` caches it)."""
    state = jc.init(model)

    def vz_next(height, velocity):
        s = jc.State(q=jnp.stack([jnp.zeros_like(height), height]), v=velocity, time=state.time, error=state.error,
                     contact=state.contact)
        return jc.step(model, s).v[1]

    if not reverse:
        return jax.vmap(jax.jacfwd(vz_next), in_axes=(0, None))(heights, velocity), None

    def forward_and_reverse(height):
        # jax.grad is linearize + transpose: linearising once and transposing that same linear map
        # traces the derivative rule once instead of twice (compile time)
        _, tangent_map = jax.linearize(lambda h_: vz_next(h_, velocity), height)
        one = jnp.ones_like(height)
        return tangent_map(one), jax.linear_transpose(tangent_map, height)(one)[0]

    return jax.vmap(forward_and_reverse)(heights)


@functools.cache
def _smoothed_sweeps():
    """Both smoothed rules over the sweep, forward and reverse mode, in one compiled function."""
    heights = jnp.asarray(SWEEP_HEIGHTS)
    extended = jnp.concatenate([heights, jnp.asarray(TOUCHING_HEIGHTS)])

    relaxed_model, randomized_model = _ball("smoothed"), _ball("randomized")

    @jax.jit
    def both(velocity):
        return (_sweep_derivatives(relaxed_model, heights, velocity, True),
                _sweep_derivatives(randomized_model, extended, velocity, True))

    relaxed, randomized = both(jnp.asarray([0.0, -0.1]))
    return jax.tree_util.tree_map(np.asarray, (relaxed, randomized))


@functools.cache
def _sweep(kind):
    """``(heights, d v⁺_z/dh forward, reverse)`` over the sweep for ``kind`` (``"randomized"``
    also carries the ``TOUCHING_HEIGHTS`` after the sweep)."""
    # falling at 0.1 m/s, below the restitution threshold (0.2 m/s), so the normal reference
    # velocity is the gap closure −h/dt and the contact switches on where v_f·dt + h = 0
    if kind == "implicit":  # reverse mode of the implicit rule is tested elsewhere (compile time)
        model = _ball("implicit")
        fwd, _ = jax.jit(lambda v: _sweep_derivatives(model, jnp.asarray(SWEEP_HEIGHTS), v, False))(
            jnp.asarray([0.0, -0.1]))
        return SWEEP_HEIGHTS, np.asarray(fwd), None
    relaxed, randomized = _smoothed_sweeps()
    if kind == "smoothed":
        return (SWEEP_HEIGHTS, *relaxed)
    return (np.concatenate([SWEEP_HEIGHTS, TOUCHING_HEIGHTS]), *randomized)


def test_contact_make_implicit_jumps_smoothed_is_smooth():
    """(c) ``d v⁺_z / d h`` over a 3 mm sweep (0.02 mm samples) of the ball's height through the
    make point ``h* = −v_f,z·dt = (0.1 + 9.81·0.01)·0.01 ≈ 1.98 mm``: the implicit derivative jumps
    between ``−1/dt = −100 /s`` (in contact, the gap closes in one step) and ``0`` (free flight)
    from one sample to the next; the smoothed one (``ρ = 1 N·m/s²``) changes by at most 30 % of
    that per sample, is monotone, finite and strictly between the plateaus at the switch, and
    equals the implicit one to 2 % of ``1/dt`` more than 1 mm from the switch. Forward and reverse
    mode of the smoothed rule agree."""
    h, implicit_fwd, _ = _sweep("implicit")
    _, smooth_fwd, smooth_rev = _sweep("smoothed")
    np.testing.assert_allclose(smooth_rev, smooth_fwd, atol=1e-9)
    assert np.all(np.isfinite(smooth_fwd))
    # implicit: two plateaus and a jump
    np.testing.assert_allclose(implicit_fwd[h < SWITCH_HEIGHT - 0.05e-3], -1 / SWEEP_DT, rtol=1e-6)
    np.testing.assert_allclose(implicit_fwd[h > SWITCH_HEIGHT + 0.05e-3], 0.0, atol=1e-9)
    _assert_smooth_transition(h, implicit_fwd, smooth_fwd, far_atol=0.02 / SWEEP_DT)


def _assert_smooth_transition(h, implicit, smooth, far_atol):
    """The implicit derivative jumps by ~1/dt between neighbouring heights; the smoothed one moves
    by < 30 % of that, monotonically, lies strictly between the plateaus at the switch and equals
    the implicit one to ``far_atol`` more than 1 mm away from it."""
    assert np.max(np.abs(np.diff(implicit))) > 0.9 / SWEEP_DT
    assert np.max(np.abs(np.diff(smooth))) < 0.3 / SWEEP_DT
    assert np.all(np.diff(smooth) >= -1e-9)
    at_switch = int(np.argmin(np.abs(h - SWITCH_HEIGHT)))
    assert -0.9 / SWEEP_DT < smooth[at_switch] < -0.1 / SWEEP_DT
    far = np.abs(h - SWITCH_HEIGHT) > 1.0e-3
    assert np.sum(far) > 40
    np.testing.assert_allclose(smooth[far], implicit[far], atol=far_atol)


def test_bare_smoothed_string_and_bad_relaxation_raise_at_construction():
    """Bad input (issue #6): ``"smoothed"`` without its parameter, a non-positive ``ρ``, and a
    formulation without a relaxed counterpart raise at option construction."""
    model = _ball("implicit")
    with pytest.raises(ValueError, match=r"RelaxedComplementarity\(relaxation="):
        model.replace_options(gradient="smoothed")
    for bad in (0.0, -1e-3, float("nan"), [1e-3, 1e-3]):
        with pytest.raises(ValueError, match="ρ > 0"):
            C.RelaxedComplementarity(bad)
    with pytest.raises(ValueError, match="newton_iterations"):
        C.RelaxedComplementarity(1e-3, newton_iterations=0)
    with pytest.raises(ValueError, match="'lcp'"):
        model.replace_options(solver=C.PGS("lcp"), gradient=C.RelaxedComplementarity(1e-3))
    with pytest.raises(ValueError, match="'lcp'"):
        C.solve(PROBLEM, C.PGS("lcp"), gradient=C.RelaxedComplementarity(1e-3))
    smoothed = model.replace_options(gradient=C.RelaxedComplementarity(1e-3))
    assert smoothed.options.gradient == "smoothed"
    assert float(smoothed.options.gradient_smoothing.relaxation) == 1e-3
    # ρ is a dynamic leaf (changing it never recompiles); switching back drops it
    assert any(leaf is smoothed.options.gradient_smoothing.relaxation for leaf in jax.tree_util.tree_leaves(smoothed))
    assert smoothed.replace_options(gradient="implicit").options.gradient_smoothing is None


# ---- (d) randomized smoothing: jc.contact.RandomizedSmoothing(key, noise_scale) ---------------------

RANDOM_SAMPLES = 8
_traces = []


def _randomized_force(G, g, mu, R, rule, formulation="ncp"):
    problem = C.ContactProblem(G, g, mu, compliance=R)
    return C.solve(problem, _solver(formulation), gradient=rule).force.reshape(-1)


@jax.jit
def _randomized_derivatives(theta, direction, w, rule):
    """``(λ, dλ/dg, jvp along direction, vjp of w)`` of the NCP solve with a randomized rule."""
    _traces.append(1)  # counts compilations: the rule's key and σ are traced leaves
    full = lambda *t: _randomized_force(*t, rule)  # noqa: E731
    # one linearisation serves dλ/dg (jacfwd = vmapped jvp over the basis of g) and the jvp
    out, tangent_map = jax.linearize(full, *theta)
    zeros = [jnp.zeros_like(t) for t in theta]
    jac = jax.vmap(lambda e: tangent_map(zeros[0], e, zeros[2], zeros[3]), out_axes=1)(
        jnp.eye(theta[1].shape[0], dtype=theta[1].dtype))
    _, pullback = jax.vjp(full, *theta)
    return out, jac, tangent_map(*direction), pullback(w)


@functools.cache
def _reference_implicit():
    """Independent reference: per-sample implicit derivatives of cold-started solves (vmapped)."""
    def per_sample(theta, g_j, direction):
        G, _, mu, R = theta
        f = lambda G_, g_, mu_, R_: _randomized_force(G_, g_, mu_, R_, "implicit")  # noqa: E731
        _, tangent_map = jax.linearize(f, G, g_j, mu, R)
        jac = jax.vmap(lambda e: tangent_map(jnp.zeros_like(G), e, jnp.zeros_like(mu), jnp.zeros_like(R)),
                       out_axes=1)(jnp.eye(g_j.shape[0], dtype=g_j.dtype))
        return jac, tangent_map(*direction)

    return jax.jit(jax.vmap(per_sample, in_axes=(None, 0, None)))


def _random_direction(rng):
    dG = rng.normal(size=(9, 9))
    return (jnp.asarray(0.1 * (dG + dG.T)), jnp.asarray(rng.normal(size=9)),
            jnp.asarray(0.1 * rng.normal(size=3)), jnp.asarray(0.01 * rng.uniform(size=9)))


def test_randomized_derivative_is_the_average_of_implicit_derivatives():
    """(d) ``dλ/dg`` and a ``jvp`` along a random direction of ``(G, g, μ, R)`` with
    ``RandomizedSmoothing(key, σ = 0.3, M = 8)`` equal the mean of implicit derivatives computed
    separately at ``g + σ z_j`` (``z_j = jax.random.normal(key, (M, 3n))``, cold-started solves) to
    1e-8 relative; ``w·(J t) = (Jᵀ w)·t`` to 1e-10; the forward value is the exact solution; the
    same key gives a bitwise identical estimate, another key a different one; key and σ changes
    do not recompile."""
    G, g, mu, R = _data()
    theta = (G, g, mu, R)
    rng = np.random.default_rng(11)
    direction = _random_direction(rng)
    w = jnp.asarray(rng.normal(size=9))
    sigma = 0.3
    key = jax.random.key(5)
    rule = C.RandomizedSmoothing(key, noise_scale=sigma, num_samples=RANDOM_SAMPLES)
    n_traces = len(_traces)
    out, jac, tangent, cotangent = _randomized_derivatives(theta, direction, w, rule)

    z = jax.random.normal(key, (RANDOM_SAMPLES, 9), jnp.float64)
    # the last row is the unperturbed problem: the plain implicit derivative
    ref_jac, ref_tangent = _reference_implicit()(theta, jnp.concatenate([g + sigma * z, g[None]]), direction)
    implicit_jac, exact = np.asarray(ref_jac[-1]), _jit_force("ncp", "implicit", *theta).reshape(-1)
    ref_jac, ref_tangent = np.mean(ref_jac[:-1], axis=0), np.mean(ref_tangent[:-1], axis=0)
    # σ = 0.3 reaches across mode switches: the samples disagree, so the average is informative
    assert np.max(np.abs(ref_jac - implicit_jac)) > 0.05 * np.max(np.abs(implicit_jac))
    np.testing.assert_allclose(jac, ref_jac, atol=1e-8 * np.max(np.abs(ref_jac)))
    np.testing.assert_allclose(tangent, ref_tangent, atol=1e-8 * np.max(np.abs(ref_tangent)))
    # reverse mode is the exact transpose of forward mode
    lhs = float(jnp.vdot(w, tangent))
    rhs = float(sum(jnp.vdot(c, d) for c, d in zip(cotangent, direction)))
    assert abs(lhs - rhs) <= 1e-10 * max(1.0, abs(lhs)), (lhs, rhs)
    # the forward value is the exact solution, not the relaxed one (they differ by ~ρ): the same
    # solve in another program, so equal to round-off (1e-12 of the force scale), not bit for bit
    np.testing.assert_allclose(out, exact, rtol=0, atol=1e-12 * np.max(np.abs(exact)))

    # determinism, a new key, a new σ: same compiled function
    again = _randomized_derivatives(theta, direction, w, C.RandomizedSmoothing(
        jax.random.key(5), noise_scale=sigma, num_samples=RANDOM_SAMPLES))[1]
    np.testing.assert_array_equal(again, jac)
    other = _randomized_derivatives(theta, direction, w, C.RandomizedSmoothing(
        jax.random.key(6), noise_scale=sigma, num_samples=RANDOM_SAMPLES))[1]
    assert np.max(np.abs(other - jac)) > 1e-3 * np.max(np.abs(jac))
    _randomized_derivatives(theta, direction, w, C.RandomizedSmoothing(
        jax.random.key(6), noise_scale=0.1, num_samples=RANDOM_SAMPLES))
    assert len(_traces) - n_traces == 1


def test_randomized_converges_to_implicit_as_noise_vanishes():
    """(d) NCP problem of (b) (modes breaking, sliding, sliding; the breaking contact's normal
    velocity is 1.3e-3): ``‖J_σ − J_implicit‖ / ‖J_implicit‖`` shrinks ≥ 10× per 100× smaller σ
    for σ ∈ {1e-4, 1e-6, 1e-8} and is below 1e-6 at the smallest (the sliding derivative moves
    linearly with g), while σ = 1e-2 reaches the make of the breaking contact and differs by
    O(1)."""
    G, g, mu, _ = _data()
    R = jnp.full((9,), 0.0)  # typed as _data()'s R, so the compiled functions of the test above serve
    theta = (G, g, mu, R)
    direction = _random_direction(np.random.default_rng(12))
    n_traces = len(_traces)
    w = jnp.zeros(9)
    # the implicit derivative at g, through the reference's compiled function (same shapes)
    implicit = np.asarray(_reference_implicit()(theta, jnp.tile(g, (RANDOM_SAMPLES + 1, 1)), direction)[0][0])

    def error(sigma):
        rule = C.RandomizedSmoothing(jax.random.key(0), noise_scale=sigma, num_samples=RANDOM_SAMPLES)
        jac = _randomized_derivatives(theta, direction, w, rule)[1]
        return float(np.max(np.abs(jac - implicit)) / np.max(np.abs(implicit)))

    errors = [error(s) for s in (1e-4, 1e-6, 1e-8)]
    assert all(b < a / 10 for a, b in zip(errors, errors[1:])), errors
    assert errors[-1] < 1e-6, errors
    assert error(1e-2) > 0.1
    assert len(_traces) - n_traces <= 1  # every σ ran in one compiled function


def test_contact_make_randomized_is_smooth():
    """(d) The sweep of (c) with ``RandomizedSmoothing(σ = 3 m/s², M = 32)`` (gap perturbed by
    ``σ·dt² = 0.2 mm``): ``d v⁺_z / d h`` changes by at most 30 % of ``1/dt`` between neighbouring
    samples where the implicit one jumps by ``1/dt``, is monotone (the same ``z_j`` at every
    height), strictly between the plateaus at the switch, equal to the implicit one (to 1e-6 of
    ``1/dt``) more than 1 mm (5 σ·dt²) from it, forward equals reverse mode, and every derivative is
    finite, also at exact touching, a 0.1 mm penetration and the make point itself."""
    h_all, fwd_all, rev_all = _sweep("randomized")
    assert np.all(np.isfinite(fwd_all)) and np.all(np.isfinite(rev_all))
    np.testing.assert_allclose(rev_all, fwd_all, atol=1e-9)
    m = SWEEP_HEIGHTS.shape[0]
    h, fwd = h_all[:m], fwd_all[:m]
    _, implicit_fwd, _ = _sweep("implicit")
    _assert_smooth_transition(h, implicit_fwd, fwd, far_atol=1e-6 / SWEEP_DT)


def test_randomized_bad_input_raises_and_parameters_are_dynamic(tmp_path):
    """Bad input (issue #6): a missing key or σ, a non-key, σ ≤ 0 / non-finite / non-scalar,
    ``num_samples < 1`` and an unknown distribution raise ``ValueError`` at construction, as does
    the rule with Raisim (no implicit derivative to average); in the options the key and σ are
    dynamic leaves (a new key or σ leaves the model's tree structure — what ``jit`` caches on —
    unchanged) and a model with the rule round-trips through ``jc.save`` / ``jc.restore``."""
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="explicit PRNG key"):
        C.RandomizedSmoothing(noise_scale=1.0)
    with pytest.raises(ValueError, match="explicit PRNG key"):
        C.RandomizedSmoothing(None, 1.0)
    for bad_key in (0, 1.5, jnp.zeros(2), jax.random.split(key, 3)):
        with pytest.raises(ValueError, match="one PRNG key"):
            C.RandomizedSmoothing(bad_key, 1.0)
    with pytest.raises(ValueError, match="needs noise_scale"):
        C.RandomizedSmoothing(key)
    for bad in (0.0, -1.0, float("nan"), float("inf"), [1.0, 1.0]):
        with pytest.raises(ValueError, match="σ > 0"):
            C.RandomizedSmoothing(key, bad)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="num_samples"):
            C.RandomizedSmoothing(key, 1.0, num_samples=bad)
    with pytest.raises(ValueError, match="unknown distribution"):
        C.RandomizedSmoothing(key, 1.0, distribution="uniform")
    C.RandomizedSmoothing(jax.random.PRNGKey(0), 1.0, distribution="gumbel")  # raw keys work too

    model = _ball("implicit")
    with pytest.raises(ValueError, match="RandomizedSmoothing"):
        model.replace_options(gradient="smoothed")
    with pytest.raises(ValueError, match="'raisim'"):
        model.replace_options(solver=C.Raisim(), gradient=C.RandomizedSmoothing(key, 1.0))
    with pytest.raises(ValueError, match="'raisim'"):
        C.solve(PROBLEM, C.Raisim(), gradient=C.RandomizedSmoothing(key, 1.0))
    a = model.replace_options(gradient=C.RandomizedSmoothing(key, 1.0, num_samples=4))
    b = model.replace_options(gradient=C.RandomizedSmoothing(jax.random.key(1), 2.0, num_samples=4))
    assert a.options.gradient == "smoothed"
    assert isinstance(a.options.contact_gradient, C.RandomizedSmoothing)
    assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b)
    leaves = jax.tree_util.tree_leaves(a)
    rule = a.options.gradient_smoothing
    assert any(leaf is rule.key for leaf in leaves) and any(leaf is rule.noise_scale for leaf in leaves)
    assert a.replace_options(gradient="implicit").options.gradient_smoothing is None
    # the typed key is stored as raw uint32 data, so the model round-trips through a checkpoint
    jc.save(tmp_path / "model.ckpt", b)
    restored = jc.restore(tmp_path / "model.ckpt", a).options.gradient_smoothing
    np.testing.assert_array_equal(restored.key, jax.random.key_data(jax.random.key(1)))
    assert restored.key_impl == "threefry2x32" and float(restored.noise_scale) == 2.0
