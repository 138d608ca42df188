"""``jc.viz`` time series and plots on a cube dropped on the floor: the contact force carries the
cube's weight at rest, energies match closed forms (m g z, ½ m v²), plots draw those series."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc

STEPS = 300  # 0.6 s at dt = 2 ms: the cube lands (1 mm gap) and rests
GRAVITY = 9.81


@pytest.fixture(scope="module")
def cube():
    """A 1 kg cube of side 0.1 m, 1 mm above the floor, simulated for ``STEPS`` steps, and a batch
    of two copies (the second dropped from 5 cm) made by vmapping the same rollout."""
    model = jc.scenes.load("tower", count=1, size=0.1, mass=1.0, gap=1e-3)
    q0 = jnp.stack([model.qpos0, model.qpos0.at[2].add(0.05)])
    states = jax.vmap(lambda q: jc.init(model, q=q))(q0)
    _, batch = jax.jit(jax.vmap(jc.rollout, in_axes=(None, 0, None)))(model, states, jnp.zeros((STEPS, 0)))
    return model, batch


def test_contact_forces_carry_the_weight_at_rest(cube):
    model, batch = cube
    series = jc.viz.contact_force_series(model, batch, env_id=0)
    assert series["time"].shape == (STEPS,) and series["normal"].shape == (STEPS,)
    rest = slice(STEPS - 50, STEPS)
    # four corner contacts share the weight m g (force units: N, seed 001 §II)
    np.testing.assert_allclose(series["normal"][rest], GRAVITY * 1.0, rtol=1e-3)
    assert np.all(series["friction"][rest] < 1e-6)
    assert np.all(series["num_active"][rest] == 4)
    # the second copy is still falling at 0.1 s (5 cm drop takes ~0.1 s): no contact force yet
    falling = jc.viz.contact_force_series(model, batch, env_id=1)
    assert np.all(falling["normal"][:40] == 0.0) and np.all(falling["num_active"][:40] == 0)


def test_energies_match_closed_forms(cube):
    model, batch = cube
    one = jc.viz.select_env(batch, 1)
    series = jc.viz.energy_series(model, batch, env_id=1)
    q, v = np.asarray(one.q), np.asarray(one.v)
    # a cube falling straight down: potential m g z of its centre, kinetic ½ m |v|² (no rotation)
    np.testing.assert_allclose(series["potential"], GRAVITY * q[:, 2], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(series["kinetic"], 0.5 * np.sum(v[:, :3] ** 2, axis=1), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(series["total"], series["kinetic"] + series["potential"])
    np.testing.assert_allclose(series["time"], np.asarray(one.time))


def test_plots_draw_the_series(cube):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    model, batch = cube
    fig, (left, right) = plt.subplots(1, 2)
    ax = jc.viz.plot_contact_forces(model, batch, env_id=0, ax=left)
    lines = {line.get_label(): line for line in ax.get_lines()}
    np.testing.assert_array_equal(lines["normal (sum)"].get_ydata(),
                                  jc.viz.contact_force_series(model, batch, env_id=0)["normal"])
    ax = jc.viz.plot_energy(model, batch, env_id=1, ax=right)
    assert {line.get_label() for line in ax.get_lines()} == {"kinetic", "potential", "total"}
    assert ax.get_ylabel() == "energy (J)"
    plt.close(fig)


def test_bad_input(cube):
    model, batch = cube
    with pytest.raises(ValueError, match="out of range"):
        jc.viz.contact_force_series(model, batch, env_id=2)
    with pytest.raises(ValueError, match="no contact data"):
        jc.viz.contact_force_series(model, jc.State(q=batch.q, v=batch.v, time=batch.time, error=batch.error))
    with pytest.raises(ValueError, match="empty"):
        jc.viz.energy_series(model, jax.tree_util.tree_map(lambda x: x[:, :0], batch))
    with pytest.raises(ValueError, match="do not fit"):
        jc.viz.energy_series(model, jc.State(q=batch.q[0, :, :3], v=batch.v[0], time=batch.time[0],
                                             error=batch.error[0]))


def test_replay_carries_the_active_contact_points(cube):
    """The replay's contact markers are the active contact points: at rest, the cube's four bottom
    corners on the floor (|x| = |y| = 5 cm, z = 0)."""
    import base64
    import json
    import re

    model, batch = cube
    page = jc.viz.to_html(model, batch, max_frames=STEPS)
    data = json.loads(re.search(r'<script id="jc-data" type="application/json">(.*?)</script>', page,
                                flags=re.S).group(1))
    slots = data["num_contact_slots"]
    assert slots == jc.constraints.contact_slots(model)
    points = np.frombuffer(base64.b64decode(data["contact_points"]), "<f4").reshape(2, STEPS, slots, 3)
    resting = points[0, -1][np.isfinite(points[0, -1, :, 0])]
    assert resting.shape == (4, 3)
    np.testing.assert_allclose(np.abs(resting[:, :2]), 0.05, atol=1e-4)
    np.testing.assert_allclose(resting[:, 2], 0.0, atol=1e-3)
    assert np.isnan(points[1, :40]).all()  # the second cube is still falling: no markers
