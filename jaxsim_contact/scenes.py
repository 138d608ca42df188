"""Built-in MJCF scenes (as text): box towers and piles, the sliding cube of seed 001 §IV, a
pushed ball on slide joints, the demo scene. ``load(name, **kwargs)`` compiles one through ``jc.load``.

Every scene has a floor plane at ``z = 0``; boxes are free bodies unless stated otherwise.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from .io import load as load_file

__all__ = ["box_tower", "cube_pile", "dragged_cube", "pushed_ball", "demo_scene", "load", "SCENES"]


def _header(name: str, dt: float, friction: float) -> str:
    return (
        f'<mujoco model="{name}">\n'
        f'  <option timestep="{dt}" gravity="0 0 -9.81"/>\n'
        "  <worldbody>\n"
        f'    <geom name="floor" type="plane" size="10 10 0.1" friction="{friction} 0.005 0.0001"/>\n'
    )


_FOOTER = "  </worldbody>\n</mujoco>\n"


def _free_box(name, pos, half, mass, friction, euler=None) -> str:
    rot = f' euler="{euler[0]} {euler[1]} {euler[2]}"' if euler is not None else ""
    return (
        f'    <body name="{name}" pos="{pos[0]:.6f} {pos[1]:.6f} {pos[2]:.6f}"{rot}>\n'
        "      <freejoint/>\n"
        f'      <geom type="box" size="{half} {half} {half}" mass="{mass}" friction="{friction} 0.005 0.0001"/>\n'
        "    </body>\n"
    )


def box_tower(count: int = 10, size: float = 0.1, mass: float = 1.0, gap: float = 1e-3,
              friction: float = 0.8, dt: float = 2e-3) -> str:
    """``count`` cubes of side ``size`` (m) stacked vertically, ``gap`` (m) apart at rest."""
    half = size / 2
    parts = [_header("box_tower", dt, friction)]
    for k in range(count):
        z = half + k * (size + gap) + gap
        parts.append(_free_box(f"box{k}", (0.0, 0.0, z), half, mass, friction))
    return "".join(parts) + _FOOTER


def cube_pile(nx: int = 3, ny: int = 3, nz: int = 3, size: float = 0.1, mass: float = 1.0,
              gap: float = 1e-3, friction: float = 0.8, dt: float = 2e-3) -> str:
    """An ``nx × ny × nz`` grid of cubes, ``gap`` (m) between neighbours in every direction."""
    half = size / 2
    parts = [_header("cube_pile", dt, friction)]
    pitch = size + gap
    for i in range(nx):
        for j in range(ny):
            for k in range(nz):
                pos = ((i - (nx - 1) / 2) * pitch, (j - (ny - 1) / 2) * pitch, half + gap + k * pitch)
                parts.append(_free_box(f"cube_{i}_{j}_{k}", pos, half, mass, friction))
    return "".join(parts) + _FOOTER


def dragged_cube(mass: float = 1.0, size: float = 0.2, friction: float = 0.4, dt: float = 1e-3) -> str:
    """Seed 001 §IV-A/B (Fig. 11): a cube on a plane, pushed along x by a force motor.

    The cube moves with slide joints x, y, z and a ball joint (so the push, a generalised force on
    the x slide, acts at the centre of mass); actuator ``push`` applies ``ctrl`` newtons along x.
    """
    half = size / 2
    return (
        _header("dragged_cube", dt, friction)
        + f'    <body name="cube" pos="0 0 {half}">\n'
        '      <joint name="x" type="slide" axis="1 0 0"/>\n'
        '      <joint name="y" type="slide" axis="0 1 0"/>\n'
        '      <joint name="z" type="slide" axis="0 0 1"/>\n'
        '      <joint name="rot" type="ball"/>\n'
        f'      <geom type="box" size="{half} {half} {half}" mass="{mass}" friction="{friction} 0.005 0.0001"/>\n'
        "    </body>\n" + _FOOTER.replace("</mujoco>", '<actuator><motor name="push" joint="x"/></actuator>\n</mujoco>')
    )


def pushed_ball(radius: float = 0.1, mass: float = 1.0, friction: float = 0.5, dt: float = 0.01) -> str:
    """A sphere on two slide joints (``x``, pushed by force motor ``push``, N; ``z`` free) resting
    on the floor: 2 dofs, one contact, one actuator — the smallest scene with contact and control
    (what tests that compile many rollouts or gradients use). The sphere keeps MuJoCo's default
    friction 1, so the pair's coefficient is ``max(friction, 1)``."""
    return (
        _header("pushed_ball", dt, friction)
        + f'    <body name="ball" pos="0 0 {radius}">\n'
        '      <joint name="x" type="slide" axis="1 0 0"/>\n'
        '      <joint name="z" type="slide" axis="0 0 1"/>\n'
        f'      <geom type="sphere" size="{radius}" mass="{mass}"/>\n'
        "    </body>\n" + _FOOTER.replace("</mujoco>", '<actuator><motor name="push" joint="x"/></actuator>\n</mujoco>')
    )


def demo_scene(dt: float = 2e-3) -> str:
    """Boxes, spheres, capsules and a convex mesh (an irregular hull) dropped on a plane."""
    rng = np.random.default_rng(0)
    points = rng.normal(size=(24, 3))
    points = points / np.linalg.norm(points, axis=1, keepdims=True) * np.array([0.09, 0.07, 0.06])
    vertex_text = " ".join(f"{x:.5f}" for x in points.reshape(-1))
    body = [
        f'<mujoco model="demo">\n  <option timestep="{dt}" gravity="0 0 -9.81"/>\n'
        f'  <asset><mesh name="rock" vertex="{vertex_text}"/></asset>\n  <worldbody>\n'
        '    <geom name="floor" type="plane" size="10 10 0.1" friction="0.8 0.005 0.0001"/>\n'
    ]
    layout = [
        ("box", (0.0, 0.0, 0.3), "box", "0.08 0.06 0.05", (10, 20, 30)),
        ("box2", (0.25, 0.05, 0.5), "box", "0.05 0.05 0.05", (40, 0, 15)),
        ("ball", (-0.25, 0.0, 0.4), "sphere", "0.06", None),
        ("ball2", (0.05, 0.25, 0.6), "sphere", "0.04", None),
        ("capsule", (-0.05, -0.25, 0.35), "capsule", "0.03 0.08", (80, 10, 0)),
        ("rock", (0.2, -0.22, 0.45), "mesh", None, (15, 25, 5)),
        ("top", (0.02, 0.0, 0.7), "box", "0.05 0.04 0.03", (0, 5, 45)),
    ]
    for name, pos, kind, size, euler in layout:
        rot = f' euler="{euler[0]} {euler[1]} {euler[2]}"' if euler else ""
        shape = 'type="mesh" mesh="rock"' if kind == "mesh" else f'type="{kind}" size="{size}"'
        body.append(
            f'    <body name="{name}" pos="{pos[0]} {pos[1]} {pos[2]}"{rot}>\n      <freejoint/>\n'
            f'      <geom {shape} density="600" friction="0.8 0.005 0.0001"/>\n    </body>\n'
        )
    return "".join(body) + _FOOTER


SCENES = {"tower": box_tower, "pile": cube_pile, "dragged_cube": dragged_cube, "pushed_ball": pushed_ball,
          "demo": demo_scene}


def load(name: str, dtype=None, **kwargs):
    """Compile the built-in scene ``name`` (``tower``, ``pile``, ``dragged_cube``, ``pushed_ball``,
    ``demo``) with
    ``jc.load``; keyword arguments go to the scene function."""
    if name not in SCENES:
        raise ValueError(f"unknown scene {name!r}; choose from {sorted(SCENES)}")
    text = SCENES[name](**kwargs)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.xml"
        path.write_text(text)
        model = load_file(path, dtype=dtype)
    return model
