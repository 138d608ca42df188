"""The common header of the benchmark scripts: one pinned core, float64, blocked timings, results.

Import it first — before ``jax``, ``numpy`` or ``jaxsim_contact`` — and pin before anything
starts threads (this module imports neither JAX nor NumPy at import time)::

    from _common import RESULTS, enable_float64, loadavg, pin_to_one_core, timed, write_results

    pin_to_one_core()        # unless --all-cores is on the command line
    enable_float64()         # jax_enable_x64 (a script's choice, not the library's)

    import jax
    import jaxsim_contact as jc

A script run as ``python benchmarks/NAME.py`` has ``benchmarks/`` on ``sys.path``, so the bare
``from _common import ...`` works; a script elsewhere (``benchmarks/probes/``) puts
``benchmarks/`` on ``sys.path`` first.

* :func:`pin_to_one_core` — ``os.sched_setaffinity`` to the lowest core the process may use.
  XLA:CPU hands work between its pool threads inside loops, and on a shared machine each handoff
  can wait a scheduler quantum (one tower contact stage measured 1.1 s on two loaded cores and
  4.3 ms pinned to one); pinning before JAX starts its threads makes runs comparable.
  ``taskset -c K python ...`` then selects the core.
* :func:`enable_float64` — ``jax.config.update("jax_enable_x64", True)``, before the library is
  imported.
* :func:`timed` — the first call (compile + run) timed apart from the steady state, the median of
  ``repeats`` further calls; every call blocked with ``jax.block_until_ready``.
  :func:`median_time` — the median alone, no warm-up call.
* :func:`write_results` — ``results/NAME.json`` and ``results/NAME.md`` side by side.
* :func:`loadavg` — the 1/5/15-minute load average, rounded, for a report's header.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

HERE = Path(__file__).resolve().parent
#: where every benchmark writes: ``benchmarks/results``
RESULTS = HERE / "results"


def pin_to_one_core(argv: list[str] | None = None, opt_out: str | None = "--all-cores") -> bool:
    """Pin this process to the lowest CPU it is allowed to run on, unless ``opt_out`` is in
    ``argv`` (default ``sys.argv``; ``opt_out=None`` pins unconditionally).

    Call it before importing JAX (and NumPy, whose BLAS threads take the affinity they start
    with). Returns whether the process was pinned (``False`` also where the OS has no
    ``sched_setaffinity``)."""
    args = sys.argv if argv is None else argv
    if opt_out is not None and opt_out in args:
        return False
    if not hasattr(os, "sched_setaffinity"):
        return False
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    return True


def enable_float64(enabled: bool = True) -> None:
    """``jax_enable_x64`` on (or off): call it before importing ``jaxsim_contact``."""
    import jax

    jax.config.update("jax_enable_x64", bool(enabled))


def loadavg() -> list[float]:
    """The 1-, 5- and 15-minute load averages, rounded to 0.01."""
    return [round(x, 2) for x in os.getloadavg()]


class Timing(NamedTuple):
    """What :func:`timed` measured (seconds)."""

    steady: float   #: median of the repeated calls
    compile: float  #: first call minus the steady call, at least 0: compile (and first-run) time
    out: Any        #: the output of the last call
    first: float    #: the first call alone (compile + one run)


def _median(times: list[float]) -> float:
    """``np.median`` of a list of floats without importing NumPy (NaN when empty)."""
    return float(statistics.median(times)) if times else float("nan")


def _block(value):
    import jax

    return jax.block_until_ready(value)


def median_time(fn: Callable[[], Any], repeats: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """Median time (s) of ``repeats`` calls of ``fn()``, each blocked on its result; no warm-up
    call (``fn`` is expected to be compiled already). ``clock``: ``time.perf_counter`` (wall) or
    ``time.process_time`` (CPU time of this process, not inflated by other jobs on a shared
    machine when the process is pinned)."""
    times = []
    for _ in range(repeats):
        t0 = clock()
        _block(fn())
        times.append(clock() - t0)
    return _median(times)


def timed(fn: Callable[[], Any], repeats: int, clock: Callable[[], float] = time.perf_counter) -> Timing:
    """Time ``fn()``: one first call (compile + run), then ``repeats`` calls; every call blocked
    with ``jax.block_until_ready``. The steady time is their median, the compile time the first
    call minus it (clamped at 0); ``Timing.first`` keeps the first call's own time."""
    t0 = clock()
    out = _block(fn())
    first = clock() - t0
    times = []
    for _ in range(repeats):
        t0 = clock()
        out = _block(fn())
        times.append(clock() - t0)
    steady = _median(times)
    return Timing(steady=steady, compile=max(first - steady, 0.0), out=out, first=first)


def write_results(name: str, data: Any, markdown: str, out_dir: str | Path = RESULTS,
                  indent: int = 1) -> tuple[Path, Path]:
    """Write ``data`` as ``out_dir/NAME.json`` (``json.dumps(data, indent=indent)``) and the text
    ``markdown`` as ``out_dir/NAME.md`` (as given: end it with a newline yourself), creating
    ``out_dir``; ``out_dir`` defaults to ``benchmarks/results``. Returns the two paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / f"{name}.json", out_dir / f"{name}.md"
    json_path.write_text(json.dumps(data, indent=indent))
    md_path.write_text(markdown)
    return json_path, md_path
