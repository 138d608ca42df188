"""URDF specifics: ``package://`` URIs and floating bases.

MuJoCo's compiler reads URDF itself but does not resolve ROS ``package://PKG/path`` URIs, so the
loader rewrites every mesh file of the parsed ``MjSpec`` to an absolute path first. A package is
looked up in the user's search path, then in the ``example-robot-data`` tree installed from PyPI
(its data lives under ``<site-packages>/cmeel.prefix/share``).
"""

from __future__ import annotations

import site
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ._errors import MissingAssetError, UnsupportedFeatureError, describe

__all__ = [
    "default_package_dirs",
    "resolve_package_uri",
    "resolve_mesh_files",
    "inline_unreadable_meshes",
    "add_floating_base",
]

_PACKAGE_SCHEME = "package://"
_FILE_SCHEME = "file://"


def default_package_dirs() -> list[Path]:
    """Directories searched for ``package://`` URIs after the user's: the installed
    ``example-robot-data`` share tree and its ``robots`` folder, when present."""
    roots = []
    for entry in [*sys.path, *site.getsitepackages()]:
        share = Path(entry) / "cmeel.prefix" / "share"
        if (share / "example-robot-data").is_dir() and share not in roots:
            roots.append(share)
            roots.append(share / "example-robot-data" / "robots")
    return roots


def resolve_package_uri(uri: str, search_dirs: Sequence[Path]) -> Path | None:
    """Absolute path of ``package://PKG/rest`` (``PKG`` a folder in a search dir, or the search dir
    itself when its name is ``PKG``); ``None`` when not found."""
    package, _, rest = uri[len(_PACKAGE_SCHEME):].partition("/")
    for directory in search_dirs:
        directory = Path(directory)
        candidates = [directory / package / rest]
        if directory.name == package:
            candidates.append(directory / rest)
        for candidate in candidates:
            if candidate.exists():
                return candidate.resolve()
    return None


def resolve_mesh_files(spec, path: Path, package_dirs: Sequence[str | Path]) -> None:
    """Rewrite the mesh file names of ``spec`` (in place) to absolute paths.

    Raises:
      MissingAssetError: a ``package://`` URI found in no search directory.
    """
    search = [Path(p) for p in package_dirs] + default_package_dirs()
    base = Path(spec.modelfiledir or path.parent) / (spec.meshdir or "")
    for index, mesh in enumerate(spec.meshes):
        file = mesh.file
        if not file:
            continue
        if file.startswith(_PACKAGE_SCHEME):
            resolved = resolve_package_uri(file, search)
            if resolved is None:
                raise MissingAssetError(
                    f"{path}: {describe('mesh', mesh.name, index)} refers to '{file}', found in "
                    f"no package search directory {[str(p) for p in search]} (pass "
                    f"package_dirs=[...] to jc.load)"
                )
            mesh.file = str(resolved)
        elif file.startswith(_FILE_SCHEME):
            mesh.file = file[len(_FILE_SCHEME):]
        elif not Path(file).is_absolute():
            mesh.file = str((base / file).resolve())


def _mujoco_reads(file: Path) -> bool:
    """MuJoCo reads binary STL, OBJ and MSH; ASCII STL (starts with ``solid`` and has no valid
    binary face count) and other formats (e.g. COLLADA) need a converter."""
    suffix = file.suffix.lower()
    if suffix in (".obj", ".msh"):
        return True
    if suffix != ".stl":
        return False
    with open(file, "rb") as handle:
        header = handle.read(84)
    if len(header) < 84:
        return False
    face_count = int.from_bytes(header[80:84], "little")
    return file.stat().st_size == 84 + 50 * face_count


def inline_unreadable_meshes(spec, path: Path) -> None:
    """Load mesh files MuJoCo cannot read (ASCII STL, COLLADA, ...) with trimesh and give their
    vertices and faces to ``spec`` directly (in place). Paths must already be absolute."""
    import trimesh

    for index, mesh in enumerate(spec.meshes):
        if not mesh.file or not Path(mesh.file).is_file() or _mujoco_reads(Path(mesh.file)):
            continue
        try:
            loaded = trimesh.load(mesh.file, force="mesh")
        except Exception as err:  # trimesh raises many types for unreadable files
            raise UnsupportedFeatureError(
                f"{path}: {describe('mesh', mesh.name, index)}: cannot read '{mesh.file}' ({err})"
            ) from None
        mesh.uservert = np.asarray(loaded.vertices, dtype=np.float64).ravel()
        mesh.userface = np.asarray(loaded.faces, dtype=np.int32).ravel()
        mesh.file = ""


def add_floating_base(spec) -> None:
    """Give every top-level body without a joint a free joint (URDF roots are welded to the world
    by MuJoCo; legged robots and humanoids need a floating base)."""
    for body in spec.worldbody.bodies:
        if len(body.joints) == 0:
            body.add_freejoint()
