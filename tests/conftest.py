"""Test configuration: correctness tests run in float64 (DESIGN §4); the library itself never
changes global JAX config."""

import jax

jax.config.update("jax_enable_x64", True)

import pytest


@pytest.fixture(autouse=True)
def _no_persistent_compilation_cache():
    """The CLI enables JAX's persistent compilation cache in its own process; tests that call
    ``cli.main`` in-process must not leave it on for the rest of the session (the suite would then
    write into the user's home directory, and XLA was seen to crash while writing entries)."""
    yield
    jax.config.update("jax_compilation_cache_dir", None)
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
    import gc

    jax.clear_caches()
    gc.collect()
