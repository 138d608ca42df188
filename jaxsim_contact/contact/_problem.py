"""The frictional contact problem, friction-cone projections and convergence criteria.

A contact problem with ``n`` contacts (seed 001 §II, eqs. 9–15) is the triple ``(G, g, μ)``:

* ``G`` — Delassus matrix ``J M⁻¹ Jᵀ``, shape ``(3n, 3n)``, units m/s per N·s (or per N when the
  problem is written in forces, seed 001 §II "change of variable λ/Δt");
* ``g`` — free velocity of the contact points ``J v_f`` (plus any stabilisation), shape ``(3n,)``;
* ``μ`` — friction coefficients, shape ``(n,)``.

Per contact the three rows are ordered ``(t1, t2, n)``: two tangent directions, **normal last**.
An optional diagonal compliance ``R`` (seed 001 §II, "compliant contacts", and §III-B eq. 21–22)
replaces ``G`` by ``G + R``; an optional ``active`` mask marks padded contacts, which behave as
``λ = 0``.

Criteria (seed 001 §II after eq. 15). For each contact with ``σ = ((G + R) λ + g)⁽ⁱ⁾``:

* NCP:  primal ``dist_K(λ)``, dual ``dist_K*(σ + Γ(σ))``, complementarity ``|⟨λ, σ + Γ(σ)⟩|``
  with the De Saxcé correction ``Γ(σ) = (0, 0, μ‖σ_T‖)`` (eq. 14);
* CCP:  the same without ``Γ`` (seed 001 §III-B, the criterion of eq. 16);
* LCP:  the 4-facet pyramid ``‖λ_T‖_∞ ≤ μ λ_N`` of seed 001 §III-A with the box friction law of
  Alg. 1 (see :func:`contact_residuals` for the exact definition).

The absolute criterion ``ε_abs`` is the maximum of the three over active contacts.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._math import safe_norm, safe_sqrt, sum_in_order
from .._types import Choice

__all__ = [
    "sanitize_problem",
    "ContactProblem",
    "Residuals",
    "FORMULATIONS",
    "Formulation",
    "project_cone",
    "project_cone_jacobian",
    "project_cone_components",
    "project_cone_jacobian_components",
    "project_wide_cone_components",
    "project_wide_cone_jacobian_components",
    "wide_cone_branches",
    "spin_ratios",
    "spin_cone_criteria",
    "project_dual_cone",
    "project_pyramid_box",
    "de_saxce",
    "contact_residuals",
    "residuals",
    "criterion",
    "round_off_floors",
    "contact_velocity",
]



class Formulation(Choice):
    """Contact model of a problem's solution (seed 001 §II): ``LCP`` (linearised, 4-facet pyramid
    and per-axis box friction), ``CCP`` (convex relaxation: cone, velocity normal to the cone),
    ``NCP`` (the exact Signorini–Coulomb problem, De Saxcé's form), and ``RAISIM`` (RaiSim's
    per-contact bisection model, solved only by :class:`~jaxsim_contact.contact.Raisim`)."""

    LCP = "lcp"
    CCP = "ccp"
    NCP = "ncp"
    RAISIM = "raisim"


#: the formulations whose criteria :func:`contact_residuals` evaluates
FORMULATIONS = (Formulation.LCP, Formulation.CCP, Formulation.NCP)


def _is_concrete(x) -> bool:
    """True when ``x`` holds concrete values (not a JAX tracer), so host-side checks can run."""
    return not isinstance(x, jax.core.Tracer)


class ContactProblem(eqx.Module):
    """A frictional contact problem ``(G, g, μ, R, active)`` (seed 001 §II, eqs. 9–15).

    Args:
      delassus: ``(3n, 3n)`` symmetric positive semi-definite Delassus matrix ``G = J M⁻¹ Jᵀ``.
      free_velocity: ``(3n,)`` free contact velocity ``g`` (m/s, or m/s² in force units).
      friction: ``(n,)`` Coulomb coefficients ``μ ≥ 0``.
      compliance: ``None`` (rigid), a scalar, ``(n,)`` per contact (applied to the three rows of the
        contact) or ``(3n,)`` per row; values ``≥ 0``. Stored as ``(3n,)``.
      active: ``None`` (all active) or ``(n,)`` bool; inactive contacts behave as ``λ = 0``.
      num_frictionless: static count ``n_f`` of frictionless unilateral slots (joint limits) that
        follow the cone slots: their ``friction`` is set to 0, so only their normal row can carry
        force, ``λ_N ≥ 0``, and a solver may drop their tangent rows
        (:class:`~jaxsim_contact.contact.PrimalNewton` does: ``3(n − n_f) + n_f`` rows instead of
        ``3n``). Default 0.
      num_box: static count ``n_b`` of box slots after those (dry friction, MuJoCo's
        ``frictionloss``): the normal row carries ``|λ_N| ≤ b`` with ``b`` the slot's ``bound``, a
        variational inequality (``|λ| < b ⇒ σ = 0``; ``λ = b ⇒ σ ≤ 0``; ``λ = −b ⇒ σ ≥ 0``: the
        force opposes the motion), the tangent rows carry no force. Default 0.
      num_bilateral: static count ``n_e`` of bilateral slots at the end (equality constraints):
        all three rows carry a force of any sign and ``σ = 0`` (rows a constraint leaves unused
        have zero Jacobian rows, so their force is 0). Default 0.
        The slots are laid out ``[cones | spin | unilateral | box | bilateral]``; ``0 ≤ n_s + n_f + n_b + n_e
        ≤ n``. :class:`~jaxsim_contact.contact.ADMM` and :class:`~jaxsim_contact.contact.PGS`
        solve problems with box or bilateral slots (differentiated by the implicit or unrolled
        rule); the other solvers refuse them by name.
      bound: ``None`` or ``(n,)`` force bounds ``b ≥ 0`` of the box slots (N in force units);
        ignored elsewhere. Stored as ``(n,)``, zero by default.
      num_spin: static count ``n_s`` of *spin* slots (MuJoCo's torsional and rolling friction,
        ``condim`` 4 and 6 under its elliptic cone): 0, or the number of cone slots ``n_c``. They
        follow the cones, ``[cones | spin | unilateral | box | bilateral]``, and spin slot ``i``
        extends cone slot ``i``: its three rows (torsion about the normal, rolling about ``t1``
        and ``t2``; N·m in force units) join the cone's tangent rows in one elliptic cone
        ``Σ_j (λ_j / μ_j)² ≤ λ_N²`` over the five friction rows, ``μ_j`` being the cone's
        ``friction`` on ``t1``, ``t2`` and ``spin_friction`` on the spin rows (MuJoCo's
        ``contact.friction``, Computation §"Contact"); a zero ``μ_j`` pins ``λ_j = 0`` (a
        ``condim`` 3 contact, or condim 4's rolling rows). Only the compliant CCP of such
        problems is solved, by :class:`~jaxsim_contact.contact.PrimalNewton` (which poses a spin
        row with compliance ``R_T μ² / μ_j²``, MuJoCo's ``mj_makeImpedance`` relation, so that the
        cone is round in its scaled variable); other solvers refuse them by name. Default 0.
      spin_friction: ``None`` or ``(n_s, 3)`` coefficients ``μ_j ≥ 0`` of the spin rows
        (dimensionless ratios of torque to normal force, m: MuJoCo's torsional / rolling
        friction). Stored as ``(n_s, 3)``.
      delassus_factor: ``None`` or a ``(3n, k)`` factor ``B`` with ``G = B Bᵀ`` (for a multibody,
        ``B = J L⁻ᵀ`` with ``L Lᵀ = M``, so ``k = nv``). Optional extra information: solvers that
        can exploit a low rank ``k < 3n`` (ADMM's Cholesky variant, through the Woodbury
        identity) use it, as do the criteria (``G λ = B (Bᵀ λ)``, see :meth:`delassus_matvec`)
        and :class:`~jaxsim_contact.contact.PrimalNewton`, so a Newton step never forms ``G``;
        the other solvers use ``G``; the implicit derivative reads ``G``'s variation from ``B``
        when ``B`` carries a tangent (``dG λ = dB Bᵀλ + B dBᵀλ``, no ``(3n, 3n)`` tangent per direction).

    All fields but ``num_frictionless``, ``num_box`` and ``num_bilateral`` are dynamic arrays. When the values are concrete (not
    traced), construction raises ``ValueError`` naming the offending value for mismatched shapes,
    a non-finite or non-symmetric Delassus matrix, non-finite free velocity, negative friction or
    negative compliance (and, always, for ``num_frictionless`` out of range). In traced
    code no check is possible; :func:`jaxsim_contact.contact.solve` then returns
    ``converged=False`` and zero force for non-finite problems.
    """

    delassus: jax.Array
    free_velocity: jax.Array
    friction: jax.Array
    compliance: jax.Array
    active: jax.Array
    delassus_factor: jax.Array | None
    bound: jax.Array
    spin_friction: jax.Array
    num_frictionless: int = eqx.field(static=True)
    num_box: int = eqx.field(static=True)
    num_bilateral: int = eqx.field(static=True)
    num_spin: int = eqx.field(static=True)

    def __init__(self, delassus, free_velocity, friction, compliance=None, active=None,
                 delassus_factor=None, num_frictionless: int = 0, num_box: int = 0,
                 num_bilateral: int = 0, bound=None, num_spin: int = 0, spin_friction=None):
        delassus = jnp.asarray(delassus)
        free_velocity = jnp.asarray(free_velocity)
        friction = jnp.asarray(friction)
        dtype = jnp.result_type(delassus, free_velocity, friction)
        if not jnp.issubdtype(dtype, jnp.floating):
            dtype = jnp.result_type(float)
        if delassus.ndim != 2 or delassus.shape[0] != delassus.shape[1]:
            raise ValueError(f"delassus must be a square (3n, 3n) matrix, got shape {delassus.shape}")
        m = delassus.shape[0]
        if m % 3 != 0:
            raise ValueError(f"delassus size must be a multiple of 3 (3n), got {m}")
        n = m // 3
        if free_velocity.shape != (m,):
            raise ValueError(
                f"free_velocity must have shape ({m},) to match delassus, got {free_velocity.shape}"
            )
        if friction.shape != (n,):
            raise ValueError(f"friction must have shape ({n},) (one per contact), got {friction.shape}")
        num_frictionless, num_box, num_bilateral = int(num_frictionless), int(num_box), int(num_bilateral)
        num_spin = int(num_spin)
        counts = dict(num_spin=num_spin, num_frictionless=num_frictionless, num_box=num_box,
                      num_bilateral=num_bilateral)
        for name, count in counts.items():
            if count < 0:
                raise ValueError(f"{name} must be >= 0, got {count}")
        if sum(counts.values()) > n:
            raise ValueError(f"num_spin + num_frictionless + num_box + num_bilateral must be at "
                             f"most {n} (the number of contacts), got {counts}")
        num_cones = n - sum(counts.values())
        if num_spin not in (0, num_cones):
            raise ValueError(f"num_spin must be 0 or the number of cone slots ({num_cones}): spin "
                             f"slot i extends cone slot i, got num_spin={num_spin}")
        if num_cones < n:
            friction = friction.at[num_cones:].set(0)
        if spin_friction is None:
            spin_friction = jnp.zeros((num_spin, 3), dtype)
        else:
            spin_friction = jnp.asarray(spin_friction, dtype)
            if spin_friction.shape != (num_spin, 3):
                raise ValueError(f"spin_friction must have shape ({num_spin}, 3), got "
                                 f"{spin_friction.shape}")
            if _is_concrete(spin_friction):
                values = np.asarray(spin_friction)
                bad = ~(np.isfinite(values) & (values >= 0))
                if bad.any():
                    i, j = np.argwhere(bad)[0]
                    raise ValueError(f"spin_friction must be finite and >= 0: spin_friction[{i}, "
                                     f"{j}] = {values[i, j]}")
        if bound is None:
            bound = jnp.zeros((n,), dtype)
        else:
            bound = jnp.asarray(bound, dtype)
            if bound.shape != (n,):
                raise ValueError(f"bound must have shape ({n},), got {bound.shape}")
            if _is_concrete(bound) and not np.all(np.isfinite(np.asarray(bound)) & (np.asarray(bound) >= 0)):
                i = int(np.argwhere(~(np.isfinite(np.asarray(bound)) & (np.asarray(bound) >= 0)))[0, 0])
                raise ValueError(f"bound must be finite and >= 0: bound[{i}] = {np.asarray(bound)[i]}")
        if compliance is None:
            compliance = jnp.zeros((m,), dtype)
        else:
            compliance = jnp.asarray(compliance, dtype)
            if compliance.ndim == 0:
                compliance = jnp.full((m,), compliance, dtype)
            elif compliance.shape == (n,) and n != m:
                compliance = jnp.repeat(compliance, 3)
            elif compliance.shape != (m,):
                raise ValueError(
                    f"compliance must be a scalar, ({n},) or ({m},), got shape {compliance.shape}"
                )
        if active is None:
            active = jnp.ones((n,), bool)
        else:
            active = jnp.asarray(active)
            if active.shape != (n,):
                raise ValueError(f"active must have shape ({n},), got {active.shape}")
            active = active.astype(bool)
        if delassus_factor is not None:
            delassus_factor = jnp.asarray(delassus_factor)
            if delassus_factor.ndim != 2 or delassus_factor.shape[0] != m:
                raise ValueError(
                    f"delassus_factor must have shape ({m}, k), got {delassus_factor.shape}")
        if all(_is_concrete(x) for x in (delassus, free_velocity, friction, compliance)):
            self._validate(np.asarray(delassus), np.asarray(free_velocity), np.asarray(friction),
                           np.asarray(compliance))
            if delassus_factor is not None and _is_concrete(delassus_factor):
                self._validate_factor(np.asarray(delassus), np.asarray(delassus_factor))
        self.delassus = delassus.astype(dtype)
        self.free_velocity = free_velocity.astype(dtype)
        self.friction = friction.astype(dtype)
        self.compliance = compliance.astype(dtype)
        self.active = active
        self.delassus_factor = None if delassus_factor is None else delassus_factor.astype(dtype)
        self.bound = bound.astype(dtype)
        self.spin_friction = spin_friction.astype(dtype)
        self.num_frictionless = num_frictionless
        self.num_box = num_box
        self.num_bilateral = num_bilateral
        self.num_spin = num_spin

    @staticmethod
    def _validate_factor(G, B):
        scale = max(float(np.max(np.abs(G))) if G.size else 0.0, 1e-300)
        gap = np.abs(G - B @ B.T)
        tol = 1e-5 if G.dtype == np.float32 else 1e-9
        if gap.size and float(gap.max()) > tol * scale:
            i, j = np.unravel_index(np.argmax(gap), gap.shape)
            raise ValueError(
                f"delassus_factor B must satisfy delassus = B Bᵀ: delassus[{i}, {j}] = {G[i, j]} "
                f"but (B Bᵀ)[{i}, {j}] = {(B @ B.T)[i, j]}")

    @staticmethod
    def _validate(G, g, mu, R):
        if not np.all(np.isfinite(G)):
            i, j = np.argwhere(~np.isfinite(G))[0]
            raise ValueError(f"delassus has a non-finite entry: delassus[{i}, {j}] = {G[i, j]}")
        if not np.all(np.isfinite(g)):
            i = int(np.argwhere(~np.isfinite(g))[0, 0])
            raise ValueError(f"free_velocity has a non-finite entry: free_velocity[{i}] = {g[i]}")
        scale = max(float(np.max(np.abs(G))) if G.size else 0.0, 1e-300)
        asym = np.abs(G - G.T)
        tol = 1e-6 if G.dtype == np.float32 else 1e-9
        if G.size and float(asym.max()) > tol * scale:
            i, j = np.unravel_index(np.argmax(asym), asym.shape)
            raise ValueError(
                f"delassus must be symmetric: delassus[{i}, {j}] = {G[i, j]} but "
                f"delassus[{j}, {i}] = {G[j, i]}"
            )
        if not np.all(np.isfinite(mu)) or np.any(mu < 0):
            i = int(np.argwhere(~(np.isfinite(mu) & (mu >= 0)))[0, 0])
            raise ValueError(f"friction must be finite and >= 0: friction[{i}] = {mu[i]}")
        if not np.all(np.isfinite(R)) or np.any(R < 0):
            i = int(np.argwhere(~(np.isfinite(R) & (R >= 0)))[0, 0])
            raise ValueError(f"compliance must be finite and >= 0: compliance[{i}] = {R[i]}")

    @property
    def num_contacts(self) -> int:
        """Number ``n`` of (padded) contacts; static."""
        return self.friction.shape[-1]

    @property
    def num_cones(self) -> int:
        """Number of leading cone slots (``n − n_s − n_f − n_b − n_e``); static."""
        return (self.num_contacts - self.num_spin - self.num_frictionless - self.num_box
                - self.num_bilateral)

    @property
    def has_box_or_bilateral(self) -> bool:
        """Static: some slot is a box or a bilateral slot (module docstring of the class)."""
        return bool(self.num_box or self.num_bilateral)

    def slot_masks(self) -> tuple[np.ndarray, np.ndarray]:
        """Static ``(box, bilateral)`` ``(n,)`` numpy bool masks of the slot layout."""
        return slot_masks(self.num_contacts, self.num_box, self.num_bilateral)

    def project(self, x: jax.Array) -> jax.Array:
        """``(n, 3)`` projection of ``x`` ``(n, 3)`` onto the problem's force set, slot by slot:
        the Coulomb cone (:func:`project_cone`; the half-line ``λ_N ≥ 0`` of a frictionless slot),
        the box ``(0, 0, clip(x_N, −b, b))`` of a box slot, the identity on a bilateral slot.
        Not defined for problems with spin slots (their cone spans two slots): raises
        ``NotImplementedError``."""
        if self.num_spin:
            raise NotImplementedError("ContactProblem.project: problems with spin slots (elliptic "
                                      "torsional / rolling friction) are solved by PrimalNewton only")
        projected = project_cone(x, self.friction)
        if not self.has_box_or_bilateral:
            return projected
        box, bilateral = self.slot_masks()
        clipped = jnp.clip(x[:, 2], -self.bound, self.bound)
        boxed = jnp.stack([jnp.zeros_like(clipped), jnp.zeros_like(clipped), clipped], axis=-1)
        projected = jnp.where(jnp.asarray(box)[:, None], boxed, projected)
        return jnp.where(jnp.asarray(bilateral)[:, None], x, projected)

    @property
    def compliant_delassus(self) -> jax.Array:
        """``(3n, 3n)`` matrix ``G + diag(R)`` used by every solver and criterion."""
        return self.delassus + jnp.diag(self.compliance)

    def delassus_matvec(self, x: jax.Array) -> jax.Array:
        """``(3n,)`` product ``G x`` for ``x`` ``(3n,)``; ``B (Bᵀ x)`` when the problem carries a
        factor (``2·3n·k`` instead of ``(3n)²`` multiply-adds, and ``G`` need not exist).

        Exact on the rows of active contacts. On a sanitised problem (identity blocks for
        inactive contacts, zero rows of ``B``) the inactive rows read 0 instead of ``x``: every
        criterion masks those rows and every solver's force vanishes there.
        """
        if self.delassus_factor is None:
            return self.delassus @ x
        return self.delassus_factor @ (self.delassus_factor.T @ x)

    def is_finite(self) -> jax.Array:
        """Scalar bool: every entry of ``G``, ``g``, ``μ`` and ``R`` is finite (traceable).

        With a factor ``B`` this is checked on ``B``'s squared row norms ``‖b_i‖²``: all finite
        implies every ``|G_ij| = |b_i · b_j| ≤ ‖b_i‖ ‖b_j‖`` is, without forming ``G``.
        """
        if self.delassus_factor is not None:
            B = self.delassus_factor
            matrix_finite = jnp.all(jnp.isfinite(jnp.sum(B * B, axis=1)))
        else:
            matrix_finite = jnp.all(jnp.isfinite(self.delassus))
        return (
            matrix_finite
            & jnp.all(jnp.isfinite(self.free_velocity))
            & jnp.all(jnp.isfinite(self.friction))
            & jnp.all(jnp.isfinite(self.compliance))
            & jnp.all(jnp.isfinite(self.bound))
            & jnp.all(jnp.isfinite(self.spin_friction))
        )


def slot_masks(n: int, num_box: int, num_bilateral: int) -> tuple[np.ndarray, np.ndarray]:
    """Static ``(box, bilateral)`` ``(n,)`` numpy bool masks of ``n`` slots laid out
    ``[cones | spin | unilateral | box | bilateral]`` (:class:`ContactProblem`)."""
    index = np.arange(n)
    bilateral_start = n - num_bilateral
    box = (index >= bilateral_start - num_box) & (index < bilateral_start)
    return box, index >= bilateral_start


# --------------------------------------------------------------------------------------------
# cone projections (per contact, frame (t1, t2, n))


def project_cone(x: jax.Array, mu: jax.Array) -> jax.Array:
    """Euclidean projection onto the Coulomb cone ``K_μ = {‖x_T‖ ≤ μ x_N}`` (seed 001 eq. 10).

    Args:
      x: ``(..., 3)`` vectors ``(t1, t2, n)``.
      mu: ``(...)`` friction coefficients ``≥ 0``.
    Returns:
      ``(..., 3)`` projections. NaN-free (safe norms) for every input including ``x = 0``, ``μ = 0``.
    """
    out = project_cone_components(x[..., 0], x[..., 1], x[..., 2], mu)
    return jnp.stack(out, axis=-1).astype(x.dtype)


def project_cone_components(x1, x2, xn, mu):
    """:func:`project_cone` (seed 001 eq. 10) on components: ``(p1, p2, pn)`` for
    ``x = (x1, x2, xn)``, each ``(...)`` like ``mu`` (same units as ``x``). Solvers whose rows
    are stored by component (``PrimalNewton``) call it directly: XLA:CPU makes slow programs of
    size-3 axes (docs/sharp_bits.md), and elementwise work on separate components fuses into one
    loop."""
    t, inside, polar = _cone_branches(x1, x2, xn, mu)
    alpha = (mu * t + xn) / (1.0 + mu * mu)
    t_safe = jnp.where(t > 0, t, 1.0)
    return tuple(jnp.where(polar, 0.0, jnp.where(inside, xi, si))
                 for xi, si in ((x1, mu * alpha * (x1 / t_safe)), (x2, mu * alpha * (x2 / t_safe)),
                                (xn, alpha)))


def _cone_branches(x1, x2, xn, mu):
    """``(‖x_T‖, inside, polar)`` of :func:`project_cone`: which of its three branches (identity,
    zero, surface) each ``x`` takes; ``polar`` excludes ``inside``."""
    return wide_cone_branches((x1, x2), xn, mu)


def project_wide_cone_components(tangents, xn, mu):
    """:func:`project_cone_components` for a cone with any number of tangent components
    ``K_μ = {‖x_T‖ ≤ μ x_N}`` (seed 001 eq. 10; the round cone a spin slot's scaled rows live in,
    :class:`ContactProblem`'s ``num_spin``): ``(tangents', pn)`` for ``x = (tangents, xn)``,
    ``tangents`` a tuple of ``(...)`` arrays like ``mu``."""
    t, inside, polar = wide_cone_branches(tangents, xn, mu)
    alpha = (mu * t + xn) / (1.0 + mu * mu)
    t_safe = jnp.where(t > 0, t, 1.0)
    scale = mu * alpha / t_safe
    side = lambda x, surface: jnp.where(polar, 0.0, jnp.where(inside, x, surface))  # noqa: E731
    return tuple(side(x, scale * x) for x in tangents), side(xn, alpha)


def wide_cone_branches(tangents, xn, mu):
    """``(‖x_T‖, inside, polar)`` of :func:`project_wide_cone_components`: which of its three
    branches (identity, zero, surface) each ``x`` takes; ``polar`` excludes ``inside``."""
    t = safe_sqrt(sum_in_order([x * x for x in tangents]))  # finite value and derivatives at x_T = 0
    # `xn >= 0`: with μ = 0 and x_T = 0 (a joint-limit row, a frictionless contact) `t <= μ xn`
    # reads 0 <= −0 and would keep a negative normal component (a pulling limit).
    inside = (t <= mu * xn) & (xn >= 0)
    polar = (mu * t <= -xn) & ~inside
    return t, inside, polar


def project_wide_cone_jacobian_components(tangents, xn, mu):
    """``∂P/∂x`` of :func:`project_wide_cone_components` (the closed form of
    :func:`project_cone_jacobian` with ``u = x_T / ‖x_T‖`` of any length): a ``d × d`` nested
    list of ``(...)`` arrays over the components ``(*tangents, xn)``, symmetric."""
    t, inside, polar = wide_cone_branches(tangents, xn, mu)
    scale = 1.0 / (1.0 + mu * mu)
    alpha = (mu * t + xn) * scale
    t_safe = jnp.where(t > 0, t, 1.0)
    u = [x / t_safe for x in tangents]
    along = mu * (mu * scale)
    across = mu * alpha / t_safe
    d = len(tangents)

    def entry(i, j):
        if i < d and j < d:
            surface = (along - across) * u[i] * u[j] + (across if i == j else 0.0)
        elif i < d or j < d:
            surface = mu * scale * u[min(i, j)]
        else:
            surface = scale + 0.0 * t
        return jnp.where(polar, 0.0, jnp.where(inside, float(i == j), surface))

    return [[entry(i, j) for j in range(d + 1)] for i in range(d + 1)]


def spin_ratios(friction, spin_friction):
    """``(n_s, 3)`` ``μ_j / μ`` of spin rows (0 where the cone has no friction): the factor by
    which a spin row's force is scaled into the round cone of its slot (:class:`ContactProblem`,
    ``num_spin``)."""
    mu = friction[:, None]
    return jnp.where(mu > 0, spin_friction / jnp.where(mu > 0, mu, 1.0), 0.0)


def project_cone_jacobian(x: jax.Array, mu: jax.Array) -> jax.Array:
    """Jacobian ``∂P/∂x`` of :func:`project_cone` (seed 001 eq. 10; the generalised Hessian of
    seed 001 Alg. 4 line 3 is built from it), in closed form (the branch ``project_cone``
    takes: identity inside the cone, zero in its polar, and on the surface, with ``u = x_T/‖x_T‖``,
    ``α = (μ ‖x_T‖ + x_N)/(1 + μ²)``::

        ∂P_T/∂x_T = μ (μ u uᵀ / (1 + μ²) + α (I − u uᵀ) / ‖x_T‖),   ∂P_T/∂x_N = μ u / (1 + μ²),
        ∂P_N/∂x_T = μ uᵀ / (1 + μ²),                              ∂P_N/∂x_N = 1 / (1 + μ²).

    Args:
      x: ``(..., 3)`` vectors ``(t1, t2, n)``; mu: ``(...)`` friction coefficients ``≥ 0``.
    Returns:
      ``(..., 3, 3)``; equals ``jax.jacfwd(project_cone)`` (to rounding), without its three
      tangent evaluations. NaN-free at ``x_T = 0`` (that point is never on the surface branch).
    """
    j11, j12, j1n, j22, j2n, jnn = project_cone_jacobian_components(x[..., 0], x[..., 1], x[..., 2], mu)
    rows = [[j11, j12, j1n], [j12, j22, j2n], [j1n, j2n, jnn]]
    return jnp.stack([jnp.stack(row, axis=-1) for row in rows], axis=-2).astype(x.dtype)


def project_cone_jacobian_components(x1, x2, xn, mu):
    """:func:`project_cone_jacobian` (seed 001 eq. 10, Alg. 4 line 3) on components (see
    :func:`project_cone_components`): the six distinct entries ``(J_11, J_12, J_1n, J_22, J_2n,
    J_nn)`` of the symmetric ``∂P/∂x``, each ``(...)`` like ``mu`` (dimensionless)."""
    t, inside, polar = _cone_branches(x1, x2, xn, mu)
    scale = 1.0 / (1.0 + mu * mu)
    alpha = (mu * t + xn) * scale
    t_safe = jnp.where(t > 0, t, 1.0)
    u1, u2 = x1 / t_safe, x2 / t_safe
    along = mu * (mu * scale)  # μ² u uᵀ / (1 + μ²) + μ α (I − u uᵀ) / ‖x_T‖, entry by entry
    across = mu * alpha / t_safe
    tn = mu * scale
    surface = {(0, 0): along * u1 * u1 + across * (1.0 - u1 * u1), (0, 1): (along - across) * u1 * u2,
               (0, 2): tn * u1, (1, 1): along * u2 * u2 + across * (1.0 - u2 * u2), (1, 2): tn * u2,
               (2, 2): scale}
    return tuple(jnp.where(polar, 0.0, jnp.where(inside, float(i == j), value))
                 for (i, j), value in surface.items())


def project_dual_cone(x: jax.Array, mu: jax.Array) -> jax.Array:
    """Projection onto the dual cone ``K_μ* = K_{1/μ}`` via Moreau: ``P_K*(x) = x + P_K(−x)``.

    Args:
      x: ``(..., 3)``; mu: ``(...)``. Works for ``μ = 0`` (``K*`` is then the half-space ``x_N ≥ 0``).
    """
    return x + project_cone(-x, mu)


def project_pyramid_box(x: jax.Array, mu: jax.Array) -> jax.Array:
    """The LCP "projection" of seed 001 Alg. 1, lines 4 and 6: ``x_N ← max(0, x_N)`` then each
    tangent component clamped to ``[−μ x_N, μ x_N]`` (4-facet pyramid, §III-A).

    Not the Euclidean projection onto the pyramid; it is the per-axis box law Alg. 1 uses.
    """
    xn = jnp.maximum(x[..., 2], 0.0)
    bound = (mu * xn)[..., None]
    xt = jnp.clip(x[..., :2], -bound, bound)
    return jnp.concatenate([xt, xn[..., None]], axis=-1)


def de_saxce(velocity: jax.Array, mu: jax.Array) -> jax.Array:
    """De Saxcé correction ``Γ(c, μ) = (0, 0, μ‖c_T‖)`` (seed 001 eq. 14).

    Args: velocity ``(..., 3)``; mu ``(...)``. Returns ``(..., 3)``.
    """
    s = mu * safe_norm(velocity[..., :2])
    return jnp.concatenate([jnp.zeros_like(velocity[..., :2]), s[..., None]], axis=-1)


# --------------------------------------------------------------------------------------------
# residuals


class Residuals(NamedTuple):
    """Convergence criteria (seed 001 §II after eq. 15); scalars (max over active contacts) or
    ``(n,)`` per contact, depending on the producer."""

    primal: jax.Array
    dual: jax.Array
    complementarity: jax.Array


def contact_velocity(problem: ContactProblem, force: jax.Array) -> jax.Array:
    """``(n, 3)`` velocity ``σ = (G + R) λ + g`` of the compliant problem for ``force`` ``(n, 3)``.

    With ``R = 0`` this is the contact-point velocity ``c = J v⁺`` of seed 001 eq. 5.
    """
    n = problem.num_contacts
    lam = force.reshape(3 * n)
    return (problem.delassus_matvec(lam) + problem.compliance * lam
            + problem.free_velocity).reshape(n, 3)


def contact_residuals(
    problem: ContactProblem, force: jax.Array, formulation: str = "ncp", velocity=None
) -> Residuals:
    """Per-contact criteria ``(ε_p, ε_d, ε_c)``, each ``(n,)``; zero for inactive contacts.

    Args:
      problem: the contact problem (uses ``G + R``).
      force: ``(n, 3)`` contact forces/impulses in frame ``(t1, t2, n)``.
      formulation: ``"ncp"`` (seed 001 eq. 15 with De Saxcé, the default), ``"ccp"`` (eq. 16,
        without De Saxcé) or ``"lcp"``.
      velocity: ``None`` or the ``(n, 3)`` velocity ``σ = (G + R) λ + g`` at ``force`` when the
        caller already has it (e.g. from a low-rank factor of ``G``); only active rows are used.

    For ``"lcp"`` (seed 001 §III-A, Alg. 1 box friction): ``ε_p`` is the violation of
    ``λ_N ≥ 0, |λ_Tj| ≤ μ λ_N``; ``ε_d`` is the norm of ``(min(σ_N, 0),
    λ_T − clip(λ_T − σ_T, ±μλ_N))`` (Signorini dual feasibility and the natural residual of the
    per-axis maximum-dissipation law); ``ε_c = |λ_N σ_N|``.
    """
    formulation = Formulation.parse(formulation, "formulation", FORMULATIONS)
    mu = problem.friction
    sigma = contact_velocity(problem, force) if velocity is None else velocity
    if problem.num_spin:
        if formulation != "ccp":
            raise ValueError("problems with spin slots (elliptic torsional / rolling friction) "
                             f"have a CCP criterion only, got formulation={formulation!r}")
        primal, dual, comp = _spin_cone_residuals(problem, force, sigma)
    elif formulation == "lcp":
        ln = force[..., 2]
        lt = force[..., :2]
        lnp = jnp.maximum(ln, 0.0)
        bound = (mu * lnp)[..., None]
        viol = jnp.concatenate(
            [jnp.maximum(jnp.abs(lt) - bound, 0.0), jnp.minimum(ln, 0.0)[..., None]], axis=-1
        )
        primal = safe_norm(viol)
        nat_t = lt - jnp.clip(lt - sigma[..., :2], -bound, bound)
        dual = safe_norm(
            jnp.concatenate([nat_t, jnp.minimum(sigma[..., 2], 0.0)[..., None]], axis=-1)
        )
        comp = jnp.abs(ln * sigma[..., 2])
    else:
        s = sigma + de_saxce(sigma, mu) if formulation == "ncp" else sigma
        primal = safe_norm(force - project_cone(force, mu))
        dual = safe_norm(project_cone(-s, mu))
        comp = jnp.abs(jnp.sum(force * s, axis=-1))
    if problem.has_box_or_bilateral:
        primal, dual, comp = _box_and_bilateral_residuals(problem, force, sigma, primal, dual, comp)
    act = problem.active
    zero = jnp.zeros_like(primal)
    return Residuals(
        jnp.where(act, primal, zero), jnp.where(act, dual, zero), jnp.where(act, comp, zero)
    )


def spin_cone_criteria(force_cone, force_spin, velocity_cone, velocity_spin, mu, ratio):
    """CCP criteria ``(ε_p, ε_d, ε_c)`` ``(n_c,)`` of cone slots widened by their spin slots
    (:class:`ContactProblem`, ``num_spin``), on components: ``force_cone`` / ``velocity_cone``
    the tuples ``(t1, t2, n)`` and ``force_spin`` / ``velocity_spin`` the spin rows' three, each
    ``(n_c,)``; ``mu`` ``(n_c,)``; ``ratio`` ``(n_c, 3)`` :func:`spin_ratios`. The spin rows are
    scaled into the round cone — force ``λ_j / r_j``, velocity ``r_j σ_j``, products unchanged —
    and a row with ``r_j = 0`` must carry no force (its force is a primal violation)."""
    pinned = ratio <= 0
    spin = [jnp.where(pinned[:, j], 0.0, force_spin[j] / jnp.where(pinned[:, j], 1.0, ratio[:, j]))
            for j in range(3)]
    lam_t = (force_cone[0], force_cone[1], *spin)
    sig_t = (velocity_cone[0], velocity_cone[1], *(ratio[:, j] * velocity_spin[j] for j in range(3)))
    p_t, p_n = project_wide_cone_components(lam_t, force_cone[2], mu)
    q_t, q_n = project_wide_cone_components(tuple(-x for x in sig_t), -velocity_cone[2], mu)
    violations = [x - p for x, p in zip(lam_t, p_t)] + [force_cone[2] - p_n]
    violations += [jnp.where(pinned[:, j], force_spin[j], 0.0) for j in range(3)]
    primal = safe_sqrt(sum(x * x for x in violations))
    dual = safe_sqrt(sum(q * q for q in (*q_t, q_n)))
    comp = jnp.abs(sum(f * v for f, v in zip((*force_cone, *force_spin),
                                             (*velocity_cone, *velocity_spin))))
    return primal, dual, comp


def _spin_cone_residuals(problem, force, sigma):
    """The CCP criteria of a problem with spin slots, per slot ``(n,)``: each cone slot's over its
    five friction rows and normal (:func:`spin_cone_criteria`), zero on the spin slots; the
    other slots as without spin (``μ = 0`` cones; box and bilateral slots after this)."""
    nc, ns = problem.num_cones, problem.num_spin
    mu = problem.friction
    columns = lambda x: tuple(x[:, j] for j in range(3))  # noqa: E731
    primal, dual, comp = spin_cone_criteria(
        columns(force[:nc]), columns(force[nc:nc + ns]), columns(sigma[:nc]),
        columns(sigma[nc:nc + ns]), mu[:nc], spin_ratios(mu[:nc], problem.spin_friction))
    rest = slice(nc + ns, None)
    s_rest = sigma[rest]
    primal_rest = safe_norm(force[rest] - project_cone(force[rest], mu[rest]))
    dual_rest = safe_norm(project_cone(-s_rest, mu[rest]))
    comp_rest = jnp.abs(jnp.sum(force[rest] * s_rest, axis=-1))
    zero = jnp.zeros((ns,), force.dtype)
    return (jnp.concatenate([primal, zero, primal_rest]), jnp.concatenate([dual, zero, dual_rest]),
            jnp.concatenate([comp, zero, comp_rest]))


def _box_and_bilateral_residuals(problem, force, sigma, primal, dual, comp):
    """The criteria of box and bilateral slots in place of the cone's (any formulation).

    Bilateral: ``ε_p = 0``, ``ε_d = ‖σ‖``, ``ε_c = 0``. Box (normal row, bound ``b``): primal
    ``max(|λ| − b, 0)`` plus the tangent force; dual ``max(sign(λ) σ, 0)`` (``|σ|`` at ``λ = 0``:
    the force may not push along the motion); complementarity ``max(b − |λ|, 0) |σ|`` (a force
    inside the box means no motion) — all zero exactly at the solution of the variational
    inequality.
    """
    box, bilateral = (jnp.asarray(m) for m in problem.slot_masks())
    lam_n, sigma_n = force[:, 2], sigma[:, 2]
    box_primal = jnp.maximum(jnp.abs(lam_n) - problem.bound, 0.0) + safe_norm(force[:, :2])
    box_dual = jnp.where(lam_n > 0, jnp.maximum(sigma_n, 0.0),
                         jnp.where(lam_n < 0, jnp.maximum(-sigma_n, 0.0), jnp.abs(sigma_n)))
    box_comp = jnp.maximum(problem.bound - jnp.abs(lam_n), 0.0) * jnp.abs(sigma_n)
    zero = jnp.zeros_like(primal)
    primal = jnp.where(bilateral, zero, jnp.where(box, box_primal, primal))
    dual = jnp.where(bilateral, safe_norm(sigma), jnp.where(box, box_dual, dual))
    comp = jnp.where(bilateral, zero, jnp.where(box, box_comp, comp))
    return primal, dual, comp


def residuals(problem: ContactProblem, force: jax.Array, formulation: str = "ncp",
              velocity=None) -> Residuals:
    """``(primal, dual, complementarity)`` scalars: maxima over active contacts of
    :func:`contact_residuals` (seed 001 eq. 15 criteria; ``formulation="ccp"`` drops the De Saxcé
    term, ``"lcp"`` uses the pyramid law).

    Args:
      problem: ``ContactProblem`` with ``n`` contacts.
      force: ``(n, 3)`` forces in ``(t1, t2, n)`` frames.
      velocity: ``None`` or the ``(n, 3)`` velocity at ``force`` (see :func:`contact_residuals`).
    """
    r = contact_residuals(problem, force, formulation, velocity)
    return Residuals(*(jnp.max(x, initial=0.0) for x in r))


def criterion(problem: ContactProblem, force: jax.Array, formulation: str = "ncp",
              velocity=None) -> jax.Array:
    """Absolute criterion ``ε_abs = max(ε_p, ε_d, ε_c)`` (seed 001 §II), a scalar; ``velocity``
    as in :func:`contact_residuals`."""
    r = residuals(problem, force, formulation, velocity)
    return jnp.maximum(jnp.maximum(r.primal, r.dual), r.complementarity)


#: ulps of slack in :func:`round_off_floors`: each term is several roundings deep (a 3n-term
#: sum, the De Saxcé term, a projection), and an ADMM iterate hovers a few ulps above the exact
#: round-off bound — with 1 ulp, 17 of 1536 float32 env-steps of a batch of pushed balls
#: (sliding contacts, ``tests/reliability``) stalled at the cap 1.1–20× above their floor; with
#: 4 none did (max 51 iterations), and the float32 pile's largest energy gain per step stays
#: 3.3e-7 J (it was 4.9e-6 J with floors scaled by the batch-wide |λ|∞ instead of per row)
ROUND_OFF_ULPS = 4.0


def round_off_floors(problem: ContactProblem, force: jax.Array,
                     abs_products: jax.Array) -> Residuals:
    """The smallest criteria the problem's dtype can resolve at ``force`` (issue 42), per contact
    and term: ``ROUND_OFF_ULPS`` machine epsilons (``ε`` below) times the magnitudes the term is
    computed from, so that a solver whose residuals are at or below them is as accurate as its
    arithmetic allows.

    * primal ``ε |λ_i|∞`` (the projection of ``λ_i`` is exact to an ulp of ``λ_i``);
    * dual ``ε S_i``, ``S_i = (1 + μ_i) max_{r ∈ i} (Σ_j |A_rj| |λ_j| + |g_r|)`` over the
      contact's rows ``r`` (``A = G + R``; the De Saxcé term adds ``μ |σ_T|``): the magnitudes
      summed into ``σ_r = (A λ + g)_r``, whose round-off is about ``ε`` times that sum whatever
      the cancellation leaves of ``σ`` itself;
    * complementarity ``ε s_i (‖λ_i‖₁ + √2 μ_i |λ_Ni|)``, ``s_i = max_{r ∈ i} (Σ_j |A_rj| |λ_j|
      + |g_r|)``: the largest change of ``λ_i · (σ_i + μ_i ‖σ_Ti‖ e_N)`` when each of the three
      rows of ``σ_i`` moves by ``ε s_i`` (every row's force weighs its own velocity error, the
      De Saxcé term adds ``μ_i |λ_Ni| ‖δσ_T‖``). A sticking contact near its cone's edge has
      ``‖λ‖₁ + √2 μ |λ_N|`` up to twice ``(1 + μ) |λ|∞`` (``μ = 1``): a floor scaled by the
      latter rejects iterates whose only error is that round-off (why:
      ``benchmarks/results/float32_iterations.md``). A box slot's factor is at least its
      bound, the scale of its term. Per contact and row, so
      that lightly loaded contacts are held to their own scale (a pile's top cubes are not
      excused by its bottom cubes' forces).

    In float64 these are ~1e-15 relative and bind only for very large forces; in float32 (ε =
    1.2e-7) a 10-box tower's ``S`` ≈ 2e3 m/s² puts its dual floor near 1e-3 m/s², far above a
    1e-6 tolerance (measured: the default ADMM then ran to its 500-iteration cap).

    Args:
      problem: the (sanitised) problem, ``n`` contacts.
      force: ``(n, 3)`` current force.
      abs_products: ``(3n,)`` ``|A| |λ|`` or an upper bound of it (a solver working through a
        factor ``A = B Bᵀ + D`` passes ``|B| (|B|ᵀ |λ|) + |D| |λ|``).
    Returns:
      ``Residuals`` of ``(n,)`` arrays in the criterion's units, zero for inactive contacts.
    """
    eps = ROUND_OFF_ULPS * jnp.finfo(force.dtype).eps
    n = problem.num_contacts
    active = problem.active
    # a box slot's complementarity term (b − |λ|) |σ| is scaled by its bound b, not by λ
    lam = jnp.where(active, jnp.maximum(jnp.max(jnp.abs(force), axis=-1), problem.bound), 0.0)
    row_scale = (abs_products + jnp.abs(problem.free_velocity)).reshape(n, 3)
    slot_scale = jnp.where(active, jnp.max(row_scale, axis=-1), 0.0)  # s_i
    sigma = (1.0 + problem.friction) * slot_scale
    weight = jnp.sum(jnp.abs(force), axis=-1) + jnp.sqrt(2.0) * problem.friction * jnp.abs(force[..., 2])
    weight = jnp.where(active, jnp.maximum(weight, problem.bound), 0.0)
    return Residuals(eps * lam, eps * sigma, eps * weight * slot_scale)


def sanitize_problem(problem: ContactProblem) -> tuple[ContactProblem, jax.Array]:
    """Return ``(safe_problem, finite)``.

    Inactive contacts get identity Delassus blocks, zero coupling, zero free velocity and zero
    compliance, so every formulation yields ``λ = 0`` for them. A non-finite problem is replaced by
    ``G = I, g = 0`` (solution ``λ = 0``); ``finite`` is the scalar flag.
    """
    finite = problem.is_finite()
    n = problem.num_contacts
    dtype = problem.delassus.dtype
    rows = jnp.repeat(problem.active, 3)
    eye = jnp.eye(3 * n, dtype=dtype)
    G = jnp.where(rows[:, None] & rows[None, :], problem.delassus, 0.0)
    G = jnp.where(rows[:, None] | rows[None, :], G, eye)
    g = jnp.where(rows, problem.free_velocity, 0.0)
    R = jnp.where(rows, problem.compliance, 0.0)
    mu = jnp.where(problem.active, problem.friction, 0.0)
    bound = jnp.where(problem.active & finite, problem.bound, 0.0)
    G = jnp.where(finite, G, eye)
    g = jnp.where(finite, g, 0.0)
    R = jnp.where(finite, R, 0.0)
    mu = jnp.where(finite, mu, 0.0)
    # a non-finite problem has no active contact (its safe G is the identity, B is zero)
    active = problem.active & finite
    # a spin row carries force only while both its slot and the cone it extends are active
    nc, ns = problem.num_cones, problem.num_spin
    spin_active = active[nc:nc + ns] & active[:ns]
    spin_mu = jnp.where(spin_active[:, None], problem.spin_friction, 0.0)
    safe = eqx.tree_at(
        lambda p: (p.delassus, p.free_velocity, p.compliance, p.friction, p.active, p.bound,
                   p.spin_friction),
        problem, (G, g, R, mu, active, bound, spin_mu)
    )
    if problem.delassus_factor is not None:
        # G_safe = B_s B_sᵀ + diag(1 − rows): inactive rows of B vanish, and the identity blocks
        # of inactive contacts are diagonal (solvers using B recover them from diag(G_safe)).
        B = jnp.where(rows[:, None] & finite, problem.delassus_factor, 0.0)
        safe = eqx.tree_at(lambda p: p.delassus_factor, safe, B)
    return safe, finite
