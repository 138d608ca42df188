"""Execute notebooks/quickstart.ipynb at small size (JC_NOTEBOOK_SMALL=1) and check its physics
against Coulomb's closed forms; every notebook has the Colab badge and the guarded install cell."""

import pathlib
import re

import nbformat

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[1] / "notebooks"


def _number(pattern: str, text: str) -> tuple[float, ...]:
    match = re.search(pattern, text)
    assert match, (pattern, text)
    return tuple(float(x) for x in match.groups())


def test_quickstart_notebook_executes(run_notebook):
    outputs = run_notebook(NOTEBOOKS / "quickstart.ipynb")
    text = "".join(o.get("text", "") for o in outputs)
    # a cube sliding at 1 m/s on μ = 0.8 stops after v0²/(2μg)
    simulated, coulomb = _number(r"stopping distance (\S+) m \(Coulomb (\S+) m\)", text)
    assert abs(simulated - coulomb) < 0.03 * coulomb, (simulated, coulomb)
    # d(distance)/d(v0): implicit gradient = finite differences, ≈ v0/(μg) up to one time step
    implicit, finite_diff, slope = _number(
        r"implicit (\S+), finite differences (\S+), Coulomb (\S+)", text)
    assert abs(implicit - finite_diff) < 1e-4, (implicit, finite_diff)
    assert abs(implicit - slope) < 2 * 2e-3 + 1e-9, (implicit, slope)
    # the long compiles say so before they start and report their time after (stderr stream)
    for what in ("the rollout", "vmap(value_and_grad(rollout))"):
        assert f"compiling {what} ..." in text and re.search(rf"{re.escape(what)}: \d+\.\d s \(", text), what
    (ratio,) = _number(r"friction / normal = (\S+)", text)
    assert abs(ratio - 0.8) < 1e-3, ratio
    # the replay is shown inline (an iframe with the page) and the plots as images
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any(h.startswith("<iframe srcdoc=") for h in html)
    assert any("image/png" in o.get("data", {}) for o in outputs)


def test_every_notebook_has_the_colab_badge_and_a_guarded_install_cell():
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    assert len(paths) >= 3
    for path in paths:
        cells = nbformat.read(path, as_version=4).cells
        header = [c for c in cells if "jc-header" in c.metadata.get("tags", [])]
        assert len(header) == 2, path.name
        badge, install = header
        assert f"/blob/main/notebooks/{path.name})" in badge.source and "colab-badge.svg" in badge.source
        # the install runs only where the package is not importable: a no-op in the test suite
        assert 'if importlib.util.find_spec("jaxsim_contact") is None:' in install.source
        assert "pip" in install.source.split("if importlib.util.find_spec", 1)[1]
        assert cells.index(install) < min(cells.index(c) for c in cells
                                          if c.cell_type == "code" and c is not install)
