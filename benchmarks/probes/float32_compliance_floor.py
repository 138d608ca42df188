"""Issue 42 probe: a dtype-scaled compliance floor on the hard model's normal rows in float32.

Why the float32 tower needs ~200 ADMM iterations per step where float64 needs 5.5: the problems
themselves. The float32 tower's captured contact problems, cast to float64 and solved there from
the same warm starts, take 463 iterations on average (46 of 50 at the cap) — the float32-rounded
``g`` of a hyperstatic stack (4 corners per face, the force distribution undetermined) is not in
the range of its ``G`` to better than ``ε``, so the sticking conditions have no exact solution and
the iterate drifts along ``G``'s near-null space; an active-set polish from ADMM's iterate at
10–50 iterations lowers the criterion by < 3× and never reaches the round-off floors
(``round_off_floors``) either. A compliance ``R`` bounds that drift. This probe floors the normal
rows' compliance at ``C ε G_ii`` (``ε`` of the dtype), in one of two forms:

* ``plain``: ``R ← max(R, C ε G_ii)`` (the compliant contact of seed 001 §II);
* ``prox``: the same ``R`` centred on the warm start, ``g ← g − ΔR λ_warm`` (a proximal term
  ``½ ΔR ‖λ − λ_warm‖²``: a resting contact, whose force does not change, is not softened);
* ``plain_slop`` / ``prox_slop``: either, with a push-out slop: penetrations below ``8 ε``
  (9.5e-7 m in float32) are left to the compliance instead of being pushed out
  (``constraints._assembler.gap_or_push_out`` patched); a deeper penetration ``δ`` is pushed out
  as ``δ − s``;
* ``plain_softslop``: the plain floor with the slop, a deeper penetration pushed out as
  ``δ − s (s/δ)⁴`` (continuous at ``s``, within 1e-5 of ``δ`` at ``10 s``: the push-out of a
  10 µm overlap is float64's to that precision).

Per scene (default options otherwise, x64 off, zero controls): mean / max iterations, steps at the
cap, steps not converged, largest one-step gain of the total energy (in float64 from the float32
states), steps gaining > 1e-5 J, max penetration and the final max speed. The tower and the pile
run 5 s (``tests/dynamics/test_stability.py``'s scenes: 2 ms and 4 ms steps), the benchmark
robots ``--robot-steps`` steps. Patches the library in the child process only.

    python benchmarks/probes/float32_compliance_floor.py --floors 0 1000 3000 --forms plain prox \\
        --scenes tower pile go2 ant humanoid --out float32_compliance_floor
    python benchmarks/probes/float32_compliance_floor.py --floors 1000 --forms plain_slop \\
        --scenes tower pile go2 ant humanoid     # rows merged into the same JSON by hand
    python benchmarks/probes/float32_compliance_floor.py --out float32_compliance_floor --report-only

Writes ``benchmarks/results/<out>.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent / "results"


def child(scene: str, floor: float, form: str, robot_steps: int) -> dict:
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxsim_contact as jc
    from jaxsim_contact.constraints import _stage
    from jaxsim_contact.dynamics import kinetic_energy, potential_energy

    original = _stage.solve

    def floored(problem, solver, warm_start=None, gradient="implicit", warm_primal=None):
        n = problem.num_contacts
        G = problem.delassus
        normal_diag = jnp.diagonal(G).reshape(n, 3)[:, 2]
        added = jnp.zeros((n, 3), G.dtype).at[:, 2].set(
            jnp.maximum(floor * jnp.finfo(G.dtype).eps * normal_diag - problem.compliance.reshape(n, 3)[:, 2], 0.0))
        added = added.reshape(-1)
        g = problem.free_velocity
        if form.startswith("prox") and warm_start is not None:
            warm = warm_start.force if hasattr(warm_start, "force") else warm_start
            g = g - added * jnp.asarray(warm, G.dtype).reshape(-1)
        problem = eqx.tree_at(lambda p: (p.compliance, p.free_velocity), problem,
                              (problem.compliance + added, g))
        return original(problem, solver, warm_start=warm_start, gradient=gradient, warm_primal=warm_primal)

    if floor > 0:
        _stage.solve = floored
    if form.endswith(("_slop", "_softslop")):
        # penetrations below 8 ε (9.5e-7 m) are left to the compliance, not pushed out
        from jaxsim_contact.constraints import _assembler

        def push_out_with_slop(distance, baumgarte, cap, dt):
            slop = 8.0 * jnp.finfo(distance.dtype).eps
            depth = jnp.maximum(-distance, 0.0)
            if form.endswith("_softslop"):  # δ − s (s/δ)⁴ above the slop: deep overlaps pushed out in full
                safe = jnp.maximum(depth, slop)
                depth = jnp.where(depth > slop, depth - slop * (slop / safe) ** 4, 0.0)
            else:  # max(δ − s, 0): every overlap pushed out short by the slop
                depth = jnp.maximum(depth - slop, 0.0)
            push_out = jnp.minimum(baumgarte * depth / dt, cap)
            return -jnp.maximum(distance, 0.0) / dt + push_out

        _assembler.gap_or_push_out = push_out_with_slop
    dtype = jnp.float32
    if scene == "tower":
        model = jc.scenes.load("tower", count=10, gap=1e-3, dt=2e-3, dtype=dtype)
        q0 = None
    elif scene == "pile":
        model = jc.scenes.load("pile", gap=2e-3, dt=4e-3, dtype=dtype).replace_options(contact_budget=4 * 27)
        q0 = None
    else:
        sys.path.insert(0, str(HERE.parent))
        import _scenes

        mj, q0 = _scenes.load(scene)
        model = jc.io.from_mjmodel(mj)
    state = jc.init(model) if q0 is None else jc.init(model, q=jnp.asarray(q0, dtype))
    steps = int(round(5.0 / float(model.options.dt))) if q0 is None else robot_steps

    def run(s):
        def body(s, _):
            s = jc.step(model, s, jnp.zeros((model.nu,), dtype))
            return s, (s.q, s.v, s.contact.iterations, s.contact.converged, s.contact.penetration)
        return jax.lax.scan(body, s, None, length=steps)

    start = time.perf_counter()
    final, (q, v, iterations, converged, penetration) = jax.block_until_ready(jax.jit(run)(state))
    seconds = time.perf_counter() - start
    jax.config.update("jax_enable_x64", True)
    model64 = model.astype(jnp.float64)
    energy = jax.jit(jax.vmap(lambda q, v: kinetic_energy(model64, q, v) + potential_energy(model64, q)))
    e = np.asarray(energy(jnp.concatenate([state.q[None], q]).astype(jnp.float64),
                          jnp.concatenate([state.v[None], v]).astype(jnp.float64)))
    gain = np.diff(e)
    iterations = np.asarray(iterations)
    cap = model.options.solver.max_iterations
    return dict(scene=scene, floor=floor, form=form if floor > 0 else "none", steps=steps,
                mean_iterations=round(float(iterations.mean()), 1), max_iterations=int(iterations.max()),
                at_cap=int((iterations >= cap).sum()), not_converged=int((~np.asarray(converged)).sum()),
                max_energy_gain_J=float(gain.max()), steps_gaining_over_1em5_J=int((gain > 1e-5).sum()),
                max_penetration_m=float(np.max(np.asarray(penetration))),
                final_max_speed=float(jnp.max(jnp.abs(final.v))), error=int(final.error),
                compile_and_run_s=round(seconds, 1))


COLUMNS = ["scene", "floor", "form", "steps", "mean_iterations", "max_iterations", "at_cap",
           "not_converged", "max_energy_gain_J", "steps_gaining_over_1em5_J", "max_penetration_m",
           "final_max_speed", "error"]


def _cell(key: str, value) -> str:
    if isinstance(value, float) and key not in ("floor", "mean_iterations"):
        return f"{value:.2e}"
    return str(value)


def write_report(rows: list[dict], out: str) -> None:
    """``results/<out>.md``: one table row per (scene, floor, form)."""
    lines = ["# float32: a compliance floor `C ε G_nn` on the hard model's normal rows (issue 42 probe)", "",
             "`python benchmarks/probes/float32_compliance_floor.py` (calls in its docstring); x64 off, "
             "default options otherwise (ADMM-NCP, tolerance 1e-6, cap 500), zero controls; `floor` is "
             "`C`, `form` the script docstring's `plain` / `prox` (`none`: the library as is). Energy "
             "gains are of the total energy, computed in float64 from the float32 states.", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(k, row.get(k, "")) for k in COLUMNS) + " |")
    (RESULTS / f"{out}.md").write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", nargs="+", default=["tower", "pile"])
    parser.add_argument("--floors", nargs="+", type=float, default=[0.0, 1000.0, 3000.0])
    parser.add_argument("--forms", nargs="+", default=["plain", "prox"], choices=["plain", "prox", "plain_slop", "prox_slop", "plain_softslop"])
    parser.add_argument("--robot-steps", type=int, default=200)
    parser.add_argument("--out", default=None)
    parser.add_argument("--report-only", action="store_true", help="rewrite results/<out>.md from its .json")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        scene, floor, form, steps = args.child
        print("ROW " + json.dumps(child(scene, float(floor), form, int(steps))), flush=True)
        return 0
    if args.report_only:
        write_report(json.loads((RESULTS / f"{args.out}.json").read_text()), args.out)
        return 0
    rows = []
    for scene in args.scenes:
        for floor in args.floors:
            for form in (args.forms if floor > 0 else ["plain"]):
                out = subprocess.run([sys.executable, __file__, "--child", scene, str(floor), form,
                                      str(args.robot_steps)], capture_output=True, text=True)
                line = [l for l in out.stdout.splitlines() if l.startswith("ROW ")]
                row = json.loads(line[0][4:]) if line else dict(scene=scene, floor=floor, form=form,
                                                                   error_text=out.stderr[-400:])
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.out:
        (RESULTS / f"{args.out}.json").write_text(json.dumps(rows, indent=1) + "\n")
        write_report(rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
