"""Stacking stability (issue 5): a 10-box tower and a 3×3×3 cube pile, dropped from 1 mm gaps,
settle in float64 and float32 — after 5 s max penetration < 1 mm and max speed < 1e-3 m/s.

The total energy never increases by more than 1e-6 J from one step to the next: asserted in
float64 and for the float32 pile (largest step gain 1.5e-7 J at 328597b). The float32 tower, with
this test's loose solver (cap 40, tolerance 1e-4), is held to issue 42's 1e-5 J instead: before the
float32 round-off terms (``constraints._assembler.round_off_terms``: a compliance floor and a
push-out slop on indeterminate contact sets) single steps gained up to 4.4e-5 J during the impacts
(step 26) and 60 of its 2500 steps more than 1e-6 J; with them the largest gain is 2.0e-6 J (step
26, the only step above 1e-6 J). The float32 stacks at default options are
:func:`test_float32_stack_at_default_options_converges_every_step_and_gains_no_energy`'s.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.dynamics import kinetic_energy, potential_energy
from compiled import rollout

HORIZON = 5.0
DT = 2e-3


@functools.cache
def settled(name: str, dtype_name: str):
    dtype = getattr(jnp, dtype_name)
    if name == "tower":
        model = jc.scenes.load("tower", count=10, gap=1e-3, dt=DT, dtype=dtype)
    else:
        # 2 mm between side neighbours (outside the 1 mm contact margin): 27 vertical stacks of
        # contacts, 4 per cube, exactly the 108-slot budget
        # 4 ms steps: 1250 steps of a 162-dof, 324-row problem keep the test under a minute
        model = jc.scenes.load("pile", gap=2e-3, dt=2 * DT, dtype=dtype)
        model = model.replace_options(contact_budget=4 * 27)
    # float32 forces are only accurate to ~1e-7 of the weight: a looser tolerance in float32
    tol = 1e-6 if dtype == jnp.float64 else 1e-4
    # In float32 ADMM stops short of even 1e-4 on ~95 % of the settled pile's steps (σ = G f + g
    # cancels N-scale terms at ~1e-7 relative precision), so the cap, not the tolerance, sets the
    # cost of that case: 40 iterations settle it to 1.8e-5 m/s (100: 1.1e-5) in half the time.
    cap = 100 if dtype == jnp.float64 else 40
    model = model.replace_options(solver=jc.contact.ADMM("ncp", max_iterations=cap, tolerance=tol,
                                                             factorization="cholesky"))
    state = jc.init(model)
    steps = int(round(HORIZON / float(model.options.dt)))
    final, traj = rollout(model, state, jnp.zeros((steps, 0), dtype))
    # energies in float64 from the (possibly float32) states
    model64 = model.astype(jnp.float64)
    energy_fn = jax.jit(jax.vmap(lambda q, v: kinetic_energy(model64, q, v) + potential_energy(model64, q)))
    q = jnp.concatenate([state.q[None], traj.q]).astype(jnp.float64)
    v = jnp.concatenate([state.v[None], traj.v]).astype(jnp.float64)
    return model, final, traj, np.asarray(energy_fn(q, v))


# The float32 tower was excluded until session 14 (the clean-clone suite at 8b5d259 measured a
# final max speed of 2.7e-3 m/s); at 328597b it settles to 2.6e-4 m/s with the 40-iteration cap
# (1.4e-4 with 100), ADMM short of its 1e-4 tolerance on > 99 % of the steps as in the pile.
CASES = [("tower", "float64"), ("tower", "float32"), ("pile", "float64"), ("pile", "float32")]


@pytest.mark.parametrize("name,dtype_name", CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_stack_settles_without_penetration_motion_or_energy_gain(name, dtype_name):
    model, final, traj, energy = settled(name, dtype_name)
    assert final.q.dtype == getattr(jnp, dtype_name)
    assert int(final.error) & int(jc.ErrorFlag.NON_FINITE_STATE) == 0
    assert int(final.error) & int(jc.ErrorFlag.CONTACT_BUDGET_OVERFLOW) == 0
    assert float(final.contact.penetration) < 1e-3
    assert float(jnp.max(traj.contact.penetration)) < 1e-3  # at every step, not only the last
    assert float(jnp.max(jnp.abs(final.v))) < 1e-3
    increase = np.diff(energy)
    bar = 1e-5 if (name, dtype_name) == ("tower", "float32") else 1e-6  # module docstring
    assert np.max(increase) < bar, (np.max(increase), int(np.argmax(increase)))
    # the boxes are resting on each other: every cube carries 4 active contacts
    nbox = model.nbody - 1
    assert int(final.contact.num_active) == 4 * nbox
    # and the drop dissipated energy (1 mm per gap)
    assert energy[-1] < energy[0] - 1e-3
    # centres end at the stacked heights (cubes of 0.1 m on each other)
    z = np.asarray(final.q).reshape(nbox, 7)[:, 2]
    levels = np.round((z - 0.05) / 0.1)
    np.testing.assert_allclose(z, 0.05 + 0.1 * levels, atol=1e-3)


@functools.cache
def settled_at_default_options(name: str):
    """The float32 stacks with the default solver (ADMM-NCP, tolerance 1e-6, cap 500)."""
    if name == "tower":
        model = jc.scenes.load("tower", count=10, gap=1e-3, dt=DT, dtype=jnp.float32)
    else:
        model = jc.scenes.load("pile", gap=2e-3, dt=2 * DT, dtype=jnp.float32)
        model = model.replace_options(contact_budget=4 * 27)
    state = jc.init(model)
    steps = int(round(HORIZON / float(model.options.dt)))
    final, traj = rollout(model, state, jnp.zeros((steps, 0), jnp.float32))
    model64 = model.astype(jnp.float64)
    energy_fn = jax.jit(jax.vmap(lambda q, v: kinetic_energy(model64, q, v) + potential_energy(model64, q)))
    q = jnp.concatenate([state.q[None], traj.q]).astype(jnp.float64)
    v = jnp.concatenate([state.v[None], traj.v]).astype(jnp.float64)
    return model, final, traj, np.asarray(energy_fn(q, v))


@pytest.mark.parametrize("name", ["tower", "pile"])
def test_float32_stack_at_default_options_converges_every_step_and_gains_no_energy(name):
    """Issue 42's bars for the float32 stacks at default options: the solver's criterion on every
    step (before the round-off terms of ``constraints._assembler.round_off_terms`` the tower
    stopped at the cap on 1.5 % of its steps and averaged 175 iterations against float64's 5.5),
    settled after 5 s, and no step gaining more than 1e-5 J."""
    model, final, traj, energy = settled_at_default_options(name)
    iterations = np.asarray(traj.contact.iterations)
    assert np.all(np.asarray(traj.contact.converged)), int(np.sum(~np.asarray(traj.contact.converged)))
    assert np.all(iterations < model.options.solver.max_iterations)
    assert np.mean(iterations) < 30, np.mean(iterations)
    assert int(final.error) == 0
    assert float(jnp.max(jnp.abs(final.v))) < 1e-3
    increase = np.diff(energy)
    assert np.max(increase) < 1e-5, (np.max(increase), int(np.argmax(increase)))
