"""``jc.compile_report``: announces a compilation and reports, from JAX's own events, whether the
persistent compilation cache served it (a fresh process per case: the cache is process-global)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp

import jaxsim_contact as jc

PROGRAM = textwrap.dedent("""
    import io, sys
    import jax, jax.numpy as jnp
    import jaxsim_contact as jc
    buffer = io.StringIO()
    with jc.compile_report("a test program", file=buffer) as report:
        jax.jit(lambda x: jnp.sin(x) @ x.T + jnp.cos(x).sum())(jnp.ones((7, 7))).block_until_ready()
    print(report.cache_status, report.cache_requests, report.cache_hits)
    print(buffer.getvalue(), end="")
""")


def _run_in_fresh_process(cache_dir) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    if cache_dir is not None:
        env.update(JAX_COMPILATION_CACHE_DIR=str(cache_dir), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                   JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")
    result = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.splitlines()


def test_first_process_compiles_and_stores_the_second_loads(tmp_path):
    cache = tmp_path / "cache"
    status, announce, summary = _run_in_fresh_process(cache)
    assert status.split()[0] == "miss" and int(status.split()[1]) >= 1 and status.split()[2] == "0"
    assert announce == "compiling a test program ..."
    assert summary.startswith("a test program: ") and "persistent cache miss" in summary
    assert str(cache) in summary and any(cache.iterdir())

    status, _, summary = _run_in_fresh_process(cache)
    requests, hits = map(int, status.split()[1:])
    assert status.split()[0] == "hit" and requests == hits >= 1
    assert "loaded from the persistent compilation cache" in summary


def test_without_a_cache_it_says_so():
    status, _, summary = _run_in_fresh_process(None)
    assert status == "off 0 0" and "persistent compilation cache off" in summary


def test_a_program_already_in_memory_compiles_nothing_and_silence_on_request():
    f = jax.jit(lambda x: 2 * x + 1)
    f(jnp.ones(3)).block_until_ready()
    buffer = io.StringIO()
    with jc.compile_report("again", file=buffer, announce=False) as report:
        f(jnp.ones(3)).block_until_ready()
    assert buffer.getvalue() == "" and report.cache_requests == 0 and report.seconds >= 0
    assert report.cache_status in ("none", "off")  # "off" where the suite runs without its cache


ENABLE = textwrap.dedent("""
    import sys, warnings
    import jax, jax.numpy as jnp
    import jaxsim_contact as jc
    jax.jit(lambda x: x + 1.0)(1.0)  # a compile before the cache is enabled
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        used = jc.enable_compilation_cache(sys.argv[1], min_compile_time_s=0.0)
    with jc.compile_report("a test program", announce=False) as report:
        jax.jit(lambda x: jnp.sin(x) @ x.T + 3.0)(jnp.ones((5, 5))).block_until_ready()
    print(used, jax.config.jax_compilation_cache_dir, report.cache_status)
    for w in caught:
        print(type(w.message).__name__, w.message)
""")


def _enable_in_fresh_process(path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    result = subprocess.run([sys.executable, "-c", ENABLE, str(path)], capture_output=True, text=True,
                            env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.splitlines()


def test_enable_compilation_cache_creates_the_directory_and_stores_programs(tmp_path):
    """Also after a first compile in the process (JAX records then whether a cache is used)."""
    cache = tmp_path / "new" / "cache"
    lines = _enable_in_fresh_process(cache)
    assert lines == [f"{cache} {cache} miss"], lines
    assert any(p.name != "" for p in cache.iterdir())
    assert _enable_in_fresh_process(cache) == [f"{cache} {cache} hit"]


def test_an_unusable_cache_directory_warns_by_name_and_compiles_without_it(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    lines = _enable_in_fresh_process(blocker / "cache")
    assert lines[0] == "None None off", lines
    assert len(lines) == 2 and lines[1].startswith("CompilationCacheWarning")
    assert str(blocker / "cache") in lines[1] and "compiling without a persistent cache" in lines[1]


def test_default_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    from jaxsim_contact._compiling import default_cache_dir

    monkeypatch.setenv("JAXSIM_CONTACT_CACHE", str(tmp_path / "here"))
    assert default_cache_dir() == tmp_path / "here"
    monkeypatch.delenv("JAXSIM_CONTACT_CACHE")
    assert default_cache_dir().parts[-3:] == (".cache", "jaxsim_contact", "jax")
