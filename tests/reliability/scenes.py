"""The small scene of the reliability tests: an actuated sphere on a floor (contact + control).

A sphere (radius 0.1 m, 1 kg) moves on slide joints x (pushed by motor ``push``, N) and z, and rests
on the plane ``z = 0``: one contact slot, one actuator, so faults in ``q``, ``v`` and ``ctrl`` all
reach the contact solve. Kept tiny because every reliability test compiles vmapped rollouts.
"""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np

import jaxsim_contact as jc

@functools.cache
def pusher() -> jc.Model:
    """The pusher scene (``jc.scenes.pushed_ball``, floor 0.5 / ball default friction) in float64,
    loaded once per process."""
    return jc.scenes.load("pushed_ball", dtype=jnp.float64)


def batch_inputs(model: jc.Model, batch: int, horizon: int, seed: int = 0):
    """Per-environment initial ``q (B, 2)``, ``v (B, 2)`` and ``ctrls (B, T, 1)``: spheres
    spread along x, some starting 1–5 mm inside the floor, some above it, pushed by 0–4 N."""
    rng = np.random.default_rng(seed)
    q0 = np.stack([rng.uniform(-1.0, 1.0, batch), rng.uniform(-5e-3, 5e-3, batch)], -1)
    v0 = rng.uniform(-0.3, 0.3, (batch, model.nv))
    ctrls = rng.uniform(0.0, 4.0, (batch, horizon, model.nu))
    return jnp.asarray(q0), jnp.asarray(v0), jnp.asarray(ctrls)
