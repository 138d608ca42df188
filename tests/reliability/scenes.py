"""The small scene of the reliability tests: an actuated sphere on a floor (contact + control).

A sphere (radius 0.1 m, 1 kg) moves on slide joints x (pushed by motor ``push``, N) and z, and rests
on the plane ``z = 0``: one contact slot, one actuator, so faults in ``q``, ``v`` and ``ctrl`` all
reach the contact solve. Kept tiny because every reliability test compiles vmapped rollouts.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import jax.numpy as jnp
import numpy as np

import jaxsim_contact as jc

PUSHER_XML = """<mujoco model="pusher">
  <option timestep="0.01" gravity="0 0 -9.81"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="0.5 0.005 0.0001"/>
    <body name="ball" pos="0 0 0.1">
      <joint name="x" type="slide" axis="1 0 0"/>
      <joint name="z" type="slide" axis="0 0 1"/>
      <geom type="sphere" size="0.1" mass="1"/>
    </body>
  </worldbody>
  <actuator><motor name="push" joint="x"/></actuator>
</mujoco>
"""


@functools.cache
def pusher() -> jc.Model:
    """The pusher scene in float64 (loaded once per process)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pusher.xml"
        path.write_text(PUSHER_XML)
        return jc.load(path, dtype=jnp.float64)


def batch_inputs(model: jc.Model, batch: int, horizon: int, seed: int = 0):
    """Per-environment initial ``q (B, 2)``, ``v (B, 2)`` and ``ctrls (B, T, 1)``: spheres
    spread along x, some starting 1–5 mm inside the floor, some above it, pushed by 0–4 N."""
    rng = np.random.default_rng(seed)
    q0 = np.stack([rng.uniform(-1.0, 1.0, batch), rng.uniform(-5e-3, 5e-3, batch)], -1)
    v0 = rng.uniform(-0.3, 0.3, (batch, model.nv))
    ctrls = rng.uniform(0.0, 4.0, (batch, horizon, model.nu))
    return jnp.asarray(q0), jnp.asarray(v0), jnp.asarray(ctrls)
