"""Matrix products at full float32 precision, whatever the device's default.

JAX's default precision for a float32 ``dot`` is the device's fastest: on NVIDIA Ampere and later
GPUs (A100, H100, H200) that is TensorFloat-32, whose products carry 10 mantissa bits
(ε ≈ 1e-3), not float32's 23 (ε ≈ 1.2e-7). The contact solvers stop at criteria and round-off
floors derived from float32's ε (:func:`jaxsim_contact.contact._problem.round_off_floors`, issue
42), and Delassus operators built from TF32 products are wrong in their fourth digit, so under
TF32 those criteria are out of reach and the solver runs to its cap. So every public entry point
that computes physics traces
its body under ``jax.default_matmul_precision("highest")``: exact float32 (and float64) products
on every backend, and no effect on a CPU, where they already are. The setting is part of JAX's
trace context, so it reaches every product the body traces — including derivative rules — and
leaves the caller's own products alone.
"""

from __future__ import annotations

import functools

import jax

__all__ = ["full_precision_matmuls"]

#: the precision every product of the engine runs at (``jax.lax.Precision.HIGHEST``)
MATMUL_PRECISION = "highest"


def full_precision_matmuls(fn):
    """Decorate ``fn`` so that it traces under ``jax.default_matmul_precision("highest")``.

    Works under ``jit``, ``vmap`` and ``grad`` alike: the context is active while ``fn`` traces,
    which is when JAX records each ``dot_general``'s precision (a transposed product inherits it).
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with jax.default_matmul_precision(MATMUL_PRECISION):
            return fn(*args, **kwargs)

    return wrapper
