"""Step Jacobian of the settled MJX humanoid vs central finite differences, for several FD steps.

The check behind the humanoid row of the 2026-11-23 ``gradients.py`` run
(``benchmarks/results/gradients.md``, since deleted: ``git log -- benchmarks/results/gradients.md``;
same state: 100 MuJoCo C steps from the keyframe, one ``jc.step`` for the warm start, default
contact options, float64):
``jax.jacfwd`` and ``jax.jacrev`` of ``v⁺`` w.r.t. ``(q, v, τ)`` against central differences with
``h`` in 1e-3 … 1e-8, plus the active constraint rows (kind, distance, force). An error that does
not change with ``h`` is not an FD-step or mode-boundary effect.

    PYTHONPATH=. taskset -c 0 python benchmarks/probes/humanoid_jacobian_vs_fd.py

Needs ``mujoco-mjx`` (its test data holds the humanoid): ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxsim_contact as jc  # noqa: E402
from jaxsim_contact.constraints import contact_slots  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/
import gradients  # noqa: E402  (benchmarks/gradients.py: the flat-x step)


def settled_humanoid(settle: int = 100):
    import mujoco.mjx as mjx_module

    path = Path(mjx_module.__file__).parent / "test_data" / "humanoid" / "humanoid.xml"
    mj = jc.io.compile_mjmodel(path)
    data = mujoco.MjData(mj)
    data.qpos[:] = mj.key_qpos[0] if mj.nkey else mj.qpos0
    for _ in range(settle):
        mujoco.mj_step(mj, data)
    return mj, data.qpos.copy(), data.qvel.copy()


def main():
    mj, qpos, qvel = settled_humanoid()
    model = jc.io.from_mjmodel(mj)
    state, next_state, x = gradients.flat_step(model, qpos, qvel)

    def f_step(x):
        return next_state(x).v

    c = jax.jit(next_state)(x).contact
    budget = contact_slots(model)
    rows = np.where(np.asarray(c.active))[0]
    print(f"active rows {len(rows)} (geom contact slots: {budget}), converged {bool(c.converged)}, "
          f"iterations {int(c.iterations)}, residual {float(c.residual):.1e}")
    for i in rows:
        kind = "contact" if i < budget else "joint limit"
        print(f"  row {i:3d} {kind:11s} distance {float(c.distance[i]):+.2e}  force {np.asarray(c.force[i])}")
    jf = jax.jit(jax.jacfwd(f_step))(x)
    jr = jax.jit(jax.jacrev(f_step))(x)
    print(f"jacfwd vs jacrev: {float(jnp.linalg.norm(jf - jr) / jnp.linalg.norm(jf)):.1e}")
    n = x.shape[0]
    fd = jax.jit(jax.vmap(f_step))
    eye = jnp.eye(n, dtype=x.dtype)
    for h in (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8):
        out = fd(jnp.concatenate([x + h * eye, x - h * eye]))
        jfd = ((out[:n] - out[n:]) / (2 * h)).T
        print(f"h = {h:.0e}: |J - J_fd| / |J_fd| = {float(jnp.linalg.norm(jf - jfd) / jnp.linalg.norm(jfd)):.1e}")


if __name__ == "__main__":
    main()
