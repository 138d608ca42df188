"""Old commit against new commit, side by side in one run: our step throughput
(``benchmarks/step.py``) and gradient cost (``benchmarks/gradients.py``) with the library of each.

Each measurement runs in a child process of its own, pinned to one core like the scripts
themselves; the library is taken from a ``git worktree`` of the old commit or from the working
tree (``--new .``) by putting that tree first on ``PYTHONPATH``. The benchmark scripts are this
checkout's, so both commits are measured by the same code on the same scenes. Old and new
alternate (``--rounds`` times each), so drifts of the machine hit both; the table reports every
round and the ratio new / old of the medians.

    python benchmarks/compare_commits.py --old 72114b9 --rounds 2 \\
        --step "--scenes tower humanoid --batches 1 32" \\
        --step "--scenes tower humanoid --batches 1 32 --solver newton --compliance 1e-3" \\
        --gradients "--scenes panda humanoid --repeats 20" --out compare_commits

Writes ``benchmarks/results/<out>.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import loadavg, write_results

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _tree(rev: str, scratch: Path) -> Path:
    """The source tree of ``rev`` (``.``: this working tree), as a worktree under ``scratch``."""
    if rev == ".":
        return ROOT
    path = scratch / rev.replace("/", "_")
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(path), rev],
                   check=True)
    return path


def _run(tree: Path, script: str, extra: list[str], out_dir: Path, stem: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    command = [sys.executable, str(HERE / script), *extra, "--out", stem, "--out-dir", str(out_dir)]
    if script == "step.py":
        command += ["--engines", "ours"]
    else:
        command += ["--engines", "ours", "--one-process"]
    check = [sys.executable, "-c", "import jaxsim_contact, sys; sys.stdout.write(jaxsim_contact.__file__)"]
    # run from the scratch folder: `python -c` puts the working directory first on sys.path
    used = subprocess.run(check, env=env, capture_output=True, text=True, check=True,
                          cwd=out_dir).stdout
    if not used.startswith(str(tree)):
        raise RuntimeError(f"PYTHONPATH={tree} imported {used}: the package is installed non-editably?")
    subprocess.run(command, env=env, check=True, cwd=out_dir)
    return json.loads((out_dir / f"{stem}.json").read_text())


def _metrics(script: str, result: dict) -> dict:
    """``{(scene, batch or '', metric): value}`` of one run."""
    out = {}
    for row in result["rows"]:
        ours = row.get("ours", {})
        if "error" in ours:
            continue
        if script == "step.py":
            out[(row["scene"], row["batch"], "env-steps/s")] = ours["env_steps_per_s"]
        else:
            for key in ("step_s", "jacfwd_s", "jacrev_s", "fd_s", "rollout_s", "grad_s"):
                if isinstance(ours.get(key), (int, float)):
                    out[(row["scene"], "", key.replace("_s", " ms"))] = 1e3 * ours[key]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="git revision of the old library")
    parser.add_argument("--new", default=".", help="git revision of the new library ('.': this tree)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--step", action="append", default=[], help="arguments of one step.py run")
    parser.add_argument("--gradients", action="append", default=[],
                        help="arguments of one gradients.py run")
    parser.add_argument("--out", default="compare_commits")
    args = parser.parse_args(argv)
    jobs = [("step.py", a) for a in args.step] + [("gradients.py", a) for a in args.gradients]
    rows, meta = [], dict(old=args.old, new=args.new, rounds=args.rounds, loadavg_start=loadavg(),
                          command="python benchmarks/compare_commits.py " + shlex.join(sys.argv[1:]))
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        trees = {"old": _tree(args.old, scratch), "new": _tree(args.new, scratch)}
        try:
            for index, (script, extra) in enumerate(jobs):
                values: dict = {}
                for round_ in range(args.rounds):
                    for side in ("old", "new"):
                        result = _run(trees[side], script, shlex.split(extra), scratch,
                                      f"job{index}_{side}{round_}")
                        for key, value in _metrics(script, result).items():
                            values.setdefault(key, {"old": [], "new": []})[side].append(value)
                for (scene, batch, metric), sides in values.items():
                    ratio = statistics.median(sides["new"]) / statistics.median(sides["old"])
                    rows.append(dict(script=script, arguments=extra, scene=scene, batch=batch,
                                     metric=metric, old=sides["old"], new=sides["new"],
                                     ratio=ratio))
        finally:
            for side, tree in trees.items():
                if tree != ROOT:
                    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)])
    meta["loadavg_end"] = loadavg()
    write_results(args.out, dict(meta=meta, rows=rows), markdown(meta, rows))
    print(markdown(meta, rows))
    return 0


def markdown(meta, rows) -> str:
    lines = [f"# Old against new commit: {meta['old']} -> {meta['new']}", "",
             f"Command: `{meta['command']}`  ",
             f"Rounds: {meta['rounds']} each, alternating; load average {meta['loadavg_start']} -> "
             f"{meta['loadavg_end']}. Children pinned to one core, float64. Ratio: new / old of the "
             "medians (env-steps/s: > 1 is faster; times in ms: < 1 is faster).", "",
             "| script | arguments | scene | batch | metric | old | new | new / old |",
             "|---|---|---|---|---|---|---|---|"]
    fmt = lambda xs: ", ".join(f"{x:.4g}" for x in xs)  # noqa: E731
    for r in rows:
        lines.append(f"| {r['script']} | `{r['arguments']}` | {r['scene']} | {r['batch']} | "
                     f"{r['metric']} | {fmt(r['old'])} | {fmt(r['new'])} | {r['ratio']:.3f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
