"""The ``jaxsim-contact`` command line: ``collide`` prints a well-formed table, ``demo`` and
``simulate`` run the contact pipeline and write an HTML replay."""

import io
import math
from contextlib import redirect_stderr, redirect_stdout

import pytest

from jaxsim_contact import cli


def test_demo_table_rows_and_finite_numbers():
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = cli.main(
            ["collide", "--pairs", "sphere-box", "--distances", "-0.05", "0.1",
             "--variants", "vanilla", "--batch", "4", "--repeats", "1", "--no-cache"]
        )
    assert code == 0
    lines = buf.getvalue().splitlines()
    header = lines[0].split()
    assert header[:4] == ["pair", "target", "m", "distance"]
    rows = [line.split() for line in lines[2:] if line.strip().startswith("sphere-box")]
    assert len(rows) == 2
    for row, target in zip(rows, (-0.05, 0.1)):
        pair, tgt, dist, iters, us, conv = row
        assert pair == "sphere-box"
        assert float(tgt) == pytest.approx(target)
        assert math.isfinite(float(dist)) and float(dist) == pytest.approx(target, abs=1e-6)
        assert int(iters) >= 1
        assert math.isfinite(float(us)) and float(us) > 0
        assert conv == "yes"


def test_demo_rejects_unknown_shape():
    with pytest.raises(SystemExit):
        cli.main(["collide", "--pairs", "sphere-teapot"])


def test_bench_without_running_prints_location(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: calls.append(cmd) or 0)
    assert cli.main(["bench"]) == 0
    assert calls and calls[0][-1] == "--quick" and calls[0][-2].endswith("gjk.py")


def test_demo_simulates_the_embedded_scene_and_writes_a_replay(tmp_path):
    out = tmp_path / "demo.html"
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = cli.main(["demo", "--steps", "150", "--out", str(out), "--no-cache"])
    assert code == 0
    text = buf.getvalue()
    for key in ("speed", "penetration", "energy", "solver", "errors"):
        assert key in text
    speed = float(text.split("speed")[1].split()[0])
    assert math.isfinite(speed) and speed > 0
    html = out.read_text()
    assert html.startswith("<!doctype html>") and "three" in html and '"geoms"' in html


def test_simulate_file(tmp_path):
    xml = tmp_path / "ball.xml"
    xml.write_text('<mujoco><worldbody><geom type="plane" size="1 1 0.1"/>'
                   '<body pos="0 0 0.3"><freejoint/><geom type="sphere" size="0.1"/></body>'
                   '</worldbody></mujoco>')
    buf = io.StringIO()
    err = io.StringIO()
    with redirect_stdout(buf), redirect_stderr(err):
        code = cli.main(["simulate", str(xml), "--steps", "300", "--batch", "2",
                         "--out", str(tmp_path / "r.html"), "--no-cache"])
    assert code == 0
    assert "errors      [0, 0]" in buf.getvalue()
    assert (tmp_path / "r.html").exists()
    # a long run reports progress on stderr: 300 steps in 10 chunks of 30, ending at 300/300
    bar = err.getvalue()
    assert bar.count("\r[") == 10 and "300/300 steps" in bar and "30/300 steps" in bar


def test_chunked_rollout_equals_one_rollout():
    """The progress bar's chunks are the same simulation as a single rollout."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxsim_contact as jc

    model = jc.scenes.load("tower", count=2, gap=1e-3)
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        chunked = cli.simulate(model, steps=100, batch=1)
    whole, traj = jax.jit(jc.rollout)(model, jc.init(model), jnp.zeros((100, 0)))
    assert chunked["energy_end"] == pytest.approx(
        float(jc.dynamics.kinetic_energy(model, whole.q, whole.v)
              + jc.dynamics.potential_energy(model, whole.q)), rel=1e-9)  # vmap vs not: 1e-12
    # resting contact: the penetration is ~1e-12 m, rounding that differs between the batched
    # and the unbatched program, so an absolute 1 nm on top of the relative 1e-6
    assert chunked["max_penetration"] == pytest.approx(float(np.max(traj.contact.penetration)),
                                                       rel=1e-6, abs=1e-9)
