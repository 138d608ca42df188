"""The ``jaxsim-contact`` command line: ``demo`` runs in-process and prints a well-formed table."""

import io
import math
from contextlib import redirect_stdout

import pytest

from jaxsim_contact import cli


def test_demo_table_rows_and_finite_numbers():
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = cli.main(
            ["demo", "--pairs", "sphere-box", "--distances", "-0.05", "0.1",
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
        cli.main(["demo", "--pairs", "sphere-teapot"])


def test_bench_without_running_prints_location(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: calls.append(cmd) or 0)
    assert cli.main(["bench"]) == 0
    assert calls and calls[0][-1] == "--quick" and calls[0][-2].endswith("gjk.py")
