"""``jc.viz.to_html``: the replay of the demo scene renders in headless Chromium (screenshots are
checked for a drawn scene and for motion), the page is self-contained, and bad input raises.

Chromium is required (Debian: ``apt-get install -y --no-install-recommends chromium``; ``.ci/run``
installs it); the test fails, with that hint, when it is missing.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import re
import shutil
import subprocess

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc

WIDTH, HEIGHT, BAR = 800, 600, 40  # window; the control bar takes the bottom 40 px of the page
BACKGROUND = np.array([0xE9, 0xEC, 0xEF])
STEPS = 100  # 0.2 s: every body falls by ~0.2 m and is still above the floor


@pytest.fixture(scope="module")
def demo():
    """The demo scene (``jaxsim-contact demo``: boxes, spheres, a capsule, a convex mesh on a
    plane) and a simulated trajectory of it, with contacts switched off: the rollout with contacts
    compiles for ~2 min of CPU (its many GJK/EPA pair groups; tests/test_cli.py pays that once),
    the contact-free one for ~3 s, and the replay draws the same geoms and poses either way.
    Replays with contact points are checked in test_viz_plots.py."""
    model = jc.scenes.load("demo").replace_options(enable_contacts=False)
    final, traj = jax.jit(jc.rollout)(model, jc.init(model), jnp.zeros((STEPS, 0)))
    assert int(final.error) == 0
    return model, traj


def _chromium() -> str:
    exe = (os.environ.get("JC_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
           or shutil.which("google-chrome"))
    if exe is None:
        pytest.fail("headless Chromium is needed to render the HTML replay: install it with "
                    "`apt-get install -y --no-install-recommends chromium` (Debian/Ubuntu; .ci/run "
                    "does this) or point JC_CHROMIUM at a Chrome/Chromium binary")
    return exe


def _chromium_run(tmp_path, url: str, *action: str, budget_ms: int, size=(WIDTH, HEIGHT)) -> str:
    """Run headless Chromium on ``url`` with ``action`` (``--screenshot=...`` or ``--dump-dom``)
    after ``budget_ms`` of virtual time; returns stdout."""
    profile = tmp_path / f"profile{len(list(tmp_path.glob('profile*')))}"
    command = [
        _chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}",
        # WebGL without a GPU: SwiftShader (software) through ANGLE
        "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--hide-scrollbars",
        # without this, virtual time races ahead of the compositor and an animated page gets only
        # 1-6 animation frames in the budget and the playback check fails at random (CI showed a
        # single frame); with it, 7-44 frames in 3 s of virtual time, with both cores loaded
        "--run-all-compositor-stages-before-draw",
        f"--window-size={size[0]},{size[1]}", f"--virtual-time-budget={budget_ms}", *action, url,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def _canvas(tmp_path, url: str, name: str, budget_ms: int = 2000, size=(WIDTH, HEIGHT)) -> np.ndarray:
    from PIL import Image

    png = tmp_path / f"{name}.png"
    _chromium_run(tmp_path, url, f"--screenshot={png}", budget_ms=budget_ms, size=size)
    pixels = np.asarray(Image.open(png).convert("RGB"), dtype=np.float64)
    assert pixels.shape == (size[1], size[0], 3)
    return pixels[:size[1] - BAR]


def _body_attributes(tmp_path, url: str, budget_ms: int) -> dict:
    dom = _chromium_run(tmp_path, url, "--dump-dom", budget_ms=budget_ms)
    body = re.search(r"<body([^>]*)>", dom)
    assert body, dom[:2000]
    return dict(re.findall(r'data-(\w+)="([^"]*)"', body.group(1)))


def test_demo_replay_renders_in_headless_chromium(demo, tmp_path):
    model, traj = demo
    page = tmp_path / "demo.html"
    jc.viz.to_html(model, traj, page)
    last = STEPS - 1
    first = _canvas(tmp_path, f"{page.as_uri()}#frame=0", "first")
    final = _canvas(tmp_path, f"{page.as_uri()}#frame={last}", "last")

    # the scene is drawn: much of the canvas differs from the background, with coloured bodies
    # (the palette is saturated; floor, grid and background are grey)
    for shot in (first, final):
        drawn = np.abs(shot - BACKGROUND).max(axis=-1) > 12
        coloured = (shot.max(axis=-1) - shot.min(axis=-1)) > 60
        assert drawn.mean() > 0.15, drawn.mean()
        assert coloured.mean() > 0.01, coloured.mean()
        assert shot.std() > 15, shot.std()
    # the bodies fell between the first and the last frame: the pictures differ
    changed = np.abs(first - final).max(axis=-1) > 30
    assert changed.mean() > 0.005, changed.mean()

    # played (no #frame): the animation advances with time and the page reports no error
    state = _body_attributes(tmp_path, page.as_uri(), budget_ms=3000)
    assert state["ready"] == "1", state
    assert int(state["shown"]) > 2, state  # frames shown since load (playback loops, frame wraps)
    paused = _body_attributes(tmp_path, f"{page.as_uri()}#frame=5", budget_ms=3000)
    assert paused == {"ready": "1", "frame": "5", "shown": "1", "time": f"{0.012:.6f}"}, paused


def _page_data(page: str) -> dict:
    return json.loads(re.search(r'<script id="jc-data" type="application/json">(.*?)</script>', page, re.S)
                      .group(1).replace("<\\/", "</"))


def test_first_frame_is_the_initial_state_and_the_scene_fills_the_view(demo, tmp_path):
    """Frame 0 of a replay given ``initial=`` is the state the rollout started from, labelled
    t = 0 (the rollout's own states are those after each step: without it frame 0 is t = dt); the
    camera frames what moves: the bodies, over the first and the last frame, span most of the
    view and sit in its middle, whatever the window's shape."""
    model, traj = demo
    start = jc.init(model)
    page = jc.viz.to_html(model, traj, tmp_path / "start.html", initial=start)
    data = _page_data(page)
    assert data["num_frames"] == STEPS + 1 and data["times"][:2] == [0.0, 0.002]
    poses = np.frombuffer(base64.b64decode(data["poses"]), "<f4").reshape(1, STEPS + 1, model.nbody, 7)
    expected = jc.body_poses(model, start.q)
    np.testing.assert_allclose(poses[0, 0, :, :3], expected.pos, atol=1e-6)
    np.testing.assert_allclose(poses[0, 0, :, 3:], expected.quat, atol=1e-6)
    shown = _body_attributes(tmp_path, f"{(tmp_path / 'start.html').as_uri()}#frame=0", budget_ms=3000)
    assert shown["frame"] == "0" and float(shown["time"]) == 0.0, shown
    after = jc.viz.to_html(model, traj, tmp_path / "after.html")
    assert _page_data(after)["times"][0] == pytest.approx(float(model.options.dt))

    for width, height in ((WIDTH, HEIGHT), (500, 700)):
        url = (tmp_path / "start.html").as_uri()
        shots = [_canvas(tmp_path, f"{url}#frame={k}", f"fill{k}_{width}", size=(width, height))
                 for k in (0, STEPS)]
        bodies = np.zeros(shots[0].shape[:2], bool)
        for shot in shots:
            bodies |= (shot.max(axis=-1) - shot.min(axis=-1)) > 20  # coloured bodies; floor, shadows grey
        rows, cols = np.flatnonzero(bodies.any(axis=1)), np.flatnonzero(bodies.any(axis=0))
        view_h, view_w = bodies.shape
        extent = max((rows[-1] - rows[0]) / view_h, (cols[-1] - cols[0]) / view_w)
        centre = ((rows[-1] + rows[0]) / 2 / view_h, (cols[-1] + cols[0]) / 2 / view_w)
        assert extent > 0.6, (width, height, extent)
        assert all(0.35 < c < 0.65 for c in centre), (width, height, centre)


def test_page_is_self_contained_and_inline(demo, tmp_path):
    model, traj = demo
    page = jc.viz.to_html(model, traj, max_frames=50)
    assert isinstance(page, str) and page.startswith("<!doctype html>")
    # three.js embedded (licence header kept), nothing fetched from the network
    assert "Copyright 2010-2023 Three.js Authors" in page and "SPDX-License-Identifier: MIT" in page
    assert not re.search(r"""(src|href)=["']https?://|import\s*\(\s*["']https?://|unpkg|jsdelivr""", page)
    # every geom type of the demo scene is in the page data; mesh hulls carry triangles
    for name in ("plane", "box", "sphere", "capsule", "mesh"):
        assert f'"type":"{name}"' in page
    # Jupyter/Colab: an iframe whose srcdoc is the escaped page; the text repr stays short
    inline = page._repr_html_()
    assert inline.startswith("<iframe srcdoc=") and "&lt;!doctype html&gt;" in inline
    assert len(repr(page)) < 200 and "50 frames" in repr(page)
    # the inline form renders too (scripts run inside the srcdoc iframe, as in a notebook output)
    host = tmp_path / "notebook.html"
    host.write_text(f"<!doctype html><html><body><p>notebook output</p>{inline}</body></html>")
    shot = _canvas(tmp_path, host.as_uri(), "inline")
    coloured = (shot.max(axis=-1) - shot.min(axis=-1)) > 60
    assert coloured.mean() > 0.01, coloured.mean()


def test_every_geom_type_and_batched_layouts(tmp_path):
    """Every geom type (a cone is added by hand: MJCF has none) in a batched trajectory, as a
    grid and overlaid; the drawn geometry comes from the page's own geometry code."""
    from jaxsim_contact._types import GeomType

    xml = """<mujoco><asset><mesh name="tet" vertex="0 0 0  .1 0 0  0 .1 0  0 0 .1"/>
      <hfield name="bump" nrow="3" ncol="4" size=".2 .2 .05 .02" elevation="0 0 0 0  0 1 1 0  0 0 0 0"/>
      </asset><worldbody>
      <geom type="plane" size="1 1 .1"/><geom type="hfield" hfield="bump" pos=".4 .4 0"/>
      <body pos="0 0 .3"><freejoint/><geom type="sphere" size=".05"/>
        <geom type="ellipsoid" size=".05 .03 .02" pos=".15 0 0"/><geom type="box" size=".03 .03 .03" pos="0 .15 0"/>
        <geom type="capsule" size=".02 .05" pos="-.15 0 0"/><geom type="cylinder" size=".03 .04" pos="0 -.15 0"/>
        <geom type="mesh" mesh="tet" pos=".15 .15 0"/><geom type="cylinder" size=".03 .05" pos="-.15 -.15 0"/>
      </body></worldbody></mujoco>"""
    path = tmp_path / "all.xml"
    path.write_text(xml)
    model = jc.load(path)
    # the last cylinder becomes a cone (jc.Cone convention: apex at +half_length)
    types = list(model.geom_type)
    types[-1] = GeomType.CONE
    model = dataclasses.replace(model, geom_type=tuple(types))
    q = np.tile(np.asarray(model.qpos0), (3, 20, 1))
    q[:, :, 2] -= np.linspace(0.0, 0.2, 20)
    q[1, :, 0] += 0.05
    grid = jc.viz.to_html(model, q, tmp_path / "grid.html", env_ids=[2, 0])
    overlay = jc.viz.to_html(model, q, layout="overlay")
    for page in (grid, overlay):
        for gtype in GeomType:
            assert f'"type":"{gtype.name.lower()}"' in page
    assert '"env_ids":[2,0]' in grid and '"layout":"grid"' in grid
    assert '"env_ids":[0,1,2]' in overlay and '"layout":"overlay"' in overlay
    shot = _canvas(tmp_path, (tmp_path / "grid.html").as_uri() + "#frame=0", "all_types")
    coloured = (shot.max(axis=-1) - shot.min(axis=-1)) > 60
    assert coloured.mean() > 0.002, coloured.mean()
    assert _body_attributes(tmp_path, (tmp_path / "grid.html").as_uri(), budget_ms=3000)["ready"] == "1"


def test_height_field_is_drawn_as_a_closed_outward_solid():
    """The drawn height field (elevation surface on a base) encloses exactly the volume of the
    piecewise-linear terrain above ``-base``: divergence theorem over the outward triangles, against
    the per-triangle prism volumes (area × mean height). A flipped or missing face changes it."""
    from jaxsim_contact.viz._html import _hfield_solid

    rng = np.random.default_rng(0)
    elevation = rng.uniform(0, 1, (5, 7))
    size = np.array([0.3, 0.2, 0.1, 0.05])
    vertices, faces = _hfield_solid(elevation, size)
    a, b, c = (vertices[faces[:, k]] for k in range(3))
    enclosed = np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0
    above = -size[3] + 1e-12  # surface triangles: all three corners above the base
    top = (a[:, 2] > above) & (b[:, 2] > above) & (c[:, 2] > above)
    surface = (a[top] + b[top] + c[top]) / 3.0
    area = 0.5 * np.abs(np.cross(b[top] - a[top], c[top] - a[top])[:, 2])
    expected = np.sum(area * (surface[:, 2] + size[3]))
    assert np.isclose(enclosed, expected, rtol=1e-12), (enclosed, expected)
    assert np.isclose(area.sum(), 4 * size[0] * size[1], rtol=1e-12)
    # a big grid is subsampled to at most MAX_HFIELD_SAMPLES per side, the border kept
    big, _ = _hfield_solid(np.zeros((400, 300)), size)
    assert len(big) == 2 * 129 * 129
    assert np.isclose(big[:, 0].min(), -size[0]) and np.isclose(big[:, 1].max(), size[1])


def test_bad_input_raises_clear_errors(demo):
    model, traj = demo
    q = np.asarray(traj.q)
    with pytest.raises(ValueError, match="0 frames"):
        jc.viz.to_html(model, q[:0])
    with pytest.raises(ValueError, match="0 environments"):
        jc.viz.to_html(model, np.zeros((0, 5, model.nq)))
    with pytest.raises(ValueError, match=rf"nq={model.nq}"):
        jc.viz.to_html(model, q[:, :-1])
    with pytest.raises(ValueError, match="no time axis"):
        jc.viz.to_html(model, q[0])
    bad_time = jc.State(q=jnp.asarray(q), v=traj.v, time=jnp.zeros(3), error=traj.error)
    with pytest.raises(ValueError, match="leading"):
        jc.viz.to_html(model, bad_time)
    batch = np.stack([q, q])
    with pytest.raises(ValueError, match=r"out of range.*2 environments"):
        jc.viz.to_html(model, batch, env_ids=[0, 2])
    with pytest.raises(ValueError, match="not batched"):
        jc.viz.to_html(model, traj, env_ids=1)
    with pytest.raises(ValueError, match="repeated"):
        jc.viz.to_html(model, batch, env_ids=[1, 1])
    with pytest.raises(ValueError, match="empty"):
        jc.viz.to_html(model, batch, env_ids=[])
    with pytest.raises(ValueError, match="layout"):
        jc.viz.to_html(model, traj, layout="stacked")
    with pytest.raises(ValueError, match="at most"):
        jc.viz.to_html(model, np.broadcast_to(q[:2], (jc.viz.MAX_ENVIRONMENTS + 1, 2, model.nq)))
    # a time-major batch (T, B, nq) is read with batch_axis=1 and gives the same page
    assert jc.viz.to_html(model, np.swapaxes(batch, 0, 1), batch_axis=1, max_frames=20) == \
        jc.viz.to_html(model, batch, max_frames=20)
    # a state that turns non-finite holds its last finite pose; a non-finite start is an error
    diverged = q.copy()
    diverged[60:, 2] = np.nan
    assert "non-finite from frame" in jc.viz.to_html(model, diverged)
    with pytest.raises(ValueError, match="first frame"):
        jc.viz.to_html(model, np.full_like(q, np.nan))
