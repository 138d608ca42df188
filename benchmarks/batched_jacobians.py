"""Per-environment cost of step Jacobians under ``jax.vmap`` over environments (issue 6).

For each scene of ``gradients.py`` (same start states), the full step Jacobian
``∂v⁺/∂(q, v, τ)`` by ``jax.jacrev`` and ``jax.jacfwd``: unbatched, and ``jax.vmap``-ed over a
batch of 1 and of ``--batch`` environments (start states perturbed by 1e-4), next to one forward
step. Per-env time = call time / batch; median of ``--repeats`` blocked calls, compile excluded.
Also one step and central finite differences (``2 (nq + nv + nu)`` perturbed steps in one
``vmap``, as ``gradients.py``) unbatched and over the batch, and the issue's ratios per
environment at both sizes (``*_over_*`` columns: ratios, not ms) — a batch amortises per-kernel
overhead that a single environment pays, so the two sizes can land on opposite sides of a target.
A vmapped Jacobian should cost no more per environment than the unbatched one: nested ``vmap``
(environments around ``jacrev``'s cotangents or ``jacfwd``'s tangents) once turned the implicit
rule's tiered solve into a ``select`` over every tier (``jaxsim_contact._batching``).

    python benchmarks/batched_jacobians.py [--scenes panda half_cheetah go2] [--batch 8]

Writes ``benchmarks/results/batched_jacobians.{json,md}`` (``--out`` to rename).
"""

from __future__ import annotations

import argparse
import sys
import time

import gradients as G  # benchmarks/gradients.py: scenes, start states, timing; pins one core, float64
import jax
import jax.numpy as jnp
import numpy as np
from _common import loadavg, write_results

import jaxsim_contact as jc

FD_STEP = 1e-6


def measure(mj, qpos, qvel, batch: int, repeats: int) -> dict:
    model = jc.io.from_mjmodel(mj)
    _, next_state, x = G.flat_step(model, qpos, qvel)

    def f(y):
        return next_state(y).v

    xs = x[None] + 1e-4 * jnp.asarray(np.random.default_rng(0).normal(size=(batch, x.shape[0])))

    def fd(y):  # central differences as gradients.py: 2n perturbed steps in one vmap
        return jax.vmap(f)(G._fd_inputs(y, FD_STEP))

    cases = {
        "step": (jax.jit(f), x, 1),
        "jacrev": (jax.jit(jax.jacrev(f)), x, 1),
        "jacfwd": (jax.jit(jax.jacfwd(f)), x, 1),
        "fd": (jax.jit(fd), x, 1),
        f"vmap{batch}_step": (jax.jit(jax.vmap(f)), xs, batch),
        f"vmap{batch}_fd": (jax.jit(jax.vmap(fd)), xs, batch),
        "vmap1_jacrev": (jax.jit(jax.vmap(jax.jacrev(f))), x[None], 1),
        "vmap1_jacfwd": (jax.jit(jax.vmap(jax.jacfwd(f))), x[None], 1),
        f"vmap{batch}_jacrev": (jax.jit(jax.vmap(jax.jacrev(f))), xs, batch),
        f"vmap{batch}_jacfwd": (jax.jit(jax.vmap(jax.jacfwd(f))), xs, batch),
    }
    out, values = {}, {}
    for name, (fn, arg, size) in cases.items():
        steady, compile_s, values[name] = G._timed(lambda: fn(arg), repeats)
        out[name] = dict(per_env_ms=1e3 * steady / size, compile_s=compile_s)
        if name.startswith("vmap1"):  # the batch of one must be the unbatched Jacobian
            unbatched = values[name.removeprefix("vmap1_")]
            out[name]["max_abs_vs_unbatched"] = float(jnp.max(jnp.abs(values[name][0] - unbatched)))
    # the ratios per environment, unbatched and at the batch size
    for prefix in ("", f"vmap{batch}_"):
        jac = min(out[prefix + mode]["per_env_ms"] for mode in ("jacrev", "jacfwd"))
        out[f"{prefix}jacobian_over_step"] = dict(per_env_ms=jac / out[f"{prefix}step"]["per_env_ms"])
        out[f"{prefix}fd_over_jacobian"] = dict(per_env_ms=out[f"{prefix}fd"]["per_env_ms"] / jac)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenes", nargs="+", default=["panda", "half_cheetah", "go2"])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--settle", type=int, default=100)
    parser.add_argument("--out", default="batched_jacobians")
    args = parser.parse_args()
    meta = dict(date=time.strftime("%Y-%m-%d %H:%M"), jax=jax.__version__, batch=args.batch,
                repeats=args.repeats, command="python benchmarks/batched_jacobians.py " + " ".join(sys.argv[1:]),
                loadavg_start=loadavg())
    rows = {}
    for name, (mj, qpos, qvel) in G.scenes(args.settle).items():
        if name in args.scenes:
            rows[name] = measure(mj, qpos, qvel, args.batch, args.repeats)
            print(name, {k: round(v["per_env_ms"], 3) for k, v in rows[name].items()}, flush=True)
    meta["loadavg_end"] = loadavg()
    cols = list(next(iter(rows.values())))
    lines = ["# Step Jacobians under vmap: per-environment cost (ms; `*_over_*` columns are ratios)", "",
             f"`{meta['command']}` — {meta['date']}, jax {meta['jax']}, one pinned core, float64, "
             f"median of {args.repeats}; load average {meta['loadavg_start']} → {meta['loadavg_end']}.", "",
             "| scene | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    lines += [f"| {s} | " + " | ".join(f"{r[c]['per_env_ms']:.3f}" for c in cols) + " |" for s, r in rows.items()]
    write_results(args.out, dict(meta=meta, rows=rows), "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
