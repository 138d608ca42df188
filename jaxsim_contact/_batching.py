"""Branching that stays a branch under ``vmap``, also nested (environments around pairs or cotangents).

:func:`any_in_batch` makes a predicate batch-wide, so that an ordinary ``lax.cond`` on it stays a
cond under ``vmap``; the branches themselves remain plain JAX (differentiable, transposable), which
matters where the cond holds derivative work (:mod:`jaxsim_contact.constraints._stage`).

``lax.switch`` / ``lax.cond`` on a traced index become a ``select`` under ``vmap``: every branch
runs on every lane. Where the branches are ordered so that a higher one is valid wherever a lower
one is (capacity tiers of a solve, "skip" vs "run with per-lane freezing"), the batch can instead
take the branch of its largest index — one branch runs, the batch's most demanding.

A ``custom_vmap`` rule alone does that for one level of ``vmap`` only: the switch it returns is an
ordinary ``lax.switch``, which an enclosing ``vmap`` (environments around pairs, or around
``jacrev``'s cotangents) turns back into a ``select``. :func:`switch_on_max` reduces the index at
the innermost level that batches it; a level that batches only the operands re-enters
:func:`switch_on_max` with the index still unbatched, so an enclosing level that batches the index
reduces it there. An index batched at two levels is reduced at the inner one only (the outer runs
a ``select`` of those reductions): re-entering after a reduction does not terminate under JAX's
JVP of a ``custom_vmap``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.custom_batching
import jax.numpy as jnp

__all__ = ["switch_on_max", "any_in_batch"]


def switch_on_max(index: jax.Array, branches: Sequence[Callable], *operands):
    """``lax.switch(index, branches, *operands)``; under ``vmap`` the branch of the batch's largest
    ``index``, run on every lane (nesting: module docstring).

    Args:
      index: integer scalar (per lane), clamped to ``[0, len(branches) - 1]`` as by ``lax.switch``.
      branches: functions of ``*operands`` with equal output structure, ordered so that a higher
        branch gives each lane the same result as (or a valid substitute for) any lower one.
      operands: pytrees passed to the branch.
    Returns:
      The chosen branch's output; under ``vmap`` every output leaf is batched.
    """
    branches = tuple(branches)

    @jax.custom_batching.custom_vmap
    def switch(index, operands):
        return jax.lax.switch(index, branches, *operands)

    @switch.def_vmap
    def _rule(axis_size, in_batched, index, operands):
        index_batched, operands_batched = in_batched
        axes = tuple(jax.tree.map(lambda batched: 0 if batched else None, operands_batched,
                                  is_leaf=lambda x: isinstance(x, bool)))
        mapped = [jax.vmap(branch, in_axes=axes, axis_size=axis_size) for branch in branches]
        if not index_batched and any(jax.tree.leaves(operands_batched)):
            # the index is not batched here but may be by an enclosing vmap (environments around
            # jacrev's cotangents): re-entered, so that level reduces it to its maximum
            out = switch_on_max(index, mapped, *operands)
        else:
            # a plain switch when the index is reduced here (one level, as JAX's JVP of a
            # custom_vmap needs: re-entering under it does not terminate) or nothing is batched
            out = jax.lax.switch(jnp.max(index) if index_batched else index, mapped, *operands)
        return out, jax.tree.map(lambda _: True, out)

    return switch(index, tuple(operands))



@jax.custom_batching.custom_vmap
def any_in_batch(flag: jax.Array) -> jax.Array:
    """``flag`` (a bool scalar per lane); under ``vmap``, at every level that batches it, the
    ``any`` over the batch, unbatched.

    A ``lax.cond`` on ``any_in_batch(p)`` is a cond under ``vmap`` (one branch runs, for every
    lane: the "some lane needs it" branch must then be valid for all lanes), where a cond on ``p``
    would become a ``select`` of both branches. Only the predicate goes through ``custom_vmap``
    (which has no reverse mode in JAX 0.10): branches stay differentiable, unlike a
    :func:`switch_on_max` whose switch itself is a ``custom_vmap``. Under nested ``vmap`` the
    result is the ``any`` over every level that batches the flag (the rule re-enters
    ``any_in_batch`` with its reduction, which an enclosing level reduces again; the predicate
    is never differentiated, so JAX's JVP of ``custom_vmap`` does not loop on it).
    """
    return flag


@any_in_batch.def_vmap
def _any_in_batch_rule(axis_size, in_batched, flag):
    (batched,) = in_batched
    # re-entered after the reduction: an enclosing vmap that batches the result reduces it too
    return (any_in_batch(jnp.any(flag)) if batched else flag), False
