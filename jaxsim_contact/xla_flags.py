"""Opt-in XLA:CPU flag for shorter compile times.

The engine's programs are compile-bound on a CPU: one batched GJK + EPA distance query is ~6k lines
of StableHLO and compiles in ~9 s, a whole step in ~12 s. Most of that time goes into XLA:CPU's
MLIR fusion emitters; with ``--xla_cpu_use_fusion_emitters=false`` XLA emits the same fusions with
its older LLVM emitters. Measured by ``benchmarks/xla_fusion_emitters.py`` (jax 0.10.2, one core,
``benchmarks/results/xla_fusion_emitters.md``): compile time of a batch-32 step falls by 37-41 %
and of a distance query by 36-45 %; the step runs within ±3 % of its default speed, a batch of
1024 GJK + EPA queries ~20 % slower (the trade-off is worth it for short jobs, notebooks and the
test suite, 2,565 -> 1,589 CPU-s). The flag does not change what is computed, but floating-point
results may differ in the last bits (a different code generator): a rollout compiled with it is
not bitwise equal to one compiled without it (``tests/test_xla_flags.py``).

The library never sets it by itself (importing a library must not change a process's XLA
configuration). The ``jaxsim-contact`` console script and the test suite do, through
:func:`enable_fast_cpu_compile`; in your own scripts call it before the first JAX computation::

    import jaxsim_contact as jc
    jc.xla_flags.enable_fast_cpu_compile()   # before anything runs on the CPU backend
"""

from __future__ import annotations

import os
import subprocess
import sys

__all__ = ["FAST_CPU_COMPILE", "enable_fast_cpu_compile"]

#: The XLA:CPU flag (XLA_FLAGS syntax) that skips the MLIR fusion emitters.
FAST_CPU_COMPILE = "--xla_cpu_use_fusion_emitters=false"

_FLAG_NAME = FAST_CPU_COMPILE.split("=")[0]


def _flag_is_known(flags: str) -> bool:
    """Whether the installed jaxlib starts with ``flags`` in XLA_FLAGS.

    XLA aborts the whole process on a flag it does not know (jaxlib versions add and drop flags),
    so the flags are tried in a child process first (~1 s).
    """
    env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
    try:
        probe = subprocess.run([sys.executable, "-c", "import jax; jax.devices('cpu')"], env=env,
                               capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def enable_fast_cpu_compile(environ: dict | None = None) -> bool:
    """Append :data:`FAST_CPU_COMPILE` to ``XLA_FLAGS`` when it is safe to.

    Nothing is changed when ``XLA_FLAGS`` already mentions the flag (the user's choice wins), when
    the installed jaxlib does not know it, or when ``environ`` is the process environment and a JAX
    backend is already running (XLA reads ``XLA_FLAGS`` once, when its first backend starts).

    Args:
      environ: the environment to edit (default ``os.environ``; pass a copy to prepare a child
        process's environment).
    Returns:
      True when the flag is in ``environ["XLA_FLAGS"]`` afterwards.
    """
    target = os.environ if environ is None else environ
    current = target.get("XLA_FLAGS", "")
    if _FLAG_NAME in current:
        return FAST_CPU_COMPILE in current.split()
    if target is os.environ and "jax" in sys.modules:
        from jax._src import xla_bridge  # no public query; absent in a future jax = assume started

        if getattr(xla_bridge, "backends_are_initialized", lambda: True)():
            return False
    flags = f"{current} {FAST_CPU_COMPILE}".strip()
    if not _flag_is_known(flags):
        return False
    target["XLA_FLAGS"] = flags
    return True
