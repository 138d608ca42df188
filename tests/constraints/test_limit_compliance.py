"""Soft joint limits (``Options.limit_compliance``): a horizontal pendulum held against its upper
limit by gravity settles ``R τ Δt² / β`` past it, with both solvers that accept a compliant
problem; with hard limits (the default) it settles on the limit."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from compiled import rollout

MASS, ARM, G, DT, STEPS = 1.0, 0.5, 9.81, 1e-3, 400

XML = f"""
<mujoco>
  <option gravity="0 0 -{G}" timestep="{DT}"/>
  <compiler angle="radian"/>
  <worldbody>
    <body>
      <joint name="hinge" type="hinge" axis="0 1 0" range="-1 0" limited="true"/>
      <geom type="sphere" size="0.02" pos="{ARM} 0 0" mass="{MASS}" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>"""


@pytest.mark.parametrize("solver", [jc.contact.ADMM("ncp", tolerance=1e-12, max_iterations=500),
                                    jc.contact.PrimalNewton(tolerance=1e-12)], ids=["admm", "newton"])
def test_pendulum_against_a_soft_limit_settles_r_tau_dt2_over_beta_past_it(tmp_path, solver):
    path = tmp_path / "pendulum.xml"
    path.write_text(XML)
    model = jc.load(path).replace_options(solver=solver)
    beta = float(model.options.baumgarte)
    torque = MASS * G * ARM  # gravity turns the arm (along +x) about +y into the upper limit q = 0
    for r in (0.0, 1.0, 10.0):
        if r == 0.0 and isinstance(solver, jc.contact.PrimalNewton):
            continue  # Newton solves compliant problems only
        final, traj = rollout(model.replace_options(limit_compliance=r), jc.init(model),
                              jnp.zeros((STEPS, 0)))
        assert int(final.error) == 0
        q = np.asarray(traj.q[STEPS // 2:, 0])
        np.testing.assert_allclose(q, r * torque * DT**2 / beta, rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(np.asarray(traj.v[STEPS // 2:, 0]), 0.0, atol=1e-9)
