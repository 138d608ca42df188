"""``jc.export_step`` / ``jc.export_rollout`` / ``jc.load_exported``: a model's step or rollout as
bytes (``jax.export``), reloaded in another process without tracing the engine's Python again.

The persistent compilation cache (``jax_compilation_cache_dir``) skips XLA's compile on a second
run, but not tracing and lowering ``jc.step``'s Python, which alone takes seconds per model.
``jax.export`` serialises the lowered StableHLO; loading it costs a deserialisation and an XLA
compile (a cache hit when the cache is on), so a warm start is about a second.

What is exported: the function of the model's **array leaves**, the state's leaves and the
controls, with the model's static structure (kinematic tree, geom types, solver and options
objects) baked in. The loaded program therefore takes any model of the same structure — e.g. the
same robot with randomised masses or friction — and refuses a model of another structure by name.

File layout (integers little-endian)::

    8 bytes   magic  b"JAXSIMX\\x00"
    4 bytes   format version (uint32)
    8 bytes   header length H (uint64)
    H bytes   header: UTF-8 JSON {kind, steps, batch, dtype, package_version, jax_version,
              platforms, model_leaves, model_static}
    rest      jax.export's serialisation (flatbuffers)
"""

from __future__ import annotations

import dataclasses
import json
import struct
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp

from .._model import Model, State
from .._version import __version__
from ..dynamics import init, rollout, step
from ._checkpoint import _first_difference, _leaf_rows, _static_rows

__all__ = ["ExportError", "ExportedProgram", "export_rollout", "export_step", "load_exported"]

MAGIC = b"JAXSIMX\x00"
FORMAT_VERSION = 1
_PREAMBLE = struct.Struct("<8sIQ")  # magic, format version, header length


class ExportError(ValueError):
    """Bytes that are not an exported program of this format, or one exported for another model
    structure, dtype or platform."""


def _split(model: Model):
    """``(array leaves, static part)`` of ``model`` (``eqx.partition`` on arrays)."""
    arrays, static = eqx.partition(model, eqx.is_array)
    return jax.tree_util.tree_flatten(arrays), static


def _state_structure(model: Model):
    """``(leaves as ShapeDtypeStruct, treedef)`` of ``jc.init(model)``, traced abstractly (no
    computation)."""
    return jax.tree_util.tree_flatten(jax.eval_shape(lambda: init(model)))


def _export(model: Model, kind: str, steps: int | None, batch: int | None,
            platforms: Sequence[str] | None) -> bytes:
    if batch is not None and (isinstance(batch, bool) or int(batch) != batch or batch < 1):
        raise ValueError(f"export: batch must be None or a positive int, got {batch!r}")
    (model_leaves, model_def), static = _split(model)
    state_leaves, state_def = _state_structure(model)
    nu = model.nu
    ctrl_shape = (nu,) if kind == "step" else (steps, nu)

    def program(model_leaves, state_leaves, ctrl):
        full = eqx.combine(jax.tree_util.tree_unflatten(model_def, model_leaves), static)
        start = jax.tree_util.tree_unflatten(state_def, state_leaves)
        if kind == "step":
            return jax.tree_util.tree_leaves(step(full, start, ctrl))
        return jax.tree_util.tree_leaves(rollout(full, start, ctrl))

    lead = () if batch is None else (batch,)
    if batch is not None:
        program = jax.vmap(program, in_axes=(None, 0, 0))
    state_avals = [jax.ShapeDtypeStruct((*lead, *x.shape), x.dtype) for x in state_leaves]
    ctrl_aval = jax.ShapeDtypeStruct((*lead, *ctrl_shape), model.dtype)
    model_avals = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in model_leaves]
    exported = jax.export.export(jax.jit(program), platforms=platforms)(model_avals, state_avals, ctrl_aval)
    header = json.dumps({
        "kind": kind, "steps": steps, "batch": batch, "dtype": str(jnp.dtype(model.dtype)),
        "package_version": __version__, "jax_version": jax.__version__,
        "platforms": list(exported.platforms),
        "model_leaves": _leaf_rows(model), "model_static": _static_rows(model),
    }, separators=(",", ":")).encode("utf-8")
    return _PREAMBLE.pack(MAGIC, FORMAT_VERSION, len(header)) + header + bytes(exported.serialize())


def export_step(model: Model, *, batch: int | None = None,
                platforms: Sequence[str] | None = None) -> bytes:
    """``jc.step`` of ``model`` as bytes that :func:`load_exported` turns back into a callable.

    Traces and lowers the step once (seconds); the bytes hold StableHLO, not a compiled binary,
    so they load on any machine with a compatible jaxlib (``jax.export``'s compatibility window).

    Args:
      model: the model; its array leaves become inputs of the exported program (a model of the
        same structure can be passed at load), its static structure is baked in.
      batch: ``None`` for one environment, or ``B``: states and controls with a leading axis
        ``B`` (the step ``vmap``-ped; the model shared).
      platforms: ``jax.export`` lowering platforms, e.g. ``("cpu", "cuda")``; default: the
        default backend's.

    Returns:
      The serialised program: ``Path(...).write_bytes(data)`` to save it.
    """
    return _export(model, "step", None, batch, platforms)


def export_rollout(model: Model, steps: int, *, batch: int | None = None,
                   platforms: Sequence[str] | None = None) -> bytes:
    """``jc.rollout`` of ``model`` over ``steps`` steps (controls ``(steps, nu)``, or ``(B, steps,
    nu)`` with ``batch=B``) as bytes for :func:`load_exported`; see :func:`export_step`."""
    if isinstance(steps, bool) or int(steps) != steps or steps < 1:
        raise ValueError(f"export_rollout: steps must be a positive int, got {steps!r}")
    return _export(model, "rollout", int(steps), batch, platforms)


@dataclasses.dataclass(frozen=True)
class ExportedProgram:
    """A loaded step or rollout: ``program(state, ctrl)`` returns the next state (``kind ==
    "step"``) or ``(final_state, trajectory)`` (``kind == "rollout"``, controls ``(steps, nu)``),
    as ``jc.step`` / ``jc.rollout`` of the model given to :func:`load_exported` would, bit for bit.

    Attributes:
      kind: ``"step"`` or ``"rollout"``.
      steps: the rollout's steps (``None`` for a step).
      batch: the leading batch axis of states and controls (``None``: unbatched).
      platforms: the platforms it was lowered for.
    """

    kind: str
    steps: int | None
    batch: int | None
    platforms: tuple[str, ...]
    _call: object = dataclasses.field(repr=False)
    _model_leaves: list = dataclasses.field(repr=False)
    _state_def: object = dataclasses.field(repr=False)

    def __call__(self, state: State, ctrl: jax.Array):
        leaves = self._call(self._model_leaves, jax.tree_util.tree_leaves(state), ctrl)
        if self.kind == "step":
            return jax.tree_util.tree_unflatten(self._state_def, leaves)
        half = len(leaves) // 2
        return (jax.tree_util.tree_unflatten(self._state_def, leaves[:half]),
                jax.tree_util.tree_unflatten(self._state_def, leaves[half:]))


def _read(data: bytes) -> tuple[dict, bytes]:
    data = bytes(data)
    if len(data) < _PREAMBLE.size or data[:8] != MAGIC:
        raise ExportError("load_exported: not an exported jaxsim_contact program (bad magic bytes)")
    _, version, header_size = _PREAMBLE.unpack_from(data)
    if version != FORMAT_VERSION:
        raise ExportError(f"load_exported: format version {version}, this library reads {FORMAT_VERSION}")
    end = _PREAMBLE.size + header_size
    if len(data) < end:
        raise ExportError("load_exported: truncated data (header incomplete)")
    try:
        header = json.loads(data[_PREAMBLE.size:end].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ExportError(f"load_exported: corrupt header ({err})") from None
    return header, data[end:]


def load_exported(data: bytes, model: Model) -> ExportedProgram:
    """Turn bytes of :func:`export_step` / :func:`export_rollout` back into a callable, for
    ``model`` (the exported model or one of the same structure: same leaf shapes and dtypes, same
    static fields). No Python of the engine is traced; the first call compiles the StableHLO (a
    persistent-cache hit when JAX's cache is on and holds it).

    Raises:
      ExportError: the bytes are not an exported program of this format; the model's structure,
        dtype or the process's x64 setting differ from the exported one (the first difference is
        named); the exported platforms do not include the default backend.
    """
    header, payload = _read(data)
    for what, saved, now in (("model leaf", header["model_leaves"], _leaf_rows(model)),
                             ("model static field", header["model_static"], _static_rows(model))):
        if saved != now:
            raise ExportError("load_exported: the model differs from the exported one: "
                              + _first_difference(saved, now, what).replace("file has", "exported has")
                              .replace("`like`", "the model"))
    if header["dtype"] == "float64" and not jax.config.jax_enable_x64:
        raise ExportError("load_exported: the program was exported in float64; enable it before "
                          "loading (jax.config.update('jax_enable_x64', True))")
    backend = jax.default_backend()
    # jax.export names GPU platforms "cuda" / "rocm" where default_backend() says "gpu"
    accepted = ("cuda", "rocm") if backend == "gpu" else (backend,)
    if not any(name in header["platforms"] for name in accepted):
        raise ExportError(f"load_exported: exported for {header['platforms']}, this process runs on "
                          f"{backend!r} (export with platforms=(..., {accepted[0]!r}))")
    try:
        exported = jax.export.deserialize(bytearray(payload))
    except Exception as err:  # flatbuffers' errors on corrupt bytes are not one class
        raise ExportError(f"load_exported: corrupt program ({type(err).__name__}: {err})") from None
    (model_leaves, _), _ = _split(model)
    _, state_def = _state_structure(model)
    return ExportedProgram(kind=header["kind"], steps=header["steps"], batch=header["batch"],
                           platforms=tuple(header["platforms"]), _call=jax.jit(exported.call),
                           _model_leaves=model_leaves, _state_def=state_def)
