"""Give every notebook in ``notebooks/`` an "Open in Colab" badge and a guarded install cell.

Usage: ``python scripts/notebook_header.py`` (idempotent: the two header cells carry the metadata
tag ``jc-header`` and are replaced on every run). Change ``REPOSITORY`` / ``BRANCH`` here when the
repository moves, then rerun. ``tests/test_notebook_quickstart.py`` checks every notebook has them.

The install cell is a no-op wherever ``jaxsim_contact`` is already importable (a local checkout
installed with ``pip install -e .``, the test suite), so executing a notebook never reinstalls.
"""

from __future__ import annotations

import pathlib
import sys

import nbformat

#: GitHub ``owner/name`` of the repository the badge opens and the install cell installs from
REPOSITORY = "jaxsim-contact/jaxsim_contact"
BRANCH = "main"
TAG = "jc-header"
NOTEBOOKS = pathlib.Path(__file__).resolve().parents[1] / "notebooks"

#: packages a notebook needs beyond the package itself and matplotlib (robot URDFs, ...)
EXTRA_PACKAGES = {"gradients_through_contact.ipynb": ("example-robot-data",)}


def install_source(name: str) -> str:
    extras = "".join(f' "{pkg}",' for pkg in EXTRA_PACKAGES.get(name, ()))
    return f'''# Colab or a fresh environment: install jaxsim_contact (and matplotlib) from the repository.
# A no-op where jaxsim_contact is already importable (a local `pip install -e .`, the test suite).
import importlib.util, subprocess, sys
if importlib.util.find_spec("jaxsim_contact") is None:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "matplotlib",{extras}
                    "jaxsim-contact @ git+https://github.com/{REPOSITORY}.git@{BRANCH}"], check=True)'''


def badge(name: str) -> str:
    url = f"https://colab.research.google.com/github/{REPOSITORY}/blob/{BRANCH}/notebooks/{name}"
    return f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})"


def header_cells(name: str) -> list:
    cells = [nbformat.v4.new_markdown_cell(badge(name)), nbformat.v4.new_code_cell(install_source(name))]
    for cell in cells:
        cell.metadata["tags"] = [TAG]
    # stable ids keep the diff small when the header is regenerated
    cells[0]["id"], cells[1]["id"] = "jc-header-badge", "jc-header-install"
    return cells


def update(path: pathlib.Path) -> bool:
    """Insert or refresh the header of one notebook; returns whether the file changed."""
    nb = nbformat.read(path, as_version=4)
    body = [c for c in nb.cells if TAG not in c.metadata.get("tags", [])]
    # the title (first markdown cell) stays first; the header follows it
    at = 1 if body and body[0].cell_type == "markdown" else 0
    cells = body[:at] + header_cells(path.name) + body[at:]
    if [(c.cell_type, c.source) for c in cells] == [(c.cell_type, c.source) for c in nb.cells]:
        return False
    nb.cells = cells
    nbformat.write(nb, path)
    return True


def main() -> int:
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        print(("updated  " if update(path) else "unchanged"), path.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
