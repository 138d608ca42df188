"""Implicit derivative of a compliant CCP solution through its proximal fixed point (seed 001
§III-B eqs. 21–22; seed 004 §III-B's implicit-function argument on another characterisation).

With a positive compliance ``R`` the CCP ``min_{λ ∈ K} ½ λᵀ (G + R) λ + gᵀ λ`` is strongly
convex, and its solution is the fixed point of the ``R``-metric projection
(``Π^R(w) = argmin_{λ ∈ K} ½ (λ − w)ᵀ R (λ − w)``)::

    λ = Φ(λ; θ) = Π^R(−R⁻¹ (G λ + g)) = D⁻¹ P_{K'}(−D⁻¹ (G λ + g)),      D = R^{1/2},

the projection onto the cone ``K'`` of the scaled variable that
:class:`~jaxsim_contact.contact.PrimalNewton` works in (with the solver's conventions: the two
tangent compliances merged to ``R_T = √(R_t1 R_t2)``, ``K' = K_{μ √(R_T / R_N)}``, and spin rows —
``ContactProblem.num_spin`` — posed with ``R_T μ² / μ_j²`` so that ``K'`` is round over all five
friction rows). It is the primal Newton's optimality condition written in forces: with ``v = Bᵀ
λ`` its ``∇ℓ(v) = v − Bᵀ λ(v) = 0`` is ``λ = Φ(λ)``. Differentiating it (``Φ`` is piecewise
smooth; at ``λ*`` the branch it takes)::

    (I − ∂Φ/∂λ) dλ = ∂Φ/∂θ dθ,          ∂Φ/∂λ = −D⁻¹ ∂P D⁻¹ G,

and ``I + D⁻¹ ∂P D⁻¹ G`` is invertible (its eigenvalues are those of ``I + W^{1/2} G W^{1/2}``
with ``W = D⁻¹ ∂P D⁻¹ ⪰ 0``, all ``≥ 1``). The ``3n × 3n`` system is LU-factored once per
derivative; forward mode solves with it, reverse mode with its transpose
(``lax.custom_linear_solve``), so ``jvp`` and ``vjp`` are exact transposes.

This rule needs nothing of the cone's dimension, so it is the implicit derivative of problems
with spin slots (MuJoCo's elliptic torsional / rolling friction), whose widened cones the
mode-based rule (:mod:`._implicit`) does not classify. On ordinary compliant CCP problems both
rules differentiate the same solution map (the tests compare them). Its limits are the mode
rule's: the derivative is that of the branch at ``λ*`` (one-sided at a mode boundary), and it is
the derivative of the solution of the problem the solver poses (merged tangent compliances).
Compliance must be positive on every active row that can carry force.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.scipy.linalg import lu_factor, lu_solve

from ._newton import scaled_cone_rows
from ._problem import project_wide_cone_components

__all__ = ["compliant_ccp_force", "fixed_point_map"]


def fixed_point_map(layout: tuple[int, ...], delassus, free_velocity, friction, spin_friction,
                    compliance, active, bound, force):
    """``Φ(λ)`` ``(n, 3)`` of the module docstring for ``force`` ``λ`` ``(n, 3)``.

    Args:
      layout: static ``(n_c, n_s, n_f, n_b, n_e)`` slot counts (``ContactProblem``'s
        cones, spin, frictionless, box, bilateral).
      delassus: ``(3n, 3n)`` ``G``; free_velocity ``(3n,)`` ``g``; friction ``(n,)`` ``μ``;
        spin_friction ``(n_s, 3)``; compliance ``(3n,)`` ``R > 0`` on active rows; active
        ``(n,)`` bool (inactive slots map to 0); bound ``(n,)`` box bounds.
    """
    nc, ns, nf, nb, ne = layout
    n = nc + ns + nf + nb + ne
    dtype = delassus.dtype
    R = jnp.maximum(compliance, jnp.finfo(dtype).tiny).reshape(n, 3)
    _, inverse_sqrt, mu = scaled_cone_rows(R, friction, spin_friction, nc)
    singles = slice(nc + ns, nc + ns + nf + nb)
    inverse_sqrt = inverse_sqrt.at[singles, :2].set(0.0)  # no force on their tangent rows
    inverse_sqrt = jnp.where(active[:, None], inverse_sqrt, 0.0)
    x = -inverse_sqrt * (delassus @ force.reshape(3 * n) + free_velocity).reshape(n, 3)
    spin = tuple(x[nc:nc + ns, j] for j in range(3)) if ns else ()
    tangents, normal = project_wide_cone_components((x[:nc, 0], x[:nc, 1], *spin), x[:nc, 2], mu)
    parts = [jnp.stack([tangents[0], tangents[1], normal], axis=1)]
    if ns:
        parts.append(jnp.stack(tangents[2:], axis=1))
    single_normal = x[singles, 2]
    box_bound = bound[nc + ns + nf:nc + ns + nf + nb] * jnp.sqrt(R[nc + ns + nf:nc + ns + nf + nb, 2])
    single_normal = jnp.concatenate([jnp.maximum(single_normal[:nf], 0.0),
                                     jnp.clip(single_normal[nf:], -box_bound, box_bound)])
    zero = jnp.zeros_like(single_normal)
    parts.append(jnp.stack([zero, zero, single_normal], axis=1))
    parts.append(x[n - ne:])  # bilateral rows: no set
    return inverse_sqrt * jnp.concatenate(parts)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def compliant_ccp_force(layout, delassus, free_velocity, friction, spin_friction, compliance,
                        active, bound, force):
    """Identity on the converged force ``λ*`` ``(n, 3)`` of a compliant CCP (module docstring)
    whose tangent is that of the fixed point ``λ = Φ(λ; θ)`` w.r.t. ``θ = (G, g, μ, μ_spin, R,
    b)``; arguments as :func:`fixed_point_map`. Forward and reverse mode, under ``jit`` and
    ``vmap``."""
    del layout, delassus, free_velocity, friction, spin_friction, compliance, active, bound
    return force


@compliant_ccp_force.defjvp
def _compliant_ccp_force_jvp(layout, primals, tangents):
    delassus, free_velocity, friction, spin_friction, compliance, active, bound, force = primals
    d_delassus, d_free, d_friction, d_spin, d_compliance, _, d_bound, _ = tangents
    out = compliant_ccp_force(layout, *primals)

    def of_parameters(G, g, mu, mu_spin, R, b):
        return fixed_point_map(layout, G, g, mu, mu_spin, R, active, b, force)

    _, rhs = jax.jvp(of_parameters, (delassus, free_velocity, friction, spin_friction, compliance, bound),
                     (d_delassus, d_free, d_friction, d_spin, d_compliance, d_bound))
    m = force.size
    of_force = lambda lam: fixed_point_map(layout, delassus, free_velocity, friction,  # noqa: E731
                                           spin_friction, compliance, active, bound, lam)
    sensitivity = jax.jacfwd(of_force)(force).reshape(m, m)
    system = jnp.eye(m, dtype=force.dtype) - jax.lax.stop_gradient(sensitivity)
    factor = lu_factor(system)
    d_force = jax.lax.custom_linear_solve(
        lambda x: system @ x, rhs.reshape(m),
        solve=lambda _, b: lu_solve(factor, b),
        transpose_solve=lambda _, b: lu_solve(factor, b, trans=1))
    return out, d_force.reshape(force.shape)
