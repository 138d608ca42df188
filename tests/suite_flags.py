"""The XLA flags the test suite compiles under (``tests/conftest.py`` sets them before JAX starts;
``tests/golden.py`` run as a script sets the same, so that its recorded digests are the suite's).

* ``--xla_cpu_multi_thread_eigen=false``: XLA:CPU's multi-threaded Eigen pool was seen to wedge
  (every thread waiting on a futex, the main thread in ``BlockUntilReady``) on the vmapped
  eigh/while-loop graphs of ``tests/contact/test_solvers.py::test_staggered_stalls_on_a_hyperstatic_random_problem``:
  twice in full-suite runs (CI timed out), never in 9 runs of that module alone. The same
  signature is reported upstream for vmapped CPU graphs and disappears with this flag
  (single-threaded Eigen inside one op; JAX still runs independent ops concurrently).
* ``--xla_backend_optimization_level=0``: LLVM without its optimisation passes, and
  ``--xla_cpu_use_fusion_emitters=false``: XLA:CPU's LLVM loop emitters instead of its MLIR fusion
  emitters. The suite is compile-bound (many small programs, each compiled once), and the MLIR
  emitters cost ~15 ms per kernel whatever its size (a context, its dialects and rewrite patterns
  set up per fusion): with both flags a ball-on-plane ``jax.grad`` of a 100-step rollout
  compiles in 4.5 s instead of 14-16 s, and two compile-bound modules (the derivative gate and
  float32 Jacobians) ran in 349 s instead of 563 s on one core. Programs compute the same values
  to rounding, not bit for bit, so the golden digests are recorded under these flags.

Neither is the configuration users run. Both once mattered: under O0 a ``jnp.max`` derivative was
0/0 (FMA contraction differing between two fusions recomputing one value), and under the legacy
emitters with LLVM's optimisations one EPA query of an older version returned a wrong depth
(``docs/sharp_bits.md``, "Compile time on CPU"). So the README's demo test runs the demo with no
XLA flags at all — the compiler configuration a newcomer has — and the benchmarks run with none.
"""

SUITE_XLA_FLAGS = ("--xla_cpu_multi_thread_eigen=false --xla_backend_optimization_level=0 "
                   "--xla_cpu_use_fusion_emitters=false")
