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
