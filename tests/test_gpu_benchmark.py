"""The GPU command ``benchmarks/gpu/run.py`` (issue 47) at toy sizes on the CPU, so that the one
command a lent GPU runs never rots: both dtype children, every section (step with both settings
and MJX, GJK/EPA, rollout gradient), the merged report."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "gpu" / "run.py"


def _module():
    spec = importlib.util.spec_from_file_location("gpu_run", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_gpu_command_at_toy_sizes(tmp_path):
    run = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--toy",
                          "--compile-workers", "1", "--budget-s", "2400"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=2700)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    reports = sorted(tmp_path.glob("gpu_*.json"))
    assert [p.name for p in reports] == ["gpu_cpu.json"]
    result = json.loads(reports[0].read_text())
    assert [c["meta"]["dtype"] for c in result["children"]] == ["float32", "float64"]
    rows = [(c["meta"]["dtype"], r) for c in result["children"] for r in c["rows"]]
    for dtype, row in rows:
        assert "error" not in row and "skipped" not in row, (dtype, row)
        assert row["rate_per_s"] > 0 and row["compile_s"] > 0, (dtype, row)
        assert row["finite_fraction"] == 1.0, (dtype, row)
    measured = {(dtype, r["section"], r["engine"], r["setting"]) for dtype, r in rows}
    assert {("float32", "step", "ours", "default hard"), ("float32", "step", "ours", "MuJoCo soft"),
            ("float32", "step", "mjx", "MJX"), ("float32", "gradient", "ours", "forward, 3 steps"),
            ("float32", "gradient", "ours", "grad, 3 steps"), ("float64", "step", "ours", "default hard"),
            ("float64", "step", "mjx", "MJX")} <= measured
    for _, row in rows:
        if row["section"] == "gjk":  # the placements do what they say: EPA only when overlapping
            overlapping = row["setting"] == "overlapping"
            assert row["negative_fraction"] == (1.0 if overlapping else 0.0), row
            assert (row["max_epa_iterations"] > 0) == overlapping, row
        if row["section"] == "step" and row["engine"] == "ours":
            assert row["lane_max_iterations"] >= row["mean_iterations"] > 0, row
    text = (tmp_path / "gpu_cpu.md").read_text()
    for heading in ("## Step throughput", "## Batched GJK / EPA", "## Gradient of a rollout"):
        assert heading in text
    assert "## Not measured" not in text


def test_report_lists_what_was_not_measured():
    """A skipped or failed job is named in the report (never silently dropped), and an
    out-of-memory error carries the hint."""
    gpu = _module()
    row = dict(section="step", scene="go2", engine="ours", setting="default hard", batch=16384)
    child = dict(meta=dict(dtype="float32", jax="x", backend="gpu", device_kind="GPU"),
                 rows=[dict(row, skipped="budget: 3 s left before group 4"),
                       dict(row, batch=4096, rate_per_s=2.0e5, seconds=0.1,
                            error=None)])
    child["rows"][1].pop("error")
    result = dict(meta=dict(command="run.py", date="d", commit="c", nvidia_smi="n",
                            budget_s=1.0, wall_s=1.0), children=[child])
    text = gpu.markdown(result)
    assert "| go2 | float32 | 16384 | default hard | skipped |" in text
    assert "| go2 | float32 | 4096 | default hard | 200,000 |" in text
    assert "budget: 3 s left before group 4" in text.split("## Not measured")[1]
    error = gpu._describe(RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 9 GiB"))
    assert error.startswith(gpu.OOM_HINT) and "jc.chunked_vmap" in error


def test_shape_report_census_and_lane_spread():
    """``benchmarks/gpu/shape_report.py``'s two measures on known inputs: the StableHLO census
    counts what is there (host callbacks among custom calls), the lane spread is the mean over
    steps of the batch's largest count."""
    import numpy as np

    spec = importlib.util.spec_from_file_location("shape_report", REPO / "benchmarks" / "gpu" / "shape_report.py")
    report = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = report
    spec.loader.exec_module(report)
    text = ("%0 = stablehlo.while(%a) ... %1 = stablehlo.scatter ... %2 = stablehlo.scatter ... "
            "stablehlo.custom_call @lapack_spotrf_ffi(...) stablehlo.custom_call @xla_python_cpu_callback(...) "
            "%3 = stablehlo.gather ... stablehlo.dynamic_update_slice ... stablehlo.while_loop_like")
    counts = report.census(text)
    assert counts["while"] == 1 and counts["scatter"] == 2 and counts["gather"] == 1
    assert counts["dynamic_update_slice"] == 1 and counts["dynamic_slice"] == 0
    assert counts["custom_call_targets"] == {"lapack_spotrf_ffi": 1, "xla_python_cpu_callback": 1}
    assert counts["host_callbacks"] == 1
    spread = report.lane_spread(np.array([[1, 10], [3, 2], [2, 6]]))  # (batch 3, steps 2)
    assert spread["mean"] == 4.0 and spread["lane_max"] == 6.5 and spread["max"] == 10
    assert spread["ratio"] == 6.5 / 4.0
