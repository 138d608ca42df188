"""``reset_where``: re-initialise the environments of a batch selected by a mask (DESIGN §5).

The partner of the fault isolation in :func:`jaxsim_contact.step`: an environment frozen by an
``ErrorFlag.FREEZE`` bit (or finished, in RL terms) is replaced by a fresh initial state while the
others keep theirs bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from .._model import Model, State
from ._step import init

__all__ = ["reset_where"]


def reset_where(model: Model, state: State, mask: jax.Array, key: jax.Array,
                init_fn: Callable[[jax.Array], State] | None = None) -> State:
    """Replace the environments where ``mask`` is True by fresh initial states.

    Args:
      model: the scene (not batched).
      state: a batch of states (every leaf with a leading axis ``B``), or one state.
      mask: ``(B,)`` bool (or a scalar bool for one state): which environments to reset.
      key: a PRNG key (``jax.random.key`` or ``PRNGKey``), split into one key per environment.
      init_fn: ``key -> State`` builds one fresh state. Default: ``jc.init(model)``, i.e.
        ``q = qpos0``, ``v = 0``, ``time = 0``, ``error = 0``, empty contact data. A
        :class:`~jaxsim_contact._model.Model` has no notion of initial-state noise, so the default
        ignores ``key`` and every reset environment gets exactly the model's initial state; pass
        ``init_fn`` (e.g. an RL environment's randomised reset) to randomise it by ``key``.

    Returns:
      The batch with the masked environments re-initialised (error bits cleared) and every other
      environment bitwise unchanged. Traced code: jit-, vmap- and grad-safe (``where`` per leaf;
      a reset environment passes no derivative to its old state, even a NaN one).
    """
    if init_fn is None:
        def init_fn(_key):
            return init(model)

    mask = jnp.asarray(mask, bool)
    if mask.ndim == 0:
        fresh = init_fn(key)
    elif mask.ndim == 1:
        fresh = jax.vmap(init_fn)(jax.random.split(key, mask.shape[0]))
    else:
        raise ValueError(f"reset_where: mask must be a scalar or (B,), got shape {mask.shape}")

    def select(new, old):
        new = jnp.asarray(new, dtype=jnp.asarray(old).dtype)
        if new.shape != jnp.shape(old):
            raise ValueError(
                f"reset_where: a fresh state leaf has shape {new.shape} but the batch has "
                f"{jnp.shape(old)}; is mask's length the batch size?")
        cond = mask.reshape(mask.shape + (1,) * (new.ndim - mask.ndim))
        return jnp.where(cond, new, old)

    return jax.tree_util.tree_map(select, fresh, state)
