"""One step of the MuJoCo-compatible constraint model against ``mj_step`` on corpus models
(issue 45, "Step for step").

For each model: load it with ``constraint_model="mujoco"`` (a model the mode refuses is listed
with the reason), run MuJoCo C at tolerance 1e-15 / 1000 iterations (its default tolerance stops
elliptic solves ~1e-6 short of the exact answer), take ``--states`` states (settled for 0, 50,
100, ... MuJoCo steps from ``qpos0``, then N(0, 0.5²) velocities added), and step both engines once
from each. Reports the worst ``|Δqpos|``, ``|Δqvel|`` and the constraint rows MuJoCo had.

    python benchmarks/mujoco_soft_match.py [--states 4] [--models cheetah walker ...]

Writes ``benchmarks/results/mujoco_soft_match.md`` (and ``.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402

import jaxsim_contact as jc  # noqa: E402


def _package_dir(name: str) -> Path | None:
    try:
        module = __import__(name)
    except ImportError:
        return None
    return Path(os.path.dirname(module.__file__))


def corpus() -> dict[str, Path]:
    """Contact-rich corpus models: dm_control suite (when its files are installed:
    ``pip install --no-deps dm_control``) and gymnasium."""
    models = {}
    dm = _package_dir("dm_control")
    if dm is not None:
        for name in ("cheetah", "walker", "hopper", "humanoid", "finger", "manipulator",
                     "ball_in_cup", "quadruped", "swimmer", "acrobot", "cartpole"):
            models[f"dm_control/{name}"] = dm / "suite" / f"{name}.xml"
    gym = _package_dir("gymnasium")
    if gym is not None:
        for name in ("half_cheetah", "hopper", "walker2d", "ant", "humanoid", "pusher", "reacher"):
            models[f"gymnasium/{name}"] = gym / "envs" / "mujoco" / "assets" / f"{name}.xml"
    return models


def compare(path: Path, states: int) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = jc.load(path, constraint_model="mujoco")
        mj = jc.io.compile_mjmodel(path, exclude_self_overlaps=False)
    mj.opt.tolerance, mj.opt.iterations = 1e-15, 1000
    data = mujoco.MjData(mj)
    step = jax.jit(jc.step)
    rng = np.random.default_rng(0)
    worst_q = worst_v = 0.0
    rows, active_states = 0, 0
    for k in range(states):
        mujoco.mj_resetData(mj, data)
        for _ in range(50 * k):
            mujoco.mj_step(mj, data)
        data.qvel[:] += rng.normal(size=mj.nv) * 0.5
        mujoco.mj_forward(mj, data)
        rows += data.nefc
        active_states += data.nefc > 0
        qpos, qvel = data.qpos.copy(), data.qvel.copy()
        ours = step(model, jc.init(model, q=jnp.asarray(qpos), v=jnp.asarray(qvel)))
        mujoco.mj_step(mj, data)
        worst_q = max(worst_q, float(np.abs(np.asarray(ours.q) - data.qpos).max()))
        worst_v = max(worst_v, float(np.abs(np.asarray(ours.v) - data.qvel).max()))
    return dict(status="compared", states=states, states_with_rows=int(active_states),
                rows=int(rows), max_dqpos=worst_q, max_dqvel=worst_v,
                cone=mujoco.mjtCone(int(mj.opt.cone)).name.removeprefix("mjCONE_").lower())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=4)
    parser.add_argument("--models", nargs="*", default=None, help="names as in the table")
    parser.add_argument("--out-dir", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    results = {}
    for name, path in corpus().items():
        if args.models and name.split("/")[-1] not in args.models and name not in args.models:
            continue
        try:
            results[name] = compare(path, args.states)
        except (NotImplementedError, ValueError) as err:
            results[name] = dict(status="refused", reason=str(err).split(": ", 1)[-1][:160])
        print(name, results[name], flush=True)
    lines = ["# One step of `constraint_model=\"mujoco\"` vs `mj_step` (issue 45)", "",
             f"`python benchmarks/mujoco_soft_match.py --states {args.states}`; jax {jax.__version__}, "
             f"mujoco {mujoco.__version__} (MuJoCo C at tolerance 1e-15). Worst over the states.", "",
             "| model | cone | states with rows | rows | max abs dqpos | max abs dqvel | note |",
             "|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        if r["status"] == "refused":
            lines.append(f"| {name} | | | | | | refused: {r['reason']} |")
        else:
            lines.append(f"| {name} | {r['cone']} | {r['states_with_rows']}/{r['states']} | {r['rows']} | "
                         f"{r['max_dqpos']:.1e} | {r['max_dqvel']:.1e} | |")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "mujoco_soft_match.md").write_text("\n".join(lines) + "\n")
    (args.out_dir / "mujoco_soft_match.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
