"""Implicit derivatives of ``jc.contact.solve`` (seed 004 §III-B, appendices A–B).

Problems with a known solution in a chosen mode per contact are *manufactured*: pick ``G`` (random
``J M⁻¹ Jᵀ``), a force ``λ`` and a velocity ``σ`` satisfying the formulation's optimality
conditions in that mode, and set ``g = σ − (G + R) λ``. The tests check that the solver returns
that ``λ``, that :func:`contact_modes` classifies it as intended, and that the implicit
Jacobians (``jacfwd`` = stacked ``jvp``s, ``jacrev`` = stacked ``vjp``s) agree with central finite
differences of the converged solve and with each other. All compiled functions are shared across
cases (cases are batched with ``vmap``), sizes are ``n = 4`` contacts.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc

C = jc.contact
N = 4  # contacts per manufactured problem
TIGHT = 1e-13
SOLVERS = {
    "ncp": C.ADMM("ncp", max_iterations=4000, tolerance=TIGHT),
    "ccp": C.ADMM("ccp", max_iterations=4000, tolerance=TIGHT),
    "lcp": C.PGS("lcp", max_iterations=4000, tolerance=TIGHT),
}
MODE = {"b": C.BREAKING, "k": C.STICKING, "s": C.SLIDING}
# per-contact mode patterns: all sticking, all sliding, all breaking, mixed
PATTERNS = ["kkkk", "ssss", "bbbb", "ksbs"]


def _stack(trees):
    return jax.tree_util.tree_map(lambda *x: jnp.stack(x), *trees)


def manufactured(rng, formulation, pattern, compliant, coupling=None):
    """``(G, g, μ, R, λ*)`` with ``λ*`` the solution of the ``formulation`` problem, contact ``i``
    in mode ``pattern[i]``."""
    m = 3 * N
    if coupling is None:
        J = rng.normal(size=(m, m))
    else:
        J = np.eye(m) + coupling * rng.normal(size=(m, m))
    Bm = rng.normal(size=(m, m))
    M = Bm @ Bm.T / m + np.eye(m)
    G = J @ np.linalg.solve(M, J.T)
    G = 0.5 * (G + G.T)
    mu = rng.uniform(0.3, 1.0, size=N)
    a = np.diagonal(G).reshape(N, 3).mean(-1)
    R = np.repeat(0.1 * a, 3) if compliant else np.zeros(m)
    lam = np.zeros((N, 3))
    sig = np.zeros((N, 3))
    for i, mode in enumerate(pattern):
        ln = rng.uniform(0.5, 2.0)
        s = rng.uniform(0.5, 2.0) * a[i]
        phi = rng.uniform(0, 2 * np.pi)
        u = np.array([np.cos(phi), np.sin(phi)])
        if mode == "b":
            sig[i] = [0.3 * s * u[0], 0.3 * s * u[1], s]  # σ_N > μ‖σ_T‖: breaking in every model
        elif formulation == "lcp":
            if mode == "k":
                lam[i] = [0.4 * mu[i] * ln * u[0], 0.4 * mu[i] * ln * u[1], ln]
            else:  # t1 at its bound b, t2 inside
                b = np.sign(u[0])
                lam[i] = [b * mu[i] * ln, 0.4 * mu[i] * ln * u[1], ln]
                sig[i] = [-b * s, 0.0, 0.0]
        elif mode == "k":
            lam[i] = [0.5 * mu[i] * ln * u[0], 0.5 * mu[i] * ln * u[1], ln]
        else:
            lam[i] = [-mu[i] * ln * u[0], -mu[i] * ln * u[1], ln]
            sig[i] = [s * u[0], s * u[1], mu[i] * s if formulation == "ccp" else 0.0]
    g = sig.reshape(m) - (G + np.diag(R)) @ lam.reshape(m)
    return G, g, mu, R, lam


def cases(formulation):
    rng = np.random.default_rng({"ncp": 11, "ccp": 12, "lcp": 13}[formulation])
    coupling = 0.15 if formulation == "lcp" else None  # PGS needs a diagonally dominant G
    out, labels = [], []
    for pattern in PATTERNS:
        for compliant in (False, True):
            out.append(manufactured(rng, formulation, pattern, compliant, coupling))
            labels.append((pattern, compliant))
    arrays = [jnp.asarray(np.stack([c[k] for c in out])) for k in range(5)]
    return arrays, labels


def _force(solver, G, g, mu, R):
    return C.solve(C.ContactProblem(G, g, mu, R), solver).force


def _force_aux(solver, G, g, mu, R):
    f = _force(solver, G, g, mu, R)
    return f, f


@functools.lru_cache(maxsize=None)
def compiled(formulation):
    """jit(vmap(...)) of jacfwd and jacrev of the force w.r.t. ``(G, g, μ, R)``; both also return
    the force itself (``has_aux``), so no separate primal compilation is needed."""
    f = functools.partial(_force_aux, SOLVERS[formulation])
    argnums = (0, 1, 2, 3)
    return (
        jax.jit(jax.vmap(jax.jacfwd(f, argnums=argnums, has_aux=True))),
        jax.jit(jax.vmap(jax.jacrev(f, argnums=argnums, has_aux=True))),
    )


def _directions(rng, G, R):
    B = G.shape[0]
    dG = rng.normal(size=G.shape)
    dG = dG + np.swapaxes(dG, 1, 2)
    dg = rng.normal(size=(B, 3 * N))
    dmu = rng.normal(size=(B, N))
    dR = np.abs(rng.normal(size=(B, 3 * N))) * (np.asarray(R) > 0)
    return [jnp.asarray(x) for x in (dG, dg, dmu, dR)]


def _contract(jac, d):
    """``Σ_k ∂λ/∂θ_k · dθ_k`` for batched jacobians ``jac[k]`` ``(B, n, 3, *θ_k.shape[1:])``."""
    out = 0.0
    for Jk, dk in zip(jac, d):
        axes = tuple(range(3, Jk.ndim))
        out = out + jnp.sum(Jk * dk.reshape(dk.shape[:1] + (1, 1) + dk.shape[1:]), axis=axes)
    return out


@pytest.mark.parametrize("formulation", ["ncp", "ccp", "lcp"])
def test_implicit_jacobians_match_finite_differences(formulation):
    (G, g, mu, R, lam_true), labels = cases(formulation)
    jacfwd, jacrev = compiled(formulation)

    def primal(*args):
        return jacfwd(*args)[1]

    Jf, lam = jacfwd(G, g, mu, R)
    Jr, lam_r = jacrev(G, g, mu, R)
    # both programs run the same solve; XLA fuses them differently, so they agree to round-off
    # (1e-12 of the force scale, far below the solver's tolerance), not bit for bit
    np.testing.assert_allclose(lam, lam_r, rtol=0, atol=1e-12 * float(jnp.max(jnp.abs(lam))))
    # the solver found the manufactured solution, in the intended modes
    np.testing.assert_allclose(lam, lam_true.reshape(lam.shape), atol=1e-7)
    modes = jax.vmap(lambda G, g, mu, R, f: C.contact_modes(
        C.ContactProblem(G, g, mu, R), f, formulation, TIGHT))(G, g, mu, R, lam)
    want = np.array([[MODE[c] for c in pattern] for pattern, _ in labels])
    np.testing.assert_array_equal(modes, want)

    for a, b in zip(Jf, Jr):  # forward and reverse mode give the same Jacobian
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * float(jnp.max(jnp.abs(a))))
    rng = np.random.default_rng(5)
    h = 1e-6
    for _ in range(2):
        d = _directions(rng, G, R)
        plus = primal(*(x + h * dx for x, dx in zip((G, g, mu, R), d)))
        minus = primal(*(x - h * dx for x, dx in zip((G, g, mu, R), d)))
        fd = (plus - minus) / (2 * h)
        scale = jnp.maximum(jnp.max(jnp.abs(fd), axis=(1, 2)), 1.0)[:, None, None]
        for jac in (Jf, Jr):  # jvp (columns) and vjp (rows) against central differences
            err = jnp.max(jnp.abs(_contract(jac, d) - fd) / scale, axis=(1, 2))
            assert np.all(np.asarray(err) < 1e-5), (formulation, labels, np.asarray(err))
    # breaking contacts do not move; sticking/sliding ones do (the test is not vacuous)
    dg_block = np.asarray(Jf[1]).reshape(len(labels), N, 3, N, 3)
    for k, (pattern, _) in enumerate(labels):
        for i, c in enumerate(pattern):
            size = np.abs(dg_block[k, i]).max()
            assert (size < 1e-12) if c == "b" else (size > 1e-3), (pattern, i, size)


def test_full_coordinate_system_equals_seed_reduced_system():
    """The assembled system (full coordinates, scaled rows) has the same solution as seed 004's
    reduced system of appendix B: ``X = −A⁻¹ B (dG λ + dg)``, ``dλ = C X`` with, per sliding
    contact, ``R = (λ/‖λ‖, e_z × u)``, ``P = diag(H/α, 1)``, ``G̃ = Rᵀ P G R + Q`` (eq. 10)."""
    rng = np.random.default_rng(21)
    G, g, mu, R, lam = manufactured(rng, "ncp", "ksbs", compliant=False)

    @jax.jit
    def system(G, g, mu, lam):
        c_lam, c_sig, _, modes = C._implicit.mode_equations("ncp", G, g, mu, jnp.ones(N, bool),
                                                           lam, TIGHT)
        return C._implicit.implicit_matrix(c_lam, c_sig, G), c_sig, modes

    M, c_sig, modes = (np.asarray(x) for x in system(G, g, mu, lam))
    np.testing.assert_array_equal(modes, [C.STICKING, C.SLIDING, C.BREAKING, C.SLIDING])
    dG = rng.normal(size=G.shape)
    dG = dG + dG.T
    dg = rng.normal(size=g.shape)
    w = dG @ lam.reshape(-1) + dg
    ours = np.linalg.solve(M, -np.einsum("irk,ik->ir", c_sig, w.reshape(N, 3)).reshape(-1))

    # seed 004 appendix B, built literally: unknowns (dλ of sticking, dλ̃ of sliding contacts)
    sigma = (G @ lam.reshape(-1) + g).reshape(N, 3)
    Bm, Cm, Qm = [], [], []
    for i, mode in enumerate(modes):
        rows = np.zeros((3, 3 * N))
        rows[:, 3 * i:3 * i + 3] = np.eye(3)
        if mode == C.STICKING:
            Bm.append(rows)
            Cm.append(rows.T)
            Qm.append(np.zeros((3, 3)))
        elif mode == C.SLIDING:
            st = sigma[i, :2]
            u = st / np.linalg.norm(st)
            alpha = np.linalg.norm(st) / (mu[i] * lam[i, 2])
            Rm = np.stack([lam[i] / np.linalg.norm(lam[i]), [-u[1], u[0], 0.0]], axis=1)
            P = np.eye(3)
            P[:2, :2] = (np.eye(2) - np.outer(u, u)) / alpha
            Bm.append(Rm.T @ P @ rows)
            Cm.append(rows.T @ Rm)
            Qm.append(np.diag([0.0, 1.0]))
    Bm = np.concatenate(Bm)
    Cm = np.concatenate(Cm, axis=1)
    sizes = [q.shape[0] for q in Qm]
    Qfull = np.zeros((sum(sizes), sum(sizes)))
    offsets = np.cumsum([0] + sizes)
    for q, o in zip(Qm, offsets):
        Qfull[o:o + q.shape[0], o:o + q.shape[0]] = q
    A_seed = Bm @ G @ Cm + Qfull  # eq. 42
    seed = Cm @ np.linalg.solve(A_seed, -Bm @ w)  # eq. 44
    np.testing.assert_allclose(ours, seed, rtol=1e-9, atol=1e-9 * np.abs(seed).max())
    assert np.abs(seed).max() > 1e-2


def test_hessian_matches_finite_differences_of_the_gradient():
    """Second order: the rule re-enters itself for λ*, so ``jax.hessian`` of a scalar loss is
    symmetric and matches central differences of ``jax.grad`` within a mode."""
    (G, g, mu, R, _), labels = cases("ncp")
    k = labels.index(("ksbs", True))
    G, g, mu, R = (x[k] for x in (G, g, mu, R))
    solver = SOLVERS["ncp"]

    def loss(x):
        f = C.solve(C.ContactProblem(G, x[:3 * N], x[3 * N:], R), solver).force
        return jnp.sum(f ** 2) + jnp.sum(jnp.sin(f))

    x = jnp.concatenate([g, mu])
    both = jax.jit(lambda x: (jax.hessian(loss)(x), jax.grad(loss)(x)))
    H, _ = both(x)
    np.testing.assert_allclose(H, H.T, atol=1e-9 * float(jnp.abs(H).max()))

    def grad_fn(x):
        return both(x)[1]

    h = 1e-6
    d = jnp.asarray(np.random.default_rng(9).normal(size=x.shape))
    fd = (grad_fn(x + h * d) - grad_fn(x - h * d)) / (2 * h)
    np.testing.assert_allclose(H @ d, fd, rtol=0, atol=1e-5 * float(jnp.abs(fd).max()))
    assert float(jnp.abs(fd).max()) > 1e-2


def test_float32_jacobians_are_finite_and_close_to_float64():
    """Float32 (GPU batches): the same manufactured NCP problems at a float32 tolerance give
    finite float32 Jacobians, within 1e-3 of the float64 ones where ``G + R`` is conditioned
    for float32 (κ ≤ 2e3; beyond that the float32 rounding of the implicit system (rank cutoff
    ``ε^{2/3} s_max``) and the solver's tolerance dominate — 7e-2 at κ = 1.2e4 was measured with the former
    Tikhonov solve)."""
    (G, g, mu, R, _), labels = cases("ncp")
    J64 = compiled("ncp")[1](G, g, mu, R)[0]
    solver = C.ADMM("ncp", max_iterations=2000, tolerance=1e-5)
    f = functools.partial(_force_aux, solver)
    args32 = [x.astype(jnp.float32) for x in (G, g, mu, R)]
    J32, lam32 = jax.jit(jax.vmap(jax.jacrev(f, argnums=(0, 1, 2, 3), has_aux=True)))(*args32)
    assert lam32.dtype == jnp.float32
    kappa = np.linalg.cond(np.asarray(G + jax.vmap(jnp.diag)(R)))
    conditioned = kappa <= 2e3
    assert conditioned.sum() >= 4
    for a, b in zip(J32, J64):
        assert a.dtype == jnp.float32 and bool(jnp.all(jnp.isfinite(a)))
        scale = jnp.maximum(jnp.max(jnp.abs(b), axis=tuple(range(1, b.ndim))), 1.0)
        err = np.asarray(jnp.max(jnp.abs(a - b), axis=tuple(range(1, b.ndim))) / scale)
        assert np.all(err[conditioned] < 1e-3), (labels, kappa, err)


# --------------------------------------------------------------------------------------------
# rank-deficient G: a cube on a plane (4 contacts, 6 dofs: G is 12 x 12 of rank 6)

DT = 0.01


@functools.lru_cache(maxsize=None)
def cube_step():
    """jit(vmap(jacfwd)) of ``v⁺ = v_f + Δt M⁻¹ Jᵀ λ(G, g, μ)`` w.r.t. the initial velocity, a
    mass scale and the friction coefficients, with ``G = J M⁻¹ Jᵀ`` built in JAX."""
    system = jc.testing.problems.cube_on_plane(mass=1.0, half_size=0.1, friction=0.5)
    J = jnp.asarray(system.jacobian())
    M0 = jnp.asarray(system.mass_matrix())
    gravity = jnp.asarray([0.0, 0.0, -9.81, 0.0, 0.0, 0.0])
    solver = SOLVERS["ncp"]

    def v_next(v, scale, mu):
        minv_jt = jnp.linalg.solve(scale * M0, J.T)
        G = J @ minv_jt
        G = 0.5 * (G + G.T)
        v_free = v + DT * gravity
        problem = C.ContactProblem(G, J @ v_free / DT, mu)
        sol = C.solve(problem, solver)
        out = v_free + DT * minv_jt @ sol.force.reshape(-1)
        return out, (out, C.contact_modes(problem, sol.force, "ncp", TIGHT))

    return jax.jit(jax.vmap(jax.jacfwd(v_next, argnums=(0, 1, 2), has_aux=True)))


def test_rank_deficient_delassus_velocity_derivatives():
    """Hyperstatic contacts: λ is not unique (the implicit system is singular and solved in the
    least-squares sense), but the next velocity is, and its derivative matches finite
    differences — for a sticking cube and for cubes sliding in translation."""
    f = cube_step()
    v = jnp.asarray([[0.02, 0.01, 0, 0, 0, 0], [1.0, 0.3, 0, 0, 0, 0], [0.6, -0.5, 0, 0, 0, 0]])
    scale = jnp.asarray([1.0, 1.5, 1.0])
    mu = jnp.asarray([[0.5] * 4, [0.5] * 4, [0.3] * 4])
    (Jv, Js, Jm), (vp, modes) = f(v, scale, mu)
    np.testing.assert_array_equal(modes, [[C.STICKING] * 4, [C.SLIDING] * 4, [C.SLIDING] * 4])
    assert np.abs(np.asarray(vp[0])).max() < 1e-9  # sticking: the cube stops
    rng = np.random.default_rng(3)
    dv, ds, dm = (jnp.asarray(rng.normal(size=x.shape)) for x in (v, scale, mu))
    h = 1e-6
    fd = (f(v + h * dv, scale + h * ds, mu + h * dm)[1][0]
          - f(v - h * dv, scale - h * ds, mu - h * dm)[1][0]) / (2 * h)
    jvp = (jnp.einsum("bij,bj->bi", Jv, dv) + Js * ds[:, None]
           + jnp.einsum("bij,bj->bi", Jm, dm))
    np.testing.assert_allclose(jvp, fd, rtol=0, atol=1e-5 * max(1.0, float(jnp.abs(fd).max())))
    assert float(jnp.abs(fd[1:]).max()) > 0.1  # the sliding velocities do depend on the inputs
    # uniform mass scaling leaves v⁺ unchanged (λ scales with the mass): an exact invariant
    np.testing.assert_allclose(Js, 0.0, atol=1e-9)


def test_pseudo_inverse_of_the_free_block_in_every_tier():
    """``M⁺`` restricted to the free (sticking/sliding) contacts is the same whichever block size
    computes it: no free contact, the 8- and 16-contact blocks and the full SVD, single and under
    ``vmap`` (where the batch takes the tier of its largest count), against ``numpy.linalg.pinv``
    of the free block with the same relative cutoff — also with a rank-deficient free block."""
    n = 24  # large enough for every tier of PSEUDO_INVERSE_TIERS
    assert C._implicit.PSEUDO_INVERSE_TIERS == (0, 8, 16)
    rng = np.random.default_rng(5)
    free_counts = (0, 6, 10, 20)  # one per tier: none, ≤ 8, ≤ 16, full
    Ms, frees, refs = [], [], []
    for count in free_counts:
        M = rng.normal(size=(3 * n, 3 * n))
        free = np.zeros(n, bool)
        free[rng.choice(n, count, replace=False)] = True
        rows = np.flatnonzero(np.repeat(free, 3))
        if count >= 2:  # two free rows equal: the free block is singular
            M[rows[1]] = M[rows[0]]
        ref = np.zeros((3 * n, 3 * n))
        if count:
            ref[np.ix_(rows, rows)] = np.linalg.pinv(M[np.ix_(rows, rows)], rcond=np.finfo(float).eps ** (2 / 3))
        Ms.append(M), frees.append(free), refs.append(ref)

    def pinv(M, free, transpose=False):
        # M as an implicit system: C_λ = 0, C_σ = I, R = 0, G = M; columns of M⁺ from the identity
        # (a batch of right-hand sides of one system: the rule factors it once)
        zeros33 = jnp.zeros((n, 3, 3), M.dtype)
        system = C._implicit._ImplicitSystem(zeros33, zeros33 + jnp.eye(3), jnp.zeros(3 * n), M, None)
        solve = functools.partial(C._implicit._pseudo_inverse_solve, system, free, transpose=transpose)
        return jax.vmap(solve, in_axes=1, out_axes=1)(jnp.eye(3 * n))

    single = jax.jit(pinv, static_argnums=2)
    batched = jax.jit(jax.vmap(pinv, in_axes=(0, 0, None)), static_argnums=2)
    for M, free, ref in zip(Ms, frees, refs):
        np.testing.assert_allclose(single(jnp.asarray(M), jnp.asarray(free), False), ref, rtol=0, atol=1e-10)
        np.testing.assert_allclose(single(jnp.asarray(M), jnp.asarray(free), True), ref.T, rtol=0, atol=1e-10)
    for lanes in ((0, 1), (0, 1, 2), (0, 1, 2, 3)):  # the batch's tier: 4, 16, full
        stacked = [jnp.asarray(np.stack([x[i] for i in lanes])) for x in (Ms, frees)]
        out = batched(*stacked, False)
        for k, i in enumerate(lanes):
            np.testing.assert_allclose(out[k], refs[i], rtol=0, atol=1e-10)


def _factored_problem_data():
    """``(B, g, μ)`` of a problem with a rank-deficient Delassus ``G = B Bᵀ`` (``B`` ``(3N, 3N − 3)``,
    as for a multibody with nv < 3n) and some contacts not breaking at its NCP solution."""
    rng = np.random.default_rng(9)
    k = 3 * N - 3
    B = jnp.asarray(rng.normal(size=(3 * N, k)) / np.sqrt(k))
    g = jnp.asarray(rng.normal(size=(N, 3)) * [0.3, 0.3, 1.0] - [0.0, 0.0, 0.5]).reshape(-1)
    mu = jnp.asarray(rng.uniform(0.3, 1.0, N))
    return B, g, mu


def test_delassus_factor_tangent_equals_delassus_tangent():
    """With ``delassus_factor`` B (``G = B Bᵀ``) the rule reads ``dG λ`` from ``dB`` (no ``(3n, 3n)``
    tangent per direction): derivatives w.r.t. B equal those of the same problem given by ``G``
    alone, and with a constant B a tangent of G is still used — forward and reverse mode."""
    B, g, mu = _factored_problem_data()
    solver = SOLVERS["ncp"]

    def by_factor(B):
        return C.solve(C.ContactProblem(B @ B.T, g, mu, delassus_factor=B), solver).force

    def by_delassus(B):
        return C.solve(C.ContactProblem(B @ B.T, g, mu), solver).force

    def delassus_with_constant_factor(G):
        return C.solve(C.ContactProblem(G, g, mu, delassus_factor=B), solver).force

    def delassus_only(G):
        return C.solve(C.ContactProblem(G, g, mu), solver).force

    modes = C.contact_modes(C.ContactProblem(B @ B.T, g, mu), by_delassus(B))
    assert np.any(np.asarray(modes) != C.BREAKING), modes  # derivatives are not all zero
    reference = jax.jit(jax.jacfwd(by_delassus))(B)
    assert float(jnp.abs(reference).max()) > 1e-2
    scale = float(jnp.abs(reference).max())
    for jac in (jax.jacfwd, jax.jacrev):
        np.testing.assert_allclose(jax.jit(jac(by_factor))(B), reference, rtol=0, atol=1e-7 * scale)
    G = B @ B.T
    reference_G = jax.jit(jax.jacfwd(delassus_only))(G)
    assert float(jnp.abs(reference_G).max()) > 1e-2
    for jac in (jax.jacfwd, jax.jacrev):
        np.testing.assert_allclose(jax.jit(jac(delassus_with_constant_factor))(G), reference_G,
                                   rtol=0, atol=1e-7 * float(jnp.abs(reference_G).max()))


def test_reverse_mode_saves_no_square_matrix_with_a_delassus_factor(capsys):
    """Reverse mode keeps the rule's small ingredients (``C_λ``, ``C_σ``, ``R``, ``B``) for the
    backward pass and builds the implicit system and its factors there: no ``(3n, 3n)`` residual
    per solve (a rollout stacks residuals over its steps: ~0.5 MB per Panda step before)."""
    B, g, mu = _factored_problem_data()

    def loss(B, g):
        problem = C.ContactProblem(B @ B.T, g, mu, delassus_factor=B)
        return jnp.sum(C.solve(problem, SOLVERS["ncp"]).force ** 2)

    from jax.ad_checkpoint import print_saved_residuals

    print_saved_residuals(loss, B, g)
    residuals = capsys.readouterr().out.splitlines()
    assert any("_implicit_force_jvp" in line for line in residuals), residuals  # the rule ran
    square = f"[{3 * N},{3 * N}]"
    assert not [line for line in residuals if square in line], residuals
    # and the derivative is still the implicit one (forward = reverse)
    np.testing.assert_allclose(jax.jit(jax.grad(loss))(B, g),
                               jax.jit(jax.jacfwd(loss))(B, g), rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------------------------
# implicit vs unrolled


def _unrolled_grad(solver):
    def loss(G, g, mu, R, w):
        return jnp.sum(w * C.solve(C.ContactProblem(G, g, mu, R), solver, gradient="unrolled").force)

    return jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1, 2, 3))))


@pytest.mark.parametrize("formulation,iterations", [("ncp", 400), ("lcp", 300)])
def test_implicit_matches_unrolled(formulation, iterations):
    """Autodiff through the solver's iterations (many, tight tolerance) converges to the implicit
    derivative (seed 004 §III: the implicit rule is the limit of the unrolled one)."""
    (G, g, mu, R, _), labels = cases(formulation)
    pick = np.array([labels.index(("ksbs", True)), labels.index(("ssss", False))])
    w = jnp.asarray(np.random.default_rng(7).normal(size=(2, N, 3)))
    # implicit: vjp rows already compiled for the finite-difference test, contracted with w
    jac = compiled(formulation)[1](G, g, mu, R)[0]
    implicit = [jnp.einsum("bij,bij...->b...", w, Jk[pick]) for Jk in jac]
    solver = (C.ADMM("ncp", max_iterations=iterations, tolerance=1e-12) if formulation == "ncp"
              else C.PGS("lcp", max_iterations=iterations, tolerance=1e-12))
    unrolled = list(_unrolled_grad(solver)(*(x[pick] for x in (G, g, mu, R)), w))
    # G is symmetric by contract: the unrolled gradient depends on which triangle the solver
    # reads (Cholesky: the lower one). Compare the symmetric parts, i.e. derivatives along
    # symmetric perturbations.
    implicit[0], unrolled[0] = (0.5 * (x + jnp.swapaxes(x, 1, 2)) for x in (implicit[0], unrolled[0]))
    for a, b in zip(implicit, unrolled):
        scale = max(1.0, float(jnp.abs(a).max()))
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-5 * scale)
    assert float(jnp.abs(implicit[1]).max()) > 1e-2


# --------------------------------------------------------------------------------------------
# no NaN / inf over random and degenerate problems

SWEEP = 240


def sweep_problems():
    """``SWEEP`` problems with 4 contacts: random (full rank and rank deficient), exactly touching
    (``g = 0``: λ = 0 and σ = 0), zero friction, μ = 1e6, inactive contacts, compliance, and a
    non-finite Delassus matrix (replaced by ``sanitize_problem``)."""
    rng = np.random.default_rng(2024)
    Gs, gs, mus, Rs, acts = [], [], [], [], []
    for k in range(SWEEP):
        p = jc.testing.problems.random_problem(rng, N, num_dofs=None if k % 3 else 6)
        G, g, mu = (np.array(x) for x in (p.delassus, p.free_velocity, p.friction))
        R = np.zeros(3 * N)
        act = np.ones(N, bool)
        kind = k % 8
        if kind == 1:
            g[:] = 0.0  # everything exactly touching
        elif kind == 2:
            mu[:] = 0.0
        elif kind == 3:
            mu[:] = 1e6
        elif kind == 4:
            act = rng.uniform(size=N) < 0.5
        elif kind == 5:
            R = np.repeat(rng.uniform(0, 0.5, size=N) * np.diagonal(G).reshape(N, 3).mean(-1), 3)
        elif kind == 6:
            G[0, 1] = np.nan
        elif kind == 7:
            g[3:6] = 0.0  # contact 1 with zero free velocity, contact 2 frictionless
            mu[2] = 0.0
        Gs.append(G), gs.append(g), mus.append(mu), Rs.append(R), acts.append(act)
    return [jnp.asarray(np.stack(x)) for x in (Gs, gs, mus, Rs, acts)]


SWEEP_SOLVERS = {
    # few iterations on purpose: many lanes do not converge and must still give finite gradients
    "admm-ncp": C.ADMM("ncp", max_iterations=60, tolerance=1e-10),
    "admm-ccp": C.ADMM("ccp", max_iterations=60, tolerance=1e-10),
    "pgs-lcp": C.PGS("lcp", max_iterations=40, tolerance=1e-10),
}


@pytest.mark.parametrize("name", list(SWEEP_SOLVERS))
def test_derivatives_finite_on_random_and_degenerate_problems(name):
    solver = SWEEP_SOLVERS[name]
    G, g, mu, R, act = sweep_problems()
    w = jnp.asarray(np.random.default_rng(1).normal(size=(SWEEP, N, 3)))

    def loss(G, g, mu, R, active, w):
        sol = C.solve(C.ContactProblem(G, g, mu, R, active), solver)
        speed = jnp.where(active[:, None], sol.velocity, 0.0)
        return jnp.sum(w * sol.force) + jnp.sum(speed ** 2), sol.converged

    grad = jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1, 2, 3), has_aux=True)))
    (dG, dg, dmu, dR), converged = grad(G, g, mu, R, act, w)
    for x in (dG, dg, dmu, dR):
        assert bool(jnp.all(jnp.isfinite(x))), name
    converged = np.asarray(converged)
    assert 0 < converged.sum() < SWEEP  # both converged and non-converged lanes were exercised
    # non-finite problems: zero derivative; inactive contacts do not influence active ones
    nonfinite = np.arange(SWEEP) % 8 == 6
    assert float(jnp.abs(dg[nonfinite]).max()) == 0.0
    inactive_rows = ~np.repeat(np.asarray(act), 3, axis=1)
    assert float(jnp.abs(jnp.where(inactive_rows, dg, 0.0)).max()) == 0.0
    assert float(jnp.abs(dg[~nonfinite]).max()) > 0.0
    if name == "admm-ncp":  # forward mode over the same batch
        def force(G, g, mu, R, active):
            return C.solve(C.ContactProblem(G, g, mu, R, active), solver).force

        tangents = (G * 0 + 1.0, g * 0 + 1.0, mu * 0 + 1.0, R * 0 + 1.0)
        _, jv = jax.jit(jax.vmap(lambda G, g, mu, R, a, dG, dg, dmu, dR: jax.jvp(
            lambda G, g, mu, R: force(G, g, mu, R, a), (G, g, mu, R), (dG, dg, dmu, dR))))(
            G, g, mu, R, act, *tangents)
        assert bool(jnp.all(jnp.isfinite(jv)))


# --------------------------------------------------------------------------------------------
# API


def test_gradient_option_is_validated():
    p = jc.testing.problems.random_problem(np.random.default_rng(0), 2)
    with pytest.raises(ValueError, match="gradient"):
        C.solve(p, C.PGS("ncp"), gradient="smooth")


def test_raisim_has_no_implicit_rule():
    p = jc.testing.problems.random_problem(np.random.default_rng(0), 1)
    solver = C.Raisim(max_iterations=5)
    with pytest.raises(NotImplementedError, match="unrolled"):  # traced only, never compiled
        jax.eval_shape(lambda g: jax.jvp(
            lambda g: C.solve(C.ContactProblem(p.delassus, g, p.friction), solver).force,
            (g,), (g,)), p.free_velocity)
