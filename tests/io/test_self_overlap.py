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

def toy(overlap: float) -> str:
    return f"""
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
          <geom type="capsule" fromto="0 {-overlap + 0.02} 0 0 0.1 0" size="0.02" mass="0.3"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


TOY = toy(OVERLAP)


@pytest.fixture(scope="module")
def toy_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("overlap") / "overlap.xml"
    path.write_text(TOY)
    return path


@pytest.mark.parametrize("overlap, excluded", [(5e-5, True), (2e-6, False)])
def test_shallow_overlaps_are_excluded_down_to_ten_micrometres(tmp_path, overlap, excluded):
    """Talos' chest starts 0.07 mm inside its pelvis and its frictional NCP has no solution (the
    solve sat at its cap from step 0): overlaps deeper than 10 µm are excluded, not only those
    deeper than the former 1 mm; a 2 µm overlap (numerical touching) is not."""
    path = tmp_path / "shallow.xml"
    path.write_text(toy(overlap))
    mj, messages = _load(path)
    assert mj.nexclude == int(excluded) and len(messages) == int(excluded)
    if excluded:
        assert f"'torso'-'thigh' {1e3 * overlap:.2f} mm" in messages[0]


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
    ``penetration`` (a statistic of the slots the solve saw) no longer reports it. Loaded with
    the defaults, the pair is excluded at load (a welded overlap, excluded by geom pair)."""
    import jax

    roots = [d for d in default_package_dirs() if d.name == "robots"]
    path = roots[0] / "double_pendulum_description" / "urdf" / "double_pendulum_continuous.urdf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jc.io.SelfOverlapWarning)
        model = jc.load(path, exclude_self_overlaps=False)
    contact = jax.jit(jc.step)(model, jc.init(model)).contact
    assert float(contact.distance.min()) == pytest.approx(-0.013, abs=1e-4)
    assert int(contact.num_active) == 0
    assert float(contact.penetration) == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jc.io.SelfOverlapWarning)
        excluded = jc.load(path)
    assert len(excluded.exclude_geom_pairs) == 1
    assert float(jax.jit(jc.step)(excluded, jc.init(excluded)).contact.distance.min()) > 0


def _candidate_pairs(model) -> set[tuple[int, int]]:
    return {(min(a, b), max(a, b)) for group in model.collision.groups
            for a, b in zip(group.geom_a, group.geom_b)}


def test_overlap_with_a_welded_base_excludes_the_geom_pairs_not_the_bodies():
    """The Allegro hand's palm is welded to the world (a fixed-base URDF root, fused by MuJoCo):
    an ``<exclude>`` of a finger link with the world would also drop its floor contacts, so the
    overlapping geom pairs (the thumb's base 37 mm into the palm) are excluded one by one,
    carried through the compiled model by a ``<numeric>`` that MuJoCo C ignores."""
    roots = [d for d in default_package_dirs() if d.name == "robots"]
    path = roots[0] / "allegro_hand_description" / "urdf" / "allegro_right_hand.urdf"
    mj, messages = _load(path, balance_inertia=True)
    assert len(messages) == 1
    assert "welded to the world" in messages[0] and "'world'-'link_12.0'" in messages[0]
    assert "geom pairs are excluded" in messages[0]
    assert mj.nexclude == 0
    pairs = jc.io.self_overlaps(mj)  # MuJoCo C's view: the numeric does not change its contacts
    assert all(body1 == 0 for body1, _, _ in pairs) and max(d for _, _, d in pairs) > 0.03
    excluded = jc.io.welded_overlap_geom_pairs(mj)
    assert excluded and all(0 in (mj.geom_bodyid[a], mj.geom_bodyid[b]) for a, b in excluded)
    model = jc.io.from_mjmodel(mj, source=str(path))
    assert set(model.exclude_geom_pairs) == set(excluded)
    assert not _candidate_pairs(model) & set(excluded)


WELDED = """
<mujoco model="welded_overlap">
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <geom name="base" type="box" pos="0 0 0.2" size="0.1 0.1 0.1"/>
    <body name="link" pos="0 0 0.25">
      <joint name="yaw" type="hinge" axis="0 0 1" damping="0.01"/>
      <geom name="knob" type="sphere" pos="0.09 0 0" size="0.03" mass="0.5"/>
      <body name="arm" pos="0 0 0.1">
        <joint name="pitch" type="hinge" axis="0 1 0"/>
        <geom name="rod" type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.3"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_welded_overlap_excluded_by_geom_pair_lets_the_solve_converge(tmp_path):
    """A fixed-base toy of example-robot-data's Panda (``panda_collision.urdf``: link 1 120 mm
    inside the welded link 0): a yawing link's knob 40 mm inside the world-welded base, at a
    depth no yaw removes (40 mm at yaw 0, deeper either side). Kept, the hard contact asks for a
    separation no motion gives: 112 of 300 steps at the solver's cap and the arm crashes 120 mm
    into the base (measured). Excluded by geom pair, the knob–base pair is gone while the arm still
    lands on the base and the links keep the floor: no capped step, no penetration."""
    import jax
    import jax.numpy as jnp
    import mujoco

    path = tmp_path / "welded.xml"
    path.write_text(WELDED)

    def run(model):
        def body(state, _):
            state = jc.step(model, state, jnp.zeros(model.nu))
            return state, (state.contact.iterations, state.contact.penetration)
        state = jc.init(model, q=jnp.array([0.3, 0.0], dtype=model.dtype))
        _, (iterations, penetration) = jax.jit(lambda s: jax.lax.scan(body, s, None, length=300))(state)
        return int((iterations >= model.options.solver.max_iterations).sum()), float(penetration.max())

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = jc.load(path)
    [message] = [str(w.message) for w in caught if issubclass(w.category, jc.io.SelfOverlapWarning)]
    assert "'world'-'link' 40.00 mm" in message and "1 overlapping geom pairs are excluded" in message
    mj = jc.io.compile_mjmodel(path)
    geom = {name: mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_GEOM, name) for name in ("floor", "base", "knob", "rod")}
    assert model.exclude_geom_pairs == ((geom["base"], geom["knob"]),)
    candidates = _candidate_pairs(model)
    assert (geom["base"], geom["knob"]) not in candidates
    assert {(geom["floor"], geom["knob"]), (geom["floor"], geom["rod"]), (geom["base"], geom["rod"])} <= candidates
    capped, penetration = run(model)
    assert capped == 0 and penetration < 1e-6

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jc.io.SelfOverlapWarning)
        kept = jc.load(path, exclude_self_overlaps=False)
    assert kept.exclude_geom_pairs == ()
    capped, penetration = run(kept)
    assert capped > 50 and penetration > 0.05


def test_a_malformed_geom_pair_numeric_is_refused_by_name(tmp_path):
    path = tmp_path / "bad.xml"
    path.write_text(WELDED.replace("<worldbody>", '<custom><numeric name="jaxsim_contact/exclude_geom_pairs" '
                                   'data="1 2 3"/></custom><worldbody>'))
    with pytest.raises(jc.io.ModelError, match="exclude_geom_pairs.*pairs of geom ids"):
        jc.load(path, exclude_self_overlaps=False)


def test_a_spec_compiled_twice_keeps_its_geom_pair_exclusions_once(tmp_path):
    """A benchmark that edits a prepared spec after its first ``compile_spec`` (the corpus lowers a
    fixed-base robot's floor) compiles it again: the declared geom pairs are kept, not declared
    twice (MuJoCo refuses a repeated numeric name), and not reported again."""
    path = tmp_path / "welded.xml"
    path.write_text(WELDED)
    spec = jc.io.prepare_spec(path)
    with warnings.catch_warnings(record=True) as first:
        warnings.simplefilter("always")
        mj = jc.io.compile_spec(spec, path)
    spec.geom("floor").pos = [0.0, 0.0, -0.1]
    with warnings.catch_warnings(record=True) as second:
        warnings.simplefilter("always")
        again = jc.io.compile_spec(spec, path)
    overlap = lambda caught: [w for w in caught if issubclass(w.category, jc.io.SelfOverlapWarning)]  # noqa: E731
    assert len(overlap(first)) == 1 and overlap(second) == []
    assert jc.io.from_mjmodel(again).exclude_geom_pairs == jc.io.from_mjmodel(mj).exclude_geom_pairs
    assert len(jc.io.from_mjmodel(again).exclude_geom_pairs) == 1
