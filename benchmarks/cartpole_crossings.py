"""When do SHAC and the two PPOs reach the cart-pole swing-up threshold? (issue 7)

Reads the learning curves in ``benchmarks/results`` (``shac_cartpole_seed*.json``,
``brax_ppo_cartpole_seed*.json``, ``ppo_cartpole_seed*.json``) and reports, per run, the first
evaluation with return ≥ ``--threshold`` and the first evaluation from which every later one
stays ≥ it ("sustained"), both on the common grid of ``--grid`` environment steps (Brax's PPO and
the compact PPO evaluate every 61 440 steps; SHAC every 2 048 × ``--eval-every`` steps, so its
curve is subsampled to the common grid — a finer grid alone gives a noisy curve more chances to
cross early) and on each run's own grid. Medians count a run that never reaches the threshold as
infinitely late (so "never" is the median when half the runs never reach it).

    python benchmarks/cartpole_crossings.py
    python benchmarks/cartpole_crossings.py --runs "SHAC 16 envs=shac_cartpole_ablation/envs16_seed*.json"
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
RUNS = {"SHAC": "shac_cartpole_seed*.json", "PPO brax.training": "brax_ppo_cartpole_seed*.json",
        "PPO compact": "ppo_cartpole_seed*.json"}


def crossings(curve, threshold: float, grid: int | None):
    """``(first, sustained, evaluations)`` in environment steps (``None``: never)."""
    points = [p for p in curve if grid is None or p["env_steps"] % grid == 0]
    first = next((p["env_steps"] for p in points if p["eval_return"] >= threshold), None)
    sustained = next((p["env_steps"] for i, p in enumerate(points)
                      if all(q["eval_return"] >= threshold for q in points[i:])), None)
    return first, sustained, len(points)


def _median(values):
    """Median with ``None`` (never reached) as +inf; ``None`` when that is the median."""
    ordered = sorted(values, key=lambda x: float("inf") if x is None else x)
    middle = ordered[(len(ordered) - 1) // 2: len(ordered) // 2 + 1]
    return None if any(x is None for x in middle) else statistics.mean(middle)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threshold", type=float, default=-400.0)
    p.add_argument("--grid", type=int, default=61_440)
    p.add_argument("--runs", action="append", default=[], metavar="NAME=GLOB",
                   help="an extra group of runs (GLOB relative to benchmarks/results), reported "
                        "after the default ones")
    args = p.parse_args(argv)
    runs = dict(RUNS)
    for item in args.runs:
        name, sep, pattern = item.partition("=")
        if not sep or not name or not pattern:
            p.error(f"--runs takes NAME=GLOB, got {item!r}")
        runs[name] = pattern
    fmt = lambda x: "never" if x is None else f"{x / 1e6:.2f} M"  # noqa: E731
    print(f"| algorithm | seed | first ≥ {args.threshold:g} (grid {args.grid}) | sustained (grid) | "
          "first (own grid) | sustained (own grid) | evaluations (own grid) |")
    print("|---|---|---|---|---|---|---|")
    for name, pattern in runs.items():
        firsts, sustained = [], []
        loaded = [json.loads(path.read_text()) for path in RESULTS.glob(pattern)]
        if not loaded:
            p.error(f"no runs match {pattern!r} in {RESULTS}")
        for data in sorted(loaded, key=lambda d: d["args"]["seed"]):
            f, s, _ = crossings(data["curve"], args.threshold, args.grid)
            fo, so, n = crossings(data["curve"], args.threshold, None)
            firsts.append(f)
            sustained.append(s)
            print(f"| {name} | {data['args']['seed']} | {fmt(f)} | {fmt(s)} | {fmt(fo)} | {fmt(so)} | {n} |")
        reached = sum(x is not None for x in firsts)
        print(f"| {name} | median | {fmt(_median(firsts))} ({reached} of {len(firsts)} reach it) | "
              f"{fmt(_median(sustained))} | | | |")


if __name__ == "__main__":
    main()
