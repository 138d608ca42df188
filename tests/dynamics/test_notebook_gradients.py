"""Execute notebooks/gradients_through_contact.ipynb at small size (JC_NOTEBOOK_SMALL=1): both
inverse problems of seed 004 §IV-B converge to the issue's criteria."""

import pathlib
import re

NOTEBOOK = pathlib.Path(__file__).resolve().parents[2] / "notebooks" / "gradients_through_contact.ipynb"


def test_gradients_through_contact_notebook_executes(run_notebook):
    outputs = run_notebook(NOTEBOOK)
    text = "".join(o.get("text", "") for o in outputs)
    cube = re.search(r"cube final error (\S+) after (\d+) iterations", text)
    quadruped = re.search(r"quadruped final \|\|v\+\|\| (\S+) after (\d+) iterations", text)
    assert cube and quadruped, text
    assert float(cube.group(1)) < 1e-8 and int(cube.group(2)) <= 20
    assert float(quadruped.group(1)) < 1e-6 and int(quadruped.group(2)) <= 20
    # the convergence figure was drawn
    assert any("image/png" in o.get("data", {}) for o in outputs)
