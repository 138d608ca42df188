"""One ``jc.step`` as a function of a flat vector ``x = (q, v, ctrl, μ, mass)`` and its batched
derivatives: shared by the step-gradient and inverse-problem tests (each compiles one program)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

import jaxsim_contact as jc


def split(model, x):
    """``(q, v, ctrl, μ, mass)`` of the flat ``x``."""
    nq, nv, nu = model.nq, model.nv, model.nu
    return (x[:nq], x[nq:nq + nv], x[nq + nv:nq + nv + nu], x[nq + nv + nu], x[nq + nv + nu + 1])


def next_state(x, model, contact):
    """One step from ``x``: μ sets every geom's sliding friction, mass that of the last body."""
    q, v, ctrl, mu, mass = split(model, x)
    m = eqx.tree_at(lambda m: (m.geom_friction, m.body_mass), model,
                    (model.geom_friction.at[:, 0].set(mu), model.body_mass.at[-1].set(mass)))
    state = jc.State(q=q, v=v, time=jnp.zeros((), q.dtype), error=jnp.zeros((), jnp.int32),
                     contact=contact)
    return jc.step(m, state, ctrl)


def step_fn(x, model, contact):
    """``(q⁺, v⁺)`` of one step from ``x``, flat."""
    nxt = next_state(x, model, contact)
    return jnp.concatenate([nxt.q, nxt.v])


def derivatives(x, model, contact, t, w):
    """One step at ``x``: the next state, a forward-mode derivative (``jvp`` along ``t``) and a
    reverse-mode gradient (``vjp`` of ``w``, i.e. ``∇_x w·(q⁺, v⁺)``)."""
    def f(y):
        nxt = next_state(y, model, contact)
        return jnp.concatenate([nxt.q, nxt.v]), nxt

    _, tangent, nxt = jax.jvp(f, (x,), (t,), has_aux=True)
    _, pullback, _ = jax.vjp(f, x, has_aux=True)
    (gradient,) = pullback(w)
    return nxt, tangent, gradient


def make_batched(batch: int):
    """``batched(xs, model, contact, ts=None, ws=None) -> (states, J t, Jᵀ w)`` on ``len(xs) ≤ batch``
    rows, padded to ``batch`` so that every call reuses one compiled program; ``ts``/``ws``
    default to 0. ``vmap`` of ``jvp`` over the input basis is how ``jax.jacfwd`` is built, of
    ``vjp`` over the output basis ``jax.jacrev``."""
    compiled = jax.jit(jax.vmap(derivatives, (0, None, None, 0, 0)))

    def batched(xs, model, contact, ts=None, ws=None):
        n = xs.shape[0]
        ts = jnp.zeros_like(xs) if ts is None else ts
        ws = jnp.zeros((n, model.nq + model.nv), xs.dtype) if ws is None else ws
        pad = lambda a: jnp.concatenate([a, jnp.broadcast_to(a[-1:], (batch - n,) + a.shape[1:])])  # noqa: E731
        states, tangents, gradients = compiled(pad(xs), model, contact, pad(ts), pad(ws))
        return jax.tree_util.tree_map(lambda a: a[:n], states), tangents[:n], gradients[:n]

    return batched
