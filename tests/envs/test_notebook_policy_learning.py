"""Execute notebooks/policy_learning.ipynb at tiny size (JC_NOTEBOOK_SMALL=1): the rail-limit
derivative it explains (exact zero on the rail, non-zero with the smoothed rule) and a few SHAC
iterations through env.step that keep the evaluation returns finite and draw the learning curve."""

import math
import pathlib
import re

NOTEBOOK = pathlib.Path(__file__).resolve().parents[2] / "notebooks" / "policy_learning.ipynb"


def test_policy_learning_notebook_executes(run_notebook):
    # default XLA code generation, as users run it (a non-default CPU emitter once returned a
    # wrong EPA depth in the suite; see tests/conftest.py history)
    outputs = run_notebook(NOTEBOOK)
    text = "".join(o.get("text", "") for o in outputs)
    rail = dict(re.findall(r"(exact|smoothed)\s*: x after one step (?:\S+) m, d x / d push = (\S+) m", text))
    assert set(rail) == {"exact", "smoothed"}, text
    exact, smoothed = float(rail["exact"]), float(rail["smoothed"])
    # pushed onto the limit the cart cannot move: the exact derivative vanishes; the relaxed rule
    # says pushing harder would move it further (a small positive leak)
    assert abs(exact) < 1e-12, exact
    assert smoothed > 1e-7, smoothed
    curve = [(int(s), float(r)) for s, r in re.findall(r"env steps\s+(\d+)\s+eval return\s+(\S+)", text)]
    # tiny size: 4 iterations of 4 envs x 8 steps, evaluated at iterations 0, 2, 4
    assert [s for s, _ in curve] == [0, 64, 128], curve
    assert all(math.isfinite(r) and -3e4 < r < 0 for _, r in curve), curve
    assert any("image/png" in o.get("data", {}) for o in outputs)
    # the two first calls say they compile before they start and report their time after (stderr)
    for what in ("the evaluation step (policy + environment step)",
                 "one SHAC iteration (8-step rollout of 4 environments, its gradient, the critic's updates)"):
        assert f"compiling {what} ..." in text and re.search(rf"{re.escape(what)}: \d+\.\d s \(", text), what
