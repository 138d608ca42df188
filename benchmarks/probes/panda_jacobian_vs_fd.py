"""Step Jacobian of the Panda of ``benchmarks/gradients.py`` vs finite differences, on and off its
joint limits (the check behind the panda row of ``benchmarks/results/gradients_rerun_ours.md``, a
2026-11-23 run since deleted: ``git log -- benchmarks/results/gradients_rerun_ours.md``).

For each start (``step.panda`` clipped onto the limits, as the benchmark did before, and
``PANDA_LIMIT_MARGIN`` inside them, as it does now): one ``jc.step`` for the warm start (default
options, float64), then the active constraint rows at the differentiated state (distance, force)
and ``jax.jacfwd`` of ``v⁺`` w.r.t. ``(q, v, τ)`` against central, forward and backward differences
for ``h`` in 1e-4 … 1e-8, per input block.

On the limits, gravity holds joint 4 and a finger ~1e-13 from their limits, where ``v⁺(q)`` has a
kink: the limit row's target normal speed is ``-d/dt`` for ``d > 0`` (close the gap in one step)
but ``β (-d)/dt`` for ``d < 0`` (Baumgarte push-out, ``β = 0.2``), so ``∂v⁺/∂q`` of those joints
jumps by a factor ``β`` across ``d = 0``. The Jacobian is the one-sided derivative on the side the
state lies on (it agrees with that one-sided difference), central differences average the two
slopes at every ``h``: the q block is off by ~67 %. The v and τ blocks agree to the ADMM
tolerance (1e-6: their 1.9e-4 at h ≤ 1e-6 drops to 1.7e-9 with tolerance 1e-10, the q block stays at
67 %). Off the limits no row is active and every block agrees to ~1e-9.

    PYTHONPATH=. taskset -c 1 python benchmarks/probes/panda_jacobian_vs_fd.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/
import gradients  # benchmarks/gradients.py: the scene (motors, PANDA_LIMIT_MARGIN)
import step as step_bench

import jaxsim_contact as jc
from jaxsim_contact.constraints import contact_slots


def report(limit_margin: float):
    mj, q0 = step_bench.panda(edit=gradients._motors_on_joints, limit_margin=limit_margin)
    model = jc.io.from_mjmodel(mj)
    nq, nv = model.nq, model.nv
    state, next_state, x = gradients.flat_step(model, q0, np.zeros(nv))

    def f_step(x):
        return next_state(x).v

    c = jax.jit(next_state)(x).contact
    budget = contact_slots(model)
    print(f"\nstart {limit_margin:g} inside the joint limits: {int(jnp.sum(c.active))} active rows, "
          f"{int(c.iterations)} solver iterations, residual {float(c.residual):.1e}")
    for i in np.where(np.asarray(c.active))[0]:
        kind = "contact" if i < budget else f"limit of dof {i - budget}"
        print(f"  row {i:3d} {kind:16s} distance {float(c.distance[i]):+.2e}  normal force "
              f"{float(c.force[i, 2]):.3g}")
    jf = jax.jit(jax.jacfwd(f_step))(x)
    n = x.shape[0]
    fd = jax.jit(jax.vmap(f_step))
    f0 = jax.jit(f_step)(x)
    eye = jnp.eye(n, dtype=x.dtype)
    blocks = (("q", slice(0, nq)), ("v", slice(nq, nq + nv)), ("tau", slice(nq + nv, n)))

    def rel(a, b):
        return float(jnp.linalg.norm(a - b) / jnp.maximum(jnp.linalg.norm(b), 1e-300))

    for h in (1e-4, 1e-5, 1e-6, 1e-7, 1e-8):
        out = fd(jnp.concatenate([x + h * eye, x - h * eye]))
        central = ((out[:n] - out[n:]) / (2 * h)).T
        forward, backward = ((out[:n] - f0) / h).T, ((f0 - out[n:]) / h).T
        per_block = "  ".join(f"{name} {rel(jf[:, s], central[:, s]):.1e}" for name, s in blocks)
        print(f"  h = {h:.0e}: |J - J_fd|/|J_fd| central {rel(jf, central):.1e} ({per_block}); "
              f"forward {rel(jf, forward):.1e}, backward {rel(jf, backward):.1e}")


def main():
    report(0.0)
    report(gradients.PANDA_LIMIT_MARGIN)


if __name__ == "__main__":
    main()
