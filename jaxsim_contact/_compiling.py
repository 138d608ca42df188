"""Saying what is compiling: a context manager that announces a compilation, then reports how long it
took and whether JAX's persistent compilation cache served it.

A first call of a jitted step or rollout spends seconds to minutes in XLA before the first result;
without a word it looks like a hang. The cache status comes from JAX's own monitoring events
(``/jax/compilation_cache/compile_requests_use_cache``, ``.../cache_hits``), so the report is what
JAX did, not a guess from the elapsed time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import jax

__all__ = ["CompilationCacheWarning", "CompileReport", "compile_report", "default_cache_dir",
           "enable_compilation_cache"]

#: environment variable naming the cache directory of :func:`enable_compilation_cache`
CACHE_ENV = "JAXSIM_CONTACT_CACHE"


class CompilationCacheWarning(UserWarning):
    """The persistent compilation cache directory cannot be used; compiling without it."""


def default_cache_dir() -> Path:
    """``$JAXSIM_CONTACT_CACHE`` when set, else ``~/.cache/jaxsim_contact/jax``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "jaxsim_contact" / "jax").expanduser()


def enable_compilation_cache(path: str | os.PathLike | None = None, *,
                             min_compile_time_s: float = 1.0) -> Path | None:
    """Turn on JAX's persistent compilation cache for this process: a program compiled once is
    loaded from disk by later processes instead of compiled again (XLA's part of a first call;
    tracing still runs — :func:`jaxsim_contact.export_step` skips that too).

    Call it once, early; it also takes effect after computations have run (it resets JAX's
    once-per-process decision). The command line calls it unless ``--no-cache``. It changes JAX's global configuration
    (``jax_compilation_cache_dir``, ``jax_persistent_cache_min_compile_time_secs``), which the
    library otherwise never touches: the user asks for it.

    Args:
      path: the cache directory; default :func:`default_cache_dir` (``$JAXSIM_CONTACT_CACHE`` or
        ``~/.cache/jaxsim_contact/jax``). Created if missing.
      min_compile_time_s: programs that compiled faster than this (s) are not stored.

    Returns:
      The directory in use, or ``None`` when it cannot be created or written: then a
      :class:`CompilationCacheWarning` names it and the cache stays as it was (compiles run
      normally, never a crash). JAX itself treats an unreadable or corrupt entry as a miss
      (warning and a normal compile).
    """
    directory = Path(path).expanduser() if path is not None else default_cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".write-check-"):
            pass
    except OSError as err:
        warnings.warn(f"jaxsim_contact: the compilation cache directory {str(directory)!r} cannot be "
                      f"used ({type(err).__name__}: {err.strerror or err}); compiling without a persistent "
                      f"cache (set {CACHE_ENV} or pass another path)", CompilationCacheWarning, stacklevel=2)
        return None
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_time_s))
    # JAX records at its first compile whether a cache is used (compilation_cache.is_cache_used);
    # versions that base it on the directory setting would ignore a later call. 0.10.2 reads the
    # directory lazily (the test enables it after a first compile); the reset covers the others.
    from jax.experimental.compilation_cache import compilation_cache

    compilation_cache.reset_cache()
    return directory

_REQUESTS = "/jax/compilation_cache/compile_requests_use_cache"
_HITS = "/jax/compilation_cache/cache_hits"


@dataclasses.dataclass
class CompileReport:
    """What happened inside one :func:`compile_report` block.

    Attributes:
      what: the label given to :func:`compile_report`.
      seconds: wall-clock time of the block (s).
      cache_dir: JAX's persistent compilation cache directory, ``None`` when it is off.
      cache_requests: XLA programs of the block looked up in the persistent cache.
      cache_hits: those found there (loaded instead of compiled).
    """

    what: str
    seconds: float = 0.0
    cache_dir: str | None = None
    cache_requests: int = 0
    cache_hits: int = 0

    @property
    def cache_status(self) -> str:
        """``"off"`` (no persistent cache), ``"hit"`` (every program loaded), ``"miss"`` (at
        least one compiled; JAX stores those that took longer than
        ``jax_persistent_cache_min_compile_time_secs``) or ``"none"`` (nothing was compiled in the
        block: the programs were already in this process's memory)."""
        if self.cache_dir is None:
            return "off"
        if self.cache_requests == 0:
            return "none"
        return "hit" if self.cache_hits == self.cache_requests else "miss"

    def summary(self) -> str:
        """One line: the time and the cache status in words."""
        status = {
            "off": "persistent compilation cache off",
            "hit": f"loaded from the persistent compilation cache ({self.cache_dir})",
            "miss": (f"persistent cache miss: {self.cache_requests - self.cache_hits} of "
                     f"{self.cache_requests} programs compiled and stored in {self.cache_dir}"),
            "none": "already compiled in this process",
        }[self.cache_status]
        return f"{self.what}: {self.seconds:.1f} s ({status})"


@contextlib.contextmanager
def compile_report(what: str, file=None, *, announce: bool = True) -> Iterator[CompileReport]:
    """Announce that ``what`` is compiling, and report on exit how long the block took and whether
    the persistent compilation cache served it.

    Wrap the first call of a jitted function (or its ``.lower(...).compile()``)::

        with jc.compile_report("rollout of the humanoid"):
            final, traj = rollout(model, state, ctrls)

    prints ``compiling rollout of the humanoid ...`` before and e.g. ``rollout of the humanoid:
    41.3 s (persistent cache miss: 3 of 3 programs compiled and stored in ~/.cache/...)`` after,
    on ``file`` (default ``sys.stderr``). ``announce=False`` prints nothing; the yielded
    :class:`CompileReport` is filled in either way. The cache is JAX's
    (:func:`enable_compilation_cache`; the command line turns it on).

    XLA may print ``Very slow compile?`` during a long compile: that is XLA's own timer, not an
    error (docs/sharp_bits.md).
    """
    out = sys.stderr if file is None else file
    report = CompileReport(what=what, cache_dir=jax.config.jax_compilation_cache_dir or None)

    def listen(event: str, **_) -> None:
        if report.cache_dir is None:  # JAX counts requests even without a cache directory
            return
        if event == _REQUESTS:
            report.cache_requests += 1
        elif event == _HITS:
            report.cache_hits += 1

    if announce:
        print(f"compiling {what} ...", file=out, flush=True)
    jax.monitoring.register_event_listener(listen)
    start = time.perf_counter()
    try:
        yield report
    finally:
        report.seconds = time.perf_counter() - start
        jax.monitoring.unregister_event_listener(listen)
    if announce:
        print(report.summary(), file=out, flush=True)
