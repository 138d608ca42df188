"""The single-precision round-off terms of the hard model (issue 42,
``constraints._assembler.round_off_terms``): a normal-row compliance floor ``1000 ε G_nn`` and a
push-out slop ``8 ε`` on statically indeterminate contact sets (slots sharing a body pair, or on a
kinematic tree with more touching rows than dofs), none on a determinate single-point contact and
nothing at all in float64."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.constraints import _assembler
from jaxsim_contact.dynamics import smooth_dynamics

HALF, RADIUS = 0.05, 0.04

# a box resting on the plane (4 corner slots, one body pair) next to a free sphere resting on it
# (one slot, 3 rows on 6 dofs) and a sphere on a vertical slide (3 rows on 1 dof: indeterminate)
XML = f"""
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="box" pos="0 0 {HALF}">
      <freejoint/>
      <geom type="box" size="{HALF} {HALF} {HALF}" mass="1"/>
    </body>
    <body name="ball" pos="0.5 0 {RADIUS}">
      <freejoint/>
      <geom type="sphere" size="{RADIUS}" mass="0.2"/>
    </body>
    <body name="slider" pos="-0.5 0 {RADIUS}">
      <joint type="slide" axis="0 0 1"/>
      <geom type="sphere" size="{RADIUS}" mass="0.2"/>
    </body>
  </worldbody>
</mujoco>"""


def test_round_off_terms_vanish_in_float64_and_scale_with_float32_epsilon():
    assert _assembler.round_off_terms(jnp.float64) == (0.0, 0.0)
    eps = float(np.finfo(np.float32).eps)
    floor, slop = _assembler.round_off_terms(jnp.float32)
    assert floor == pytest.approx(1000 * eps) and slop == pytest.approx(8 * eps)


def test_soft_slop_leaves_shallow_overlaps_and_pushes_deep_ones_out_in_full():
    slop = 1e-6
    depth = jnp.asarray([0.0, 0.5e-6, 1e-6, 2e-6, 1e-5, 1e-3], jnp.float32)
    baumgarte, cap, dt = jnp.float32(0.2), jnp.float32(1.0), 2e-3
    plain = np.asarray(_assembler.gap_or_push_out(-depth, baumgarte, cap, dt))
    with_slop = np.asarray(_assembler.gap_or_push_out(-depth, baumgarte, cap, dt,
                                                      jnp.full_like(depth, slop)))
    # no push-out at or below the slop, continuous above it, in full from 10 slops on
    np.testing.assert_array_equal(with_slop[:3], 0.0)
    assert 0.0 < with_slop[3] < plain[3]
    np.testing.assert_allclose(with_slop[3], 0.2 * (2e-6 - 1e-6 * 8 / 9) / dt, rtol=1e-5)
    np.testing.assert_allclose(with_slop[4:], plain[4:], rtol=1e-6)
    # continuous at the slop
    above = _assembler.gap_or_push_out(-jnp.float32(1.0001e-6), baumgarte, cap, dt, jnp.float32(slop))
    assert 0.0 < float(above) < 1e-6
    # a zero slop is the plain rule, bit for bit
    zero = np.asarray(_assembler.gap_or_push_out(-depth, baumgarte, cap, dt, jnp.zeros_like(depth)))
    np.testing.assert_array_equal(zero, plain)


def _problem(model):
    state = jc.init(model)
    smooth = smooth_dynamics(model, state, jnp.zeros((model.nu,), state.q.dtype))
    dt = model.options.dt
    blocks, _ = _assembler.constraint_rows(model, state, smooth, dt, False)
    rows = _assembler.stack(blocks)
    problem, _ = _assembler.contact_problem(model, blocks, rows, smooth, state.v, dt)
    contacts = blocks[0]
    return problem, contacts


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_compliance_floor_only_on_indeterminate_sets_and_only_in_float32(tmp_path, dtype_name):
    path = tmp_path / "box_and_ball.xml"
    path.write_text(XML)
    dtype = getattr(jnp, dtype_name)
    model = jc.load(path, dtype=dtype)
    problem, contacts = jax.jit(_problem)(model)
    n = problem.num_contacts
    active = np.asarray(problem.active[:contacts.num_slots])
    body = np.maximum(np.asarray(contacts.body_a), np.asarray(contacts.body_b))
    box_slots = np.flatnonzero(active & (body == 1))
    ball_slots = np.flatnonzero(active & (body == 2))
    slider_slots = np.flatnonzero(active & (body == 3))
    assert box_slots.size == 4 and ball_slots.size == 1 and slider_slots.size == 1
    normal_compliance = np.asarray(problem.compliance).reshape(n, 3)[:, 2]
    normal_diag = np.diagonal(np.asarray(problem.delassus)).reshape(n, 3)[:, 2]
    default = float(model.options.compliance)
    floor, _ = _assembler.round_off_terms(dtype)
    floored = np.concatenate([box_slots, slider_slots])
    if dtype_name == "float32":
        np.testing.assert_allclose(normal_compliance[floored],
                                   np.maximum(default, floor * normal_diag[floored]), rtol=1e-6)
        assert np.all(normal_compliance[floored] > default)
    else:
        np.testing.assert_array_equal(normal_compliance[floored], default)
    # the sphere's single contact is determinate: hard in both dtypes
    np.testing.assert_array_equal(normal_compliance[ball_slots], default)
