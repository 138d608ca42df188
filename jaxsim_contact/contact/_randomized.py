"""Smoothed gradients by first-order randomized smoothing of the contact solve (seed 000 §III-A).

The forward solve is unchanged: the force is the solver's exact solution ``λ*(θ)`` of the problem
``θ = (G, g, μ, R)``. Only its derivative changes. The exact solution map has kinks where a contact
changes mode (make/break, stick/slip), and its implicit derivative (:mod:`._implicit`, seed 004
§III-B) jumps there. Randomized smoothing (seed 000 "Differentiable Collision Detection" §III-A,
eqs. 3–4, after Duchi et al.) replaces a non-smooth map ``f`` by its convolution with a noise
distribution ``μ``::

    f_ε(x) = E_{Z∼μ}[ f(x + ε Z) ]                                              (eq. 3)

whose gradient, for ``f`` differentiable almost everywhere, is the expected gradient at the
perturbed inputs — the *first-order* estimator (the 0th-order one, eq. 5, uses values and the
score instead; seed 000 §IV applies the first-order idea to collision detection)::

    ∇f_ε(x) = E[ ∇f(x + ε Z) ] ≈ 1/M Σ_j ∇f(x + ε z_j)                          (eqs. 3–4, differentiated)

Here ``x`` is the free velocity ``g`` (the problem data whose variation switches contact modes:
a normal row crossing zero makes or breaks a contact, a tangential row crossing the friction cone
switches stick/slip) and ``f`` the solution map ``g ↦ λ*(G, g, μ, R)``. The derivative returned
for *every* input direction ``dθ = (dG, dg, dμ, dR)`` is::

    dλ = 1/M Σ_j  J_impl(G, g + σ z_j, μ, R) dθ,    z_j ∼ μ i.i.d.,  j = 1..M

with ``J_impl(θ_j)`` the exact implicit derivative (:func:`~._implicit.implicit_force`) at the
solution ``λ_j = λ*(θ_j)`` of the perturbed problem. The ``M`` perturbed problems are re-solved
inside the derivative rule by the same solver (``vmap`` over samples, ``lax.while_loop`` warm-started
from ``λ*`` and the solver's final ADMM ``ρ``), only when a derivative is requested. The average is
a sum of ``M`` truncated-SVD ``lax.custom_linear_solve`` tangents, linear in ``dθ``, so JAX
transposes it for reverse mode: ``jax.jvp``, ``jax.jacfwd``, ``jax.grad``, ``jax.vjp`` all work
under ``jit`` and ``vmap``, and ``w·(J t) = (Jᵀ w)·t`` holds to rounding.

The noise ``z_j`` is drawn from the explicit ``key`` (same key ⇒ same derivative; a new key ⇒ a new
Monte-Carlo estimate; the key is a dynamic leaf, so changing it never recompiles) with the
sampler the collision estimators use (:func:`jaxsim_contact._autodiff.sample_noise`).
Only active contacts are perturbed (inactive slots stay decoupled at ``λ = 0``).

Units: ``noise_scale`` ``σ`` is in the problem's velocity units (those of ``g``): m/s for problems
in impulses, m/s² in the simulation pipeline, whose problems are in forces (``g`` is a velocity per
time step, ``g_N ≈ (v_N + gap/dt)/dt``). A perturbation ``σ`` of ``g_N`` there is a perturbation of
about ``σ·dt²`` of the gap, which is how to pick it: the derivative is smoothed over a band of
initial heights of width ``~2σ·dt²`` around a make/break.

Compared with :class:`~._relaxed.RelaxedComplementarity` (deterministic, a smooth *relaxed* problem,
one Newton solve of size ``6n``): this estimator stays an average of exact derivatives of the
*physical* problem (no relaxation bias where no mode switch is within reach of the noise: it then
equals the implicit derivative exactly), works for the NCP, CCP and LCP formulations and any solver
with an implicit rule, but costs ``M`` extra solves plus ``M`` SVDs per derivative and is a
Monte-Carlo estimate (variance ``∝ 1/M``).

Limits (documented): only ``g`` is perturbed — the contact *set* (which pairs are within the
contact margin) and the collision geometry are not smoothed, so a pair that enters the problem
within the step still switches on at the margin. Second derivatives (``jax.hessian``) are not
consistent: the perturbed solutions are not themselves differentiated. A perturbed solve that does
not converge contributes the implicit derivative at its last iterate (finite, as everywhere in
:mod:`._implicit`).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._autodiff import DISTRIBUTIONS, sample_noise
from ._implicit import implicit_force, implicit_formulation
from ._loop import iterate

__all__ = ["RandomizedSmoothing", "randomized_force", "SMOOTHING_DISTRIBUTIONS"]

#: Noise distributions of :class:`RandomizedSmoothing` (zero mean; the collision estimators' set).
SMOOTHING_DISTRIBUTIONS = DISTRIBUTIONS


def _is_key(key) -> bool:
    """A PRNG key: a typed key array (``jax.random.key``) or a raw ``uint32`` key
    (``jax.random.PRNGKey``), scalar (no batch axes)."""
    if isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return key.shape == ()
    arr = np.asarray(key) if isinstance(key, (jax.Array, np.ndarray)) else None
    return arr is not None and arr.dtype == np.uint32 and arr.ndim == 1 and arr.shape[0] >= 2


class RandomizedSmoothing(eqx.Module):
    """Gradient rule ``"smoothed"`` by first-order randomized smoothing (seed 000 §III-A, eqs. 3–4).

    Pass it as ``gradient=`` to :func:`jaxsim_contact.contact.solve` or to the model options
    (``model.replace_options(gradient=jc.contact.RandomizedSmoothing(key, noise_scale=3.0))``).
    The forward force stays the exact solution; its derivative is the average of the exact
    implicit derivatives at ``num_samples`` problems whose free velocity is perturbed by
    ``noise_scale · z_j`` (module docstring).

    Args:
      key: PRNG key (``jax.random.key(0)`` or ``jax.random.PRNGKey(0)``), dynamic: changing it
        never recompiles; the same key gives the same derivative.
      noise_scale: ``σ > 0``, scalar, dynamic; velocity units of the problem's ``g`` (m/s for
        problems in impulses, m/s² in :func:`jaxsim_contact.step`, whose problems are in forces:
        it smooths the gap over ``~σ·dt²``). Its derivative is zero (the forward force does not
        depend on it).
      num_samples: static ``M ≥ 1``: perturbed solves per derivative (default 16).
      distribution: static ``"gaussian"`` (default) or ``"gumbel"`` (zero-mean Gumbel; a skewed
        kernel), the samplers of :mod:`jaxsim_contact.collision._smoothing`.
    Fields: ``key`` holds the raw ``uint32`` key data (a typed key's implementation name is kept in
    the static ``key_impl``), so models with this rule round-trip through ``jc.save`` /
    ``jc.restore``.
    Raises:
      ValueError (host side, concrete values only): ``key`` missing or not a single PRNG key,
      ``noise_scale`` not a finite scalar ``> 0``, ``num_samples`` not a positive int, unknown
      ``distribution``.
    """

    key: jax.Array
    noise_scale: jax.Array
    num_samples: int = eqx.field(static=True, default=16)
    distribution: str = eqx.field(static=True, default="gaussian")
    key_impl: str | None = eqx.field(static=True, default=None)

    def __init__(self, key=None, noise_scale=None, num_samples: int = 16,
                 distribution: str = "gaussian"):
        if key is None:
            raise ValueError(
                "RandomizedSmoothing needs an explicit PRNG key: RandomizedSmoothing(key="
                "jax.random.key(0), noise_scale=σ) (the same key gives the same derivative)")
        if not isinstance(key, jax.core.Tracer) and not _is_key(key):
            raise ValueError(
                "RandomizedSmoothing(key=...) must be one PRNG key (jax.random.key(seed) or "
                f"jax.random.PRNGKey(seed)), got {key!r}")
        if noise_scale is None:
            raise ValueError(
                "RandomizedSmoothing needs noise_scale=σ > 0 (velocity units of the problem's free "
                "velocity g: m/s² in jc.step, where it smooths the gap over ~σ·dt²)")
        if not isinstance(noise_scale, jax.core.Tracer):
            value = np.asarray(noise_scale, dtype=np.float64)
            if value.shape != () or not np.isfinite(value) or value <= 0:
                raise ValueError(
                    "RandomizedSmoothing(noise_scale=σ) needs a finite scalar σ > 0 (velocity units "
                    f"of the problem's free velocity), got {noise_scale!r}")
        if (isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer))
                or num_samples < 1):
            raise ValueError(
                f"RandomizedSmoothing(num_samples=...) must be a positive int, got {num_samples!r}")
        if distribution not in SMOOTHING_DISTRIBUTIONS:
            raise ValueError(
                f"RandomizedSmoothing: unknown distribution {distribution!r}; choose one of "
                f"{SMOOTHING_DISTRIBUTIONS}")
        # A typed key is stored as its raw uint32 data plus the (static) PRNG implementation name:
        # plain integer leaves serialise with jc.save and pass through Model.astype untouched.
        if isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            self.key = jax.random.key_data(key)
            self.key_impl = str(jax.random.key_impl(key))
        else:
            self.key = jnp.asarray(key)
            self.key_impl = None
        self.noise_scale = jnp.asarray(noise_scale, dtype=jnp.result_type(float))
        self.num_samples = int(num_samples)
        self.distribution = distribution

    def check_formulation(self, formulation: str) -> None:
        """Host-side check that ``formulation`` has an implicit rule to average (``ValueError``)."""
        try:
            implicit_formulation(formulation)
        except NotImplementedError as err:
            raise ValueError(
                f"RandomizedSmoothing (gradient 'smoothed') averages implicit derivatives, which "
                f"the {formulation!r} contact model does not have; use an NCP, CCP or LCP solver"
            ) from err

    def perturbations(self, active: jax.Array, dtype) -> jax.Array:
        """``(M, 3n)`` free-velocity perturbations ``σ z_j`` (zero on the rows of inactive contacts).

        Args: ``active`` ``(n,)`` bool mask of the problem; ``dtype`` of the problem.
        """
        rows = jnp.repeat(active, 3)
        key = self.key if self.key_impl is None else jax.random.wrap_key_data(self.key, impl=self.key_impl)
        z, _ = sample_noise(key, self.distribution, (self.num_samples, rows.shape[0]), dtype)
        return jnp.where(rows, self.noise_scale.astype(dtype) * z, 0.0)


def _perturbed_solution(problem, solver, force, warm_rho, perturbation):
    """``(n, 3)`` exact solution of ``problem`` with ``g + perturbation`` (not differentiated),
    warm-started from ``force`` / ``warm_rho``; zero on inactive contacts and if non-finite."""
    perturbed = eqx.tree_at(lambda p: p.free_velocity, problem,
                            problem.free_velocity + perturbation)
    state0 = solver.init(perturbed, force, warm_rho)
    crit0 = solver.criterion(perturbed, state0)
    lam, _, _, _, _ = iterate(solver, perturbed, state0, crit0, unrolled=False)
    ok = jnp.all(jnp.isfinite(lam))
    return jnp.where(problem.active[:, None] & ok, lam, 0.0)


@jax.custom_jvp
def randomized_force(problem, solver, force, warm_rho, perturbations):
    """Identity on the exact ``force``; its JVP is the randomized-smoothing average (module doc).

    Args (pytrees of arrays; the problem must already be sanitised, see
    :func:`jaxsim_contact.contact.sanitize_problem`):
      problem: the :class:`~jaxsim_contact.contact.ContactProblem` (``n`` contacts) that was
        solved; tangents of ``G, g, μ, R`` count (only the symmetric part of a ``G`` tangent),
        those of ``active`` and of a low-rank ``delassus_factor`` are ignored (``G`` carries them).
      solver: the contact solver that produced ``force`` (re-run on the perturbed problems;
        tangents ignored).
      force: ``(n, 3)`` the exact solution ``λ*`` (returned unchanged; tangent ignored).
      warm_rho: scalar, the solver's final proximal ``ρ`` (ADMM warm start; 0 otherwise).
      perturbations: ``(M, 3n)`` ``σ z_j`` from :meth:`RandomizedSmoothing.perturbations`.
    Returns:
      ``force``. Tangent ``(n, 3)``: ``1/M Σ_j J_impl(G, g + σ z_j, μ, R) dθ``.
    """
    del problem, solver, warm_rho, perturbations
    return force


@randomized_force.defjvp
def _randomized_force_jvp(primals, tangents):
    problem, solver, force, warm_rho, perturbations = primals
    dproblem = tangents[0]
    G, mu, R, active = problem.delassus, problem.friction, problem.compliance, problem.active
    dG, dg, dmu, dR = (dproblem.delassus, dproblem.free_velocity, dproblem.friction,
                       dproblem.compliance)
    formulation = implicit_formulation(solver.formulation)
    tolerance = jnp.asarray(solver.tolerance, force.dtype)
    solutions = jax.vmap(_perturbed_solution, in_axes=(None, None, None, None, 0))(
        problem, solver, force, warm_rho, perturbations)

    def implicit_tangent(g_j, lam_j):
        # the exact implicit derivative of the solution map at the perturbed problem θ_j
        rule = lambda G_, g_, mu_, R_: implicit_force(  # noqa: E731
            formulation, (0, 0), G_, g_, mu_, R_, active, lam_j, tolerance, None)
        return jax.jvp(rule, (G, g_j, mu, R), (dG, dg, dmu, dR))[1]

    g_samples = problem.free_velocity[None, :] + perturbations
    dlam = jnp.mean(jax.vmap(implicit_tangent)(g_samples, solutions), axis=0)
    return force, dlam
