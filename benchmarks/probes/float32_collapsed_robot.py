"""Issue 42 probe: a corpus robot collapsed on the floor in float32 — solver iterations against the
normal-row compliance floor of indeterminate contact sets (``constraints._assembler``
``ROUND_OFF_COMPLIANCE``, in units of ``ε G_nn``; the library's value is 1000).

The corpus robot (default: example-robot-data's Go2 URDF) starts as ``benchmarks/corpus.py`` starts
it (``qpos0`` clipped into the limits, 1 cm above the floor), zero controls, default options; it
collapses within ~200 steps onto its belly, knees and 4 joint limits (30 active slots, 7 touching
contacts, more rows than its 18 dofs) and lies there. Per row (one fresh child process each;
float32 rows with x64 off and the floor patched in the child only): mean iterations and steps at
the cap over all steps and over the second half (the robot at rest), and the median over the
second half of the largest generalized speed ``max |v|`` (the rest-state velocity noise).

    python benchmarks/probes/float32_collapsed_robot.py --floors 1000 3000 10000 30000 --steps 1000

Writes ``benchmarks/results/float32_collapsed_robot.{json,md}`` (rows of the same floor / dtype
replaced; the hand-written reading at the end of the .md is kept).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent / "results"
READING = "Reading (added by hand"


def child(dtype: str, floor: float | None, robot: str, steps: int) -> dict:
    if dtype == "float32":
        sys.argv.append("--float32")  # corpus.py reads its dtype from argv at import
    sys.path.insert(0, str(HERE.parent))
    import corpus  # noqa: E402  (pins nothing; sets jax_enable_x64 from argv)
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxsim_contact as jc
    from jaxsim_contact.constraints import _assembler

    if floor is not None:
        _assembler.ROUND_OFF_COMPLIANCE = floor
    entry = [e for e in corpus.corpus(["robots"]) if str(e.path).endswith(robot)][0]
    mj, model = corpus.build(entry)
    q0, _ = corpus.start_configuration(mj, entry)
    state = jc.init(model, q=jnp.asarray(q0))
    ctrl = jnp.zeros((model.nu,))

    def run(s):
        def body(s, _):
            s = jc.step(model, s, ctrl)
            return s, (s.contact.iterations, jnp.max(jnp.abs(s.v)), s.contact.num_active)
        return jax.lax.scan(body, s, None, length=steps)

    final, (iterations, speed, active) = jax.block_until_ready(jax.jit(run)(state))
    iterations, speed = np.asarray(iterations), np.asarray(speed)
    cap = int(model.options.solver.max_iterations)
    half = steps // 2
    return dict(robot=robot, dtype=str(final.q.dtype), floor=floor, steps=steps,
                mean_iterations=float(iterations.mean()), capped=int((iterations >= cap).sum()),
                rest_mean_iterations=float(iterations[half:].mean()),
                rest_capped=int((iterations[half:] >= cap).sum()),
                rest_median_speed=float(np.median(speed[half:])),
                rest_active=int(np.median(np.asarray(active)[half:])),
                finite=bool(np.all(np.isfinite(np.asarray(final.q)))))


def markdown(rows: list[dict], reading: str) -> str:
    lines = ["# A corpus robot collapsed in float32: iterations against the compliance floor (issue 42)",
             "", "Written by `benchmarks/probes/float32_collapsed_robot.py` (module docstring: setup). "
             "`floor`: `ROUND_OFF_COMPLIANCE` in units of ε G_nn (library: 1000; float64 has none). "
             "'at rest': the second half of the steps.", "",
             "| robot | dtype | floor | steps | mean iterations | capped | at rest: mean | at rest: capped "
             "| at rest: median max abs(v) | active slots | finite |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        floor = "–" if r["floor"] is None else f"{r['floor']:g}"
        lines.append(f"| {r['robot']} | {r['dtype']} | {floor} | {r['steps']} | {r['mean_iterations']:.1f} "
                     f"| {r['capped']} | {r['rest_mean_iterations']:.1f} | {r['rest_capped']} "
                     f"| {r['rest_median_speed']:.2e} | {r['rest_active']} | {r['finite']} |")
    return "\n".join(lines) + "\n" + (("\n" + reading) if reading else "")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="go2_description/urdf/go2.urdf")
    parser.add_argument("--floors", type=float, nargs="+", default=[1000.0, 3000.0, 10000.0, 30000.0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--no-float64", action="store_true")
    parser.add_argument("--out", default="float32_collapsed_robot")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)  # dtype floor
    args = parser.parse_args(argv)
    if args.child:
        dtype, floor = args.child
        print("ROW " + json.dumps(child(dtype, None if floor == "none" else float(floor), args.robot,
                                        args.steps)))
        return 0
    json_path, md_path = RESULTS / f"{args.out}.json", RESULTS / f"{args.out}.md"
    rows = json.loads(json_path.read_text()) if json_path.exists() else []
    reading = ""
    if md_path.exists():
        text = md_path.read_text()
        if READING in text:
            reading = text[text.index(READING):]
    jobs = [] if args.no_float64 else [("float64", "none")]
    jobs += [("float32", f"{f:g}") for f in args.floors]
    for dtype, floor in jobs:
        out = subprocess.run([sys.executable, __file__, "--child", dtype, floor, "--robot", args.robot,
                              "--steps", str(args.steps)], capture_output=True, text=True)
        row = [json.loads(line[4:]) for line in out.stdout.splitlines() if line.startswith("ROW ")]
        if not row:
            print(out.stderr[-2000:], file=sys.stderr)
            return 1
        row = row[0]
        print(json.dumps(row), flush=True)
        rows = [r for r in rows if (r["robot"], r["dtype"], r["floor"]) != (row["robot"], row["dtype"], row["floor"])]
        rows.append(row)
        rows.sort(key=lambda r: (r["robot"], r["dtype"] != "float64", r["floor"] or 0))
        json_path.write_text(json.dumps(rows, indent=1) + "\n")
        md_path.write_text(markdown(rows, reading))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
