"""Issue 46 probe: why tracing ``jax.grad`` of a rollout takes 5-10x tracing its step.

For one corpus model (``--match``, as ``benchmarks/compile.py`` builds it): the trace + lower time of
``jit(step)`` and of ``jit(grad)`` of a scalar of an 8-step rollout's final state w.r.t. the initial
velocity, how many times the contact stage (``constraints._stage._stage``) and the row producers
(``constraint_rows``) are traced in each and the seconds spent in their Python, and the top of a
``cProfile`` of the grad's lowering (cumulative time).

    taskset -c 1 python benchmarks/probes/grad_tracing.py --match hopper.xml

Writes ``benchmarks/results/grad_tracing.md``.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import os
import pstats
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("JAX_ENABLE_X64", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import corpus  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import jaxsim_contact as jc  # noqa: E402
from jaxsim_contact.constraints import _stage as stage_module  # noqa: E402


def counting(module, name, counts, seconds):
    """Replace ``module.name`` by a wrapper that counts its calls and their time."""
    original = getattr(module, name)

    def wrapper(*args, **kwargs):
        counts[name] += 1
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            seconds[name] += time.perf_counter() - t0

    setattr(module, name, wrapper)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--match", default="hopper.xml")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args(argv)
    entry = next(e for e in corpus.corpus(corpus.SOURCES) if args.match in e.key)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mj, model = corpus.build(entry)
    q0, _ = corpus.start_configuration(mj, entry)
    state = jc.init(model, q=jnp.asarray(q0))
    ctrls = jnp.zeros((8, model.nu))

    def final_scalar(v0):
        return jnp.sum(jc.rollout(model, jc.init(model, q=state.q, v=v0), ctrls)[0].q ** 2)

    counts, seconds = collections.Counter(), collections.Counter()
    counting(stage_module, "_stage", counts, seconds)
    counting(stage_module, "constraint_rows", counts, seconds)
    lines = [f"# Tracing cost of jax.grad through a rollout: `{entry.key}`", "",
             f"`python benchmarks/probes/grad_tracing.py {' '.join(sys.argv[1:] if argv is None else argv)}` — "
             f"{time.strftime('%Y-%m-%d %H:%M')}, jax {jax.__version__}, float64.", "",
             "| program | trace + lower (s) | `_stage` traces | its Python (s) | `constraint_rows` traces | its Python (s) |",
             "|---|---|---|---|---|---|"]
    for name, function, arg in (("jit(step)", lambda s: jc.step(model, s, ctrls[0]), state),
                                ("jit(grad(8-step rollout))", jax.grad(final_scalar), state.v)):
        counts.clear()
        seconds.clear()
        t0 = time.perf_counter()
        jax.jit(function).lower(arg)
        lines.append(f"| {name} | {time.perf_counter() - t0:.2f} | {counts['_stage']} | {seconds['_stage']:.2f} | "
                     f"{counts['constraint_rows']} | {seconds['constraint_rows']:.2f} |")
        print(lines[-1], flush=True)
    profile = cProfile.Profile()
    profile.enable()
    jax.jit(jax.grad(final_scalar)).lower(state.v)
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(args.top)
    profile_text = (out.getvalue().strip().replace(str(Path(jax.__file__).parents[1]) + "/", "<site-packages>/")
                    .replace(str(HERE.parents[1]) + "/", ""))
    lines += ["", "cProfile of the grad's lowering (under the profiler, slower than above), top "
              f"{args.top} by cumulative time:", "", "```", profile_text, "```"]
    text = "\n".join(lines) + "\n"
    (HERE.parent / "results" / "grad_tracing.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
