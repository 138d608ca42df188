"""The ``jaxsim-contact`` command line: ``collide`` prints a well-formed table, ``simulate`` runs the
contact pipeline and writes an HTML replay (``demo``, the README's command, runs from a clean clone
in tests/test_readme_demo.py); load errors are one line with exit code 2, ``--floor`` places a
floating robot on the floor, initial penetrations are named."""

import errno
import io
import math
import xml.etree.ElementTree as ET
from contextlib import redirect_stderr, redirect_stdout

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact import cli
from jaxsim_contact.collision._geoms import geom_world_frames
from jaxsim_contact.dynamics._kinematics import body_poses
from jaxsim_contact.io._urdf import default_package_dirs
from jaxsim_contact._math import quat_to_matrix
from jaxsim_contact._types import GeomType


def test_demo_table_rows_and_finite_numbers():
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = cli.main(
            ["collide", "--pairs", "sphere-box", "--distances", "-0.05", "0.1",
             "--variants", "vanilla", "--batch", "4", "--repeats", "1", "--no-cache"]
        )
    assert code == 0
    lines = buf.getvalue().splitlines()
    header = lines[0].split()
    assert header[:4] == ["pair", "target", "m", "distance"]
    rows = [line.split() for line in lines[2:] if line.strip().startswith("sphere-box")]
    assert len(rows) == 2
    for row, target in zip(rows, (-0.05, 0.1)):
        pair, tgt, dist, iters, us, conv = row
        assert pair == "sphere-box"
        assert float(tgt) == pytest.approx(target)
        assert math.isfinite(float(dist)) and float(dist) == pytest.approx(target, abs=1e-6)
        assert int(iters) >= 1
        assert math.isfinite(float(us)) and float(us) > 0
        assert conv == "yes"


def test_demo_rejects_unknown_shape():
    with pytest.raises(SystemExit):
        cli.main(["collide", "--pairs", "sphere-teapot"])


def test_bench_without_running_prints_location(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: calls.append(cmd) or 0)
    assert cli.main(["bench"]) == 0
    assert calls and calls[0][-1] == "--quick" and calls[0][-2].endswith("gjk.py")


def test_simulate_file(tmp_path):
    xml = tmp_path / "ball.xml"
    xml.write_text('<mujoco><worldbody><geom type="plane" size="1 1 0.1"/>'
                   '<body pos="0 0 0.3"><freejoint/><geom type="sphere" size="0.1"/></body>'
                   '</worldbody></mujoco>')
    buf = io.StringIO()
    err = io.StringIO()
    with redirect_stdout(buf), redirect_stderr(err):
        code = cli.main(["simulate", str(xml), "--steps", "300", "--batch", "2",
                         "--out", str(tmp_path / "r.html"), "--no-cache"])
    assert code == 0
    assert "errors      [0, 0]" in buf.getvalue()
    assert (tmp_path / "r.html").exists()
    # a long run reports progress on stderr: 300 steps in 10 chunks of 30, ending at 300/300
    bar = err.getvalue()
    assert bar.count("\r[") == 10 and "300/300 steps" in bar and "30/300 steps" in bar


def test_chunked_rollout_equals_one_rollout():
    """The progress bar's chunks are the same simulation as a single rollout."""
    model = jc.scenes.load("tower", count=2, gap=1e-3)
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        chunked = cli.simulate(model, steps=100, batch=1)
    whole, traj = jax.jit(jc.rollout)(model, jc.init(model), jnp.zeros((100, 0)))
    assert chunked["energy_end"] == pytest.approx(
        float(jc.dynamics.kinetic_energy(model, whole.q, whole.v)
              + jc.dynamics.potential_energy(model, whole.q)), rel=1e-9)  # vmap vs not: 1e-12
    # resting contact: the penetration is ~1e-12 m, rounding that differs between the batched
    # and the unbatched program, so an absolute 1 nm on top of the relative 1e-6
    assert chunked["max_penetration"] == pytest.approx(float(np.max(traj.contact.penetration)),
                                                       rel=1e-6, abs=1e-9)


# --- a newcomer's first contact (issue 49): load errors, flags, --floor, start-pose checks -------
# These tests load models but never compile a rollout (``cli.simulate`` is replaced by a recorder
# where a command would run one): each costs MuJoCo's compiler time, and the placement checks one
# small kinematics program per robot (~5 s).

ROBOTS = [d for d in default_package_dirs() if d.name == "robots"][0]
FLOATING_ROBOTS = {"go2": "go2_description/urdf/go2.urdf", "a1": "a1_description/urdf/a1.urdf"}


@pytest.fixture
def recorded_simulate(monkeypatch):
    """Replace the rollout of ``simulate`` by a recorder of the model it was handed."""
    models = []
    monkeypatch.setattr(cli, "simulate", lambda model, *args, **kwargs: models.append(model) or {})
    return models


@pytest.fixture
def restore_x64():
    """``main(["...", "--float32"])`` switches JAX's x64 off for the process; the suite runs in x64."""
    yield
    jax.config.update("jax_enable_x64", True)


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def _fake_permission_denied(monkeypatch):
    """What opening a file without read permission raises (tests may run as root, for whom
    ``chmod 000`` does not stop a read)."""
    def parse(source, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(source))

    monkeypatch.setattr(ET, "parse", parse)


LOAD_ERRORS = {
    # case: (file name, contents or None for no file, a directory for "dir", words the line must hold)
    "malformed_xml": ("bad.xml", '<mujoco><worldbody>\n<body><geom size="0.1"></body></worldbody></mujoco>',
                      ["malformed XML", "line 2"]),
    "invalid_geom_size": ("neg.xml", '<mujoco><worldbody><body name="b"><freejoint/>'
                          '<geom name="ball" type="sphere" size="-0.1"/></body></worldbody></mujoco>',
                          ["geom 'ball'", "-0.1"]),
    "bad_inertia": ("inertia.xml", '<mujoco><worldbody><body name="link"><freejoint/>'
                    '<geom type="sphere" size="0.1"/><inertial pos="0 0 0" mass="1" '
                    'diaginertia="0.1 0.1 0.3"/></body></worldbody></mujoco>',
                    ["body 'link'", "[0.1, 0.1, 0.3]", "--balance-inertia"]),
    "neither_mjcf_nor_urdf": ("model.sdf", '<sdf version="1.6"><model name="m"/></sdf>', ["<sdf>", "MJCF", "URDF"]),
    "not_xml": ("part.stl", "solid part\nfacet normal 0 0 1\n", ["malformed XML", "MJCF or URDF"]),
    "missing_file": ("nope.xml", None, ["not found"]),
    "directory": ("models", "dir", ["is a directory"]),
    "unreadable": ("locked.xml", "<mujoco/>", ["Permission denied"]),
}


@pytest.mark.parametrize("case", sorted(LOAD_ERRORS))
def test_load_error_is_one_line_naming_the_problem_and_exits_2(case, tmp_path, capsys, monkeypatch):
    name, contents, words = LOAD_ERRORS[case]
    path = tmp_path / name
    if contents == "dir":
        path.mkdir()
    elif contents is not None:
        path.write_text(contents)
    if case == "unreadable":
        _fake_permission_denied(monkeypatch)
    code = cli.main(["simulate", str(path), "--steps", "1", "--out", "", "--no-cache"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("jaxsim-contact: error: ") and str(path) in lines[0]
    for word in words:
        assert word in lines[0]


def test_debug_shows_the_traceback_instead(tmp_path):
    path = _write(tmp_path, "part.stl", "solid part\n")
    with pytest.raises(jc.io.ModelParseError, match="malformed XML"):
        cli.main(["simulate", str(path), "--debug", "--no-cache"])


def test_bad_arguments_exit_2(tmp_path, capsys):
    path = _write(tmp_path, "ball.xml", "<mujoco/>")
    for argv in (["simulate", str(path), "--no-such-flag"], ["simulate", str(path), "--compliance", "-1"],
                 ["simulate", str(path), "--solver", "magic"]):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(argv)
        assert exit_info.value.code == 2
    # the Newton solver without compliance: one line, exit code 2, before anything is loaded
    assert cli.main(["simulate", str(path), "--solver", "newton", "--no-cache"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "jaxsim-contact: error: --solver newton needs --compliance > 0 (e.g. --compliance 1e-3)")


@pytest.mark.parametrize("command", [[], ["demo"], ["simulate"], ["collide"], ["bench"]])
def test_help_is_plain_text_with_defaults(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(command + ["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "``" not in text and ":func:" not in text and ":class:" not in text
    if command == ["simulate"]:
        for shown in ("(default: 1000)", "(default: replay.html)", "(default: admm)", "--balance-inertia",
                      "--package-dir DIR", "--float32", "--debug"):
            assert shown in text
        assert "(default: False)" not in text and "(default: None)" not in text
    if command == ["collide"]:
        assert "(default: -0.05 0.0 0.05 0.5)" in text


@pytest.mark.parametrize("flags, solver, compliance", [
    ([], jc.contact.ADMM, 0.0),
    (["--solver", "pgs"], jc.contact.PGS, 0.0),
    (["--solver", "newton", "--compliance", "1e-3"], jc.contact.PrimalNewton, 1e-3),
])
def test_simulate_solver_flags_reach_the_model(flags, solver, compliance, tmp_path, recorded_simulate):
    path = _write(tmp_path, "ball.xml", '<mujoco><worldbody><body pos="0 0 1"><freejoint/>'
                  '<geom type="sphere" size="0.1"/></body></worldbody></mujoco>')
    assert cli.main(["simulate", str(path), "--no-cache"] + flags) == 0
    (model,) = recorded_simulate
    assert type(model.options.solver) is solver
    assert model.dtype == jnp.float64  # the command line's default
    for option in ("compliance", "tangential_compliance", "limit_compliance"):
        assert float(getattr(model.options, option)) == compliance


def test_simulate_load_flags_reach_the_loader(tmp_path, recorded_simulate, monkeypatch, restore_x64):
    path = _write(tmp_path, "inertia.xml", LOAD_ERRORS["bad_inertia"][1])
    calls = []
    prepare_spec = jc.io.prepare_spec
    monkeypatch.setattr(jc.io, "prepare_spec", lambda *a, **kw: calls.append(kw) or prepare_spec(*a, **kw))
    code = cli.main(["simulate", str(path), "--balance-inertia", "--float32", "--package-dir", str(tmp_path),
                     "--package-dir", "elsewhere", "--no-cache"])
    assert code == 0  # the inertia of LOAD_ERRORS["bad_inertia"], repaired by MuJoCo's compiler
    assert calls[0]["balance_inertia"] is True
    assert [str(d) for d in calls[0]["package_dirs"]] == [str(tmp_path), "elsewhere"]
    (model,) = recorded_simulate
    assert model.dtype == jnp.float32


@jax.jit
def _geom_world_poses(model, q):
    """World position ``(ngeom, 3)`` and rotation matrix ``(ngeom, 3, 3)`` of every geom at ``q``,
    from the engine's kinematics (one compiled program: op by op it took ~20 s)."""
    poses = body_poses(model, q)
    pos, quat = geom_world_frames(model, poses.pos, poses.quat)
    return pos, jax.vmap(quat_to_matrix)(quat)


def _lowest_point_in_engine(model) -> float:
    """Lowest z (m) of the moving bodies' collision geoms at ``model.qpos0``: the engine's geom
    poses and sizes, each shape's extent along -z written out here (independent of MuJoCo's
    distance queries that placed the robot)."""
    pos, rot = (np.asarray(x) for x in _geom_world_poses(model, model.qpos0))
    size = np.asarray(model.geom_size)
    lowest = np.inf
    for g, geom_type in enumerate(model.geom_type):
        if model.geom_body[g] == 0 or geom_type == GeomType.PLANE:
            continue
        up = rot[g][2]  # z components of the geom's local axes
        if geom_type == GeomType.MESH:
            extent = -np.min(np.asarray(model.mesh_vertices[model.geom_mesh[g]]) @ up)
        elif geom_type == GeomType.SPHERE:
            extent = size[g, 0]
        elif geom_type == GeomType.CAPSULE:
            extent = size[g, 0] + size[g, 1] * abs(up[2])
        elif geom_type == GeomType.CYLINDER:
            extent = size[g, 1] * abs(up[2]) + size[g, 0] * np.sqrt(max(0.0, 1.0 - up[2] ** 2))
        elif geom_type == GeomType.BOX:
            extent = np.sum(size[g] * np.abs(up))
        elif geom_type == GeomType.ELLIPSOID:
            extent = np.sqrt(np.sum((size[g] * up) ** 2))
        else:
            raise AssertionError(f"geom type {geom_type!r} not covered by this test helper")
        lowest = min(lowest, pos[g, 2] - extent)
    return float(lowest)


@pytest.mark.parametrize("robot", sorted(FLOATING_ROBOTS))
def test_floor_places_a_floating_robot_on_the_floor(robot):
    """A URDF robot's reference pose has its base at z = 0 and its legs through the floor (Go2:
    0.45 m); ``--floor`` lifts it so its lowest collision point is FLOOR_CLEARANCE above the floor."""
    model, mj = cli.load_scene(ROBOTS / FLOATING_ROBOTS[robot], floating_base=True, floor=True)
    floor = model.geom_names.index("floor")
    assert model.geom_type[floor] == GeomType.PLANE
    assert cli.lowest_floor_distance(mj, floor) == pytest.approx(cli.FLOOR_CLEARANCE, abs=1e-9)
    assert cli.initial_penetrations(mj, depth=0.0) == []
    assert float(model.qpos0[2]) == pytest.approx(float(mj.qpos0[2])) and float(model.qpos0[2]) > 0.4
    assert _lowest_point_in_engine(model) == pytest.approx(cli.FLOOR_CLEARANCE, abs=1e-6)


def test_floor_command_starts_go2_without_penetration(recorded_simulate, capsys):
    path = ROBOTS / FLOATING_ROBOTS["go2"]
    assert cli.main(["simulate", str(path), "--floating-base", "--floor", "--no-cache"]) == 0
    (model,) = recorded_simulate
    assert _lowest_point_in_engine(model) == pytest.approx(cli.FLOOR_CLEARANCE, abs=1e-6)
    err = capsys.readouterr().err
    assert "interpenetrating" not in err
    # the Go2's designed overlaps at the hips are jc.load's to report, as one line
    assert "jaxsim-contact: warning (SelfOverlapWarning):" in err and "'base'-'FR_thigh'" in err


def test_floor_without_floating_base_warns_about_the_legs_in_the_floor(recorded_simulate, capsys):
    """MuJoCo welds a URDF root to the world: --floor cannot lift it, and the warning says why."""
    path = ROBOTS / FLOATING_ROBOTS["go2"]
    assert cli.main(["simulate", str(path), "--floor", "--no-cache"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "interpenetrating" in line]
    assert len(lines) == 1
    assert "world geom 'floor' and body 'FL_calf'" in lines[0] and "448.9 mm" in lines[0]
    assert "--floating-base" in lines[0]


OVERLAPPING_BOXES = """<mujoco><worldbody>
  <geom name="ground" type="plane" size="5 5 0.1"/>
  <body name="lower" pos="0 0 0.1"><freejoint/><geom name="lower_box" type="box" size="0.1 0.1 0.1"/></body>
  <body name="upper" pos="0 0 0.27"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
</worldbody></mujoco>"""


def test_initial_penetration_warning_names_the_pair_and_depth(tmp_path, recorded_simulate, capsys):
    path = _write(tmp_path, "boxes.xml", OVERLAPPING_BOXES)
    assert cli.main(["simulate", str(path), "--no-cache"]) == 0
    assert len(recorded_simulate) == 1  # a warning, not an error: the simulation still runs
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"jaxsim-contact: warning: {path}: 1 geom pair(s) start interpenetrating")
    assert "body 'lower' geom 'lower_box' and body 'upper' geom #2 by 30.0 mm" in lines[0]


def test_initial_penetration_leaves_one_tree_to_the_self_overlap_warning(tmp_path):
    """Links of one robot that overlap at qpos0 are jc.load's SelfOverlapWarning; the start-pose
    check reports only pairs from different trees or the world. The overlapping link here is
    unnamed, so jc.load cannot exclude the pair and MuJoCo still finds the contact."""
    path = _write(tmp_path, "arm.xml", """<mujoco><worldbody>
      <body name="base" pos="0 0 1"><freejoint/><geom type="box" size="0.1 0.1 0.1"/>
        <body name="link1"><joint type="hinge" axis="0 0 1"/>
          <inertial pos="0 0 0" mass="0.1" diaginertia="1e-3 1e-3 1e-3"/>
          <body pos="0.15 0 0"><joint type="hinge" axis="0 1 0"/>
            <geom type="sphere" size="0.1"/></body></body></body>
    </worldbody></mujoco>""")
    with pytest.warns(jc.io.SelfOverlapWarning, match="but not excluded .* 'base'-'#3'"):
        _, mj = cli.load_scene(path)
    assert cli.initial_penetrations(mj, depth=0.0) == []


def test_solver_names_map_to_solver_objects():
    assert type(cli.make_solver("admm")) is jc.contact.ADMM
    assert type(cli.make_solver("pgs")) is jc.contact.PGS
    assert type(cli.make_solver("newton", compliance=1e-3)) is jc.contact.PrimalNewton
    with pytest.raises(ValueError, match="--compliance"):
        cli.make_solver("newton")


def test_floor_lifts_only_what_starts_below_it_and_keeps_a_floor_of_the_model(tmp_path):
    """One common lift for all floating bodies (their arrangement is kept), none when they start
    above the clearance (a drop is the author's choice); a model's own geom called "floor" stays."""
    path = _write(tmp_path, "drop.xml", """<mujoco><worldbody>
      <geom name="floor" type="plane" size="5 5 0.1" pos="0 0 -1"/>
      <body name="sunk" pos="0 0 0"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
      <body name="high" pos="1 0 2"><freejoint/><geom type="sphere" size="0.1"/></body>
    </worldbody></mujoco>""")
    model, mj = cli.load_scene(path, floor=True)
    assert model.geom_names.count("floor") == 1 and "floor_1" in model.geom_names
    z = np.asarray(model.qpos0)[[2, 9]]
    assert z == pytest.approx([0.1 + cli.FLOOR_CLEARANCE, 2.1 + cli.FLOOR_CLEARANCE])
    model, mj = cli.load_scene(path)  # without --floor: the reference pose as written
    assert np.asarray(model.qpos0)[[2, 9]] == pytest.approx([0.0, 2.0])
    # measured against the model's own floor, 0.9 m below the box: nothing to lift
    assert cli.place_on_floor(mj, cli._geom_id(mj, "floor")) == 0.0
