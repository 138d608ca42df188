"""Execute notebooks/contact_models.ipynb at small size (JC_NOTEBOOK_SMALL=1)."""

import os
import pathlib

import nbformat
from nbclient import NotebookClient

NOTEBOOK = pathlib.Path(__file__).resolve().parents[2] / "notebooks" / "contact_models.ipynb"


def test_contact_models_notebook_executes(monkeypatch):
    monkeypatch.setenv("JC_NOTEBOOK_SMALL", "1")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    # the LCP corner bias and the NCP direction are visible in the executed output
    text = "".join(o.get("data", {}).get("text/plain", "") for o in outputs)
    assert "45.0" in text
