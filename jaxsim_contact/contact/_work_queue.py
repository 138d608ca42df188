"""A batch of independent contact problems solved on a few lanes fed from a work queue.

``jax.vmap(solve)`` over ``B`` problems runs one ``while_loop`` whose every trip advances all ``B``
lanes: it costs the *slowest* problem's iteration count times the batch, and on random problems
the iteration counts are heavy-tailed (a few problems run to the iteration cap, far beyond the
mean). :func:`solve_batch` instead keeps ``lanes`` problems in flight: every ``refill_every``
iterations the lanes whose problem converged (or reached ``max_iterations``) write their result
and take the next problem of the queue, so the batch costs about the *mean* iteration count per
problem. The iterates of each problem are those :func:`~jaxsim_contact.contact.solve` computes
(the same solver steps on the same data, seed 001 §III); only their scheduling differs.

This helps wherever problems are independent and their number exceeds the lanes: offline data
generation, benchmarks, batches of contact queries. It does not apply inside a vmapped simulation
step, where every environment needs its force before any can take the next step.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._gradients import checked_solver, solution
from ._loop import Loop, freeze, initial_state
from ._problem import ContactProblem, sanitize_problem
from ._solver import ContactSolution, ContactSolver
from .._precision import full_precision_matmuls

__all__ = ["solve_batch", "default_lanes"]

#: The automatic lane count keeps the lanes' Delassus matrices together within about this many
#: bytes (a CPU core's L2 cache): few lanes for large problems, up to ``MAX_LANES`` for small ones
LANE_BUDGET_BYTES = 600_000
MAX_LANES = 32
#: at least two lanes: a lone eigendecomposition costs more than a batched pair (ADMM's eigh
#: variant)
MIN_LANES = 2


def default_lanes(num_contacts: int, dtype) -> int:
    """Lanes :func:`solve_batch` uses when ``lanes=None``: ``LANE_BUDGET_BYTES`` over the bytes of
    one ``(3n, 3n)`` Delassus matrix of ``dtype``, clipped to ``[MIN_LANES, MAX_LANES]`` — 32 for up
    to 16 contacts, 8 for 32, 2 for 64 in float64. Chosen for one CPU core; on a GPU pass
    ``lanes`` explicitly (many more)."""
    per_lane = (3 * int(num_contacts)) ** 2 * jnp.dtype(dtype).itemsize
    return int(min(MAX_LANES, max(MIN_LANES, LANE_BUDGET_BYTES // per_lane)))


@full_precision_matmuls
def solve_batch(problems: ContactProblem, solver: ContactSolver | None = None, warm_start=None,
                gradient="implicit", lanes: int | None = None, refill_every: int = 10) -> ContactSolution:
    """Solve ``B`` independent contact problems on ``lanes`` lanes fed from a queue (see module;
    the solvers are those of seed 001 §III, unchanged).

    Args:
      problems: a :class:`ContactProblem` whose every field has a leading batch axis ``B``
        (``delassus`` ``(B, 3n, 3n)``, ...), all with the same ``n`` contacts.
      solver: as for :func:`~jaxsim_contact.contact.solve` (default ``ADMM(formulation="ncp")``).
      warm_start: ``None``, a ``(B, n, 3)`` force array or a batched :class:`ContactSolution`.
      gradient: ``"implicit"`` (default) or a smoothed rule (``RelaxedComplementarity``,
        ``RandomizedSmoothing``), attached per problem exactly as by ``solve``; ``"unrolled"``
        raises ``ValueError`` (the queue is a ``while_loop``; use ``jax.vmap(solve)`` for it).
      lanes: problems in flight (static int ≥ 1; ``None``: :func:`default_lanes` from the
        problem size); ``min(lanes, B)`` are used. More lanes amortise per-kernel overhead over
        more problems; fewer keep the lanes' matrices in cache and shorten the final drain, when
        the last problems run alone. On one CPU core the best count falls as the problems grow
        (a 192 × 192 Delassus matrix, 64 contacts, is 295 kB), which the automatic choice
        follows.
      refill_every: iterations between refills (static int ≥ 1). A solver that works in epochs
        (ADMM's Cholesky variant refactors every ``refactor_every`` iterations) refills at whole
        epochs: every ``max(1, refill_every // epoch_length)`` epochs. A problem that finishes
        mid-way waits at most this long in its lane.

    Returns:
      A :class:`ContactSolution` with a leading axis ``B``, equal to ``jax.vmap(solve)``'s up to
      rounding (the same iterations on each problem). ``jit``-compatible; the loop runs on
      ``stop_gradient`` data and derivatives come from the per-problem rule, in forward and
      reverse mode. Initial states of all ``B`` problems are computed up front (one batched
      ``solver.init``), so the memory is that of ``B`` solver states.
    """
    if gradient == "unrolled":
        raise ValueError("solve_batch runs a work queue in a while_loop and cannot unroll it; use "
                         "jax.vmap(jc.contact.solve) with gradient='unrolled'")
    solver = checked_solver(solver, gradient)
    if problems.delassus.ndim != 3:
        raise ValueError("solve_batch expects problems with a leading batch axis (delassus of shape "
                         f"(B, 3n, 3n)), got delassus of shape {problems.delassus.shape}")
    if lanes is None:
        lanes = default_lanes(problems.delassus.shape[-1] // 3, problems.delassus.dtype)
    if not isinstance(lanes, int) or isinstance(lanes, bool) or lanes < 1:
        raise ValueError(f"lanes must be an int >= 1, got {lanes!r}")
    if not isinstance(refill_every, int) or isinstance(refill_every, bool) or refill_every < 1:
        raise ValueError(f"refill_every must be an int >= 1, got {refill_every!r}")
    batch = problems.delassus.shape[0]
    width = min(lanes, batch)

    safe, finite = jax.vmap(sanitize_problem)(problems)
    loop_safe, loop_solver, loop_warm = jax.lax.stop_gradient((safe, solver, warm_start))
    warm_axis = None if loop_warm is None else 0
    state0, crit0 = jax.vmap(lambda p, s, w: initial_state(p, s, loop_solver, w, None),
                             in_axes=(0, 0, warm_axis))(problems, loop_safe, loop_warm)

    def lane_loop(safe_one):
        return Loop(loop_solver, safe_one, unrolled=False)

    carry0 = jax.vmap(lambda s, st, c: lane_loop(s).start(st, c))(loop_safe, state0, crit0)
    advances = max(1, refill_every // lane_loop(None).steps_per_advance)

    def take(tree, index):
        return jax.tree_util.tree_map(lambda x: x[index], tree)

    def lane_finished(lane_safe, lane_carry):
        return jax.vmap(lambda s, c: lane_loop(s).finished(c))(lane_safe, lane_carry)

    # Outputs of every problem, written when its lane retires it: (force, rho, it, done, crit).
    one = jax.eval_shape(lambda s, c: lane_loop(s).finish(c), take(loop_safe, 0), take(carry0, 0))
    results0 = jax.tree_util.tree_map(lambda a: jnp.zeros((batch,) + a.shape, a.dtype), one)

    def refill(retire, lane_index, lane_safe, lane_carry, next_index, results):
        out = jax.vmap(lambda s, c: lane_loop(s).finish(c))(lane_safe, lane_carry)
        # Retired lanes write at their problem's index; the others at B, which "drop" discards.
        target = jnp.where(retire, lane_index, batch)
        results = jax.tree_util.tree_map(lambda r, o: r.at[target].set(o, mode="drop"),
                                         results, out)
        # The k-th retiring lane takes the k-th next problem of the queue; past the end it idles.
        rank = jnp.cumsum(retire) - 1
        lane_index = jnp.where(retire, next_index + rank, lane_index)
        next_index = next_index + jnp.sum(retire)
        index = jnp.minimum(lane_index, batch - 1)
        # per lane: retired lanes take the new problem and its initial state, the others keep theirs
        keep = jax.vmap(freeze)
        lane_safe = keep(~retire, lane_safe, take(loop_safe, index))
        lane_carry = keep(~retire, lane_carry, take(carry0, index))
        return lane_index, lane_safe, lane_carry, next_index, results

    def trip(loop_carry):
        lane_index, lane_safe, lane_carry, next_index, results = loop_carry
        lane_carry = jax.lax.fori_loop(
            0, advances,
            lambda _, c: jax.vmap(lambda s, cc: lane_loop(s).advance(cc))(lane_safe, c),
            lane_carry)
        retire = (lane_index < batch) & lane_finished(lane_safe, lane_carry)
        # Most trips retire nothing (a problem takes several refill periods): the bookkeeping,
        # which moves whole problems and solver states, runs only when one did.
        return jax.lax.cond(jnp.any(retire), lambda *a: refill(retire, *a), lambda *a: a,
                            lane_index, lane_safe, lane_carry, next_index, results)

    first = jnp.arange(width)
    start = (first, take(loop_safe, first), take(carry0, first), jnp.asarray(width), results0)
    _, _, _, _, results = jax.lax.while_loop(lambda c: jnp.any(c[0] < batch), trip, start)

    finish = jax.vmap(lambda p, s, f, *r: solution(p, s, f, solver, loop_solver, gradient, *r))
    return finish(problems, safe, finite, *results)
