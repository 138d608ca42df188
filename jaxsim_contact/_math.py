"""Small-vector math: safe norms, quaternions (w, x, y, z) and rigid transforms.

Everything here is elementwise-safe: ``safe_norm`` and ``safe_normalize`` use the double-``where``
trick per element so that neither the value nor any derivative is NaN at zero (DESIGN §4). No
function tests a whole array for zero.

Conventions
-----------
* Quaternions are ``(..., 4)`` arrays ``(w, x, y, z)``, unit norm, Hamilton product.
* ``Transform(pos, quat)`` maps a point from its local (body) frame to the parent (usually world)
  frame: ``p_world = R(quat) @ p_body + pos``.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

__all__ = [
    "sum_in_order",
    "cross",
    "argmax_first",
    "argmin_first",
    "argmax_packed",
    "argmin_packed",
    "first_true_indices",
    "coordinate_dot",
    "safe_norm",
    "safe_sqrt",
    "safe_normalize",
    "quat_mul",
    "quat_conj",
    "quat_rotate",
    "quat_to_matrix",
    "matrix_to_quat",
    "matrix_rotate",
    "matrix_inverse_rotate",
    "quat_from_axis_angle",
    "quat_normalize",
    "Transform",
]


def argmax_first(x: jax.Array, axis: int = -1) -> jax.Array:
    """``jnp.argmax(x, axis)`` (the first maximal entry, int32) as two plain reductions.

    XLA:CPU lowers ``argmax`` to a variadic (value, index) reduction that it does not vectorise;
    ``max`` then the smallest index attaining it are two plain reductions that it does vectorise,
    which is cheaper on batched vertex arrays such as the meshes' hulls. Equal to ``jnp.argmax``
    for every input without NaN; where a slice holds a NaN (it has no maximum) the result is an
    index of that slice, not necessarily the NaN's.
    """
    return _first_index_of(x, jnp.max(x, axis=axis, keepdims=True), axis)


def argmin_first(x: jax.Array, axis: int = -1) -> jax.Array:
    """``jnp.argmin(x, axis)`` as two plain reductions; see :func:`argmax_first`."""
    return _first_index_of(x, jnp.min(x, axis=axis, keepdims=True), axis)


def argmax_packed(x: jax.Array, axis: int = -1) -> jax.Array:
    """Index (int32) of a maximal entry along ``axis`` from ONE float reduction.

    The index is written into the last ``b`` mantissa bits of each entry (``b`` = bits of the axis
    length, e.g. 9 for 384 entries) and the maximum of those keys carries its own index. The
    result is :func:`argmax_first`'s unless other entries agree with the maximum in all but those
    last ``b`` bits (then the smallest of their indices wins): the picked entry is always within
    ``2^b`` units in the last place of the maximum (``~2^(b-52)`` relative, 1e-13 for ``b = 9``).
    Axes of up to ``2^26`` (float64) or ``2^11`` (float32) entries are packed; a longer one (the
    tag would eat half the mantissa: a float32 mesh hull of over 2048 vertices, G1's and
    Centauro's) takes :func:`argmax_first`'s two reductions instead; entries below the
    smallest normal number count as equal to it (XLA:CPU flushes subnormals, which would erase
    the index bits), infinities as the largest finite number; a slice holding a NaN gives an
    index in range. One pass instead of :func:`argmax_first`'s two: cheaper on XLA:CPU (used by
    the plane-mesh contact selection).
    """
    return _packed_extreme(x, axis, largest=True)


def argmin_packed(x: jax.Array, axis: int = -1) -> jax.Array:
    """Index of a minimal entry from one float reduction; see :func:`argmax_packed`."""
    return _packed_extreme(x, axis, largest=False)


def _packed_extreme(x, axis, largest: bool):
    dtype = x.dtype
    int_type = {8: jnp.int64, 4: jnp.int32}[dtype.itemsize]
    axis = axis % x.ndim
    n = x.shape[axis]
    bits = max(n - 1, 1).bit_length()
    info = jnp.finfo(dtype)
    if bits > info.nmant // 2:  # too long to pack the index: two exact reductions
        return (argmax_first if largest else argmin_first)(x, axis).astype(jnp.int32)
    low = jnp.asarray((1 << bits) - 1, int_type)
    # keep every key a normal, finite number: the index bits survive the reduction
    magnitude = jnp.clip(jnp.abs(x), info.tiny, info.max)
    x = jnp.where(x < 0, -magnitude, magnitude)
    word = jax.lax.bitcast_convert_type(x, int_type)
    index = jax.lax.broadcasted_iota(int_type, x.shape, axis)
    negative = word < 0
    # larger keys for smaller indices (max) or smaller keys (min); a negative float's bits grow
    # with its magnitude, so its ordering of the index bits is the reverse
    tag = jnp.where(negative == largest, index, low - index)
    key = jax.lax.bitcast_convert_type((word & ~low) | tag, dtype)
    best = jax.lax.bitcast_convert_type(jnp.max(key, axis) if largest else jnp.min(key, axis), int_type)
    tag = best & low
    found = jnp.where((best < 0) == largest, tag, low - tag)
    return jnp.clip(found, 0, n - 1).astype(jnp.int32)


def _first_index_of(x, extreme, axis):
    n = x.shape[axis]
    index = jax.lax.broadcasted_iota(jnp.int32, x.shape, axis % x.ndim)
    first = jnp.min(jnp.where(x == extreme, index, n), axis=axis)
    return jnp.minimum(first, n - 1)  # a NaN slice matches nowhere: keep the index in range


def first_true_indices(mask: jax.Array, size: int) -> jax.Array:
    """Indices ``(size,)`` int32 of the first ``size`` True entries of a 1-D ``mask``, ascending.

    Positions past the number of True entries hold indices of False entries (unspecified which):
    mask them with ``arange(size) < sum(mask)``. Same leading entries as
    ``jnp.nonzero(mask, size=size)``, computed as one ``lax.top_k`` on the scores ``n - i`` of the
    True entries: XLA:CPU emits two kernels for it, far fewer than for ``nonzero``'s cumulative
    sum and scatter, and it runs faster.
    """
    if mask.ndim != 1 or not 0 < size <= mask.shape[0]:
        raise ValueError(f"first_true_indices needs a 1-D mask and 0 < size <= its length, got "
                         f"shape {mask.shape} and size {size}")
    n = mask.shape[0]
    if n >= 2**24:  # the scores are float32 (XLA:CPU's TopK kernel); exact below 2**24
        raise ValueError(f"first_true_indices supports masks shorter than 2**24, got {n}")
    score = jnp.where(mask, n - jnp.arange(n), -1).astype(jnp.float32)
    return jax.lax.top_k(score, size)[1].astype(jnp.int32)


def sum_in_order(terms):
    """``terms[0] + terms[1] + …`` left to right, without a leading zero (the program of the
    written-out sum: a Python ``sum`` adds ``0 +`` first)."""
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def coordinate_dot(a, b):
    """``a[0] b[0] + a[1] b[1] + a[2] b[2]``: the dot product of 3-vectors held coordinate by
    coordinate (each ``a[i]``, ``b[i]`` an array or scalar; they broadcast).

    For ``(N, 3)`` point sets, pass ``[points[..., i] for i in range(3)]``: XLA:CPU lowers a sum
    over a size-3 axis (and an ``(N, 3) @ (3,)`` dot under ``vmap``) to slow reductions and
    transposed copies, while these three products fuse with their consumers
    (docs/sharp_bits.md, "Slow XLA:CPU lowerings we avoid").
    """
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def safe_norm(x: jax.Array, axis: int = -1, keepdims: bool = False) -> jax.Array:
    """Euclidean norm along ``axis`` whose value and derivatives are finite at ``x = 0``.

    Args:
      x: ``(..., n)`` array.
    Returns:
      ``(...)`` norms (or ``(..., 1)`` with ``keepdims``); 0 where ``x`` is exactly zero, with a zero
      gradient there (the subgradient of minimal norm).
    """
    norm = safe_sqrt(jnp.sum(x * x, axis=axis, keepdims=True))
    return norm if keepdims else jnp.squeeze(norm, axis=axis)


def safe_sqrt(square: jax.Array) -> jax.Array:
    """``√square`` of a sum of squares (any shape, ``≥ 0``) whose value and derivatives are finite
    at 0: 0 there, with a zero derivative. For norms written component by component (XLA:CPU is
    slow on reductions over size-2/3 axes, docs/sharp_bits.md)."""
    is_zero = square == 0
    # Double where: the sqrt never sees 0, so its derivative 1/(2 sqrt) never becomes inf * 0.
    return jnp.where(is_zero, 0.0, jnp.sqrt(jnp.where(is_zero, 1.0, square)))


def safe_normalize(
    x: jax.Array, axis: int = -1, fallback: jax.Array | None = None
) -> jax.Array:
    """``x / |x|`` along ``axis``; returns ``fallback`` (default: zeros) where ``x`` is exactly zero.

    Value and derivatives are finite everywhere, per element of the batch.

    Args:
      x: ``(..., n)`` array.
      fallback: broadcastable to ``x``; used where ``|x| = 0``.
    """
    sq = jnp.sum(x * x, axis=axis, keepdims=True)
    is_zero = sq == 0
    inv = jax.lax.rsqrt(jnp.where(is_zero, 1.0, sq))
    unit = x * inv
    if fallback is None:
        fallback = jnp.zeros_like(x)
    return jnp.where(is_zero, jnp.broadcast_to(fallback, x.shape).astype(x.dtype), unit)


def quat_mul(q1: jax.Array, q2: jax.Array) -> jax.Array:
    """Hamilton product ``q1 ⊗ q2`` of ``(..., 4)`` quaternions (w, x, y, z)."""
    w1, x1, y1, z1 = jnp.moveaxis(q1, -1, 0)
    w2, x2, y2, z2 = jnp.moveaxis(q2, -1, 0)
    return jnp.stack(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ],
        axis=-1,
    )


def quat_conj(q: jax.Array) -> jax.Array:
    """Conjugate (= inverse for unit quaternions) of ``(..., 4)`` quaternions."""
    return q * jnp.array([1.0, -1.0, -1.0, -1.0], dtype=q.dtype)


def quat_normalize(q: jax.Array) -> jax.Array:
    """Unit quaternion; the identity where ``q`` is exactly zero."""
    identity = jnp.zeros_like(q).at[..., 0].set(1.0)
    return safe_normalize(q, fallback=identity)


def cross(a: jax.Array, b: jax.Array) -> jax.Array:
    """Cross product of ``(..., 3)`` vectors (broadcast), the same arithmetic as ``jnp.cross``.

    Stacked on the last axis: ``jnp.cross`` stacks the components on a new leading axis and moves
    it last, a physical transpose that XLA:CPU runs as separate copy kernels — on the small
    batched arrays of the rigid-body pass and, worse, in their transposes under reverse mode.
    """
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return jnp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def quat_rotate(q: jax.Array, v: jax.Array) -> jax.Array:
    """Rotate ``(..., 3)`` vectors ``v`` by unit quaternions ``q`` ``(..., 4)``: ``R(q) v``."""
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


def quat_to_matrix(q: jax.Array) -> jax.Array:
    """Rotation matrices ``(..., 3, 3)`` of unit quaternions ``(..., 4)``."""
    w, x, y, z = jnp.moveaxis(q, -1, 0)
    return jnp.stack(
        [
            jnp.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            jnp.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            jnp.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=-2,
    )


def matrix_rotate(rotation: jax.Array, v: jax.Array) -> jax.Array:
    """``R v`` for a ``(3, 3)`` rotation matrix and ``(..., 3)`` vectors, as a sum of the columns
    of ``R`` scaled by the components of ``v``.

    Same value as ``rotation @ v`` (to rounding); written elementwise so that XLA fuses it with its
    producer and consumer instead of emitting a separate reduction (or, for :func:`quat_rotate`,
    concatenation) kernel — in loops that rotate every iteration with a loop-invariant ``R``
    (GJK/EPA support maps) that is fewer kernels to compile and to launch.
    """
    _check_rotation_matrix(rotation, v)
    return (rotation[:, 0] * v[..., 0:1] + rotation[:, 1] * v[..., 1:2]
            + rotation[:, 2] * v[..., 2:3])


def matrix_inverse_rotate(rotation: jax.Array, v: jax.Array) -> jax.Array:
    """``Rᵀ v`` for a ``(3, 3)`` rotation matrix and ``(..., 3)`` vectors (see :func:`matrix_rotate`)."""
    _check_rotation_matrix(rotation, v)
    return rotation[0] * v[..., 0:1] + rotation[1] * v[..., 1:2] + rotation[2] * v[..., 2:3]


def _check_rotation_matrix(rotation, v):
    # one matrix for all vectors (vmap for a batch of matrices): a stacked (N, 3, 3) array would
    # otherwise be sliced along the wrong axes without an error
    if jnp.shape(rotation) != (3, 3) or jnp.shape(v)[-1:] != (3,):
        raise ValueError(f"matrix_rotate / matrix_inverse_rotate take one (3, 3) matrix and (..., 3) "
                         f"vectors (vmap over batches of matrices), got {jnp.shape(rotation)} and "
                         f"{jnp.shape(v)}")


def matrix_to_quat(m: jax.Array) -> jax.Array:
    """Unit quaternion (w ≥ 0) of rotation matrices ``(..., 3, 3)`` (Shepperd's method, branch-free)."""
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    trace = m00 + m11 + m22
    # Four candidate formulas; pick the one with the largest (well-conditioned) pivot per element.
    cands = jnp.stack(
        [
            jnp.stack([1 + trace, m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]], -1),
            jnp.stack([m[..., 2, 1] - m[..., 1, 2], 1 + m00 - m11 - m22, m[..., 0, 1] + m[..., 1, 0], m[..., 0, 2] + m[..., 2, 0]], -1),
            jnp.stack([m[..., 0, 2] - m[..., 2, 0], m[..., 0, 1] + m[..., 1, 0], 1 - m00 + m11 - m22, m[..., 1, 2] + m[..., 2, 1]], -1),
            jnp.stack([m[..., 1, 0] - m[..., 0, 1], m[..., 0, 2] + m[..., 2, 0], m[..., 1, 2] + m[..., 2, 1], 1 - m00 - m11 + m22], -1),
        ],
        axis=-2,
    )
    pivots = jnp.stack([trace, m00, m11, m22], -1)
    best = jnp.argmax(pivots, axis=-1)
    q = jnp.take_along_axis(cands, best[..., None, None], axis=-2)[..., 0, :]
    q = quat_normalize(q)
    return jnp.where(q[..., :1] < 0, -q, q)


def quat_from_axis_angle(axis: jax.Array, angle: jax.Array) -> jax.Array:
    """Quaternion of a rotation by ``angle`` (rad) about ``axis`` ``(..., 3)`` (normalised here)."""
    axis = safe_normalize(axis)
    half = 0.5 * jnp.asarray(angle)[..., None]
    return jnp.concatenate([jnp.cos(half), jnp.sin(half) * axis], axis=-1)


class Transform(eqx.Module):
    """Rigid transform ``p_parent = R(quat) p_local + pos``.

    Attributes:
      pos: ``(..., 3)`` translation in metres.
      quat: ``(..., 4)`` unit quaternion (w, x, y, z).

    Leading batch dimensions are allowed; all methods broadcast over them.
    """

    pos: jax.Array
    quat: jax.Array

    def __init__(self, pos, quat=None):
        pos = jnp.asarray(pos)
        if not jnp.issubdtype(pos.dtype, jnp.floating):
            pos = pos.astype(jnp.result_type(float))
        if quat is None:
            quat = jnp.zeros(pos.shape[:-1] + (4,), pos.dtype).at[..., 0].set(1.0)
        self.pos = pos
        self.quat = jnp.asarray(quat, dtype=pos.dtype)

    @classmethod
    def identity(cls, dtype=None) -> "Transform":
        """The identity transform (float64 when x64 is enabled, else float32)."""
        dtype = dtype or jnp.result_type(float)
        return cls(jnp.zeros(3, dtype), jnp.array([1.0, 0.0, 0.0, 0.0], dtype))

    @classmethod
    def from_matrix(cls, pos, rotation) -> "Transform":
        """From a translation ``(..., 3)`` and rotation matrix ``(..., 3, 3)``."""
        return cls(jnp.asarray(pos), matrix_to_quat(jnp.asarray(rotation)))

    @property
    def rotation(self) -> jax.Array:
        """``(..., 3, 3)`` rotation matrix."""
        return quat_to_matrix(self.quat)

    def apply(self, point_local: jax.Array) -> jax.Array:
        """Map points ``(..., 3)`` from the local frame to the parent frame."""
        return quat_rotate(self.quat, point_local) + self.pos

    def rotate(self, vec_local: jax.Array) -> jax.Array:
        """Rotate free vectors ``(..., 3)`` from the local frame to the parent frame."""
        return quat_rotate(self.quat, vec_local)

    def inverse_rotate(self, vec_parent: jax.Array) -> jax.Array:
        """Rotate free vectors ``(..., 3)`` from the parent frame into the local frame."""
        return quat_rotate(quat_conj(self.quat), vec_parent)

    def inverse_apply(self, point_parent: jax.Array) -> jax.Array:
        """Map points ``(..., 3)`` from the parent frame into the local frame."""
        return self.inverse_rotate(point_parent - self.pos)

    def inverse(self) -> "Transform":
        """The inverse transform."""
        q_inv = quat_conj(self.quat)
        return Transform(-quat_rotate(q_inv, self.pos), q_inv)

    def compose(self, other: "Transform") -> "Transform":
        """``self ∘ other``: first ``other`` (child → self's local), then ``self``."""
        return Transform(self.apply(other.pos), quat_mul(self.quat, other.quat))

    def __matmul__(self, other: "Transform") -> "Transform":
        return self.compose(other)
