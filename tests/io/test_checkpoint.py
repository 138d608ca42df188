"""``jc.save`` / ``jc.restore`` (issue 8): bitwise round trips of Model, State and pytrees of them;
every kind of bad file fails with its specific error and never yields a state."""

from __future__ import annotations

import dataclasses
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.io import (
    CheckpointStructureError,
    CheckpointVersionError,
    CorruptCheckpointError,
    NotACheckpointError,
)
from jaxsim_contact.io._checkpoint import FORMAT_VERSION, MAGIC

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reliability"))
from scenes import pusher  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def random_bits_like(tree, seed: int):
    """Every leaf filled with random bit patterns of its dtype (NaN payloads, -0.0, subnormals,
    infinities included for floats): a round trip must preserve all of them."""
    rng = np.random.default_rng(seed)

    def fill(x):
        x = np.asarray(x)
        if x.dtype == bool:
            return jnp.asarray(rng.integers(0, 2, x.shape).astype(bool))
        raw = rng.integers(0, 256, x.size * x.dtype.itemsize, dtype=np.uint8)
        return jnp.asarray(raw.view(x.dtype).reshape(x.shape))

    return jax.tree_util.tree_map(fill, tree)


def assert_bitwise(a, b):
    """Same leaf paths, dtypes, shapes and bytes (static fields come from ``like`` and are not
    compared here: a model's ``source`` path may differ)."""
    flat_a = jax.tree_util.tree_flatten_with_path(a)[0]
    flat_b = jax.tree_util.tree_flatten_with_path(b)[0]
    assert [p for p, _ in flat_a] == [p for p, _ in flat_b]
    for (_, x), (_, y) in zip(flat_a, flat_b, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def batched_state(model, batch=5, seed=0):
    like = jax.vmap(lambda _: jc.init(model))(jnp.arange(batch))
    return random_bits_like(like, seed)


def test_model_and_state_round_trip_bitwise(tmp_path):
    model = jc.scenes.load("demo", dtype=jnp.float64)  # meshes, every primitive, free joints
    assert len(model.mesh_vertices) == 1
    model = random_bits_like(model, 1)  # any bit pattern, not just physical values
    state = batched_state(model)
    for tree, like in [
        (model, jc.scenes.load("demo", dtype=jnp.float64)),
        (state, jax.vmap(lambda _: jc.init(model))(jnp.arange(5))),
        ({"model": model, "states": [state, state]}, {"model": model, "states": [state, state]}),
    ]:
        path = tmp_path / "tree.jcx"
        jc.save(path, tree)
        assert_bitwise(jc.restore(path, like), tree)
    assert sorted(os.listdir(tmp_path)) == ["tree.jcx"]  # the temporary file was renamed away


def test_float32_model_round_trips_and_like_can_be_abstract(tmp_path):
    model32 = pusher().astype(jnp.float32)
    state = batched_state(model32, batch=3, seed=3)
    jc.save(tmp_path / "m.jcx", (model32, state))
    like = jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), (model32, state))
    restored = jc.restore(tmp_path / "m.jcx", like)
    assert_bitwise(restored, (model32, state))
    assert restored[0].body_mass.dtype == jnp.float32


def test_restored_model_simulates_like_the_original(tmp_path):
    model = pusher().replace_options(dt=0.005, baumgarte=0.3)
    jc.save(tmp_path / "model.jcx", model)
    restored = jc.restore(tmp_path / "model.jcx", pusher())
    assert float(restored.options.dt) == 0.005 and float(restored.options.baumgarte) == 0.3
    assert restored.tree == model.tree and restored.geom_type == model.geom_type


@pytest.fixture
def saved(tmp_path):
    model = pusher()
    state = batched_state(model, batch=4, seed=5)
    path = tmp_path / "state.jcx"
    jc.save(path, state)
    return path, state


def _check_never_restores(path, like, error, match):
    with pytest.raises(error, match=match):
        jc.restore(path, like)


def test_other_format_version_is_refused(saved):
    path, state = saved
    data = bytearray(path.read_bytes())
    assert bytes(data[:8]) == MAGIC
    struct.pack_into("<I", data, 8, FORMAT_VERSION + 1)
    path.write_bytes(bytes(data))
    _check_never_restores(path, state, CheckpointVersionError, f"format version {FORMAT_VERSION + 1}")


@pytest.mark.parametrize("keep", ["4 bytes", "preamble-1", "mid-header", "mid-payload", "all-but-1"])
def test_truncated_file_is_refused(saved, keep):
    path, state = saved
    data = path.read_bytes()
    header_size = struct.unpack_from("<Q", data, 12)[0]
    cut = {"4 bytes": 4, "preamble-1": 19, "mid-header": 20 + header_size // 2,
           "mid-payload": (20 + header_size + len(data)) // 2, "all-but-1": len(data) - 1}[keep]
    path.write_bytes(data[:cut])
    _check_never_restores(path, state, CorruptCheckpointError, "truncated")


def test_corrupted_or_extended_payload_is_refused(saved):
    path, state = saved
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(data) + b"\0")
    _check_never_restores(path, state, CorruptCheckpointError, "unexpected bytes")
    data[-3] ^= 0x01  # one flipped bit in the last array
    path.write_bytes(bytes(data))
    _check_never_restores(path, state, CorruptCheckpointError, "checksum")


def test_other_structure_is_refused(saved):
    path, state = saved
    # another batch size, another scene, a model instead of a state
    _check_never_restores(path, batched_state(pusher(), batch=3), CheckpointStructureError, r"\.q")
    cube = jc.scenes.load("dragged_cube", dtype=jnp.float64)
    _check_never_restores(path, batched_state(cube, batch=4), CheckpointStructureError, "array leaf")
    _check_never_restores(path, pusher(), CheckpointStructureError, "another structure")
    # same array shapes, other static configuration
    model_path = path.parent / "model.jcx"
    jc.save(model_path, pusher())
    _check_never_restores(model_path, pusher().replace_options(gradient="unrolled"),
                          CheckpointStructureError, r"\.options\.gradient")
    renamed = dataclasses.replace(pusher(), body_names=("world", "other"))
    _check_never_restores(model_path, renamed, CheckpointStructureError, r"\.body_names")


def test_non_checkpoint_files_are_refused(tmp_path):
    state = jc.init(pusher())
    np.save(tmp_path / "array.npy", np.zeros(3))
    (tmp_path / "model.xml").write_text(
        (REPO / "tests" / "models" / "pendulum.xml").read_text())
    (tmp_path / "empty").write_bytes(b"")
    # the opening bytes of a pickle stream (protocol 4): refused by its magic, never unpickled
    (tmp_path / "data.pkl").write_bytes(b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00" + b"\0" * 16)
    for name in ("array.npy", "model.xml", "empty", "data.pkl"):
        _check_never_restores(tmp_path / name, state, NotACheckpointError, "not a jaxsim_contact checkpoint")
    with pytest.raises(FileNotFoundError):
        jc.restore(tmp_path / "missing.jcx", state)


def test_object_arrays_are_refused_at_save(tmp_path):
    with pytest.raises(TypeError, match="object array"):
        jc.save(tmp_path / "x.jcx", {"a": np.array([{"x": 1}], dtype=object)})
    assert not list(tmp_path.iterdir())


def test_restore_in_a_fresh_process_and_without_x64(tmp_path):
    """The structure digest is stable across processes; float64 data restored with JAX's x64 mode
    off (where it would silently become float32) is refused."""
    model = jc.scenes.load("demo", dtype=jnp.float64)
    jc.save(tmp_path / "demo.jcx", model)
    script = textwrap.dedent(f"""
        import sys, jax
        x64 = sys.argv[1] == "x64"
        jax.config.update("jax_enable_x64", x64)
        import jaxsim_contact as jc
        like = jc.scenes.load("demo")
        try:
            restored = jc.restore({str(tmp_path / 'demo.jcx')!r}, like)
            print("OK", restored.body_mass.dtype)
        except jc.CheckpointError as err:
            print(type(err).__name__, err)
    """)
    out = {}
    for mode in ("x64", "x32"):
        out[mode] = subprocess.run([sys.executable, "-c", script, mode], capture_output=True, text=True,
                                   cwd=REPO, check=True, timeout=300).stdout.strip()
    assert out["x64"] == "OK float64"
    assert out["x32"].startswith("CheckpointStructureError") and "float64" in out["x32"]
