"""Execute notebooks/differentiable_collision.ipynb at small size (JC_NOTEBOOK_SMALL=1)."""

import pathlib
import re

NOTEBOOK = pathlib.Path(__file__).resolve().parents[2] / "notebooks" / "differentiable_collision.ipynb"


def test_differentiable_collision_notebook_executes(run_notebook):
    outputs = run_notebook(NOTEBOOK)
    text = "".join(o.get("text", "") for o in outputs)
    finals = dict(re.findall(r"^(.+?)\s+final cost (\S+)", text, flags=re.M))
    assert set(finals) == {"finite differences (h=1e-6)", "1st-order Gaussian (M=20)"}, text
    costs = {name: float(value) for name, value in finals.items()}
    start = float(re.search(r"^\s+0\s+(\S+)", text, flags=re.M).group(1))
    # both methods make progress from the starting pose (the cost table is printed)
    assert all(c < start for c in costs.values()), (start, costs)
