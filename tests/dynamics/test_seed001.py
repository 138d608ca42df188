"""Seed 001 §IV-A/B with the full pipeline (load → narrow phase → solve → integrate): a 1 kg,
0.2 m cube with μ = 0.4 on a plane.

* dragged by a force growing 0 → 20 N over 1 s (Fig. 11): sticks, then slips at
  t* = μ m g / (20 N/s) within one time step (NCP);
* launched sliding: the kinetic energy follows the maximum-dissipation prediction
  ½ m (v₀ − μ g t)² (NCP, within 1 %);
* CCP slides at a height proportional to Δt (Anitescu: Δt μ ‖c_T‖ per step), NCP does not
  (Fig. 15).
"""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.dynamics import kinetic_energy
from compiled import rollout

MASS, HALF, MU, G = 1.0, 0.1, 0.4, 9.81
STEPS = 600
NCP = jc.contact.ADMM("ncp", max_iterations=200, tolerance=1e-9)
CCP = jc.contact.ADMM("ccp", max_iterations=200, tolerance=1e-9)


@functools.cache
def cube(solver_name: str = "ncp", dt: float = 1e-3):
    model = jc.scenes.load("dragged_cube", mass=MASS, size=2 * HALF, friction=MU, dt=dt)
    # the CCP cube floats Δt μ |v| above the plane: a 1 cm margin keeps that gap a contact
    return model.replace_options(solver=NCP if solver_name == "ncp" else CCP, contact_margin=0.01)


def run(model, v0=0.0, ramp=0.0):
    dt = float(model.options.dt)
    t = np.arange(STEPS) * dt
    ctrl = jnp.asarray((ramp * t)[:, None])
    v = jnp.zeros(model.nv).at[0].set(v0)
    final, traj = rollout(model, jc.init(model, v=v), ctrl)
    assert int(final.error) == 0
    return t, traj


def test_force_ramp_sticks_then_slips_at_mu_m_g_over_rate():
    model = cube("ncp")
    dt = float(model.options.dt)
    t, traj = run(model, ramp=20.0)
    vx, x = np.asarray(traj.v[:, 0]), np.asarray(traj.q[:, 0])
    slip_expected = MU * MASS * G / 20.0  # 0.1962 s
    sliding = np.nonzero(vx > 1e-6)[0]
    assert sliding.size
    # the force of step k acts over [t_k, t_k + dt]: the first step whose force exceeds μmg
    slip_time = t[sliding[0]]
    assert abs(slip_time - slip_expected) <= dt
    stuck = t < slip_expected - dt
    assert np.max(np.abs(vx[stuck])) < 1e-9 and np.max(np.abs(x[stuck])) < 1e-9
    # after slipping the cube accelerates as (F − μ m g)/m: v(t) = 10 (t − t*)² m/s
    late = t > slip_expected + 0.1
    np.testing.assert_allclose(vx[late], 10.0 * (t[late] + dt - slip_expected) ** 2, rtol=0.02, atol=2e-4)
    # at rest on its face: four contacts share the weight
    normal = np.asarray(traj.contact.force[:, :4, 2])
    np.testing.assert_allclose(normal[stuck].sum(axis=1), MASS * G, rtol=1e-6)


def test_sliding_cube_loses_energy_as_maximum_dissipation_predicts():
    model = cube("ncp")
    dt = float(model.options.dt)
    v0 = 2.0
    t, traj = run(model, v0=v0)
    energy = np.asarray(jax_energy(model, traj.q, traj.v))
    t_after = t + dt
    sliding = t_after < v0 / (MU * G) - 2 * dt
    predicted = 0.5 * MASS * (v0 - MU * G * t_after[sliding]) ** 2
    # traj[k] is the state after step k, at time t_k + dt
    loss, predicted_loss = 0.5 * MASS * v0**2 - energy[sliding], 0.5 * MASS * v0**2 - predicted
    # energy lost relative to the prediction: within 1 % (NCP)
    rel = np.abs(loss[5:] - predicted_loss[5:]) / predicted_loss[5:]
    assert np.max(rel) < 0.01, np.max(rel)
    # and the cube stops and stays: friction never injects energy
    assert np.all(np.diff(energy) <= 1e-9)
    assert abs(float(traj.v[-1, 0])) < 1e-9


def jax_energy(model, q, v):
    import jax

    return jax.jit(jax.vmap(lambda q, v: kinetic_energy(model, q, v)))(q, v)


@pytest.mark.parametrize("dt", [1e-3, 2e-3])
def test_ccp_slides_at_a_height_proportional_to_dt_and_ncp_does_not(dt):
    # Fig. 15: the cube dragged by the 20 N/s ramp. Under CCP a sliding contact keeps
    # c_N − c*_N = μ‖c_T‖ (seed 001 eq. 19), so the dragged cube rides Δt μ |v| above the plane;
    # under NCP it stays on it.
    heights = {}
    for name in ("ncp", "ccp"):
        model = cube(name).replace_options(dt=dt)  # dt is dynamic: same compiled rollout
        t, traj = run(model, ramp=20.0)
        # the z slide measures the height above the resting position
        z, vx = np.asarray(traj.q[:, 2]), np.asarray(traj.v[:, 0])
        heights[name] = (z[vx > 0.2], vx[vx > 0.2])
    z_ncp, _ = heights["ncp"]
    z_ccp, v_ccp = heights["ccp"]
    assert z_ncp.size > 50 and z_ccp.size > 50
    assert np.max(np.abs(z_ncp)) < 1e-9
    np.testing.assert_allclose(z_ccp, dt * MU * v_ccp, rtol=0.05)


@pytest.mark.parametrize("solver", ["ncp", "newton"])
def test_tangential_compliance_lets_a_sticking_cube_creep_at_dt_rt_f_over_4(solver):
    # A constant 2 N push (below μ m g = 3.9 N). With tangential compliance R_T each of the four
    # sticking contacts satisfies c_T = −R_T λ_T (seed 001 §II, compliant rows), so the cube creeps
    # at the steady velocity v with m (v − v)/Δt = F − 4 v / (Δt R_T), i.e. v = Δt R_T F / 4; the
    # transient contracts by m / (m + 4 / R_T) per step. Without it the cube does not move.
    model = cube("ncp")
    if solver == "newton":  # Newton solves the compliant CCP (normal compliance > 0)
        model = model.replace_options(solver=jc.contact.PrimalNewton(tolerance=1e-10), compliance=1e-4)
    dt, push = float(model.options.dt), 2.0
    ctrl = jnp.full((STEPS, 1), push)
    for r_t in (0.0, 1e-2, 0.5):
        final, traj = rollout(model.replace_options(tangential_compliance=r_t), jc.init(model), ctrl)
        assert int(final.error) == 0
        vx = np.asarray(traj.v[STEPS // 2:, 0])
        if r_t == 0.0:
            assert np.max(np.abs(vx)) < 1e-9
        else:
            np.testing.assert_allclose(vx, dt * r_t * push / 4, rtol=1e-4)
