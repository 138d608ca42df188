"""Every matrix product the engine traces runs at full precision (``_precision``, issue 47).

On NVIDIA Ampere+ GPUs JAX's default float32 ``dot`` is TensorFloat-32 (10 mantissa bits); the
solvers' stopping rules assume float32 round-off. The precision is recorded in the program, so the
check runs anywhere: every ``dot_general`` of the lowered float32 step, its gradient, a contact
solve and a GJK/EPA query must carry ``HIGHEST``, while the caller's own products keep theirs.
"""

import re

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim_contact as jc
from jaxsim_contact.testing.problems import random_problem

_DOT = re.compile(r"stablehlo\.dot_general .*?precision = \[(\w+), (\w+)\]")


def _dot_precisions(lowered) -> list[tuple[str, str]]:
    text = lowered.as_text()
    dots = text.count("stablehlo.dot_general")
    found = _DOT.findall(text)
    assert len(found) == dots, "a dot_general without a precision attribute"
    return found


def _assert_all_highest(lowered, at_least: int = 1):
    found = _dot_precisions(lowered)
    assert len(found) >= at_least
    assert all(pair == ("HIGHEST", "HIGHEST") for pair in found), sorted(set(found))


def _tower():
    model = jc.scenes.load("tower", count=2, gap=1e-3, dtype=jnp.float32)
    state = jc.init(model)
    assert state.q.dtype == jnp.float32
    return model, state


def test_batched_step_and_its_gradient_use_full_precision_products():
    model, state = _tower()
    states = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), state)
    _assert_all_highest(jax.jit(jax.vmap(lambda s: jc.step(model, s))).lower(states), at_least=10)

    def loss(v0):
        s = jc.State(q=state.q, v=v0, time=state.time, error=state.error)
        s = jc.step(model, s)
        return jnp.sum(s.q ** 2)

    _assert_all_highest(jax.jit(jax.grad(loss)).lower(state.v), at_least=10)


def test_solver_and_collision_queries_use_full_precision_products():
    problem = random_problem(np.random.default_rng(0), 4, dtype=np.float32)
    _assert_all_highest(jax.jit(lambda p: jc.contact.solve(p).force).lower(problem))

    ellipsoid = jc.Ellipsoid(radii=jnp.asarray([0.3, 0.2, 0.1], jnp.float32))
    pose = jc.Transform(jnp.asarray([0.1, 0.0, 0.05], jnp.float32))
    identity = jc.Transform.identity(jnp.float32)
    _assert_all_highest(jax.jit(lambda p: jc.collision.distance(ellipsoid, identity, ellipsoid, p)
                                .signed_distance).lower(pose))


def test_the_callers_own_products_keep_their_precision():
    model, state = _tower()

    def caller(s):
        s = jc.step(model, s)
        return s.q[:3] @ s.q[:3]  # the user's product, outside the engine

    found = _dot_precisions(jax.jit(caller).lower(state))
    assert found.count(("DEFAULT", "DEFAULT")) == 1
    assert found.count(("HIGHEST", "HIGHEST")) == len(found) - 1
