"""jaxsim_contact.xla_flags: the opt-in compile-time flag (the suite itself runs with it, see
conftest.py) — it is only added when safe, and it does not change what a rollout computes."""

import json
import os
import subprocess
import sys

import jax
import numpy as np

from jaxsim_contact.xla_flags import FAST_CPU_COMPILE, enable_fast_cpu_compile

# A short contact-rich rollout: every pipeline stage (narrow phase, contact solve, integration).
_ROLLOUT = """
import json, sys
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
import jaxsim_contact as jc
model = jc.scenes.load("tower", count=3, gap=0.02, dtype=jnp.float64)
_, states = jc.rollout(model, jc.init(model), jnp.zeros((60, model.nu)))
json.dump({"q": states.q.tolist(), "v": states.v.tolist(),
           "flags": __import__("os").environ.get("XLA_FLAGS", "")}, sys.stdout)
"""


def _rollout_in_child(xla_flags: str) -> dict:
    env = dict(os.environ, XLA_FLAGS=xla_flags)
    out = subprocess.run([sys.executable, "-c", _ROLLOUT], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_rollout_is_the_same_with_and_without_the_flag():
    with_flag = _rollout_in_child(FAST_CPU_COMPILE)
    without = _rollout_in_child("--xla_cpu_use_fusion_emitters=true")
    assert FAST_CPU_COMPILE in with_flag["flags"] and FAST_CPU_COMPILE not in without["flags"]
    # a different code generator: equal up to rounding, not bitwise
    np.testing.assert_allclose(with_flag["q"], without["q"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(with_flag["v"], without["v"], rtol=0, atol=1e-6)
    # the boxes fell 2 cm onto each other (impacts at ~0.6 m/s): a trajectory with contact events
    assert np.max(np.abs(np.asarray(with_flag["v"]))) > 0.3


def test_added_to_a_fresh_environment():
    environ = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}
    assert enable_fast_cpu_compile(environ)
    assert environ["XLA_FLAGS"].split() == ["--xla_cpu_multi_thread_eigen=false", FAST_CPU_COMPILE]


def test_the_users_setting_wins():
    environ = {"XLA_FLAGS": "--xla_cpu_use_fusion_emitters=true"}
    assert not enable_fast_cpu_compile(environ)
    assert environ["XLA_FLAGS"] == "--xla_cpu_use_fusion_emitters=true"


def test_not_added_when_jaxlib_would_abort():
    # an unknown XLA flag aborts the process that starts a backend; the probe runs in a child
    environ = {"XLA_FLAGS": "--xla_no_such_flag_in_any_jaxlib=1"}
    assert not enable_fast_cpu_compile(environ)
    assert environ["XLA_FLAGS"] == "--xla_no_such_flag_in_any_jaxlib=1"


def test_not_added_once_the_backend_runs(monkeypatch):
    jax.numpy.zeros(1).block_until_ready()  # this process's backend is up
    monkeypatch.setenv("XLA_FLAGS", "")
    assert not enable_fast_cpu_compile()
    assert os.environ["XLA_FLAGS"] == ""
