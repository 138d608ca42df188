"""Implicit derivatives of the contact solve, by contact mode (seed 004 §III-B/C, appendices A–B).

The primal solve is the solver's ``lax.while_loop`` (:func:`jaxsim_contact.contact.solve`); it is
never differentiated. Instead :func:`implicit_force` is a ``jax.custom_jvp`` identity on the
converged force ``λ*`` whose tangent is the solution of one linear system built from the contact
modes at ``λ*``. The tangent is computed with ``lax.custom_linear_solve``, so JAX transposes it
for reverse mode: ``jax.jvp``, ``jax.jacfwd``, ``jax.grad``, ``jax.vjp`` all work, under ``jit``
and ``vmap``.

Notation (per contact ``i``, frame ``(t1, t2, n)``, normal last):

* ``A = G + diag(R)`` the compliant Delassus matrix ``(3n, 3n)``, ``σ = A λ + g`` ``(n, 3)``;
* ``σ̄ = σ + Γ(σ)`` with the De Saxcé term ``Γ(σ) = (0, 0, μ‖σ_T‖)`` for the NCP, ``σ̄ = σ`` for
  the CCP (seed 001 eqs. 14–16);
* ``a_i = tr(A_ii) / 3`` (m/s per N in force units) converts forces into velocities, so every
  equation row below is in velocity units and rows of different contacts are commensurate.

Mode classification (the active set of the NCP, seed 004 §III-B). With the natural map
``y_i = λ_i − σ̄_i / a_i`` (the point whose projection onto ``K_μ`` is ``λ_i`` at a solution):

* **breaking** when the contact is inactive, ``y_i`` lies in the polar cone (``μ‖y_T‖ + y_N ≤ 0``,
  i.e. ``P_K(y) = 0``), or ``λ_N ≤ δ_f`` (the normal force is at the solver's noise level, which
  includes exact touching ``λ_N = 0, σ = 0``);
* **sticking** when ``y_i`` is in the interior of ``K_μ`` (``‖y_T‖ < μ y_N``);
* **sliding** otherwise (``λ_i`` on the cone boundary, ``σ_T`` along ``u = −y_T/‖y_T‖``).

Noise levels, relative to the solver tolerance ``τ`` and to the scale of the problem (documented
thresholds): ``δ_f = κ τ + √ε F`` for forces, where ``F = max_i max(‖λ_i‖, ‖g_i‖ / a_i)`` over
active contacts, ``κ = NOISE_FACTOR = 10`` and ``ε`` the dtype's machine epsilon; velocities use
``δ_v,i = κ τ + √ε a_i F``. The solver's own criterion (seed 001 eq. 15) compares forces and
velocities with the same ``τ``, hence the same convention here.

Linearised mode equations, one ``3 × 3`` block per contact: ``C_λ dλ_i + C_σ dσ_i + c_μ dμ_i = 0``
with ``dσ = A dλ + (dA λ + dg)``. Assembled for all contacts (seed 004 eq. 11 / appendix B, in full
coordinates rather than the reduced ``(3 n_stk + 2 n_sld)`` unknowns: shapes stay static under
``jit``/``vmap``, and breaking contacts get the rows ``a_i dλ_i = 0`` instead of being removed)::

    (C_λ + C_σ A) dλ = −C_σ (dA λ + dg) − c_μ dμ            (3n × 3n)

* breaking (eq. 8): ``a dλ = 0``;
* sticking (eq. 9): ``dσ = 0``, i.e. the rows of ``A dλ = −(dA λ + dg)``;
* sliding (eq. 10 / appendix A eqs. 16–22), NCP: with ``λ_T = −μ λ_N u``, ``u = σ_T/‖σ_T‖``,
  ``u⊥ = e_z × u`` and ``s = ‖σ_T‖``:

  - the cone surface (the constraint the seed's basis ``R`` of the tangent plane enforces):
    ``uᵀ dλ_T + μ dλ_N + λ_N dμ = 0`` (scaled by ``a / √(1 + μ²)``);
  - the ``u⊥`` row of eq. 19a, ``u⊥ᵀ dλ_T + (μλ_N / s) u⊥ᵀ dσ_T = 0`` — the ``H/α`` term of
    ``P`` — scaled by ``a s / (s + a μ λ_N)`` so that both coefficients stay bounded as
    ``s → 0`` (the stick/slip transition, where the seed's ``1/α`` blows up) and ``μλ_N → 0``;
  - the normal row of eq. 19b: ``dσ_N = 0``.

  Projected on the tangent plane basis ``R = (λ/‖λ‖, e_z × u)`` these are exactly the seed's
  ``G̃ dλ̃ = −Rᵀ P (dG λ + dg)`` with ``G̃ = Rᵀ P G R + Q``; the full-coordinate form adds the
  ``dμ`` term (the friction coefficient is a differentiable parameter here, the cone moves).
* sliding, CCP (the KKT conditions of ``min ½ λᵀAλ + gᵀλ, λ ∈ K_μ``: ``σ = s (u, μ)``): same
  cone-surface and ``u⊥`` rows, normal row ``dσ_N − μ uᵀ dσ_T − s dμ = 0`` (scaled by
  ``1 / √(1 + μ²)``) — the ``Δt μ ‖c_T‖`` normal velocity of the CCP moves with the slip;
* LCP (seed 001 Alg. 1, pyramid with per-axis box friction): normal breaking as above
  (``y_N = λ_N − σ_N / a ≤ 0`` or ``λ_N ≤ δ_f``); otherwise ``dσ_N = 0`` and, per tangent axis
  ``j``, ``dσ_j = 0`` when ``|y_j| < μ λ_N`` (interior) or ``dλ_j = b (μ dλ_N + λ_N dμ)`` at the
  bound ``b = sign(y_j)``.

The system is solved in the minimum-norm least-squares sense with the truncated SVD
pseudo-inverse ``dλ = M⁺ b`` (singular values below ``ε^{2/3} s_max`` count as zero; see
:func:`_pseudo_inverse_solve`). Forward mode applies ``M⁺ = V diag(s⁺) Uᵀ``, reverse mode its
exact transpose ``U diag(s⁺) Vᵀ`` from the same factors, so ``w·(J t) = (Jᵀ w)·t`` holds to
rounding on every state — also where ``M`` is singular. Rank-deficient ``G`` in sticking contacts
gives the minimum-norm ``dλ``, whose ``Jᵀ dλ`` — the physically meaningful part — is unique. Where
the mode equations themselves are inconsistent (a singular ``M`` whose right-hand side is not in
its range: e.g. a flat box landing while all four corners slide and it spins, whose normal-force
distribution is undetermined), the returned derivative is the least-squares one with the
inconsistent component dropped, not a rounding-amplified value. Everything is finite for any
finite input: a non-converged solve simply differentiates the mode equations at the returned
force; ``jvp`` and ``vjp`` of the same primal classify the modes identically (one deterministic
function of the primal ``(G, g, μ, R, λ*, τ)``).

Breaking contacts are pinned (``dλ_i = 0``), so only the block of the free (sticking or sliding)
contacts is factored, in the smallest of ``PSEUDO_INVERSE_TIERS`` contacts that holds them: the
SVD's ``O((3n)³)`` over every contact slot of a model (147 rows for the Panda's 49 slots) becomes
a far smaller one for the few free contacts, and nothing when none is free. The SVD costs more
than the LU of the 2m × 2m augmented Tikhonov system used before, which was neither noise-free
nor exactly transposed (issue 6).

Limits (documented, not hidden):

* the derivative is that of the current mode (seed 004 §III-C: "they do not capture the
  information on the contact modes boundary"); at a mode boundary (exact touching, stick/slip
  transition) it is one of the one-sided derivatives;
* when the solution itself is not unique in a way that changes the motion — e.g. a hyperstatic
  *rotating* sliding box, whose friction torque depends on the undetermined normal-force
  distribution — the minimum-norm ``dλ`` follows one valid solution path, which need not be the
  one the iterative solver selects. Sticking and translating hyperstatic contacts are fine (the
  tests check ``v⁺`` of a 4-point cube against finite differences);
* higher derivatives (``jax.hessian``) differentiate the mode equations within the mode: the
  rule re-enters itself for ``λ*``, so they are consistent with finite differences of the
  gradient away from mode boundaries.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._batching import switch_on_max
from .._autodiff import instantiate_zeros, is_symbolic_zero
from .._math import safe_norm, safe_normalize
from .._types import Choice
from ._problem import de_saxce, sanitize_problem, slot_masks

__all__ = [
    "GRADIENTS",
    "BREAKING",
    "STICKING",
    "SLIDING",
    "NOISE_FACTOR",
    "implicit_force",
    "contact_modes",
    "mode_equations",
    "implicit_matrix",
    "implicit_formulation",
    "Gradient",
]



class Gradient(Choice):
    """How derivatives of a solve are computed (:func:`jaxsim_contact.contact.solve`):
    ``IMPLICIT`` (the mode-aware implicit rule), ``UNROLLED`` (autodiff through the iterations),
    ``SMOOTHED`` (a :class:`~jaxsim_contact.contact.RelaxedComplementarity` or
    :class:`~jaxsim_contact.contact.RandomizedSmoothing` rule, given as that object)."""

    IMPLICIT = "implicit"
    UNROLLED = "unrolled"
    SMOOTHED = "smoothed"


#: Gradient modes accepted as a plain value by :func:`jaxsim_contact.contact.solve`.
GRADIENTS = (Gradient.IMPLICIT, Gradient.UNROLLED)

#: Contact mode codes returned by :func:`contact_modes` (seed 004 §III-B).
BREAKING, STICKING, SLIDING = 0, 1, 2

#: ``κ``: how many solver tolerances count as "zero" in the mode classification.
NOISE_FACTOR = 10.0


def implicit_formulation(formulation: str) -> str:
    """Formulation whose optimality conditions define the implicit derivative of a solver.

    ``"ncp"``, ``"ccp"`` and ``"lcp"`` map to themselves. RaiSim's model (seed 001 §III-C) is not
    the solution of an NCP/CCP/LCP, so it has no implicit rule here: ``NotImplementedError``
    (use ``gradient="unrolled"``).
    """
    if formulation in ("ncp", "ccp", "lcp"):
        return formulation
    raise NotImplementedError(
        f"no implicit derivative for the {formulation!r} contact model; "
        "use jc.contact.solve(..., gradient='unrolled')"
    )


def _contact_scales(A: jax.Array, n: int) -> jax.Array:
    """``(n,)`` ``a_i = tr(A_ii)/3``; contacts with a zero block fall back to the mean, then 1."""
    d = jnp.diagonal(A).reshape(n, 3)
    a = jnp.mean(d, axis=-1)
    pos = a > 0
    mean = jnp.sum(jnp.where(pos, a, 0.0)) / jnp.maximum(jnp.sum(pos), 1)
    mean = jnp.where(mean > 0, mean, 1.0)
    return jnp.where(pos, a, mean)


def _noise_levels(lam, g, a, active, tolerance):
    """``(δ_f scalar, δ_v (n,))``: see the module docstring."""
    dtype = lam.dtype
    n = lam.shape[0]
    F = jnp.maximum(safe_norm(lam), safe_norm(g.reshape(n, 3)) / a)
    F = jnp.max(jnp.where(active, F, 0.0), initial=0.0)
    tol = jnp.maximum(jnp.asarray(tolerance, dtype), 0.0)
    tol = jnp.where(jnp.isfinite(tol), tol, 0.0)
    root_eps = jnp.sqrt(jnp.finfo(dtype).eps)
    delta_f = NOISE_FACTOR * tol + root_eps * F
    delta_v = NOISE_FACTOR * tol + root_eps * a * F
    return delta_f, delta_v


def _safe_div(num, den, fallback):
    ok = den > 0
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), fallback)


def mode_equations(formulation: str, A: jax.Array, g: jax.Array, mu: jax.Array,
                   active: jax.Array, force: jax.Array, tolerance: jax.Array,
                   layout: tuple[int, int] = (0, 0), bound: jax.Array | None = None):
    """Per-contact linearised optimality conditions at ``force`` (see the module docstring).

    Args:
      formulation: ``"ncp"``, ``"ccp"`` or ``"lcp"`` (static).
      A: ``(3n, 3n)`` compliant Delassus ``G + diag(R)`` of the *sanitised* problem.
      g: ``(3n,)`` free velocity; mu: ``(n,)`` friction; active: ``(n,)`` bool.
      force: ``(n, 3)`` the (converged) force ``λ*``; tolerance: the solver's tolerance ``τ``.
      layout: static ``(num_box, num_bilateral)``: the trailing box and bilateral slots of the
        problem (``ContactProblem.slot_masks``); bound: ``(n,)`` the box slots' bounds.
    Returns:
      ``(C_lam (n, 3, 3), C_sig (n, 3, 3), c_mu (n, 3), modes (n,) int32)`` such that the
      derivative satisfies ``C_lam dλ_i + C_sig dσ_i + c_mu dμ_i = 0`` for every contact, with
      ``modes`` in ``{BREAKING, STICKING, SLIDING}`` (LCP: sliding = a tangent axis at its bound).
      For a box slot ``c_mu`` multiplies the bound's tangent ``db`` instead of ``dμ`` (its ``μ``
      is 0): see :func:`_box_and_bilateral_equations`.
    """
    n = mu.shape[0]
    dtype = A.dtype
    lam = force.reshape(n, 3)
    sigma = (A @ lam.reshape(3 * n) + g).reshape(n, 3)
    a = _contact_scales(A, n)
    delta_f, delta_v = _noise_levels(lam, g, a, active, tolerance)
    eye = jnp.broadcast_to(jnp.eye(3, dtype=dtype), (n, 3, 3))
    zero33 = jnp.zeros((n, 3, 3), dtype)
    lam_n = lam[:, 2]
    scale_mu = jax.lax.rsqrt(1.0 + mu * mu)  # 1/√(1+μ²)

    if formulation == "lcp":
        y = lam - sigma / a[:, None]
        breaking = (~active) | (y[:, 2] <= 0) | (lam_n <= delta_f)
        bound = mu * lam_n
        interior = jnp.abs(y[:, :2]) < bound[:, None]  # (n, 2)
        b = jnp.sign(y[:, :2])
        e = jnp.eye(3, dtype=dtype)
        # tangent rows: interior -> dσ_j = 0 ; at bound -> a (dλ_j − b μ dλ_N − b λ_N dμ) = 0
        c_lam_t = (a * scale_mu)[:, None, None] * (
            e[None, :2, :] - (b * mu[:, None])[:, :, None] * e[None, None, 2, :])
        c_lam_t = jnp.where(interior[:, :, None], 0.0, c_lam_t)
        c_sig_t = jnp.where(interior[:, :, None], e[None, :2, :], 0.0)
        c_mu_t = jnp.where(interior, 0.0, -(a * scale_mu * lam_n)[:, None] * b)
        c_lam = jnp.concatenate([c_lam_t, jnp.zeros((n, 1, 3), dtype)], axis=1)
        c_sig = jnp.concatenate([c_sig_t, jnp.broadcast_to(e[None, 2:, :], (n, 1, 3))], axis=1)
        c_mu = jnp.concatenate([c_mu_t, jnp.zeros((n, 1), dtype)], axis=1)
        sliding = ~jnp.all(interior, axis=-1)
    else:
        sbar = sigma + de_saxce(sigma, mu) if formulation == "ncp" else sigma
        y = lam - sbar / a[:, None]
        y_t = y[:, :2]
        ny_t = safe_norm(y_t)
        polar = mu * ny_t + y[:, 2] <= 0
        breaking = (~active) | polar | (lam_n <= delta_f)
        interior = ny_t < mu * y[:, 2]
        sliding = ~interior
        # slip direction u = −y_T/‖y_T‖ (= σ_T/‖σ_T‖ = −λ_T/‖λ_T‖ at a sliding solution)
        u = safe_normalize(-y_t, fallback=jnp.asarray([1.0, 0.0], dtype))
        has_dir = a * ny_t > delta_v
        u_perp = jnp.stack([-u[:, 1], u[:, 0]], axis=-1)
        s = safe_norm(sigma[:, :2])
        friction = a * mu * lam_n
        den = s + friction
        th1 = _safe_div(s, den, jnp.ones_like(s))
        th2 = _safe_div(friction, den, jnp.zeros_like(s))
        z1 = jnp.zeros((n, 1), dtype)
        # row 0: cone surface  a/√(1+μ²) (uᵀ dλ_T + μ dλ_N + λ_N dμ) = 0
        r0_lam = (a * scale_mu)[:, None] * jnp.concatenate([u, mu[:, None]], axis=-1)
        r0_mu = jnp.where(has_dir, a * scale_mu * lam_n, 0.0)
        # row 1: a θ1 u⊥ᵀ dλ_T + θ2 u⊥ᵀ dσ_T = 0
        r1_lam = (a * th1)[:, None] * jnp.concatenate([u_perp, z1], axis=-1)
        r1_sig = th2[:, None] * jnp.concatenate([u_perp, z1], axis=-1)
        # row 2: NCP dσ_N = 0 ; CCP (dσ_N − μ uᵀ dσ_T − s dμ) / √(1+μ²) = 0
        if formulation == "ncp":
            r2_sig = jnp.broadcast_to(jnp.asarray([0.0, 0.0, 1.0], dtype), (n, 3))
            r2_mu = jnp.zeros((n,), dtype)
        else:
            r2_sig = scale_mu[:, None] * jnp.concatenate([-mu[:, None] * u, 1.0 + z1], axis=-1)
            r2_mu = -scale_mu * s
        slide_lam = jnp.stack([r0_lam, r1_lam, jnp.zeros((n, 3), dtype)], axis=1)
        slide_sig = jnp.stack([jnp.zeros((n, 3), dtype), r1_sig, r2_sig], axis=1)
        slide_mu = jnp.stack([r0_mu, jnp.zeros((n,), dtype), r2_mu], axis=1)
        c_lam = jnp.where(sliding[:, None, None], slide_lam, zero33)
        c_sig = jnp.where(sliding[:, None, None], slide_sig, eye)
        c_mu = jnp.where(sliding[:, None], slide_mu, 0.0)

    c_lam = jnp.where(breaking[:, None, None], a[:, None, None] * eye, c_lam)
    c_sig = jnp.where(breaking[:, None, None], zero33, c_sig)
    c_mu = jnp.where(breaking[:, None], 0.0, c_mu)
    modes = jnp.where(breaking, BREAKING, jnp.where(sliding, SLIDING, STICKING)).astype(jnp.int32)
    if any(layout):
        c_lam, c_sig, c_mu, modes = _box_and_bilateral_equations(
            layout, lam, sigma, a, active, bound, delta_f, c_lam, c_sig, c_mu, modes)
    return c_lam, c_sig, c_mu, modes


def _box_and_bilateral_equations(layout, lam, sigma, a, active, bound, delta_f, c_lam, c_sig,
                                 c_mu, modes):
    """The mode equations of box and bilateral slots in place of the cone's.

    * bilateral (equality rows): ``dσ = 0`` on all three rows, always in the solved system
      (``STICKING``) while active;
    * box (dry friction, normal row with ``|λ_N| ≤ b``): tangent rows ``a dλ_T = 0``; normal row
      ``dσ_N = 0`` in the interior (``STICKING``: the joint holds) or ``a (dλ_N − s db) = 0`` at
      the bound ``s = sign(λ_N)`` (``SLIDING``: the force is the bound), where the natural map
      ``y = λ_N − σ_N / a`` decides which (``|y| < b``: interior, as in the LCP's box friction).
    """
    n = lam.shape[0]
    dtype = lam.dtype
    box, bilateral = (jnp.asarray(m) for m in slot_masks(n, *layout))
    e = jnp.eye(3, dtype=dtype)
    y = lam[:, 2] - sigma[:, 2] / a
    at_bound = (jnp.abs(y) >= bound) & (bound > delta_f)
    side = jnp.sign(y)
    tangent_pinned = jnp.broadcast_to(a[:, None, None] * e[None, :2, :], (n, 2, 3))
    box_lam = jnp.concatenate([tangent_pinned, jnp.where(
        at_bound[:, None, None], a[:, None, None] * e[None, 2:, :], 0.0)], axis=1)
    box_sig = jnp.concatenate([jnp.zeros((n, 2, 3), dtype), jnp.where(
        at_bound[:, None, None], 0.0, jnp.broadcast_to(e[None, 2:, :], (n, 1, 3)))], axis=1)
    box_bound = jnp.stack([jnp.zeros((n,), dtype), jnp.zeros((n,), dtype),
                           jnp.where(at_bound, -a * side, 0.0)], axis=-1)
    eye = jnp.broadcast_to(e, (n, 3, 3))
    c_lam = jnp.where(bilateral[:, None, None], 0.0, jnp.where(box[:, None, None], box_lam, c_lam))
    c_sig = jnp.where(bilateral[:, None, None], eye, jnp.where(box[:, None, None], box_sig, c_sig))
    c_mu = jnp.where(bilateral[:, None], 0.0, jnp.where(box[:, None], box_bound, c_mu))
    own = jnp.where(at_bound, SLIDING, STICKING)
    modes = jnp.where((bilateral | box) & active, jnp.where(bilateral, STICKING, own), modes)
    # an inactive slot stays pinned (breaking): a dλ = 0
    pinned = ~active
    c_lam = jnp.where(pinned[:, None, None], a[:, None, None] * eye, c_lam)
    c_sig = jnp.where(pinned[:, None, None], 0.0, c_sig)
    c_mu = jnp.where(pinned[:, None], 0.0, c_mu)
    return c_lam, c_sig, c_mu, modes.astype(jnp.int32)


def implicit_matrix(c_lam: jax.Array, c_sig: jax.Array, A: jax.Array) -> jax.Array:
    """``(3n, 3n)`` system matrix ``blockdiag(C_λ) + blockdiag(C_σ) A`` (seed 004 eq. 11's ``A``)."""
    n = c_lam.shape[0]
    CA = jnp.einsum("irk,ikm->irm", c_sig, A.reshape(n, 3, 3 * n)).reshape(3 * n, 3 * n)
    idx = jnp.arange(n)
    D = jnp.zeros((n, 3, n, 3), A.dtype).at[idx, :, idx, :].set(c_lam).reshape(3 * n, 3 * n)
    return D + CA


def contact_modes(problem, force: jax.Array, formulation: str = "ncp", tolerance=1e-6) -> jax.Array:
    """``(n,)`` int32 contact modes (``BREAKING=0``, ``STICKING=1``, ``SLIDING=2``) at ``force``.

    The classification the implicit derivative uses (module docstring), exposed for diagnostics
    and tests. ``problem`` should be the problem that was solved; inactive contacts are breaking.
    """
    safe, _ = sanitize_problem(problem)
    return mode_equations(implicit_formulation(formulation), safe.compliant_delassus,
                          safe.free_velocity, safe.friction, safe.active,
                          jnp.asarray(force).reshape(-1, 3), tolerance,
                          (safe.num_box, safe.num_bilateral), safe.bound)[3]


#: Singular values of the implicit system below ``RANK_RTOL × s_max`` count as zero: ``ε^{2/3}``
#: (3.7e-11 in float64, 2.4e-5 in float32) — far above the rounding level ``~ m ε s_max`` at which
#: a structurally singular system (a hyperstatic contact set) shows its zero singular values, far
#: below any physical conditioning the contact problems reach.
RANK_RTOL_EXPONENT = 2.0 / 3.0


#: Capacities (contacts) of the small pseudo-inverses tried before the full one
#: (``_pseudo_inverse_solve``). The SVD costs ``O((3n)³)`` over every contact slot of the model
#: (Panda: 49 slots, 147 rows; Go2: 68 slots, 204 rows) while a simulation usually has a
#: handful of contacts that are not breaking (none: no SVD).
#: 8 rather than 4: a robot on the floor with a few contacts and its limits often has 5–8 free
#: (half-cheetah: 2 feet + 5 limits of 22 slots, the full 66-row SVD with a tier of 4), while
#: ≤ 4 free costs about the same in 24 rows as in 12. Three tiers, not four: each tier is one
#: more SVD to compile in every differentiated step.
PSEUDO_INVERSE_TIERS = (0, 8, 16)


def _rows_of(contacts: jax.Array) -> jax.Array:
    """``(3k,)`` row indices of the ``(k,)`` contact indices ``contacts`` (3 rows per contact)."""
    return (3 * contacts[:, None] + jnp.arange(3)).reshape(-1)


class _ImplicitSystem(NamedTuple):
    """The implicit system ``M = blockdiag(C_λ) + blockdiag(C_σ) A`` by its ingredients.

    ``A = G + diag(R)`` with ``G = B Bᵀ`` when the factor ``B`` ``(3n, k)`` is given (``G`` is then
    ``None``), else the ``(3n, 3n)`` ``G``. ``c_lam``, ``c_sig``: ``(n, 3, 3)``; ``R``: ``(3n,)``.
    Only the block of the contacts in use is ever formed (:meth:`block`).
    """

    c_lam: jax.Array
    c_sig: jax.Array
    R: jax.Array
    G: jax.Array | None
    B: jax.Array | None

    def matvec(self, x):
        """``M x`` without forming ``M``: ``(3n,) -> (3n,)``."""
        n = self.c_lam.shape[0]
        gx = self.G @ x if self.B is None else self.B @ (x @ self.B)  # x @ B: no Bᵀ residual
        ax = (gx + self.R * x).reshape(n, 3)
        xs = x.reshape(n, 3)
        out = jnp.einsum("irk,ik->ir", self.c_lam, xs) + jnp.einsum("irk,ik->ir", self.c_sig, ax)
        return out.reshape(3 * n)

    def block(self, contacts: jax.Array | None = None) -> jax.Array:
        """``M`` restricted to the rows and columns of ``contacts`` (``(k,)`` indices): ``(3k, 3k)``;
        ``None``: the whole ``(3n, 3n)`` system.

        ``C_λ`` and ``C_σ`` are block diagonal, so ``M_FF = blockdiag(C_λ,F) + blockdiag(C_σ,F) A_FF``.
        """
        G, B, R, c_lam, c_sig = self.G, self.B, self.R, self.c_lam, self.c_sig
        if contacts is not None:
            rows = _rows_of(contacts)
            G = None if G is None else G[rows][:, rows]
            B = None if B is None else B[rows]
            R, c_lam, c_sig = R[rows], c_lam[contacts], c_sig[contacts]
        if B is not None:
            G = B @ B.T
        return implicit_matrix(c_lam, c_sig, G + jnp.diag(R))


def _pseudo_inverse_apply(M: jax.Array, b: jax.Array, transpose: bool) -> jax.Array:
    """``M⁺ b`` (or ``(M⁺)ᵀ b``) by the truncated SVD: singular values below ``ε^{2/3} s_max`` count
    as zero. ``M`` ``(r, r)``, ``b`` ``(r,)``."""
    U, s, Vt = jnp.linalg.svd(M)
    cutoff = jnp.finfo(M.dtype).eps ** RANK_RTOL_EXPONENT * s[0]
    keep = s > cutoff
    s_inv = jnp.where(keep, 1.0 / jnp.where(keep, s, 1.0), 0.0)
    if transpose:
        return U @ (s_inv * (Vt @ b))
    return Vt.T @ (s_inv * (U.T @ b))


def _free_block(M: jax.Array, free: jax.Array) -> jax.Array:
    """``M`` with the rows and columns of pinned (breaking) contacts zeroed."""
    free3 = jnp.repeat(free, 3)
    return jnp.where(free3[:, None] & free3[None, :], M, 0.0)


def _block_solve(system: _ImplicitSystem, free: jax.Array, b: jax.Array, contacts: int,
                 transpose: bool) -> jax.Array:
    """``M_FF⁺ b_F`` embedded in ``(3n,)``, from the block of ``contacts`` contact slots that holds
    the free ones (gathered first, stable order; ``contacts = n``: the whole system). Valid when at
    most ``contacts`` contacts are free: the gathered pinned ones have zeroed rows and columns,
    which add only zero singular values (the cutoff drops them; ``s_max`` is the free block's)."""
    n = free.shape[0]
    if contacts == 0:  # nothing free: M⁺ restricted to no contact is 0
        return jnp.zeros_like(b)
    if contacts == n:
        return _pseudo_inverse_apply(_free_block(system.block(), free), b, transpose)
    order = jnp.argsort(~free, stable=True)[:contacts]
    rows = _rows_of(order)
    M = _free_block(system.block(order), free[order])
    return jnp.zeros_like(b).at[rows].set(_pseudo_inverse_apply(M, b[rows], transpose))


@functools.cache
def _tiered_solve(num_contacts: int, transpose: bool):
    """``_block_solve`` in the smallest block of ``PSEUDO_INVERSE_TIERS`` contacts that holds the free
    ones (else the whole system). ``lax.switch`` on a traced count would become a ``select``
    under ``vmap`` (every SVD on every lane); :func:`~jaxsim_contact._batching.switch_on_max`
    switches on the largest count of the batch instead, at every level of nested ``vmap``
    (environments around ``jacrev``'s cotangents: with a one-level rule a vmapped step Jacobian
    ran every tier), and maps only the batched arguments, so a batch of right-hand sides of one
    system (``jacfwd``'s directions) factors it once."""
    # a tier is worth its branch when its SVD costs at most (2/3)³ of the full one
    capacities = [k for k in PSEUDO_INVERSE_TIERS if 3 * k <= 2 * num_contacts]
    branches = [functools.partial(_block_solve, contacts=k, transpose=transpose)
                for k in capacities + [num_contacts]]

    def tier(count):
        return jnp.sum(count > jnp.asarray(capacities, count.dtype))

    def solve(system, free, b):
        return switch_on_max(tier(jnp.sum(free)), branches, system, free, b)

    return solve


def _pseudo_inverse_solve(system: _ImplicitSystem, free: jax.Array, b: jax.Array,
                          transpose: bool = False) -> jax.Array:
    """``M⁺ b`` (``transpose``: ``(M⁺)ᵀ b``) for the truncated SVD pseudo-inverse of the implicit
    system ``M`` (``m × m``, ``m = 3n``) restricted to the ``free`` contacts (``(n,)`` bool:
    sticking or sliding). ``b``: ``(m,)``.

    A breaking contact's rows are ``a_i dλ_i = 0`` with a zero right-hand side (seed 004 eq. 8):
    its ``dλ_i`` is 0 whatever the other rows say, so the system is block triangular and only the
    free contacts' block ``M_FF`` needs a pseudo-inverse: ``dλ_F = M_FF⁺ b_F``, ``dλ_B = 0``. That
    block alone is formed and factored, in the smallest of ``PSEUDO_INVERSE_TIERS`` contacts that
    holds the free ones (``_tiered_solve``); with none free nothing is computed.

    ``s⁺_k = 1/s_k`` for ``s_k > ε^{2/3} s_max``, else 0 (numerical rank). ``M⁺ b`` is the
    minimum-norm least-squares solution; ``(M⁺)ᵀ = U diag(s⁺) Vᵀ`` uses the same factors, so the
    forward-mode map and its reverse-mode transpose are exact transposes of each other (up to
    rounding at the scale of ``s⁺``).

    Why not a damped (Tikhonov) inverse ``Σ s/(s² + c²)``: a structurally singular system (4 sliding
    corners of a box, whose normal-force distribution is undetermined) has its zero singular value
    at rounding level ``s ≈ 1e-16 s_max``, not at 0, and any damping ``c`` small enough to keep the
    genuine singular values accurate multiplies that noise direction by ``s/c² ≫ 1``; the
    inconsistent part of the right-hand side then dominates ``dλ`` with a rounding-dependent
    value (and the LU solves of the augmented system used before were not exact transposes at
    its condition number ``~1/c``, so ``jvp`` and ``vjp`` disagreed — issue 6). The hard cutoff
    removes the noise direction. The system is taken under ``stop_gradient``: this only serves
    ``lax.custom_linear_solve``, whose derivative uses ``matvec`` (``M``), never the factors
    (the SVD's own derivative is singular at repeated singular values).
    """
    system = jax.lax.stop_gradient(system)
    return _tiered_solve(free.shape[0], transpose)(system, free, b)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def implicit_force(formulation: str, layout: tuple[int, int], delassus, free_velocity, friction,
                   compliance, active, force, tolerance, delassus_factor=None, bound=None):
    """Identity on the converged ``force`` whose JVP is the implicit derivative (module docstring).

    Args (all arrays explicit; the problem must already be sanitised, see
    :func:`jaxsim_contact.contact.sanitize_problem`):
      formulation: static ``"ncp"``, ``"ccp"`` or ``"lcp"``.
      layout: static ``(num_box, num_bilateral)`` of the problem (``(0, 0)``: cones and
        frictionless slots only).
      delassus ``(3n, 3n)``, free_velocity ``(3n,)``, friction ``(n,)``, compliance ``(3n,)``:
        differentiable problem data ``G, g, μ, R`` (only the symmetric part of a ``G`` tangent
        is used: ``G`` is symmetric by contract, and ``jax.grad`` w.r.t. ``G`` is symmetric).
      active: ``(n,)`` bool (non-differentiable).
      force: ``(n, 3)`` the solver's output ``λ*`` (its tangent is ignored: ``λ*`` is a function
        of the problem only, not of the iterate that produced it).
      tolerance: scalar solver tolerance ``τ`` for the mode thresholds (tangent ignored).
      delassus_factor: ``None`` or ``(3n, k)`` ``B`` with ``G = B Bᵀ`` (the sanitised problem's
        ``delassus_factor``). When it carries a tangent, ``dG λ`` is taken as
        ``dB (Bᵀλ) + B (dBᵀλ)`` — ``G`` is a function of ``B`` and its own tangent is not read —
        so forward mode with many tangents (``jacfwd`` of a step) never forms a ``(3n, 3n)``
        ``dG`` per tangent. Without a tangent on ``B`` (or without ``B``) ``dG`` is used.
      bound: ``None`` or ``(n,)`` the box slots' bounds (differentiable: a frictionloss).
    Returns:
      ``force`` unchanged. Tangent ``dλ`` ``(n, 3)``: solution of
      ``(C_λ + C_σ A) dλ = −C_σ (dA λ + dg) − c_μ dμ`` (seed 004 eqs. 11, 44).
    """
    del formulation, layout, delassus, free_velocity, friction, compliance, active, tolerance
    del delassus_factor, bound
    return force


def _implicit_force_jvp(formulation, layout, primals, tangents):
    G, g, mu, R, active, force, tol, B, bound = primals
    dG, dg, dmu, dR = tangents[:4]
    dB, dbound = tangents[7], tangents[8]
    dg, dmu, dR = instantiate_zeros((dg, dmu, dR), (g, mu, R))
    if bound is not None and not is_symbolic_zero(dbound):
        # a box slot's c_mu multiplies db (its μ is 0, so dμ carries nothing there)
        box = slot_masks(mu.shape[0], *layout)[0]
        dmu = jnp.where(jnp.asarray(box), dbound, dmu)
    # Re-enter the rule for λ*: an identity here, but when this JVP is itself differentiated
    # (jax.hessian, jacfwd of grad) λ* then carries its own implicit tangent, so the system
    # below is differentiated consistently (higher-order derivatives within a contact mode).
    force = implicit_force(formulation, layout, G, g, mu, R, active, force, tol, B, bound)
    n = mu.shape[0]
    A = G + jnp.diag(R)
    lam = force.reshape(3 * n)
    c_lam, c_sig, c_mu, modes = mode_equations(implicit_formulation(formulation), A, g, mu, active,
                                               force, tol, layout,
                                               jnp.zeros_like(mu) if bound is None else bound)
    # dA λ + dg  (seed 004 eq. 12: the contact velocity's variation at fixed λ*)
    use_factor = B is not None and not is_symbolic_zero(dB)
    if use_factor:
        # G = B Bᵀ: dG λ = dB (Bᵀλ) + B (dBᵀλ), O(3n·k) per tangent instead of O((3n)²)
        dG_lam = dB @ (B.T @ lam) + B @ (dB.T @ lam)
    elif is_symbolic_zero(dG):
        dG_lam = jnp.zeros_like(lam)
    else:
        # G is symmetric by contract: only the symmetric part of dG counts, so gradients
        # w.r.t. G are symmetric
        dG_lam = 0.5 * (dG + dG.T) @ lam
    w = (dG_lam + dR * lam + dg).reshape(n, 3)
    rhs = -(jnp.einsum("irk,ik->ir", c_sig, w) + c_mu * dmu[:, None]).reshape(3 * n)
    # The system is handed to the linear solve as its small ingredients; the block of the free
    # contacts and its factors are built inside `solve` / `transpose_solve`. Under reverse mode
    # those run in the backward pass, so a rollout's residuals are C_λ, C_σ, R and B (or G) per
    # step instead of M, U and Vᵀ ((3n)² each, stacked over the steps: ~0.5 MB per Panda step).
    # B stands for G exactly when dG λ is read from it (above).
    system = _ImplicitSystem(c_lam, c_sig, R, None if use_factor else G, B if use_factor else None)
    free = modes != BREAKING

    def matvec(x):
        return system.matvec(x)

    def solve(_, b):  # M⁺ b
        return _pseudo_inverse_solve(system, free, b)

    def transpose_solve(_, b):  # (M⁺)ᵀ b, the exact transpose of `solve`
        return _pseudo_inverse_solve(system, free, b, transpose=True)

    dlam = jax.lax.custom_linear_solve(matvec, rhs, solve, transpose_solve)
    dlam = jnp.where(jnp.repeat(active, 3), dlam, 0.0).reshape(n, 3)
    return force, dlam


implicit_force.defjvp(_implicit_force_jvp, symbolic_zeros=True)
