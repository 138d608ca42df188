"""Compile an MJCF string with :func:`jaxsim_contact.load` (host side, once per environment)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..io import load


def load_mjcf_text(text: str, name: str, dtype=None):
    """The :class:`jaxsim_contact.Model` of the MJCF document ``text`` (written to a temporary
    file because :func:`jaxsim_contact.load` reads files)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.xml"
        path.write_text(text)
        return load(path, dtype=dtype)
