"""Execute notebooks/contact_models.ipynb at small size (JC_NOTEBOOK_SMALL=1)."""

import pathlib

NOTEBOOK = pathlib.Path(__file__).resolve().parents[2] / "notebooks" / "contact_models.ipynb"


def test_contact_models_notebook_executes(run_notebook):
    outputs = run_notebook(NOTEBOOK)
    # the LCP corner bias and the NCP direction are visible in the executed output
    text = "".join(o.get("data", {}).get("text/plain", "") for o in outputs)
    assert "45.0" in text
