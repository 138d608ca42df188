"""Test configuration: correctness tests run in float64 (DESIGN §4); the library itself never
changes global JAX config."""

import jax

jax.config.update("jax_enable_x64", True)
