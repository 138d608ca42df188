"""Typed options: every choice is an enum (``jaxsim_contact._types.Choice``) validated when built —
its string or its member is accepted and stored as the member; anything else raises ``ValueError``
naming the option and the accepted values. Numeric options are declared once (their bounds with
the field) and validated from that declaration."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.contact._admm import Factorization, RhoUpdate
from jaxsim_contact.contact._implicit import Gradient
from jaxsim_contact.contact._newton import LineSearch
from jaxsim_contact.contact._problem import Formulation
from jaxsim_contact._model import Integrator, Options, numeric_option_names

# (constructor taking the value, option name in the message, accepted values, enum)
CHOICES = {
    "ADMM formulation": (lambda v: jc.contact.ADMM(formulation=v), ["ccp", "ncp"], Formulation),
    "ADMM factorization": (lambda v: jc.contact.ADMM(factorization=v), ["cholesky", "eigh"],
                           Factorization),
    "ADMM rho_update": (lambda v: jc.contact.ADMM(rho_update=v), ["spectral", "balanced"], RhoUpdate),
    "PGS formulation": (lambda v: jc.contact.PGS(formulation=v), ["lcp", "ccp", "ncp"], Formulation),
    "PrimalNewton line_search": (lambda v: jc.contact.PrimalNewton(line_search=v),
                                 ["exact", "armijo"], LineSearch),
    "Options.integrator": (lambda v: Options(dt=0.01, gravity=jnp.zeros(3), integrator=v),
                           ["euler", "rk4", "implicit", "implicitfast"],
                           Integrator),
}


def _stored(name, made):
    attribute = name.split()[-1].split(".")[-1]
    return getattr(made, attribute)


@pytest.mark.parametrize("name", list(CHOICES))
def test_an_unknown_choice_names_the_option_and_the_accepted_values(name):
    make, accepted, _ = CHOICES[name]
    with pytest.raises(ValueError) as error:
        make("bogus")
    message = str(error.value)
    assert name in message and "'bogus'" in message
    assert all(f"'{value}'" in message for value in accepted), message


@pytest.mark.parametrize("name", list(CHOICES))
def test_a_choice_given_as_string_or_member_is_stored_as_the_member(name):
    make, accepted, enum = CHOICES[name]
    for value in (accepted[0], enum(accepted[0])):
        stored = _stored(name, make(value))
        assert type(stored) is enum and stored == accepted[0]


def test_a_formulation_outside_the_solver_is_refused():
    # a valid Formulation that this solver does not solve names the solver's own choices
    with pytest.raises(ValueError, match=r"ADMM formulation must be one of \['ccp', 'ncp'\], got 'lcp'"):
        jc.contact.ADMM(formulation="lcp")
    with pytest.raises(ValueError, match="formulation must be one of"):
        jc.contact.residuals(jc.testing.problems.random_problem(np.random.default_rng(0), 2),
                             jnp.zeros((2, 3)), formulation="raisim")


def test_the_gradient_option_is_typed():
    options = Options(dt=0.01, gravity=jnp.zeros(3), gradient="unrolled")
    assert options.gradient is Gradient.UNROLLED
    with pytest.raises(ValueError, match=r"Options.gradient must be one of \['implicit', 'unrolled'\]"):
        Options(dt=0.01, gravity=jnp.zeros(3), gradient="analytic")


def test_numeric_options_are_declared_once():
    names = numeric_option_names()
    assert {"dt", "gravity", "baumgarte", "compliance", "value_limit"} <= set(names)
    assert "solver" not in names and "integrator" not in names
    # each bound comes from the declaration: one violation per bounded field
    base = dict(dt=0.01, gravity=jnp.zeros(3))
    for name in names:
        if name in ("gravity", "wind", "magnetic"):  # vectors of any sign, but finite
            with pytest.raises(ValueError, match=f"Options.{name} must be finite, got"):
                Options(**{**base, name: jnp.asarray([0.0, jnp.nan, 0.0])})
            continue
        with pytest.raises(ValueError, match=f"Options.{name} must be finite"):
            Options(**{**base, name: -1.0})
