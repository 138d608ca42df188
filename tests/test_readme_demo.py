"""The README's first command, as a newcomer runs it: a clean clone, a fresh virtual environment,
``pip install -e .`` and ``jaxsim-contact demo`` — the demo prints its summary, writes the replay
and exits 0; a second run is served by the persistent compilation cache and says so.

(The README's second command, the test suite from a clean clone, is what ``.ci/run`` runs.)
The virtual environment sees this interpreter's packages (``--system-site-packages`` and, when this
interpreter is itself a venv, a ``.pth`` naming its site directories; its pip too) and installs
the clone with ``--no-deps``: the dependencies are the suite's own. pip builds the package as the
README's command does, with build isolation (the build backend, ``setuptools>=77``, comes from the
package index, as for ``.ci/run``). The demo runs without the suite's XLA flags
(``tests/suite_flags.py``): it is the suite's test of the compiler configuration users have.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=1500, **kwargs)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """``(clone, venv_bin, env)``: a clone of this checkout's HEAD installed editable into a fresh
    virtual environment, and an environment whose HOME is empty (so the CLI's cache starts empty)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.fail("the README test clones the repository: it needs git and a git checkout")
    base = tmp_path_factory.mktemp("readme")
    clone = base / "clone"
    cloned = _run(["git", "clone", "--quiet", str(ROOT), str(clone)])
    assert cloned.returncode == 0, cloned.stderr
    venv = base / ".venv"
    # without a pip of its own: this interpreter's pip (and its index configuration) serves
    made = _run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)])
    assert made.returncode == 0, made.stderr
    # a venv made from a venv sees the *base* interpreter's site-packages, not this one's (where the
    # suite's dependencies are when it runs in a venv, as in .ci/run): add this interpreter's site
    # directories after the new venv's own (the clone's editable install is found first)
    purelib = Path(_run([str(venv / "bin" / "python"), "-c",
                         "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    parents = [path for path in site.getsitepackages() if Path(path).is_dir()]
    (purelib / "zz_suite_site_packages.pth").write_text(
        "".join(f"import site; site.addsitedir({path!r})\n" for path in parents))
    # not the suite's cache, nor its XLA flags (tests/suite_flags.py): the demo compiles as it does
    # for a newcomer, with XLA's default CPU emitters and optimisation
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("JAX_", "XLA_", "PYTHONPATH", "JC_SUITE"))}
    env.update(HOME=str(base / "home"), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    pip = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps", "-e", "."],
               cwd=clone, env=env)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    return clone, venv / "bin", env


def test_the_readme_demo_command_from_a_clean_clone(installed):
    clone, bin_dir, env = installed
    where = _run([str(bin_dir / "python"), "-c", "import jaxsim_contact; print(jaxsim_contact.__file__)"],
                 cwd=clone.parent, env=env)
    assert where.stdout.strip().startswith(str(clone)), where.stdout + where.stderr  # the clone's code

    first = _run([str(bin_dir / "jaxsim-contact"), "demo"], cwd=clone, env=env)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-4000:]
    text = first.stdout
    for key in ("scene", "compile", "speed", "penetration", "energy", "solver", "errors", "replay"):
        assert re.search(rf"^{key}\b", text, re.M), text
    speed = float(text.split("speed")[1].split()[0])
    assert math.isfinite(speed) and speed > 0
    assert "errors      [0]" in text, text
    replay = clone / "jaxsim_contact_demo.html"
    html = replay.read_text()
    assert html.startswith("<!doctype html>") and '"geoms"' in html and '"times":[0.0,' in html
    # compiling speaks before the long silence, and the first run fills the (empty) cache
    assert "compiling the rollout of" in first.stderr, first.stderr[-2000:]
    assert "persistent cache miss" in text, text

    second = _run([str(bin_dir / "jaxsim-contact"), "demo", "--out", "again.html"], cwd=clone, env=env)
    assert second.returncode == 0, second.stderr[-4000:]
    line = next(line for line in second.stdout.splitlines() if line.startswith("compile"))
    assert "persistent cache hit" in line, second.stdout
    assert float(line.split()[1]) < float(next(l for l in text.splitlines() if l.startswith("compile")).split()[1])
