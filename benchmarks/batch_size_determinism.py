"""How much does an environment's trajectory depend on the batch it runs in (XLA:CPU)?

Runs the dragged-cube scene of ``tests/reliability/test_determinism.py`` for ``--steps`` steps as
one vmapped batch of 256 and again as batches of 7 and 1 holding some of the same environments,
and reports per state leaf the largest absolute and relative difference. Then it shows the op
responsible: a sum over a small minor axis (``jnp.sum(x**2, -1)`` on a ``(B, 4, 4)`` array, as in
the quaternion normalisation of the forward kinematics) compared with the same sum written as
explicit additions.

    PYTHONPATH=. taskset -c 0 python benchmarks/batch_size_determinism.py --steps 12

Writes ``benchmarks/results/batch_size_determinism.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from _common import RESULTS, enable_float64, write_results

enable_float64()
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "reliability"))

import jaxsim_contact as jc  # noqa: E402


def scene(steps: int):
    model = jc.scenes.load("dragged_cube", dtype=jnp.float64)
    rng = np.random.default_rng(7)
    q0 = np.tile(np.asarray(model.qpos0), (256, 1))
    q0[:, 0] = rng.uniform(-0.5, 0.5, 256)
    q0[:, 2] = rng.uniform(-4e-3, 4e-3, 256)
    axis_angle = rng.normal(scale=0.02, size=(256, 3))
    half = np.linalg.norm(axis_angle, axis=1, keepdims=True) / 2
    q0[:, 3:7] = np.concatenate([np.cos(half), np.sinc(half / np.pi) * axis_angle / 2], axis=1)
    ctrls = rng.uniform(0.0, 8.0, (256, steps, model.nu))
    return model, jnp.asarray(q0), jnp.asarray(ctrls)


def leaf_differences(a, b) -> dict[str, dict[str, float]]:
    out = {}
    for (path, x), (_, y) in zip(jax.tree_util.tree_flatten_with_path(a)[0],
                                 jax.tree_util.tree_flatten_with_path(b)[0]):
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        diff = np.abs(x - y)
        out[jax.tree_util.keystr(path)] = {
            "max_abs": float(diff.max()),
            "max_rel": float((diff / np.maximum(np.abs(y), 1e-300)).max()),
            "entries_differing": int(np.count_nonzero(diff)),
            "entries": int(diff.size),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    model, q0, ctrls = scene(args.steps)
    subset = np.array([0, 5, 50, 101, 200, 254, 255])
    run = jax.jit(jax.vmap(lambda q, u: jc.rollout(model, jc.init(model, q=q), u)[1]))
    big = run(q0, ctrls)
    report = {"steps": args.steps, "load_average": os.getloadavg(), "xla_flags": os.environ.get("XLA_FLAGS", ""),
              "jax": jax.__version__, "comparisons": {}}
    pick = lambda idx: jax.tree_util.tree_map(lambda x: x[idx], big)  # noqa: E731
    report["comparisons"]["batch 7 vs 256"] = leaf_differences(run(q0[subset], ctrls[subset]), pick(subset))
    report["comparisons"]["batch 1 vs 256 (env 101)"] = leaf_differences(run(q0[101:102], ctrls[101:102]),
                                                                          pick(slice(101, 102)))
    # the op: a reduction over a small minor axis, vmapped with two batch sizes
    from jaxsim_contact.dynamics._kinematics import _joint_gather_index

    index = _joint_gather_index(model, 7)
    reduce_sum = jax.jit(jax.vmap(lambda q: jnp.sum(q[index][:, :4] ** 2, -1)))
    explicit = jax.jit(jax.vmap(lambda q: (lambda x: ((x[:, 0] + x[:, 1]) + x[:, 2]) + x[:, 3])(q[index][:, :4] ** 2)))
    ops = {}
    for name, fn in (("jnp.sum(x**2, -1) on (B,4,4)", reduce_sum), ("explicit additions", explicit)):
        a, b = np.asarray(fn(q0))[subset], np.asarray(fn(q0[subset]))
        ops[name] = {"bitwise_equal": a.tobytes() == b.tobytes(), "max_abs": float(np.abs(a - b).max())}
    report["reduction_op"] = ops

    lines = [f"# Batch-size dependence on XLA:CPU ({args.steps} steps, dragged cube)", "",
             f"load average {report['load_average']}, XLA_FLAGS `{report['xla_flags']}`, jax {jax.__version__}", ""]
    for name, leaves in report["comparisons"].items():
        lines += [f"## {name}", "", "| leaf | max abs | max rel | differing entries |", "|---|---|---|---|"]
        for leaf, d in leaves.items():
            if d["entries_differing"]:
                lines.append(f"| `{leaf}` | {d['max_abs']:.3e} | {d['max_rel']:.3e} | {d['entries_differing']}/{d['entries']} |")
        lines.append("")
    lines += ["## The op", "", "| form | bitwise equal (B=7 vs B=256) | max abs |", "|---|---|---|"]
    lines += [f"| {k} | {v['bitwise_equal']} | {v['max_abs']:.3e} |" for k, v in ops.items()]
    write_results("batch_size_determinism", report, "\n".join(lines) + "\n", RESULTS, indent=2)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
