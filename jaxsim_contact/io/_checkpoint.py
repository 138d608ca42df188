"""``jc.save`` / ``jc.restore``: bitwise checkpoints of Model, State or any pytree of them.

File layout (all integers little-endian)::

    8 bytes   magic  b"JAXSIMC\\x00"
    4 bytes   format version (uint32)              -- FORMAT_VERSION
    8 bytes   header length H (uint64)
    H bytes   header: UTF-8 JSON {package_version, leaves, static, payload_size, payload_sha256}
    rest      payload: ``equinox.tree_serialise_leaves`` of the tree (NumPy ``.npy`` records)

The header describes the structure of the saved tree: one ``[path, shape, dtype]`` row per array
leaf, and one ``[path, digest]`` row per static field of every ``equinox.Module`` in it (kinematic
structure, joint and geom types, names, solver caps, ...). :func:`restore` rebuilds the tree from
``like`` (which supplies the static fields) and refuses, with a specific :class:`CheckpointError`,
anything that is not exactly a checkpoint of that structure: another file type, another format
version, a truncated or corrupted file (payload size and SHA-256), or a different structure
(naming the first differing leaf or static field). It never returns a wrong state.

Nothing is pickled: arrays are written as ``.npy`` records and read with ``allow_pickle=False``;
object arrays are rejected at save time. The provenance field ``Model.source`` (the path a model
was loaded from) is not part of the structure, so a model loaded from a copy of the file matches.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import io
import json
import os
import struct
import tempfile
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import numpy as np

from .._version import __version__

__all__ = [
    "save",
    "restore",
    "FORMAT_VERSION",
    "MAGIC",
    "CheckpointError",
    "NotACheckpointError",
    "CheckpointVersionError",
    "CorruptCheckpointError",
    "CheckpointStructureError",
]

MAGIC = b"JAXSIMC\x00"
FORMAT_VERSION = 1
_PREAMBLE = struct.Struct("<8sIQ")  # magic, format version, header length
#: static fields that record where something came from, not what it is
_PROVENANCE_FIELDS = frozenset({"source"})


class CheckpointError(ValueError):
    """A file :func:`restore` cannot turn into the requested tree (base class)."""


class NotACheckpointError(CheckpointError):
    """The file does not start with the jaxsim_contact checkpoint magic bytes."""


class CheckpointVersionError(CheckpointError):
    """The file was written in another checkpoint format version."""


class CorruptCheckpointError(CheckpointError):
    """The file is truncated, has trailing bytes, or its payload fails the checksum."""


class CheckpointStructureError(CheckpointError):
    """The file holds a tree of another structure than ``like`` (leaf shapes / dtypes / static
    configuration)."""


def _package_version() -> str:
    return __version__


def _is_array_leaf(x: Any) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic, jax.ShapeDtypeStruct, bool, int, float,
                          complex))


def _leaf_rows(tree) -> list[list]:
    """``[path, shape, dtype]`` per array leaf, in flattening order (the payload's order)."""
    rows = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        if isinstance(leaf, (jax.Array, np.ndarray, np.generic, jax.ShapeDtypeStruct)):
            rows.append([jax.tree_util.keystr(path), list(np.shape(leaf)), str(np.dtype(leaf.dtype))])
        elif _is_array_leaf(leaf):
            rows.append([jax.tree_util.keystr(path), [], type(leaf).__name__])
    return rows


def _canonical(value: Any) -> str:
    """A deterministic text form of a static value (no memory addresses)."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return repr(value)
    if isinstance(value, enum.Enum):
        return f"{type(value).__qualname__}.{value.name}"
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(_canonical(v) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_canonical(k)}:{_canonical(v)}" for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))) + "}"
    if isinstance(value, np.ndarray):
        return f"ndarray{value.shape}{value.dtype}:{hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()}"
    if isinstance(value, np.generic):
        return repr(value.item())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        inner = ",".join(f"{f.name}={_canonical(getattr(value, f.name))}" for f in dataclasses.fields(value))
        return f"{type(value).__qualname__}({inner})"
    return type(value).__qualname__


def _static_rows(tree, path: str = "") -> list[list[str]]:
    """``[path, digest]`` per static field of every ``equinox.Module`` in ``tree``."""
    rows = []
    if isinstance(tree, eqx.Module):
        rows.append([path or "<root>", "type:" + type(tree).__qualname__])
        for field in dataclasses.fields(tree):
            value = getattr(tree, field.name, None)
            sub = f"{path}.{field.name}"
            if field.metadata.get("static", False):
                if field.name not in _PROVENANCE_FIELDS:
                    rows.append([sub, hashlib.sha256(_canonical(value).encode()).hexdigest()[:24]])
            else:
                rows.extend(_static_rows(value, sub))
    elif isinstance(tree, (tuple, list)):
        for i, value in enumerate(tree):
            rows.extend(_static_rows(value, f"{path}[{i}]"))
    elif isinstance(tree, dict):
        for k in sorted(tree, key=repr):
            rows.extend(_static_rows(tree[k], f"{path}[{k!r}]"))
    return rows


def save(path: str | os.PathLike, tree) -> None:
    """Write ``tree`` (a Model, a State, or any pytree of arrays and equinox Modules) to ``path``.

    Array leaves are stored bit for bit (any shape and dtype, batched states included); static
    fields are not stored (``restore`` takes them from ``like``) but their digest is, so a file
    only restores into a tree of the same structure. The file is written to a temporary file in
    the same folder and renamed into place, so an interrupted save never leaves a truncated file
    under ``path``.

    Raises:
      TypeError: a leaf is an object array (it could only be stored by pickling).
    """
    for leaf_path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        if isinstance(leaf, (np.ndarray, jax.Array)) and leaf.dtype == object:
            raise TypeError(f"jc.save: leaf {jax.tree_util.keystr(leaf_path)} is an object array; "
                            "only numeric arrays can be saved (no pickling)")
    buffer = io.BytesIO()
    eqx.tree_serialise_leaves(buffer, tree)
    payload = buffer.getvalue()
    header = json.dumps({
        "package_version": _package_version(),
        "leaves": _leaf_rows(tree),
        "static": _static_rows(tree),
        "payload_size": len(payload),
        "payload_sha256": hashlib.sha256(payload).hexdigest(),
    }, separators=(",", ":")).encode("utf-8")
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(_PREAMBLE.pack(MAGIC, FORMAT_VERSION, len(header)))
            handle.write(header)
            handle.write(payload)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _first_difference(saved: list, expected: list, what: str) -> str:
    for i, (a, b) in enumerate(zip(saved, expected)):
        if a != b:
            return f"{what} #{i}: file has {a}, `like` has {b}"
    return f"{what} count: file has {len(saved)}, `like` has {len(expected)}"


def restore(path: str | os.PathLike, like):
    """Read a tree written by :func:`save`, with the structure (and static fields) of ``like``.

    Args:
      path: file written by :func:`save`.
      like: a tree of the same structure, e.g. ``jc.init(model)`` for a saved state, the model for
        a saved model (its array values are not used; ``jax.ShapeDtypeStruct`` leaves work).

    Returns:
      The saved tree, bitwise equal to what was saved.

    Raises:
      FileNotFoundError: no file at ``path``.
      NotACheckpointError: not a jaxsim_contact checkpoint (wrong magic bytes).
      CheckpointVersionError: written in another checkpoint format version.
      CorruptCheckpointError: truncated, trailing bytes, or a payload checksum mismatch.
      CheckpointStructureError: saved for another structure than ``like`` (names the first
        differing leaf or static field), or a leaf that cannot be represented here (e.g. float64
        data with JAX's x64 mode off).
    """
    path = Path(path)
    data = path.read_bytes()
    name = str(path)
    size = _PREAMBLE.size
    if len(data) < size:
        if MAGIC.startswith(data[: len(MAGIC)]) and data:
            raise CorruptCheckpointError(f"{name}: truncated checkpoint ({len(data)} bytes, shorter "
                                         f"than the {size}-byte preamble)")
        raise NotACheckpointError(f"{name}: not a jaxsim_contact checkpoint ({len(data)} bytes)")
    magic, version, header_size = _PREAMBLE.unpack_from(data)
    if magic != MAGIC:
        raise NotACheckpointError(f"{name}: not a jaxsim_contact checkpoint (starts with {magic!r}, "
                                  f"expected {MAGIC!r})")
    if version != FORMAT_VERSION:
        raise CheckpointVersionError(
            f"{name}: checkpoint format version {version}; this jaxsim_contact "
            f"{_package_version()} reads version {FORMAT_VERSION} only")
    if len(data) < size + header_size:
        raise CorruptCheckpointError(f"{name}: truncated checkpoint (header needs {header_size} bytes, "
                                     f"{len(data) - size} present)")
    try:
        header = json.loads(data[size:size + header_size].decode("utf-8"))
        payload_size = int(header["payload_size"])
        payload_sha256 = str(header["payload_sha256"])
        saved_leaves, saved_static = header["leaves"], header["static"]
    except (ValueError, KeyError, TypeError) as err:
        raise CorruptCheckpointError(f"{name}: unreadable checkpoint header ({err})") from None
    payload = data[size + header_size:]
    if len(payload) < payload_size:
        raise CorruptCheckpointError(f"{name}: truncated checkpoint (payload has {len(payload)} of "
                                     f"{payload_size} bytes)")
    if len(payload) > payload_size:
        raise CorruptCheckpointError(f"{name}: {len(payload) - payload_size} unexpected bytes after "
                                     "the payload")
    if hashlib.sha256(payload).hexdigest() != payload_sha256:
        raise CorruptCheckpointError(f"{name}: payload checksum mismatch (the file is corrupted)")
    expected_leaves, expected_static = _leaf_rows(like), _static_rows(like)
    if saved_leaves != expected_leaves:
        raise CheckpointStructureError(
            f"{name}: saved for another structure than `like` (written by jaxsim_contact "
            f"{header.get('package_version')}); first difference at "
            + _first_difference(saved_leaves, expected_leaves, "array leaf"))
    if saved_static != expected_static:
        raise CheckpointStructureError(
            f"{name}: saved with another static configuration than `like`; first difference at "
            + _first_difference(saved_static, expected_static, "static field"))
    stream = io.BytesIO(payload)
    tree = eqx.tree_deserialise_leaves(stream, like)
    if stream.tell() != len(payload):
        raise CorruptCheckpointError(f"{name}: payload not fully consumed")
    restored = _leaf_rows(tree)
    if restored != saved_leaves:
        raise CheckpointStructureError(
            f"{name}: the saved arrays cannot be represented exactly here (is JAX's x64 mode "
            "off?); first difference at " + _first_difference(restored, saved_leaves, "array leaf"))
    return tree
