"""The contact stage's derivative gate (``stage._gated_stage_jvp``): when no pair
is near and no limit active it differentiates the ``all_far`` variant — no narrow phase, no
solve — and the derivatives of every output stay those of the ungated stage, batched or not."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.dynamics import smooth_dynamics
from jaxsim_contact.constraints import _stage as constraints
from jaxsim_contact.constraints._assembler import any_row_in_reach

# a free box over a floor and a hinge arm with a limit: contacts, a limit slot, and a
# configuration with neither in reach
XML = """
<mujoco>
  <compiler angle="radian"/>
  <option timestep="0.01"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="box" pos="0 0 1">
      <freejoint/>
      <geom name="box" type="box" size="0.05 0.05 0.05" mass="1"/>
    </body>
    <body name="arm" pos="1 0 1.5">
      <joint name="hinge" type="hinge" axis="0 1 0" limited="true" range="-1 1"/>
      <geom name="arm" type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5"/>
    </body>
  </worldbody>
  <actuator><motor joint="hinge"/></actuator>
</mujoco>
"""


@functools.cache
def _model():
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gate.xml"
        path.write_text(XML)
        # cached: when the first call comes from inside a jit trace, its arrays must not be
        # tracers of that trace (they would leak into later traces)
        with jax.ensure_compile_time_eval():
            return jc.load(path, dtype=jnp.float64)


def _x(height, hinge, box_velocity=0.0):
    """Flat ``(q, v)``: the box's centre at ``height`` (m), moving down at ``box_velocity``, the
    hinge at ``hinge`` (rad)."""
    q = jnp.array([0.0, 0.0, height, 1.0, 0.0, 0.0, 0.0, hinge])
    v = jnp.zeros(7).at[2].set(-box_velocity)
    return jnp.concatenate([q, v])


def _stage(x, gated: bool):
    """Every differentiable output of the contact stage at ``x``, flat."""
    model = _model()
    q, v = x[:model.nq], x[model.nq:]
    state = jc.init(model, q=q, v=v)
    smooth = smooth_dynamics(model, state, jnp.zeros(model.nu))
    dt = model.options.dt
    if gated:
        v_next, data, _ = constraints.contact_stage(model, state, smooth, dt)
    else:
        v_next, data, _ = constraints._stage(model, state, smooth, dt, all_far=False)
    return jnp.concatenate([v_next, data.distance, data.point.ravel(), data.frame.ravel(),
                            data.force.ravel(), data.penetration[None]])


CONFIGURATIONS = {
    "nothing in reach": _x(1.0, 0.0),
    "box resting on the floor": _x(0.0499, 0.0, box_velocity=0.1),
    "hinge past its limit": _x(1.0, 1.001),  # 1 mrad: Baumgarte pushes it back
}

# one compiled program each, shared by the tests
GATED, UNGATED = functools.partial(_stage, gated=True), functools.partial(_stage, gated=False)
VALUE = jax.jit(GATED)
JACFWD = {True: jax.jit(jax.jacfwd(GATED)), False: jax.jit(jax.jacfwd(UNGATED))}
JACREV_GATED = jax.jit(jax.jacrev(GATED))


def _in_reach(x):
    model = _model()
    state = jc.init(model, q=x[:model.nq], v=x[model.nq:])
    smooth = smooth_dynamics(model, state, jnp.zeros(model.nu))
    return bool(any_row_in_reach(model, state, smooth, model.options.dt))


def test_configurations_cover_both_branches():
    assert [_in_reach(x) for x in CONFIGURATIONS.values()] == [False, True, True]


@pytest.mark.parametrize("name", list(CONFIGURATIONS))
def test_gated_derivatives_equal_the_ungated_ones(name):
    x = CONFIGURATIONS[name]
    reference = JACFWD[False](x)
    assert np.abs(reference).max() > 0
    np.testing.assert_allclose(JACFWD[True](x), reference, rtol=0, atol=1e-9)
    np.testing.assert_allclose(JACREV_GATED(x), reference, rtol=0, atol=1e-9)


def test_far_bounds_keep_their_derivative():
    # nothing in reach: the slots report bounds, whose derivative is not gated away (a loss on
    # the reported distance still sees the box's height)
    model = _model()
    jac = JACREV_GATED(CONFIGURATIONS["nothing in reach"])
    distance_rows = jac[model.nv:model.nv + constraints.num_constraint_slots(model)]
    assert np.abs(distance_rows[:, 2]).max() > 0.5  # d distance / d box height


def test_a_batch_mixing_far_and_touching_environments_is_exact():
    mixed = jnp.stack(list(CONFIGURATIONS.values()))
    far = jnp.stack([CONFIGURATIONS["nothing in reach"], _x(2.0, 0.3), _x(1.5, -0.5)])
    assert not any(_in_reach(x) for x in far)
    # reverse mode under vmap is the composition a per-environment cond on tangents cannot do
    batched = jax.jit(jax.vmap(jax.jacrev(GATED)))
    for xs in (mixed, far):  # some environment in reach: all take the exact branch; none: all_far
        out = batched(xs)
        for i, x in enumerate(xs):
            np.testing.assert_allclose(out[i], JACFWD[False](x), rtol=0, atol=1e-9)
    # the gate stays one cond under vmap (a per-environment predicate would make it a select)
    assert "cond[" in str(jax.make_jaxpr(jax.vmap(jax.jacrev(GATED)))(far))


def test_reverse_mode_around_nested_vmapped_stages():
    # grad outside vmap (a loss over a batch of rollouts): vmap batches the rule's jaxpr before
    # reverse mode transposes it, so no cond on tangents inside the rule may become a select
    # (whose stop_gradient operands have no transpose). Two nested vmap levels, one program: a
    # batch with something in reach in one group (every environment takes the exact branch) and
    # one with nothing in reach anywhere (all take the all_far branch).
    _model()  # loaded (and cached) outside the traces below
    far = jnp.stack([CONFIGURATIONS["nothing in reach"], _x(2.0, 0.3), _x(1.5, -0.5)])
    mixed = jnp.stack(list(CONFIGURATIONS.values()))
    grad = jax.jit(jax.grad(lambda xs: jnp.sum(jax.vmap(jax.vmap(GATED))(xs) ** 2)))
    assert "cond[" in str(jax.make_jaxpr(grad)(jnp.stack([far, far])))
    for nested in (jnp.stack([far, mixed]), jnp.stack([far, far[::-1]])):  # (2 groups, 3 envs, n)
        out = grad(nested)
        for g, x in zip(out.reshape(6, -1), nested.reshape(6, -1)):
            np.testing.assert_allclose(g, 2 * JACFWD[False](x).T @ VALUE(x), rtol=0, atol=1e-8)


def test_second_derivatives_through_the_gate():
    # Hessian of ½‖v⁺‖² against central differences of its gradient Jᵀ v⁺ (from the compiled
    # Jacobian), on both sides of the gate
    nv = _model().nv

    def loss(x):
        return 0.5 * jnp.sum(GATED(x)[:nv] ** 2)

    def gradient(x):
        return JACREV_GATED(x)[:nv].T @ VALUE(x)[:nv]

    hessian = jax.jit(jax.hessian(loss))
    h = 1e-5
    # (the box's four corner contacts are hyperstatic: its central differences are asymmetric at
    # ~2e-5 of the largest entry, hence the tolerance)
    for x in CONFIGURATIONS.values():
        fd = jnp.stack([(gradient(x + h * e) - gradient(x - h * e)) / (2 * h) for e in jnp.eye(x.shape[0])])
        exact = hessian(x)
        assert np.abs(fd).max() > 0
        np.testing.assert_allclose(exact, exact.T, atol=1e-9)
        np.testing.assert_allclose(exact, fd, rtol=0, atol=1e-4 * np.abs(fd).max())
