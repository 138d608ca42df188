"""The contact-solver protocol and the solution type (seed 001 §III).

Every solver is an ``eqx.Module`` subclass of :class:`ContactSolver` with static iteration caps /
formulation choice and dynamic numeric parameters. It declares three attributes and implements
three methods (the driver :func:`jaxsim_contact.contact.solve` composes them):

* ``max_iterations`` (static int), ``tolerance`` (dynamic scalar), ``formulation`` (static str);
* ``init(problem, warm_force, warm_rho) -> state`` — a pytree holding at least ``force (n, 3)``
  (``init_with_primal`` adds a guess of the primal variable; solvers without one ignore it);
* ``step(problem, state) -> state`` — one iteration (``gradient="unrolled"`` scans over it);
* ``criterion(problem, state) -> scalar`` — the termination criterion (seed 001 eq. 15 variant).

Optional overrides: ``force`` (the current force estimate; default ``state.force``),
``epoch_length`` / ``first_epoch_length`` / ``refresh`` (per-epoch work such as a
refactorisation), ``rho`` (a final proximal
parameter to warm-start from) and ``at_precision_limit(problem, state) -> bool``: the iterate is as
accurate as the solver's arithmetic allows (default ``False``); the driver then stops and reports
convergence even if the criterion is above the tolerance (``PrimalNewton``, see :mod:`._newton`;
``ADMM``: every term of the criterion at or below its dtype's round-off floor,
:func:`~jaxsim_contact.contact._problem.round_off_floors`); ``polishes``: the driver polishes a
solve that stopped at the cap (:mod:`._polish`).
"""


import abc

import equinox as eqx
import jax
import jax.numpy as jnp

from ._problem import ContactProblem, Residuals

__all__ = ["ContactSolver", "ContactSolution"]


class ContactSolver(eqx.Module):
    """Abstract base of every contact solver (module docstring). A subclass that leaves one of the
    declared attributes or abstract methods undefined cannot be instantiated (``TypeError``)."""

    max_iterations: eqx.AbstractVar[int]
    tolerance: eqx.AbstractVar[jax.Array]
    formulation: eqx.AbstractVar[str]

    @abc.abstractmethod
    def init(self, problem: ContactProblem, warm_force: jax.Array, warm_rho: jax.Array):
        """The initial iterate from a warm-start force ``(n, 3)`` and proximal parameter (scalar)."""

    def init_with_primal(self, problem: ContactProblem, warm_force: jax.Array,
                         warm_rho: jax.Array, warm_primal: jax.Array | None):
        """:meth:`init` given also a guess ``warm_primal`` ``(k,)`` of the primal variable
        ``Bᵀ λ`` (``B`` ``(3n, k)`` the problem's ``delassus_factor``); solvers without a primal
        variable ignore it (default)."""
        return self.init(problem, warm_force, warm_rho)

    @abc.abstractmethod
    def step(self, problem: ContactProblem, state):
        """One iteration."""

    def force(self, problem: ContactProblem, state) -> jax.Array:
        """The current force estimate ``(n, 3)``."""
        return state.force

    @abc.abstractmethod
    def criterion(self, problem: ContactProblem, state) -> jax.Array:
        """The termination criterion (scalar) at ``state``."""

    @property
    def epoch_length(self) -> int:
        """``k > 0``: the driver calls :meth:`refresh` once every ``k`` iterations (at the start of
        each epoch), e.g. to refactor a matrix; ``0`` (default): never."""
        return 0

    @property
    def first_epoch_length(self) -> int:
        """Iterations of the first epoch (default :attr:`epoch_length`); later epochs have
        :attr:`epoch_length`. A short first epoch lets per-epoch adaptation (ADMM's ρ) act early,
        when the warm start's ρ is furthest from the problem's."""
        return self.epoch_length

    def refresh(self, problem: ContactProblem, state):
        """Per-epoch work hoisted out of ``step`` (see :attr:`epoch_length`)."""
        return state

    def at_precision_limit(self, problem: ContactProblem, state) -> jax.Array:
        """True when the iterate is as accurate as round-off allows (see module docstring)."""
        return jnp.zeros((), bool)

    def rho(self, state) -> jax.Array:
        """Final proximal parameter (ADMM-type solvers); 0 otherwise."""
        return jnp.zeros((), state.force.dtype)

    @property
    def polishes(self) -> bool:
        """The driver polishes a capped solve (:mod:`._polish`; ``ADMM(polish=True)``, default
        False): the solver's formulation must be one of the implicit rule's."""
        return False

    @property
    def residual_formulation(self) -> str:
        """Formulation whose criteria are reported in :class:`ContactSolution` residuals."""
        return self.formulation


class ContactSolution(eqx.Module):
    """Result of :func:`jaxsim_contact.contact.solve`.

    Fields:
      force: ``(n, 3)`` contact forces (impulses if the problem is in impulses), frame (t1, t2, n);
        zero for inactive contacts and for non-finite problems.
      velocity: ``(n, 3)`` contact velocity ``G λ + g`` (without compliance).
      iterations: int32 scalar, iterations performed.
      converged: bool scalar, criterion ≤ tolerance, or the solver's iterate at its round-off
        limit (``PrimalNewton``, see :mod:`._newton`; ``ADMM``, each criterion term at or below
        its dtype's floor — then ``criterion`` can exceed the tolerance); False for non-finite
        problems.
      criterion: the solver's termination criterion at the returned force.
      primal, dual, complementarity: maxima of the per-contact criteria of the solver's
        formulation (seed 001 eq. 15; CCP / LCP variants), see ``residual_formulation``.
      rho: final ADMM proximal parameter (reusable as warm start), 0 for other solvers.
    """

    force: jax.Array
    velocity: jax.Array
    iterations: jax.Array
    converged: jax.Array
    criterion: jax.Array
    primal: jax.Array
    dual: jax.Array
    complementarity: jax.Array
    rho: jax.Array

    @property
    def residuals(self) -> Residuals:
        return Residuals(self.primal, self.dual, self.complementarity)
