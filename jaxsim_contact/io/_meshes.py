"""Mesh assets: detect degenerate meshes before MuJoCo compiles them, repair what has a sound
fallback, and reject the rest with :class:`~._errors.DegenerateMeshError`.

Collision treats every mesh as its convex hull (DESIGN §3, ``geometry/_mesh.py``), so only two
properties of a mesh matter to the simulation: the hull must have volume, and the mass properties
MuJoCo's compiler derives from the mesh (when the body has no explicit ``<inertial>``) must be
those of a solid. Each mesh is classified by the singular values ``s₀ ≥ s₁ ≥ s₂`` of its centred,
scaled vertices (relative threshold ``1e-9 · s₀``, as ``ConvexMesh.from_points``):

==========================  ===========================================================  ==========
mesh                        outcome                                                      warning
==========================  ===========================================================  ==========
unreadable, empty,          ``DegenerateMeshError`` (names mesh, file, vertex count or   —
non-finite vertex,          value)
zero / non-finite scale
all vertices coincident     ``DegenerateMeshError`` (singular values)                    —
collinear (rank 1)          ``DegenerateMeshError`` (singular values)                    —
planar (rank 2, e.g. one    **fallback**: extruded symmetrically along its normal to a   yes
triangle)                   thickness of ``PLANAR_THICKNESS`` × its largest extent;
                            vertices handed to MuJoCo directly
hull volume < 1e-15 m³      ``DegenerateMeshError`` (volume, scale); MuJoCo's
(e.g. scale 1e-6)           ``mjMINVAL``, below which its compiler refuses the mesh
inverted, open or           **fallback** when the mesh gives a body its mass properties:  yes
non-manifold faces          MuJoCo computes them from the convex hull (``inertia=
                            "convex"``), the same solid collision sees. Meshes of bodies
                            with an explicit ``<inertial>`` are left alone (their faces
                            change nothing).
==========================  ===========================================================  ==========

Duplicate vertices on their own are harmless (the hull and the volume integral ignore them; binary
STL stores every face's corners separately) and load without a warning.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from ._errors import DegenerateMeshError, describe

__all__ = ["check_meshes", "PLANAR_THICKNESS", "MIN_MESH_VOLUME"]

#: thickness of an extruded planar mesh, relative to its largest extent
PLANAR_THICKNESS = 1e-2
#: smallest hull volume (m³) MuJoCo's compiler accepts (its ``mjMINVAL``)
MIN_MESH_VOLUME = 1e-15
# relative singular-value threshold of a rank drop (same as ConvexMesh.from_points)
_RANK_RTOL = 1e-9


def _read(mesh, where: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Unscaled vertices ``(N, 3)`` and faces ``(F, 3)`` of a spec mesh, or None for formats we do
    not inspect (MuJoCo's own ``.msh``)."""
    if not mesh.file:
        vertices = np.asarray(mesh.uservert, dtype=np.float64).reshape(-1, 3)
        faces = np.asarray(mesh.userface, dtype=np.int64).reshape(-1, 3)
        return vertices, faces
    if Path(mesh.file).suffix.lower() not in (".obj", ".stl"):
        return None
    import trimesh

    try:
        loaded = trimesh.load(mesh.file, force="mesh", process=False)
        vertices = np.asarray(loaded.vertices, dtype=np.float64).reshape(-1, 3)
        faces = np.asarray(loaded.faces, dtype=np.int64).reshape(-1, 3)
    except Exception as err:  # trimesh raises many types for unreadable files
        raise DegenerateMeshError(f"{where}: cannot read '{mesh.file}' ({err})") from None
    return vertices, faces


def _mass_from_mesh(spec) -> set[str]:
    """Names of meshes from which MuJoCo's compiler derives some body's mass properties."""
    import mujoco

    from_geoms = spec.compiler.inertiafromgeom
    always = from_geoms == mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_TRUE
    never = from_geoms == mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    used = set()
    for geom in spec.geoms:
        if geom.type != mujoco.mjtGeom.mjGEOM_MESH or not geom.meshname or never:
            continue
        body = geom.parent
        if always or not getattr(body, "explicitinertial", False):
            used.add(geom.meshname)
    return used


def _face_defect(vertices: np.ndarray, faces: np.ndarray) -> str | None:
    """Why the faces do not bound a solid (None when they do): open, non-manifold or inverted."""
    import trimesh

    if len(faces) == 0:
        return None  # vertices only: MuJoCo builds the convex hull itself
    solid = trimesh.Trimesh(vertices, faces, process=True)  # merges duplicate vertices
    if not solid.is_watertight:
        return "is not a closed manifold (open boundary or an edge shared by more than two faces)"
    if not solid.is_winding_consistent:
        return "has inconsistently oriented faces"
    if solid.volume <= 0:
        return f"is inverted (its faces enclose a negative volume {solid.volume:.3g})"
    return None


def _extrude(scaled: np.ndarray, normal: np.ndarray, thickness: float):
    """Vertices and outward hull faces of a planar point set extruded by ``thickness``."""
    from scipy.spatial import ConvexHull

    offset = 0.5 * thickness * normal
    points = np.concatenate([scaled - offset, scaled + offset])
    hull = ConvexHull(points)
    # keep the hull's vertices only (STL repeats every corner; interior points add nothing)
    remap = np.full(len(points), -1)
    remap[hull.vertices] = np.arange(len(hull.vertices))
    points = points[hull.vertices]
    faces = remap[hull.simplices]
    # qhull does not orient simplices: flip those whose normal points into the hull
    centroid = points.mean(axis=0)
    a, b, c = points[faces[:, 0]], points[faces[:, 1]], points[faces[:, 2]]
    inward = np.einsum("ij,ij->i", np.cross(b - a, c - a), a - centroid) < 0
    faces[inward] = faces[inward][:, ::-1]
    return points, faces


def check_meshes(spec, path: Path) -> None:
    """Validate (and where documented, repair in place) every mesh of ``spec``.

    Runs after mesh paths are absolute and unreadable formats are inlined (``io/_urdf.py``) and
    before MuJoCo compiles: MuJoCo rejects degenerate meshes with messages that name neither the
    file nor the value, and accepts inverted or open meshes with meaningless mass properties.

    Raises:
      DegenerateMeshError: see the module table; the message names the model file, the mesh, the
        mesh file and the offending value.
    Warns:
      UserWarning naming the model file, the mesh and its file whenever a fallback is applied.
    """
    import mujoco

    mass_meshes = _mass_from_mesh(spec)
    for index, mesh in enumerate(spec.meshes):
        # MuJoCo names an unnamed mesh after its file (geoms refer to it by that name)
        mesh_name = mesh.name or Path(mesh.file).stem
        where = f"{path}: {describe('mesh', mesh_name, index)}" + (
            f" (file '{mesh.file}')" if mesh.file else ""
        )
        scale = np.asarray(mesh.scale, dtype=np.float64)
        if not np.all(np.isfinite(scale)) or np.any(scale == 0):
            raise DegenerateMeshError(f"{where} has scale {scale.tolist()}; it must be finite and non-zero")
        read = _read(mesh, where)
        if read is None:
            continue
        vertices, faces = read
        if len(vertices) == 0:
            raise DegenerateMeshError(f"{where} has no readable vertices (empty or truncated file)")
        bad = ~np.all(np.isfinite(vertices), axis=1)
        if np.any(bad):
            first = int(np.argmax(bad))
            raise DegenerateMeshError(
                f"{where}: vertex {first} has a non-finite coordinate {vertices[first].tolist()}"
            )
        scaled = vertices * scale
        centred = scaled - scaled.mean(axis=0)
        _, singular, axes = np.linalg.svd(centred, full_matrices=False)
        singular = np.concatenate([singular, np.zeros(3 - len(singular))])
        rank = int(np.sum(singular > _RANK_RTOL * singular[0])) if singular[0] > 0 else 0
        if rank == 0:
            raise DegenerateMeshError(
                f"{where}: all {len(vertices)} vertices coincide at {scaled[0].tolist()}; use a "
                f"small sphere instead"
            )
        if rank == 1:
            raise DegenerateMeshError(
                f"{where}: its {len(vertices)} vertices are collinear (singular values "
                f"{singular.tolist()}); use a thin capsule instead"
            )
        if rank == 2:
            extent = float(np.max(np.ptp(scaled, axis=0)))
            thickness = PLANAR_THICKNESS * extent
            points, hull_faces = _extrude(scaled, axes[2], thickness)
            warnings.warn(
                f"{where}: its {len(vertices)} vertices are coplanar (singular values "
                f"{singular.tolist()}); fallback: extruded along its normal to a thickness of "
                f"{thickness:.3g} m ({PLANAR_THICKNESS:g} x its extent {extent:.3g} m)",
                stacklevel=4,
            )
            mesh.uservert = (points / scale).ravel()  # MuJoCo applies the scale again
            mesh.userface = hull_faces.astype(np.int32).ravel()
            mesh.file = ""
            continue
        from scipy.spatial import ConvexHull

        volume = float(ConvexHull(scaled).volume)
        if volume < MIN_MESH_VOLUME:
            raise DegenerateMeshError(
                f"{where} with scale {scale.tolist()} has a convex hull of volume {volume:.3g} m³, "
                f"below MuJoCo's minimum {MIN_MESH_VOLUME:g} m³"
            )
        if mesh_name in mass_meshes:
            defect = _face_defect(vertices, faces)
            if defect is not None:
                warnings.warn(
                    f"{where} {defect}; fallback: its body's mass properties are computed from "
                    f"the mesh's convex hull (MuJoCo inertia='convex'), the solid collision uses",
                    stacklevel=4,
                )
                mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_CONVEX
