"""Bodies of one tree that start inside each other (issue 43): warned about by name, excluded.

A hard contact between two links whose overlap the joints can barely change asks for forces
without bound: example-robot-data's Solo-12 ran 188 of 200 standing steps at the solver's cap
(residual 1e4) with its four hip overlaps, 41 without them
(``benchmarks/probes/solo12_self_overlap.py``). The toy: a capsule behind a hinge chain reaching
5 mm into the torso box.
"""

import warnings

import mujoco
import pytest

import jaxsim_contact as jc
from jaxsim_contact.io._urdf import default_package_dirs

OVERLAP = 0.005  # m

TOY = f"""
<mujoco model="overlap">
  <option timestep="0.01"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="torso" pos="0 0 0.2">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.05" mass="2"/>
      <body name="hip" pos="0 0.1 0">
        <joint name="hip" type="hinge" axis="0 1 0"/>
        <inertial pos="0 0 0" mass="0.1" diaginertia="1e-4 1e-4 1e-4"/>
        <body name="thigh" pos="0 0 0">
          <joint name="knee" type="hinge" axis="0 1 0"/>
          <geom type="capsule" fromto="0 {-OVERLAP + 0.02} 0 0 0.1 0" size="0.02" mass="0.3"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture(scope="module")
def toy_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("overlap") / "overlap.xml"
    path.write_text(TOY)
    return path


def _load(path, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mj = jc.io.compile_mjmodel(path, **kwargs)
    messages = [str(w.message) for w in caught if issubclass(w.category, jc.io.SelfOverlapWarning)]
    return mj, messages


def test_overlap_is_reported_by_name_and_depth_and_excluded(toy_path):
    mj, messages = _load(toy_path)
    assert len(messages) == 1
    assert str(toy_path) in messages[0] and "'torso'-'thigh'" in messages[0]
    assert "excluded" in messages[0] and "exclude_self_overlaps=False" in messages[0]
    depth_mm = float(messages[0].split("'torso'-'thigh' ")[1].split(" mm")[0])
    assert depth_mm == pytest.approx(1e3 * OVERLAP, rel=0.05)
    assert mj.nexclude == 1 and jc.io.self_overlaps(mj) == []

    kept, messages = _load(toy_path, exclude_self_overlaps=False)
    assert len(messages) == 1 and "kept as asked" in messages[0]
    assert kept.nexclude == 0
    [(body1, body2, depth)] = jc.io.self_overlaps(kept)
    assert (mujoco.mj_id2name(kept, mujoco.mjtObj.mjOBJ_BODY, body1),
            mujoco.mj_id2name(kept, mujoco.mjtObj.mjOBJ_BODY, body2)) == ("torso", "thigh")
    assert depth == pytest.approx(OVERLAP, rel=0.05)


def test_solo12_hip_overlaps_are_named():
    roots = [d for d in default_package_dirs() if d.name == "robots"]
    path = roots[0] / "solo_description" / "robots" / "solo12.urdf"
    mj, messages = _load(path, floating_base=True)
    assert len(messages) == 1
    for leg in ("FL", "FR", "HL", "HR"):
        assert f"'base_link'-'{leg}_UPPER_LEG'" in messages[0]
    assert mj.nexclude == 4 and jc.io.self_overlaps(mj) == []


def test_masked_overlap_is_not_reported_as_penetration():
    """example-robot-data's double pendulum: link 1 overlaps the (world-welded) base by 13 mm
    around its own hinge, which no force can change; the slot is masked (λ = 0), and
    ``penetration`` (a statistic of the slots the solve saw) no longer reports it."""
    import jax

    roots = [d for d in default_package_dirs() if d.name == "robots"]
    path = roots[0] / "double_pendulum_description" / "urdf" / "double_pendulum_continuous.urdf"
    model = jc.load(path)
    contact = jax.jit(jc.step)(model, jc.init(model)).contact
    assert float(contact.distance.min()) == pytest.approx(-0.013, abs=1e-4)
    assert int(contact.num_active) == 0
    assert float(contact.penetration) == 0.0


def test_overlap_with_a_welded_base_is_reported_not_excluded():
    """The Allegro hand's palm is welded to the world (a fixed-base URDF root, fused by MuJoCo):
    an ``<exclude>`` of a finger link with the world would also drop its floor contacts, so the
    37 mm overlap of the thumb's base with the palm is named, not excluded."""
    roots = [d for d in default_package_dirs() if d.name == "robots"]
    path = roots[0] / "allegro_hand_description" / "urdf" / "allegro_right_hand.urdf"
    mj, messages = _load(path, balance_inertia=True)
    assert len(messages) == 1
    assert "welded to the world" in messages[0] and "'world'-'link_12.0'" in messages[0]
    assert mj.nexclude == 0
    pairs = jc.io.self_overlaps(mj)
    assert all(body1 == 0 for body1, _, _ in pairs) and max(d for _, _, d in pairs) > 0.03
