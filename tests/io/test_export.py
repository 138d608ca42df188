"""``jc.export_step`` / ``jc.export_rollout`` / ``jc.load_exported`` (issue 46): the loaded program
computes what ``jit(jc.step)`` / ``jit(jc.rollout)`` compute, bit for bit, without tracing the
engine's Python again — in this process and in a fresh one — takes any model of the exported
structure, and refuses anything else by name."""

from __future__ import annotations

import json
import subprocess
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.io import ExportError


@pytest.fixture(scope="module")
def cube():
    """The dragged cube (a box on a plane, one actuated slide; in contact from the start) and a
    start state pushed sideways so that friction acts."""
    model = jc.scenes.load("dragged_cube", dtype=jnp.float64)
    state = jc.init(model, v=jnp.zeros(model.nv).at[0].set(0.3))
    return model, state


def _assert_bitwise(a, b):
    leaves_a, leaves_b = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b)
    for x, y in zip(leaves_a, leaves_b):
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_step_and_rollout_equal_the_jitted_ones_bit_for_bit(cube):
    model, state = cube
    ctrl = jnp.array([0.7])
    program = jc.load_exported(jc.export_step(model), model)
    assert (program.kind, program.steps, program.batch) == ("step", None, None)
    _assert_bitwise(program(state, ctrl), jax.jit(jc.step)(model, state, ctrl))

    ctrls = jnp.linspace(-1.0, 1.0, 6)[:, None]
    program = jc.load_exported(jc.export_rollout(model, 6), model)
    final, trajectory = program(state, ctrls)
    expected_final, expected_trajectory = jax.jit(jc.rollout)(model, state, ctrls)
    _assert_bitwise(final, expected_final)
    _assert_bitwise(trajectory, expected_trajectory)
    assert float(jnp.max(jnp.abs(trajectory.contact.force[..., 2]))) > 0.0  # contacts were solved


def test_batched_rollout_equals_the_vmapped_one(cube):
    model, state = cube
    batch = 3
    states = jax.vmap(lambda v: jc.init(model, v=v))(jnp.zeros((batch, model.nv)).at[:, 0].set(jnp.arange(batch) * 0.2))
    ctrls = jnp.ones((batch, 4, model.nu)) * jnp.array([-0.5, 0.0, 0.5])[:, None, None]
    program = jc.load_exported(jc.export_rollout(model, 4, batch=batch), model)
    final, _ = program(states, ctrls)
    expected, _ = jax.jit(jax.vmap(lambda s, u: jc.rollout(model, s, u)))(states, ctrls)
    np.testing.assert_allclose(np.asarray(final.q), np.asarray(expected.q), rtol=0, atol=1e-14)
    assert final.q.shape == (batch, model.nq)


def test_loading_and_calling_do_not_trace_the_engine(cube, monkeypatch):
    model, state = cube
    data = jc.export_step(model)

    def traced(*args, **kwargs):
        raise AssertionError("the engine's step was traced again")

    from jaxsim_contact.dynamics import _step
    from jaxsim_contact.io import _export

    monkeypatch.setattr(_step, "step", traced)
    monkeypatch.setattr(_export, "step", traced)
    monkeypatch.setattr(_export, "rollout", traced)
    program = jc.load_exported(data, model)
    assert np.all(np.isfinite(np.asarray(program(state, jnp.array([0.2])).q)))


def test_a_model_of_the_same_structure_with_other_values(cube):
    """Domain randomisation: the model's arrays are inputs of the exported program."""
    model, state = cube
    program = jc.load_exported(jc.export_rollout(model, 5), model)
    heavier = eqx.tree_at(lambda m: m.geom_friction, model, model.geom_friction * 0.25)
    loaded = jc.load_exported(jc.export_rollout(model, 5), heavier)
    ctrls = jnp.full((5, 1), 0.8)
    moved, _ = loaded(state, ctrls)
    expected, _ = jax.jit(jc.rollout)(heavier, state, ctrls)
    _assert_bitwise(moved, expected)
    original, _ = program(state, ctrls)
    assert not np.array_equal(np.asarray(original.q), np.asarray(moved.q))  # friction mattered


def test_a_fresh_process_loads_the_bytes_and_computes_the_same_step(cube, tmp_path):
    model, state = cube
    (tmp_path / "step.bin").write_bytes(jc.export_step(model))
    jc.save(tmp_path / "state.jcs", state)
    child = f"""
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
import jaxsim_contact as jc
model = jc.scenes.load("dragged_cube", dtype=jnp.float64)
program = jc.load_exported(open({str(tmp_path / 'step.bin')!r}, "rb").read(), model)
state = jc.restore({str(tmp_path / 'state.jcs')!r}, jc.init(model))
jc.save({str(tmp_path / 'next.jcs')!r}, program(state, jnp.array([0.7])))
"""
    subprocess.run([sys.executable, "-c", child], check=True, timeout=600)
    _assert_bitwise(jc.restore(tmp_path / "next.jcs", state), jax.jit(jc.step)(model, state, jnp.array([0.7])))


def test_bad_input_is_refused_by_name(cube):
    model, _ = cube
    data = jc.export_step(model)
    with pytest.raises(ExportError, match="bad magic"):
        jc.load_exported(b"not a program at all", model)
    with pytest.raises(ExportError, match="truncated"):
        jc.load_exported(data[:30], model)
    with pytest.raises(ExportError, match="corrupt program"):
        jc.load_exported(data[:-2000], model)
    tower = jc.scenes.load("tower", dtype=jnp.float64)
    with pytest.raises(ExportError, match="model differs from the exported one: model leaf #0"):
        jc.load_exported(data, tower)
    capped = model.replace_options(solver=model.options.solver.replace(max_iterations=7))
    with pytest.raises(ExportError, match="model static field .* exported has"):
        jc.load_exported(data, capped)
    from jaxsim_contact.io import _export

    header, payload = _export._read(data)
    header["platforms"] = ["tpu"]
    text = json.dumps(header).encode()
    elsewhere = _export._PREAMBLE.pack(_export.MAGIC, _export.FORMAT_VERSION, len(text)) + text + payload
    with pytest.raises(ExportError, match=r"exported for \['tpu'\], this process runs on 'cpu'"):
        jc.load_exported(elsewhere, model)
    with pytest.raises(ValueError, match="batch must be"):
        jc.export_step(model, batch=0)
    with pytest.raises(ValueError, match="steps must be"):
        jc.export_rollout(model, 0)
