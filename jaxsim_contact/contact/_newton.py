"""Primal Newton for the compliant CCP (seed 001 §III-B, eqs. 21–22, Alg. 4; MuJoCo / Drake).

Seed 001 writes the primal over joint velocities ``v`` with ``M``, ``J`` and ``v_f``. A
:class:`ContactProblem` only carries ``(G, g)``, so we use the exact change of variables
``G = A Aᵀ`` with ``A = Q diag(√e)`` from the eigendecomposition of ``G``: this is the primal of a
system with ``M = I``, ``J = A``, ``v_f = 0`` and the whole of ``g`` as the reference offset
``c = A v + g``. Its dual is exactly ``min_{λ ∈ K} ½ λᵀ (G + R) λ + gᵀ λ`` (eq. 20 with
compliance), so the forces match the CCP of the contact problem. When the problem carries a
factor ``G = B Bᵀ`` (``delassus_factor``, ``B`` ``(3n, k)``: a multibody step passes
``B = J L⁻ᵀ`` with ``k = n_v``), ``A = B`` and ``v`` has ``k`` entries: this is then exactly the
seed's primal over joint velocities after the change of variables ``v ← Lᵀ v``, a ``k × k``
Newton system and no eigendecomposition; otherwise the system is ``3n × 3n``.

With ``y(v) = −R⁻¹ (A v + g)`` and ``D = R^{1/2}``::

    ℓ(v)  = ½ ‖v‖² + ½ ‖P_{K'}(D y)‖²,          K' = K_{μ √(R_T / R_N)}  (R-metric projection)
    λ(v)  = D⁻¹ P_{K'}(D y)
    ∇ℓ    = v − Aᵀ λ(v)                         (Alg. 4 line 2)
    H     = I + Aᵀ D⁻¹ ∂P_{K'} D⁻¹ A             (line 3)

Line search (line 5), ``line_search="exact"`` (default): the minimiser of the convex,
piecewise-smooth ``φ(α) = ℓ(v + α Δv)`` (as MuJoCo and Drake do), by safeguarded Newton on
``φ'(α) = (v + αΔv)·Δv − λ(v + αΔv)·(A Δv)`` with ``φ''(α) = ‖Δv‖² + sᵀ ∂P_{K'} s``
(``s = D⁻¹ A Δv``), both in closed form contact by contact (``PrimalNewton._line_search``).
It starts at ``α = 1`` (the Newton step) and keeps a bracket ``[lo, hi]`` with ``φ'(lo) < 0 ≤ φ'(hi)``; a 1-D
Newton step is taken when it stays inside and ``|φ'|`` at least halved, else the bracket is
bisected (doubled while no ``hi`` is known). It stops at ``|φ'(α)| ≤ line_search_tolerance ·
|φ'(0)|`` (or ``|φ'|`` at a few ε of its terms: round-off), a bracket at ``4ε`` relative width
or ``line_search_steps`` trials. On soft-contact robot scenes this takes a few trials, where
the earlier plain bisection (bracket doubling plus 40 halvings) took over 40 every time, with the
same Newton iteration counts. (Armijo backtracking with
``β = 0.8`` — the seed's implementation — failed here: with ``R`` at its floor, ``H`` spans ~1e9 and no trial step of
``0.8^k, k < 30`` decreased ``ℓ`` near the solution of a 2-box tower, which then exploded.)
``line_search="armijo"`` keeps the seed's Alg. 4 line 5 — Armijo backtracking ``α ∈ {1, β, β², …}``,
``c = 1e-4``, ``β = 0.8``, all trials evaluated at once, the largest admissible kept — except that
the iterate does not move when no trial is admissible (the objective never increases).

Stopping (besides ``tolerance`` on the CCP criterion). With ``R`` at its floor the CCP
criterion of ``λ(v)`` can stall far above any useful tolerance: ``λ(v)`` amplifies the round-off
of ``A v + g`` by ``R⁻¹`` (~1e9 relative to ``G``), so on robot scenes it plateaus while the
forces already agree closely with ADMM-CCP's.
Because ``ℓ`` is 1-strongly convex, ``‖v − v*‖ ≤ ‖∇ℓ(v)‖``; the solver therefore also stops —
and reports convergence — when the computed gradient is within ``round_off_margin`` times a
first-order bound of its own evaluation error (Drake's SAP stops on the gradient norm too,
with a fixed relative tolerance; this bound adapts it to the conditioning)::

    δc   = ε (|A| |v| + |g|)                          (round-off of c = A v + g, per row)
    δλ_i ≤ ‖D⁻¹ δc‖_i / min_i √R                      (per contact i: P is non-expansive)
    ‖∇ℓ‖ ≤ margin · ε · ‖ |A|ᵀ (δλ/ε + |λ|) ‖           (|A|ᵀ: propagation through Aᵀ λ)

so the velocity error at the stop is at most twice that bound. The bound is ``ε·cond``-scaled, so
on well-conditioned problems (compliance well above the floor) the tolerance fires first.

Frictionless contacts (``ContactProblem.num_frictionless``, the joint limits of a multibody step)
enter with their normal row only: the projection onto the ``μ = 0`` cone is ``(0, 0, max(x_n, 0))``
whatever ``x_T`` is, so their tangent rows never reach ``λ``, ``ℓ``, ``∇ℓ`` or ``H`` (on the
humanoid's 8 contact and 21 limit slots: 45 rows instead of 87).

Box and bilateral slots (``num_box``, ``num_bilateral``) enter row by row like the frictionless
normals, with their own projection of the scaled row: ``clip(x, ±b √R_N)`` for a box (its normal
row only), the identity for each of a bilateral slot's three rows; ``∂P`` is 1 inside the bounds.
The objective's term of such a row is ``h(x) = P(x)·x − ½ P(x)²``, the conjugate of the set's
indicator plus ``½‖·‖²`` (it equals ``½ P(x)²`` only on a cone); gradient and Hessian keep the
same form. The forces are those of the CCP with these sets (ADMM-CCP's, measured to 1e-13).

Spin slots (``ContactProblem.num_spin``: MuJoCo's torsional and rolling friction under its
elliptic cone, ``condim`` 4 and 6) join their cone's tangents: the scaled cone is round over all
five friction rows, ``‖x_T‖ ≤ μ √(R_T / R_N) x_N``, once a spin row with coefficient ``μ_j`` is
posed with compliance ``R_T μ² / μ_j²`` — MuJoCo's own relation (``mj_makeImpedance``: ``R[j+1]
= R[1] μ₁² / μ_j²``), which this solver imposes whatever the problem's compliance holds there
(as it merges the two tangent compliances). Its ``D⁻¹`` is then ``(μ_j / μ) / √R_T``, zero for a
row without friction, whose force stays 0. Projection, its Jacobian and the line search's closed
forms are those of the 2-D cone with ``‖y_T‖`` over five components.

Compliance must be positive (the primal is "viable only when R is non-null"): rows with
``R < min_compliance × tr(G)/3n`` are raised to that floor. The per-contact tangential compliance is
``R_T = √(R_t1 R_t2)`` (Drake's model has ``R_t1 = R_t2``).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .._math import safe_sqrt, sum_in_order
from .._types import Choice
from ._problem import (ContactProblem, project_cone_components,
                      project_cone_jacobian_components, project_wide_cone_components,
                      project_wide_cone_jacobian_components, spin_cone_criteria, spin_ratios,
                      wide_cone_branches)
from ._solver import ContactSolver

__all__ = ["PrimalNewton", "NewtonState", "LineSearch", "scaled_cone_rows"]


class LineSearch(Choice):
    """The step length along the Newton direction: ``EXACT`` (the piecewise-smooth objective's
    minimiser along the line) or ``ARMIJO`` (backtracking to sufficient decrease)."""

    EXACT = "exact"
    ARMIJO = "armijo"


class NewtonState(eqx.Module):
    """Iterate of :class:`PrimalNewton`.

    It stores the ``r = 3 n_c + n_f`` rows that can carry force: the ``(t1, t2, n)`` rows of the
    ``n_c`` contacts with friction, then the normal row alone of each of the ``n_f``
    frictionless ones (see :class:`~jaxsim_contact.contact.ContactProblem`'s
    ``num_frictionless``). Vectors are worked on by component (strided slices, ``(n_c,)`` each):
    elementwise work on components fuses into one loop where an ``(n, 3)`` layout makes XLA:CPU
    emit many small programs; matrices keep their row order (a permuted copy of ``A`` cost more
    than it saved).

    Attributes:
      v: ``(k,)`` primal variable; force: ``(n, 3)`` ``λ(v)``;
      sqrt_delassus: ``A`` ``(r, k)``, those rows of a factor of ``G = A Aᵀ`` (``k = 3n``
        without a Delassus factor); abs_sqrt_delassus: ``|A|`` (for the round-off bound);
      offset: ``g`` ``(r,)``; compliance: the problem's ``R`` ``(r,)`` (for the criterion);
      inverse_sqrt_compliance: ``D⁻¹ = R̂^{-1/2}`` ``(r,)`` (``R̂`` floored, tangents merged);
      scaled_friction: ``μ √(R_T / R_N)`` ``(n_c,)`` of the contacts with friction;
      scaled: ``x = −D⁻¹ (A v + g)`` ``(r,)`` at ``v``;
      gradient: ``∇ℓ(v) = v − Aᵀ λ(v)`` ``(k,)``; gradient_round_off: scalar bound of its
        evaluation error (module docstring).
      single_lower, single_upper: with box or bilateral slots, the bounds ``(r_f,)`` of the
        scaled rows stored one by one (frictionless ``[0, ∞)``, box ``±b √R``, bilateral
        ``(−∞, ∞)``); ``None`` otherwise (frictionless rows only: ``max(x, 0)``).
    The step-invariant scalings are computed once, in ``init``: a division or a square root costs
    several multiplications.
    """

    v: jax.Array
    force: jax.Array
    sqrt_delassus: jax.Array
    abs_sqrt_delassus: jax.Array
    offset: jax.Array
    compliance: jax.Array
    inverse_sqrt_compliance: jax.Array
    scaled_friction: jax.Array
    scaled: jax.Array
    gradient: jax.Array
    gradient_round_off: jax.Array
    single_lower: jax.Array | None = None
    single_upper: jax.Array | None = None


def _stored_rows(problem: ContactProblem, z):
    """The rows ``(r, ...)`` stored by :class:`NewtonState` of the problem's rows ``z``
    ``(3n, ...)``: the three rows of each cone and of each spin slot, the normal row alone of
    each frictionless and box slot, the three rows of each bilateral slot."""
    single = problem.num_frictionless + problem.num_box
    if single == 0 and problem.num_bilateral == 0:
        return z
    head = 3 * (problem.num_cones + problem.num_spin)
    normals = z[head:head + 3 * single].reshape((single, 3) + z.shape[1:])[:, 2]
    return jnp.concatenate([z[:head], normals, z[head + 3 * single:]])


def _split(problem: ContactProblem, z):
    """Stored rows ``(r,)`` → ``(z1, z2, zn)`` ``(n_c,)`` each, the components of the contacts
    with friction, and ``zf`` ``(n_f,)``, the frictionless normals (and the other single and
    bilateral rows). Slices of a vector: they fuse into their consumers (padding the
    frictionless contacts' tangents with zeros made XLA:CPU emit a concatenation per call).
    Spin rows (between the two) are :func:`_split_spin`'s."""
    nc3 = 3 * problem.num_cones
    return z[0:nc3:3], z[1:nc3:3], z[2:nc3:3], z[nc3 + 3 * problem.num_spin:]


def _split_spin(problem: ContactProblem, z):
    """Stored rows ``(r,)`` → the spin slots' three components ``(n_s,)`` each (torsion,
    rolling about t1, t2); ``()`` without spin slots."""
    if not problem.num_spin:
        return ()
    start, stop = 3 * problem.num_cones, 3 * (problem.num_cones + problem.num_spin)
    return tuple(z[start + j:stop:3] for j in range(3))


def _join(z1, z2, zn, zf, spin=()):
    """Inverse of :func:`_split` (and :func:`_split_spin`)."""
    head = jnp.stack([z1, z2, zn], axis=1).reshape(-1)
    parts = [head] + ([jnp.stack(spin, axis=1).reshape(-1)] if spin else [])
    parts += [zf] if zf.shape[0] else []
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts)


def scaled_cone_rows(R: jax.Array, friction: jax.Array, spin_friction: jax.Array, num_cones: int):
    """The scaling this solver poses a problem in (module docstring), from the per-slot
    compliance ``R`` ``(n, 3)`` (floored): ``(R̂ (n, 3), D⁻¹ (n, 3), μ' (n_c,))`` — tangent
    compliances merged to ``R_T = √(R_t1 R_t2)``, a spin slot's three rows at its cone's
    ``R_T`` with ``D⁻¹ = (μ_j / μ) / √R_T``, and the scaled friction ``μ √(R_T / R_N)`` of the
    cones. Also the fixed-point implicit rule's (:mod:`._compliant_implicit`), which must pose
    the same problem."""
    nc, ns = num_cones, spin_friction.shape[0]
    r_t = jnp.sqrt(R[:, 0] * R[:, 1])
    scaled_friction = friction[:nc] * jnp.sqrt(r_t[:nc] / R[:nc, 2])
    merged = jnp.stack([r_t, r_t, R[:, 2]], axis=1)
    if ns:
        merged = merged.at[nc:nc + ns].set(jnp.broadcast_to(r_t[:nc, None], (nc, 3)))
    inverse_sqrt = 1.0 / jnp.sqrt(merged)
    if ns:
        inverse_sqrt = inverse_sqrt.at[nc:nc + ns].multiply(spin_ratios(friction[:nc], spin_friction))
    return merged, inverse_sqrt, scaled_friction


def _single_bounds(problem: ContactProblem, R: jax.Array):
    """``(lower, upper)`` ``(r_f,)`` bounds of the single rows in the scaled variable
    ``x = D y`` (``λ = D⁻¹ P(x)``, ``D = R^{1/2}``): frictionless ``[0, ∞)``, box ``±b √R_N``,
    bilateral unbounded; ``(None, None)`` without box or bilateral slots."""
    if not problem.has_box_or_bilateral:
        return None, None
    dtype = R.dtype
    nf, nb, ne = problem.num_frictionless, problem.num_box, problem.num_bilateral
    nc = problem.num_cones + problem.num_spin  # the first single slot
    inf = jnp.full((), jnp.inf, dtype)
    box_bound = problem.bound[nc + nf:nc + nf + nb] * jnp.sqrt(R.reshape(-1, 3)[nc + nf:nc + nf + nb, 2])
    lower = jnp.concatenate([jnp.zeros((nf,), dtype), -box_bound, jnp.full((3 * ne,), -inf)])
    upper = jnp.concatenate([jnp.full((nf,), inf), box_bound, jnp.full((3 * ne,), inf)])
    return lower, upper


def _project_single(state, x):
    """The single rows' projection: ``max(x, 0)`` (frictionless rows only) or ``clip`` onto
    their bounds (:func:`_single_bounds`)."""
    if state.single_lower is None:
        return jnp.maximum(x, 0.0)
    return jnp.clip(x, state.single_lower, state.single_upper)


def _single_interior(state, x):
    """Where the single rows' projection has derivative 1 (0 elsewhere)."""
    if state.single_lower is None:
        return x > 0
    return (x > state.single_lower) & (x < state.single_upper)


def _single_criteria(problem: ContactProblem, force, velocity, frictionless_worst):
    """Per stored single row: the frictionless rows' CCP criterion, the box rows' and the
    bilateral rows' (as :func:`~jaxsim_contact.contact._problem.contact_residuals`), and which
    rows belong to an active slot."""
    nf, nb = problem.num_frictionless, problem.num_box
    nc = problem.num_cones + problem.num_spin  # the first single slot
    bound = problem.bound[nc + nf:nc + nf + nb]
    lam_b, sig_b = force[nf:nf + nb], velocity[nf:nf + nb]
    box_dual = jnp.where(lam_b > 0, jnp.maximum(sig_b, 0.0),
                         jnp.where(lam_b < 0, jnp.maximum(-sig_b, 0.0), jnp.abs(sig_b)))
    box = jnp.maximum(jnp.maximum(jnp.maximum(jnp.abs(lam_b) - bound, 0.0), box_dual),
                      jnp.maximum(bound - jnp.abs(lam_b), 0.0) * jnp.abs(sig_b))
    bilateral = jnp.abs(velocity[nf + nb:])
    worst = jnp.concatenate([frictionless_worst[:nf], box, bilateral])
    active = problem.active[nc:]
    rows_active = jnp.concatenate([active[:nf + nb], jnp.repeat(active[nf + nb:], 3)])
    return worst, rows_active


@jax.custom_jvp
def _max_or_zero(x):
    """``max(0, max x)`` of a 1-D array (``jnp.max(x, initial=0.0)``, the same value) whose
    derivative is ``x``'s tangent at ONE maximiser (``jnp.argmax``; 0 when the maximum is ``≤ 0``).

    ``jnp.max``'s own rule finds the maximisers by comparing ``x == max x`` and divides by their
    count. XLA recomputes ``x`` in every fusion that reads it, and the comparison only holds if
    each copy rounds alike: with ``--xla_backend_optimization_level=0`` LLVM contracted ``a·b + c``
    to an FMA in the kernel that counts but not in the one that reduces, no entry compared equal,
    and the count 0 made the unrolled derivative 0/0 = NaN (docs/sharp_bits.md "compile time").
    One ``argmax`` (a single reduction) needs no comparison between copies."""
    return jnp.max(x, initial=0.0)


@_max_or_zero.defjvp
def _max_or_zero_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = _max_or_zero(x)
    if x.shape[0] == 0:
        return out, jnp.zeros_like(out)
    i = jnp.argmax(x)
    return out, jnp.where(x[i] > 0, t[i], jnp.zeros_like(t[i]))


class PrimalNewton(ContactSolver):
    """Newton's method on the primal compliant CCP (seed 001 Alg. 4) with an exact line search
    (default) or the seed's Armijo backtracking.

    Args:
      max_iterations: static Newton iteration cap.
      tolerance: dynamic; stop when the CCP ``ε_abs`` (without De Saxcé) at ``λ(v)`` is ``≤``.
      min_compliance: dynamic relative floor for ``R`` (see module docstring), default 1e-9.
      line_search: static ``"exact"`` (default) or ``"armijo"`` (see the module docstring).
      line_search_steps: static cap on the trials of the exact line search, or the number of
        backtracking trials (Armijo); default 40.
      line_search_tolerance: dynamic; the exact line search stops at ``|φ'(α)| ≤`` this times
        ``|φ'(0)|`` (default 1e-6).
      armijo: dynamic sufficient-decrease constant ``c`` (1e-4); backtracking: dynamic ``β`` (0.8)
        (Armijo only).
      round_off_margin: dynamic; also stop (converged) once ``‖∇ℓ‖`` is within this factor of its
        round-off bound (module docstring), default 1; ``0`` disables the rule.
    """

    max_iterations: int = eqx.field(static=True)
    line_search_steps: int = eqx.field(static=True)
    tolerance: jax.Array
    min_compliance: jax.Array
    armijo: jax.Array
    backtracking: jax.Array
    round_off_margin: jax.Array
    line_search_tolerance: jax.Array
    line_search: str = eqx.field(static=True, default="exact")
    formulation: str = eqx.field(static=True, default="ccp")

    def __init__(self, max_iterations: int = 100, tolerance=1e-6, min_compliance=1e-9,
                 line_search: str = "exact", line_search_steps: int = 40, armijo=1e-4,
                 backtracking=0.8, round_off_margin=1.0, line_search_tolerance=1e-6):
        if int(max_iterations) < 1 or int(line_search_steps) < 1:
            raise ValueError("max_iterations and line_search_steps must be >= 1")
        self.line_search = LineSearch.parse(line_search, "PrimalNewton line_search")
        self.armijo = jnp.asarray(armijo)
        self.backtracking = jnp.asarray(backtracking)
        self.round_off_margin = jnp.asarray(round_off_margin)
        self.line_search_tolerance = jnp.asarray(line_search_tolerance)
        self.max_iterations = int(max_iterations)
        self.line_search_steps = int(line_search_steps)
        self.tolerance = jnp.asarray(tolerance)
        self.min_compliance = jnp.asarray(min_compliance)
        self.formulation = "ccp"

    # -- primal objective ----------------------------------------------------------------------

    @staticmethod
    def _scaled(state, v):
        """``x = D y = −D⁻¹ (A v + g)`` ``(r,)``."""
        return -(state.sqrt_delassus @ v + state.offset) * state.inverse_sqrt_compliance

    @staticmethod
    def _project(problem, state, x):
        """``(p1, p2, pn, pf, ps)``: the projection of the scaled rows ``x`` onto ``K'`` by
        component (as :func:`_split`; ``ps`` the spin components, :func:`_split_spin`, which
        share their cone), and onto the single rows' sets."""
        x1, x2, xn, xf = _split(problem, x)
        spin = _split_spin(problem, x)
        pf = _project_single(state, xf)
        if not spin:
            return (*project_cone_components(x1, x2, xn, state.scaled_friction), pf, ())
        tangents, pn = project_wide_cone_components((x1, x2, *spin), xn, state.scaled_friction)
        return tangents[0], tangents[1], pn, pf, tangents[2:]

    def _objective(self, problem, state, v):
        x = self._scaled(state, v)
        p1, p2, pn, pf, ps = self._project(problem, state, x)
        cones = 0.5 * sum(jnp.sum(c * c) for c in (p1, p2, pn, *ps))
        if not problem.has_box_or_bilateral:
            return 0.5 * v @ v + cones + 0.5 * jnp.sum(pf * pf)
        # h(x) = max_{p ∈ C} p·x − ½‖p‖² = P(x)·x − ½‖P(x)‖²: ½‖P(x)‖² on a cone (x − P(x) ⊥ P(x)),
        # not on a box or a bilateral row
        xf = _split(problem, x)[3]
        return 0.5 * v @ v + cones + jnp.sum(pf * xf - 0.5 * pf * pf)

    def _at(self, problem, state, v):
        """``state`` moved to ``v``: ``x``, force ``λ(v)``, ``∇ℓ(v)`` and its round-off bound."""
        A = state.sqrt_delassus
        inv_d = state.inverse_sqrt_compliance
        x = self._scaled(state, v)
        d1, d2, dn, df = _split(problem, inv_d)
        ds = _split_spin(problem, inv_d)
        p1, p2, pn, pf, ps = self._project(problem, state, x)
        f1, f2, fn, ff = p1 * d1, p2 * d2, pn * dn, pf * df
        fs = tuple(p * d for p, d in zip(ps, ds))
        force_rows = _join(f1, f2, fn, ff, fs)
        gradient = v - A.T @ force_rows
        eps = jnp.finfo(v.dtype).eps
        # per contact with friction: ‖D⁻¹ δc‖ / min √R over its rows; per frictionless row: |δc|/R
        error_rows = eps * (state.abs_sqrt_delassus @ jnp.abs(v) + jnp.abs(state.offset)) * inv_d
        e1, e2, en, ef = _split(problem, error_rows)
        es = _split_spin(problem, error_rows)
        largest_d = jnp.maximum(jnp.maximum(d1, d2), dn)
        for d in ds:
            largest_d = jnp.maximum(largest_d, d)
        cone_error = jnp.sqrt(sum_in_order([e * e for e in (e1, e2, en, *es)])) * largest_d
        rows = (_join(cone_error, cone_error, cone_error, ef * df, (cone_error,) * len(es))
                + eps * jnp.abs(force_rows))
        force = jnp.stack([f1, f2, fn], axis=1)
        if fs:
            force = jnp.concatenate([force, jnp.stack(fs, axis=1)])
        if ff.shape[0]:
            single = problem.num_frictionless + problem.num_box
            zero = jnp.zeros_like(ff[:single])
            force = jnp.concatenate([force, jnp.stack([zero, zero, ff[:single]], axis=1),
                                     ff[single:].reshape(-1, 3)])
        return eqx.tree_at(
            lambda s: (s.v, s.force, s.scaled, s.gradient, s.gradient_round_off), state,
            (v, force, x, gradient, jnp.linalg.norm(state.abs_sqrt_delassus.T @ rows)))

    # -- protocol ------------------------------------------------------------------------------

    def init(self, problem: ContactProblem, warm_force, warm_rho):
        return self.init_with_primal(problem, warm_force, warm_rho, None)

    def init_with_primal(self, problem: ContactProblem, warm_force, warm_rho, warm_primal):
        """Start from ``warm_primal`` (a ``(k,)`` guess of ``Bᵀ λ``, used only with a Delassus
        factor, where ``A = B``), else from ``Aᵀ warm_force`` — or from ``v = 0`` when that has the
        lower ``ℓ`` (MuJoCo's choice between its warm start and the unconstrained acceleration).

        Of the starts tried on soft-contact robot falls, last step's generalized force takes the
        fewest Newton iterations, fewer than ``Aᵀ λ_prev`` (last step's forces matched by key) or
        0; adding ``Aᵀ λ_prev`` as a third candidate made it worse: the lowest ``ℓ`` is not the
        fewest iterations."""
        m = problem.free_velocity.shape[0]
        dtype = problem.free_velocity.dtype
        if problem.delassus_factor is not None:
            # inactive rows of the sanitised factor vanish (their identity blocks of G are not in
            # B Bᵀ); y = −R⁻¹ (A v + g) is then 0 there, so their force is 0 as with the full G.
            # G is never formed: tr G = ‖B‖²_F plus one per identity row of an inactive contact.
            A = problem.delassus_factor
            trace = jnp.sum(A * A) + 3.0 * jnp.sum(~problem.active).astype(dtype)
        else:
            evals, Q = jnp.linalg.eigh(problem.delassus)
            A = Q * jnp.sqrt(jnp.maximum(evals, 0.0))[None, :]
            trace = jnp.trace(problem.delassus)
        floor = jnp.asarray(self.min_compliance, dtype) * jnp.maximum(trace / m,
                                                                       jnp.finfo(dtype).tiny)
        R, inverse_sqrt, scaled_friction = scaled_cone_rows(
            jnp.maximum(problem.compliance, floor).reshape(-1, 3), problem.friction,
            problem.spin_friction, problem.num_cones)
        R = R.reshape(m)
        A = _stored_rows(problem, A)
        # the warm start's tangent forces of frictionless contacts are outside their cone: dropped
        if warm_primal is not None and problem.delassus_factor is not None:
            v = warm_primal
        else:
            v = A.T @ _stored_rows(problem, warm_force.reshape(m))
        offset = _stored_rows(problem, problem.free_velocity)
        inverse_sqrt_compliance = _stored_rows(problem, inverse_sqrt.reshape(m))
        state = NewtonState(v, warm_force, A, jnp.abs(A), offset,
                            _stored_rows(problem, problem.compliance),
                            inverse_sqrt_compliance, scaled_friction,
                            jnp.zeros_like(offset), jnp.zeros_like(v), jnp.zeros((), dtype),
                            *_single_bounds(problem, R))
        # ℓ(0) = ½‖P(−D⁻¹ g)‖² needs no product with A (cones and frictionless rows)
        if problem.has_box_or_bilateral:
            cold = self._objective(problem, state, jnp.zeros_like(v))
        else:
            p1, p2, pn, pf, ps = self._project(problem, state,
                                               -state.offset * state.inverse_sqrt_compliance)
            cold = 0.5 * sum(jnp.sum(c * c) for c in (p1, p2, pn, pf, *ps))
        cold_is_better = cold < self._objective(problem, state, v)
        return self._at(problem, state, jnp.where(cold_is_better, 0.0, v))

    def step(self, problem, state):
        A = state.sqrt_delassus
        k = A.shape[1]
        n, nc, ns = problem.num_contacts, problem.num_cones, problem.num_spin
        d1, d2, dn, df = _split(problem, state.inverse_sqrt_compliance)
        x1, x2, xn, xf = _split(problem, state.scaled)
        A3 = A[:3 * nc].reshape(nc, 3, k)
        if ns:
            WA = self._spin_cone_rows(problem, state, A3, A[3 * nc:3 * (nc + ns)].reshape(ns, 3, k))
        else:
            j11, j12, j1n, j22, j2n, jnn = project_cone_jacobian_components(x1, x2, xn, state.scaled_friction)
            w = [[j * da * db for j, db in zip(row, (d1, d2, dn))]
                 for row, da in zip(((j11, j12, j1n), (j12, j22, j2n), (j1n, j2n, jnn)), (d1, d2, dn))]
            # Aᵀ blockdiag(W) A with W = D⁻¹ ∂P D⁻¹ without forming the block-diagonal matrix: W A
            # column by column of W (an einsum here made XLA:CPU transpose an (n, 3, k) array every
            # iteration); a frictionless contact's only row couples to itself
            WA = sum(jnp.stack([w[a][c] for a in range(3)], axis=1)[:, :, None] * A3[:, None, c, :]
                     for c in range(3)).reshape(3 * nc, k)
        if n > nc + ns:  # ∂ max(x, 0) / R (∂ of the single rows' projection)
            WA = jnp.concatenate([WA, jnp.where(_single_interior(state, xf), df * df, 0.0)[:, None]
                                  * A[3 * (nc + ns):]])
        H = jnp.eye(k, dtype=A.dtype) + A.T @ WA
        L = jnp.linalg.cholesky(H)
        grad = state.gradient  # at v, from _at (init or the previous step)
        dv = -jax.scipy.linalg.cho_solve((L, True), grad)
        dv = jnp.where(jnp.all(jnp.isfinite(dv)), dv, -grad)
        if self.line_search == "exact":
            alpha = self._line_search(problem, state, dv)
        else:
            alpha = self._armijo(problem, state, state.v, dv, grad @ dv)
        return self._at(problem, state, state.v + alpha * dv)

    @staticmethod
    def _spin_cone_rows(problem, state, A_cone, A_spin):
        """``W A`` ``(3 n_c + 3 n_s, k)`` of the cone and spin rows (as :meth:`step` without spin)
        over the six components of each widened cone: ``(t1, t2, torsion, roll1, roll2, n)``.
        ``A_cone`` ``(n_c, 3, k)``, ``A_spin`` ``(n_s, 3, k)``."""
        d1, d2, dn, _ = _split(problem, state.inverse_sqrt_compliance)
        ds = _split_spin(problem, state.inverse_sqrt_compliance)
        x1, x2, xn, _ = _split(problem, state.scaled)
        xs = _split_spin(problem, state.scaled)
        jac = project_wide_cone_jacobian_components((x1, x2, *xs), xn, state.scaled_friction)
        d = (d1, d2, *ds, dn)
        rows = (A_cone[:, 0], A_cone[:, 1], A_spin[:, 0], A_spin[:, 1], A_spin[:, 2], A_cone[:, 2])
        WA = [sum_in_order([(jac[a][c] * d[a] * d[c])[:, None] * rows[c] for c in range(6)])
              for a in range(6)]
        cone = jnp.stack([WA[0], WA[1], WA[5]], axis=1).reshape(-1, A_cone.shape[-1])
        spin = jnp.stack(WA[2:5], axis=1).reshape(-1, A_cone.shape[-1])
        return jnp.concatenate([cone, spin])

    def _line_search(self, problem, state, dv):
        """Minimiser of ``φ(α) = ℓ(v + α Δv)`` over ``α ≥ 0`` (0 if ``Δv`` is not a descent
        direction): safeguarded Newton on ``φ'`` (see the module docstring)."""
        v, dv, x0, inv_d, mu, A = jax.lax.stop_gradient(
            (state.v, dv, state.scaled, state.inverse_sqrt_compliance, state.scaled_friction,
             state.sqrt_delassus))
        # D y(v + α Δv) = x0 − α s by components (the spin rows join their cone's tangents)
        x1, x2, xn, xf = _split(problem, x0)
        s_rows = (A @ dv) * inv_d
        s1, s2, sn, sf = _split(problem, s_rows)
        x_tangents = (x1, x2, *_split_spin(problem, x0))
        s_tangents = (s1, s2, *_split_spin(problem, s_rows))
        v_dv, dv_dv = v @ dv, dv @ dv
        dtype = v.dtype
        one = jnp.ones((), dtype)

        def slope_and_curvature(alpha):
            # φ' = (v + αΔv)·Δv − P·s and φ'' = ‖Δv‖² + sᵀ ∂P s (½‖P_K(x)‖² has gradient P_K(x)),
            # by contact in closed form: inside the cone P = y, ∂P = I; in its polar both vanish;
            # on its surface (u = y_T/t, t = ‖y_T‖, a = u·s_T, β = (μ t + y_N)/(1 + μ²))
            # P·s = β (μ a + s_N), sᵀ ∂P s = (μ a + s_N)² / (1 + μ²) + μ β (‖s_T‖² − a²) / t.
            # Also the scale of φ''s terms: |φ'| below a few ε of it is round-off, not a slope.
            y_tangents = tuple(x - alpha * s for x, s in zip(x_tangents, s_tangents))
            yn = xn - alpha * sn
            t, inside, polar = wide_cone_branches(y_tangents, yn, mu)
            t_safe = jnp.where(t > 0, t, one)
            scale = 1.0 / (1.0 + mu * mu)
            beta = (mu * t + yn) * scale
            ys = sum_in_order([y * s for y, s in zip(y_tangents, s_tangents)])
            abs_ys = sum_in_order([jnp.abs(y * s) for y, s in zip(y_tangents, s_tangents)])
            a = ys / t_safe
            s_t = sum_in_order([s * s for s in s_tangents])
            surface_ps = beta * (mu * a + sn)
            surface_abs = beta * (mu * abs_ys / t_safe + jnp.abs(sn))
            surface_curvature = (mu * a + sn) ** 2 * scale + mu * beta * (s_t - a * a) / t_safe
            ps = jnp.where(polar, 0.0, jnp.where(inside, ys + yn * sn, surface_ps))
            sps = jnp.where(polar, 0.0, jnp.where(inside, s_t + sn * sn, surface_curvature))
            abs_ps = jnp.where(polar, 0.0, jnp.where(inside, abs_ys + jnp.abs(yn * sn), surface_abs))
            # frictionless normals: P = max(y, 0), ∂P = [y > 0]
            yf = xf - alpha * sf
            pf = _project_single(state, yf)
            ps = jnp.sum(ps) + jnp.sum(pf * sf)
            sps = jnp.sum(sps) + jnp.sum(jnp.where(_single_interior(state, yf), sf * sf, 0.0))
            scale_terms = jnp.abs(v_dv) + alpha * dv_dv + jnp.sum(abs_ps) + jnp.sum(jnp.abs(pf * sf))
            return v_dv + alpha * dv_dv - ps, dv_dv + sps, scale_terms

        eps = jnp.finfo(dtype).eps
        slope0 = slope_and_curvature(jnp.zeros((), dtype))[0]
        target = jnp.asarray(self.line_search_tolerance, dtype) * jnp.abs(slope0)
        inf = jnp.asarray(jnp.inf, dtype)

        def body(carry):
            alpha, lo, hi, previous, k, _ = carry
            slope, curvature, scale = slope_and_curvature(alpha)
            below = slope < 0
            lo, hi = jnp.where(below, alpha, lo), jnp.where(below, hi, alpha)
            bounded = jnp.isfinite(hi)
            done = ((jnp.abs(slope) <= jnp.maximum(target, 8.0 * eps * scale))
                    | (bounded & (hi - lo <= 4.0 * eps * hi)))
            newton = alpha - slope / jnp.where(curvature > 0, curvature, 1.0)
            inside = (curvature > 0) & (newton > lo) & (newton < hi)
            # Newton while it stays in the bracket and halves |φ'|; else bisect (or double while
            # no upper end is known): φ' is monotone, so the bracket always holds the minimiser
            take_newton = inside & (~bounded | (jnp.abs(slope) <= 0.5 * previous))
            fallback = jnp.where(bounded, 0.5 * (lo + hi), 2.0 * alpha)
            alpha = jnp.where(done, alpha, jnp.where(take_newton, newton, fallback))
            return alpha, lo, hi, jnp.abs(slope), k + 1, done

        def cond(carry):
            *_, k, done = carry
            return (~done) & (k < self.line_search_steps)

        zero = jnp.zeros((), dtype)
        carry = (one, zero, inf, jnp.abs(slope0), jnp.zeros((), jnp.int32), jnp.zeros((), bool))
        alpha = jax.lax.while_loop(cond, body, carry)[0]
        return jnp.where(slope0 < 0, alpha, 0.0)

    def _armijo(self, problem, state, v, dv, slope):
        """Largest ``β^k`` with ``ℓ(v + β^k Δv) ≤ ℓ(v) + c β^k slope`` (seed 001 Alg. 4 line 5),
        0 if none (see the module docstring)."""
        dtype = v.dtype
        f0 = self._objective(problem, state, v)
        alphas = jnp.asarray(self.backtracking, dtype) ** jnp.arange(self.line_search_steps, dtype=dtype)
        fs = jax.vmap(lambda a: self._objective(problem, state, v + a * dv))(alphas)
        ok = fs <= f0 + jnp.asarray(self.armijo, dtype) * alphas * slope
        return jnp.where(jnp.any(ok), alphas[jnp.argmax(ok)], 0.0)

    def criterion(self, problem, state):
        """The CCP ``ε_abs`` (:func:`~jaxsim_contact.contact.criterion` with ``"ccp"``) at
        ``λ(v)``, from the stored rows: ``σ = A Aᵀ λ + R λ + g`` with ``Aᵀ λ = v − ∇ℓ`` (one
        product with ``A``). The tangent velocities of frictionless contacts, which it does not
        store, do not enter the CCP criterion: ``μ = 0`` makes the force's tangents 0 and the
        cone the normal half-line, whose projection ignores tangents."""
        nc, ns = problem.num_cones, problem.num_spin
        l1, l2, ln = state.force[:nc, 0], state.force[:nc, 1], state.force[:nc, 2]
        stored_force = _stored_rows(problem, state.force.reshape(-1))
        lf = _split(problem, stored_force)[3]
        ls = _split_spin(problem, stored_force)
        force_rows = _join(l1, l2, ln, lf, ls)
        sigma = (state.sqrt_delassus @ (state.v - state.gradient) + state.compliance * force_rows
                 + state.offset)
        s1, s2, sn, sf = _split(problem, sigma)
        mu = problem.friction[:nc]
        if ns:
            primal, dual, complementarity = spin_cone_criteria(
                (l1, l2, ln), ls, (s1, s2, sn), _split_spin(problem, sigma), mu,
                spin_ratios(mu, problem.spin_friction))
        else:
            p1, p2, pn = project_cone_components(l1, l2, ln, mu)
            q1, q2, qn = project_cone_components(-s1, -s2, -sn, mu)
            # safe: residuals are often exactly 0, and the unrolled gradient mode differentiates them
            primal = safe_sqrt((l1 - p1) ** 2 + (l2 - p2) ** 2 + (ln - pn) ** 2)
            dual = safe_sqrt(q1 * q1 + q2 * q2 + qn * qn)
            complementarity = jnp.abs(l1 * s1 + l2 * s2 + ln * sn)
        worst = jnp.maximum(jnp.maximum(primal, dual), complementarity)
        # frictionless (μ = 0): K is the normal half-line and λ_T = 0
        worst_f = jnp.maximum(jnp.maximum(jnp.maximum(-lf, 0.0), jnp.maximum(-sf, 0.0)), jnp.abs(lf * sf))
        active_f = problem.active[nc + ns:]
        if problem.has_box_or_bilateral:
            worst_f, active_f = _single_criteria(problem, lf, sf, worst_f)
        return jnp.maximum(_max_or_zero(jnp.where(problem.active[:nc], worst, 0.0)),
                           _max_or_zero(jnp.where(active_f, worst_f, 0.0)))

    def at_precision_limit(self, problem, state):
        margin = jnp.asarray(self.round_off_margin, state.v.dtype)
        return jnp.linalg.norm(state.gradient) <= margin * state.gradient_round_off
