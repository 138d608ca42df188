"""Seed 004 §IV-B (a): recover the launch velocity of a sliding cube from its final pose.

A 1 kg, 0.2 m cube (μ = 0.4) resting on the floor is launched at an unknown tangential velocity
``θ = (v_x, v_y)`` and slides for ``T`` steps. Given its final configuration ``q*_T``, Gauss–Newton
on ``½‖q_T(θ) − q*_T‖²`` with the forward-mode Jacobian of the whole rollout
(``jax.jacfwd(jc.rollout)``, implicit contact derivatives) recovers ``θ``.

    python examples/inverse_sliding_cube.py [--steps 100] [--gradient implicit|unrolled]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)

import jaxsim_contact as jc  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--gradient", default="implicit", choices=["implicit", "unrolled"])
    parser.add_argument("--truth", type=float, nargs=2, default=[0.9, -0.4])
    parser.add_argument("--guess", type=float, nargs=2, default=[0.6, 0.1])
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()

    model = jc.scenes.load("dragged_cube", dtype=jnp.float64)
    model = model.replace_options(
        gradient=args.gradient,
        solver=jc.contact.ADMM("ncp", max_iterations=500, tolerance=1e-12, factorization="cholesky"))

    def final_pose(theta):
        state = jc.init(model, v=jnp.concatenate([theta, jnp.zeros(4, theta.dtype)]))
        final, _ = jc.rollout(model, state, jnp.zeros((args.steps, model.nu), theta.dtype))
        return final.q, final.q

    jac_and_pose = jax.jit(jax.jacfwd(final_pose, has_aux=True))
    with jc.compile_report(f"the Jacobian of the {args.steps}-step rollout (jacfwd)"):
        _, target = jax.block_until_ready(jac_and_pose(jnp.asarray(args.truth)))
    print(f"target q_T = {target}")

    theta = jnp.asarray(args.guess)
    for it in range(args.iterations + 1):
        t0 = time.perf_counter()
        jac, q_T = jax.block_until_ready(jac_and_pose(theta))
        residual = q_T - target
        err = float(jnp.linalg.norm(residual))
        print(f"iter {it:2d}  theta = ({float(theta[0]):+.12f}, {float(theta[1]):+.12f})  "
              f"||q_T - q*|| = {err:.3e}  ({time.perf_counter() - t0:.3f} s)")
        if err < 1e-12:
            break
        step, *_ = jnp.linalg.lstsq(jac, -residual)
        theta = theta + step
    print(f"recovered theta = {theta}, truth = {args.truth}")


if __name__ == "__main__":
    main()
