"""Smoothed gradients: implicit derivative of the relaxed-complementarity problem (seed 002 §V-D).

The forward solve is unchanged: the force is the solver's exact (unrelaxed) solution ``λ*``.
Only its derivative changes. At a contact mode switch (make/break, stick/slip) the exact solution
map ``θ ↦ λ*(θ)`` has a kink, and its implicit derivative (:mod:`._implicit`, seed 004 §III-B) is
one of the one-sided derivatives: it jumps. Seed 002 eq. 22 (after Dojo) replaces every
complementarity ``a ∘ b = 0`` by ``a ∘ b = ρ e`` with a user-set relaxation ``ρ > 0``; the relaxed
solution ``λ_ρ(θ)`` is a smooth function of the problem data ``θ = (G, g, μ, R, ρ)`` and its
derivative varies smoothly through contact make/break and stick/slip. As ``ρ → 0`` it tends to
the implicit derivative of the exact problem away from mode switches.

The relaxed problem, per contact ``i`` (frame ``(t1, t2, n)``, normal last), unknowns the force
``λ_i`` and the slack ``s_i`` (the velocity of the complementarity pair)::

    s_i − σ̄_i(λ) = 0                                              (3 rows, velocity units)
    λ_N s_N + λ_Tᵀ s_T = ρ                                          (1 row)
    s_N λ_T + μ² λ_N s_T = 0                                        (2 rows)
    λ_i ∈ int K_μ = {‖λ_T‖ < μ λ_N},   s_i ∈ int K_μ* = {μ‖s_T‖ < s_N}

with ``σ = (G + diag(R)) λ + g`` and ``σ̄ = σ + (0, 0, μ‖σ_T‖)`` (De Saxcé, seed 001 eq. 14) for
the NCP, ``σ̄ = σ`` for the CCP. The last two lines are the Jordan (cone) product
``x ∘ y = (xᵀy, x₀ȳ + y₀x̄) = ρ e`` of seed 002 eq. 22 in the scaled second-order-cone coordinates
``x = (μλ_N, λ_T)``, ``y = (s_N/μ, s_T)`` (``xᵀy = λᵀs``), with the vector row multiplied by ``μ``
so that frictionless contacts (``μ = 0``: ``λ_T = 0``, ``λ_N s_N = ρ``) need no special case. As
``ρ → 0`` these are exactly the complementarity conditions ``λ ∈ K_μ, σ̄ ∈ K_μ*, λ ⊥ σ̄`` of the
NCP (CCP). For the CCP the relaxed problem is the central path of the barrier problem
``min ½λᵀAλ + gᵀλ − ρ Σ log(μ²λ_N² − ‖λ_T‖²)/2`` — strictly convex, unique ``λ_ρ`` even for a
rank-deficient (hyperstatic) ``G``.

``λ_ρ`` is computed inside the derivative rule by a primal-dual interior-point Newton method: a
fixed number of damped Newton steps on the residual above (Jacobian by forward-mode autodiff,
``6n × 6n``), step length ``min(1, 0.99 α_max)`` with ``α_max`` the largest step that keeps both
``λ`` and ``s`` in their cones (closed form for second-order cones), started from the exact
solution pushed into the interior: ``λ⁰ = P_K(λ*) + √(ρ/a) e_N``, ``s⁰ = P_K*(σ̄(λ*)) + √(ρ a) e_N``
(``a = tr(A_ii)/3``, so ``λ⁰_N s⁰_N ≥ ρ``). The tangent is then ``dz = −F_z⁻¹ F_θ dθ`` at
``z_ρ = (λ_ρ, s_ρ)`` (implicit function theorem), a ``lax.custom_linear_solve`` with LU factors
(the transposed solve reuses them), so forward and reverse mode both work.

Units: ``ρ`` is the problem's force unit times its velocity unit (``λᵀσ``): N·s·m/s for problems
in impulses, N·m/s² for problems in forces as the simulation pipeline builds them (``σ`` is then
a velocity per time step). A contact switches on over a band of free velocity of width about
``√(ρ a)`` (``a = tr(A_ii)/3``), which is how to pick ``ρ``; ``ρ`` small against ``a λ_N²`` of the
loaded contacts keeps the derivative close to the implicit one there (seed 002 uses
``ρ ∈ [1e-6, 1e-2]`` in its own scaling).

Limits (documented): only the NCP and CCP formulations (the LCP's pyramid has no second-order
cone product; ``ValueError`` at construction). Second derivatives (``jax.hessian``) are not
consistent: ``λ_ρ`` inside the rule is not itself differentiated. If the fixed number of Newton
steps does not reach the relaxed solution (huge ``‖g‖/ρ`` ratios), the tangent is that of the
last iterate; a non-finite iterate gives a zero tangent, never NaN.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._problem import de_saxce, project_cone, project_dual_cone

__all__ = ["RelaxedComplementarity", "smoothed_force", "relaxed_residual", "relaxed_solution",
           "RELAXED_FORMULATIONS"]

#: Formulations with a relaxed (cone-product) counterpart.
RELAXED_FORMULATIONS = ("ncp", "ccp")

#: Fraction of the distance to the cone boundary a Newton step may cover (interior-point rule).
_FRACTION_TO_BOUNDARY = 0.99


class RelaxedComplementarity(eqx.Module):
    """Gradient rule ``"smoothed"``: implicit derivative of the relaxed problem (seed 002 §V-D).

    Pass it as ``gradient=`` to :func:`jaxsim_contact.contact.solve` or to the model options
    (``model.replace_options(gradient=jc.contact.RelaxedComplementarity(relaxation=1e-4))``).
    The forward force stays the exact solution; see the module docstring for the equations.

    Args:
      relaxation: ``ρ > 0``, scalar, dynamic (``jax.Array``; changing it never recompiles, and
        ``jax.grad`` w.r.t. it works). Units: force × velocity of the problem (N·m/s² in the
        simulation pipeline, whose problems are in forces; module docstring). Larger is smoother; ``ρ → 0`` recovers the implicit derivative away
        from mode switches.
      newton_iterations: static positive int, number of interior-point Newton steps that compute
        the relaxed solution inside the derivative rule (default 40).
    Raises:
      ValueError (host side, concrete values only): ``relaxation`` not a finite scalar ``> 0``,
      ``newton_iterations`` not a positive int.
    """

    relaxation: jax.Array
    newton_iterations: int = eqx.field(static=True, default=40)

    def __init__(self, relaxation, newton_iterations: int = 40):
        if not isinstance(relaxation, jax.core.Tracer):
            value = np.asarray(relaxation, dtype=np.float64)
            if value.shape != () or not np.isfinite(value) or value <= 0:
                raise ValueError(
                    "RelaxedComplementarity(relaxation=ρ) needs a finite scalar ρ > 0 (force × "
                    f"velocity of the problem, e.g. 1e-4), got {relaxation!r}")
        if (isinstance(newton_iterations, bool) or not isinstance(newton_iterations, (int, np.integer))
                or newton_iterations < 1):
            raise ValueError(
                f"RelaxedComplementarity(newton_iterations=...) must be a positive int, got "
                f"{newton_iterations!r}")
        self.relaxation = jnp.asarray(relaxation, dtype=jnp.result_type(float))
        self.newton_iterations = int(newton_iterations)

    def check_formulation(self, formulation: str) -> None:
        """Host-side check that ``formulation`` has a relaxed counterpart (``ValueError`` if not)."""
        if formulation not in RELAXED_FORMULATIONS:
            raise ValueError(
                f"RelaxedComplementarity (gradient 'smoothed') supports the {RELAXED_FORMULATIONS} "
                f"formulations, not {formulation!r}; use a solver with formulation='ncp' or 'ccp', "
                "or gradient='implicit'")


def relaxed_residual(formulation: str, z, A, g, mu, rho):
    """``(6n,)`` residual ``F(z; θ)`` of the relaxed problem (module docstring).

    Args:
      formulation: static ``"ncp"`` or ``"ccp"``.
      z: ``(6n,)`` unknowns ``(λ (n, 3), s (n, 3))`` flattened, force units then velocity units.
      A: ``(3n, 3n)`` compliant Delassus ``G + diag(R)``; g: ``(3n,)``; mu: ``(n,)``; rho: scalar.
    Returns:
      ``(6n,)``: the three velocity rows ``s − σ̄(λ)`` then the three cone-product rows per contact.
    """
    n = mu.shape[0]
    lam = z[: 3 * n].reshape(n, 3)
    s = z[3 * n:].reshape(n, 3)
    sigma = (A @ lam.reshape(3 * n) + g).reshape(n, 3)
    sbar = sigma + de_saxce(sigma, mu) if formulation == "ncp" else sigma
    dual = s - sbar
    comp_n = jnp.sum(lam * s, axis=-1) - rho
    comp_t = s[:, 2:3] * lam[:, :2] + (mu * mu * lam[:, 2])[:, None] * s[:, :2]
    comp = jnp.concatenate([comp_t, comp_n[:, None]], axis=-1)
    return jnp.concatenate([dual.reshape(-1), comp.reshape(-1)])


def _cone_step(x, d, c_axis, c_radial):
    """``(n,)`` largest ``α ≥ 0`` keeping ``c_axis x_N ≥ c_radial ‖x_T‖`` along ``x + α d``
    (``inf`` when the ray never leaves the cone); ``x`` is assumed strictly inside."""
    big = jnp.asarray(jnp.inf, x.dtype)
    xn, dn = x[:, 2], d[:, 2]
    lin = jnp.where(dn < 0, -xn / jnp.where(dn < 0, dn, -1.0), big)
    ca2, cr2 = c_axis * c_axis, c_radial * c_radial
    qa = ca2 * dn * dn - cr2 * jnp.sum(d[:, :2] ** 2, -1)
    qb = 2.0 * (ca2 * xn * dn - cr2 * jnp.sum(x[:, :2] * d[:, :2], -1))
    qc = ca2 * xn * xn - cr2 * jnp.sum(x[:, :2] ** 2, -1)
    disc = jnp.maximum(qb * qb - 4.0 * qa * qc, 0.0)
    # stable roots: q = −(b + sign(b)√disc)/2, roots q/a and c/q
    sign_b = jnp.where(qb >= 0, 1.0, -1.0)
    q = -0.5 * (qb + sign_b * jnp.sqrt(disc))
    r1 = jnp.where(qa != 0, q / jnp.where(qa != 0, qa, 1.0), big)
    r2 = jnp.where(q != 0, qc / jnp.where(q != 0, q, 1.0), big)
    r1 = jnp.where(r1 > 0, r1, big)
    r2 = jnp.where(r2 > 0, r2, big)
    quad = jnp.minimum(r1, r2)
    return jnp.minimum(lin, quad)


def relaxed_solution(formulation: str, A, g, mu, rho, force, iterations: int):
    """``(z_ρ (6n,), J (6n, 6n))``: the relaxed solution by interior-point Newton from ``force``.

    Args as :func:`relaxed_residual`, plus ``force`` ``(n, 3)`` the exact solution (starting
    point) and the static number of Newton ``iterations``. ``J`` is ``∂F/∂z`` at ``z_ρ``.
    Not differentiated (the caller differentiates the residual at ``z_ρ`` instead).
    """
    n = mu.shape[0]
    dtype = A.dtype
    a = jnp.mean(jnp.diagonal(A).reshape(n, 3), axis=-1)
    a = jnp.where(a > 0, a, 1.0)
    e_n = jnp.asarray([0.0, 0.0, 1.0], dtype)
    lam0 = project_cone(force, mu) + jnp.sqrt(rho / a)[:, None] * e_n
    sigma0 = (A @ force.reshape(3 * n) + g).reshape(n, 3)
    sbar0 = sigma0 + de_saxce(sigma0, mu) if formulation == "ncp" else sigma0
    s0 = project_dual_cone(sbar0, mu) + jnp.sqrt(rho * a)[:, None] * e_n
    z0 = jnp.concatenate([lam0.reshape(-1), s0.reshape(-1)])
    frictional = mu > 0
    # frictionless contacts: λ_T stays 0 (its Newton rows force it), only λ_N > 0 is checked
    lam_axis = jnp.where(frictional, mu, 1.0)
    lam_radial = jnp.where(frictional, 1.0, 0.0)

    def residual(z):
        return relaxed_residual(formulation, z, A, g, mu, rho)

    def newton(z, _):
        F = residual(z)
        J = jax.jacfwd(residual)(z)
        dz = jnp.linalg.solve(J, -F)
        dz = jnp.where(jnp.isfinite(dz), dz, 0.0)
        lam, s = z[: 3 * n].reshape(n, 3), z[3 * n:].reshape(n, 3)
        dlam, ds = dz[: 3 * n].reshape(n, 3), dz[3 * n:].reshape(n, 3)
        alpha = jnp.minimum(jnp.min(_cone_step(lam, dlam, lam_axis, lam_radial)),
                            jnp.min(_cone_step(s, ds, 1.0, mu)))
        alpha = jnp.minimum(1.0, _FRACTION_TO_BOUNDARY * alpha)
        return z + alpha * dz, None

    z, _ = jax.lax.scan(newton, z0, None, length=iterations)
    return z, jax.jacfwd(residual)(z)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 8))
def smoothed_force(formulation: str, delassus, free_velocity, friction, compliance, active,
                   force, relaxation, iterations: int):
    """Identity on the exact ``force``; its JVP is the derivative of the relaxed solution.

    Args (the problem must already be sanitised, see
    :func:`jaxsim_contact.contact.sanitize_problem`):
      formulation: static ``"ncp"`` or ``"ccp"``.
      delassus ``(3n, 3n)``, free_velocity ``(3n,)``, friction ``(n,)``, compliance ``(3n,)``:
        differentiable problem data ``G, g, μ, R`` (only the symmetric part of a ``G`` tangent
        counts, as in :func:`~jaxsim_contact.contact._implicit.implicit_force`).
      active: ``(n,)`` bool; inactive contacts get zero tangents.
      force: ``(n, 3)`` exact solution ``λ*`` (returned unchanged; its tangent is ignored).
      relaxation: scalar ``ρ > 0`` (differentiable).
      iterations: static number of interior-point Newton steps.
    Returns:
      ``force``. Tangent ``(n, 3)``: ``dλ_ρ = −[F_z⁻¹ F_θ dθ]_λ`` at the relaxed solution
      (seed 002 eq. 22 with the implicit function theorem, §V-D).
    """
    del formulation, delassus, free_velocity, friction, compliance, active, relaxation, iterations
    return force


@smoothed_force.defjvp
def _smoothed_force_jvp(formulation, iterations, primals, tangents):
    G, g, mu, R, active, force, rho = primals
    dG, dg, dmu, dR, _, _, drho = tangents
    n = mu.shape[0]
    A = G + jnp.diag(R)
    rho = jnp.asarray(rho, A.dtype)
    z, J = relaxed_solution(formulation, A, g, mu, rho, force.reshape(n, 3), iterations)
    dG = 0.5 * (dG + dG.T)
    dA = dG + jnp.diag(dR)
    drho = jnp.asarray(drho, A.dtype)
    _, dF = jax.jvp(lambda A_, g_, mu_, rho_: relaxed_residual(formulation, z, A_, g_, mu_, rho_),
                    (A, g, mu, rho), (dA, dg, dmu, drho))
    # a failed relaxed solve (non-finite iterate) gives a zero tangent rather than NaN
    ok = jnp.all(jnp.isfinite(J)) & jnp.all(jnp.isfinite(z))
    J = jnp.where(ok, J, jnp.eye(6 * n, dtype=A.dtype))
    dF = jnp.where(ok, dF, 0.0)
    factors = jax.scipy.linalg.lu_factor(J)
    dz = jax.lax.custom_linear_solve(
        lambda x: J @ x, -dF,
        solve=lambda _, b: jax.scipy.linalg.lu_solve(factors, b),
        transpose_solve=lambda _, b: jax.scipy.linalg.lu_solve(factors, b, trans=1))
    dlam = dz[: 3 * n]
    dlam = jnp.where(jnp.repeat(active, 3), dlam, 0.0).reshape(n, 3)
    return force, dlam
