"""Execute notebooks/differentiable_collision.ipynb at small size (JC_NOTEBOOK_SMALL=1)."""

import os
import pathlib
import re

import nbformat
from nbclient import NotebookClient

NOTEBOOK = pathlib.Path(__file__).resolve().parents[1] / "notebooks" / "differentiable_collision.ipynb"


def test_differentiable_collision_notebook_executes(monkeypatch):
    monkeypatch.setenv("JC_NOTEBOOK_SMALL", "1")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    finals = dict(re.findall(r"^(.+?)\s+final cost (\S+)", text, flags=re.M))
    assert set(finals) == {"finite differences (h=1e-6)", "1st-order Gaussian (M=20)"}, text
    costs = {name: float(value) for name, value in finals.items()}
    start = float(re.search(r"^\s+0\s+(\S+)", text, flags=re.M).group(1))
    # both methods make progress from the starting pose (the cost table is printed)
    assert all(c < start for c in costs.values()), (start, costs)
