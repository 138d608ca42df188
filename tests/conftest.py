"""Test configuration: correctness tests run in float64 (DESIGN §4); the library itself never
changes global JAX config."""

import os

# The suite's XLA flags (why each: tests/suite_flags.py). Must be set before the CPU backend starts.
from suite_flags import SUITE_XLA_FLAGS

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + SUITE_XLA_FLAGS).strip()

# One persistent compilation cache for the whole run, shared by the xdist workers and the
# subprocesses tests start (notebook kernels, the sharding child): each module ends with
# jax.clear_caches() (below), and many modules compile the same programs (a pair's distance query,
# a scene's step). The controller (no PYTEST_XDIST_WORKER) creates a fresh directory, so a run never
# reads entries from an earlier one; JAX reads the variable when it is imported.
_SUITE_CACHE = "JC_SUITE_COMPILATION_CACHE"
_CREATED_CACHE = not os.environ.get("PYTEST_XDIST_WORKER") and _SUITE_CACHE not in os.environ
if _CREATED_CACHE:
    import tempfile

    os.environ[_SUITE_CACHE] = tempfile.mkdtemp(prefix="jc-suite-xla-cache-")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = os.environ[_SUITE_CACHE]

# The suite runs in pytest-xdist workers (pyproject addopts: -n 2 --dist loadfile). Each worker is
# pinned to its own core: XLA:CPU hands work between pool threads inside loops, and with two JAX
# processes sharing two cores each handoff can wait a scheduler quantum (one contact stage was
# measured at 1.1 s unpinned under load vs 4.3 ms pinned).
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker.startswith("gw") and hasattr(os, "sched_setaffinity"):
    _cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {_cores[int(_worker[2:]) % len(_cores)]})

import gc

import jax

jax.config.update("jax_enable_x64", True)

# Tracing a program allocates millions of short-lived objects, and with Python's default
# thresholds (700, 10, 10) the cyclic collector runs thousands of times per module, its full
# collections walking every live object of the worker (jaxprs, caches, modules): 2.0 s of the
# 11 s trace of a 100-step rollout's gradient, 37 s of two compile-bound modules' 349 s. Fewer,
# larger collections; reference counting still frees almost everything at once, and each module
# ends with an explicit gc.collect() (below).
gc.set_threshold(50_000, 20, 100)

import pytest


@pytest.fixture(autouse=True)
def _no_persistent_compilation_cache():
    """The CLI enables JAX's persistent compilation cache in its own process; tests that call
    ``cli.main`` in-process must not leave it on for the rest of the session (the suite would then
    write into the user's home directory, and XLA was seen to crash while writing entries)."""
    yield
    jax.config.update("jax_compilation_cache_dir", os.environ.get(_SUITE_CACHE))
    jax.config.update("jax_enable_x64", True)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_executables():
    """Free every compiled executable after each test module.

    XLA:CPU keeps ~800 memory mappings per compiled GJK/EPA query (measured: 72 compilations of
    ``jc.collision.distance`` → 57k mappings). The kernel's default limit is 65,530
    (``vm.max_map_count``); the whole suite in one process exceeded it and XLA segfaulted while
    compiling. ``jax.clear_caches()`` plus a collection returns the mappings.
    """
    yield
    jax.clear_caches()
    gc.collect()


@pytest.fixture
def run_notebook(monkeypatch):
    """``run_notebook(path) -> outputs``: execute a notebook at small size (``JC_NOTEBOOK_SMALL=1``)
    in its own folder, assert that no cell raised, return every code cell's outputs."""

    def run(path):
        import nbformat
        from nbclient import NotebookClient

        monkeypatch.setenv("JC_NOTEBOOK_SMALL", "1")
        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
        assert not [o for o in outputs if o.get("output_type") == "error"]
        return outputs

    return run


def pytest_unconfigure(config):
    """The process that created the run's compilation cache removes it (the workers are done)."""
    if _CREATED_CACHE:
        import shutil

        shutil.rmtree(os.environ[_SUITE_CACHE], ignore_errors=True)
