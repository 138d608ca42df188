"""Tendons against MuJoCo C (issue 48): lengths, velocities and moment arms of fixed and spatial
tendons (sites, sphere / cylinder wrapping with and without side sites, pulleys) on every tendon
file MJX ships, tendon springs / dampers / actuators / energy, and a hard tendon limit.

Float64; lengths and moment arms to 1e-10 relative (issue 48 "Must show"). Step derivatives through
a tendon limit: tests/dynamics/test_equalities.py (one scene with a weld, a tendon limit and
frictionloss).
"""

from __future__ import annotations

import functools
import pathlib
import tempfile

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact import dynamics
from jaxsim_contact.dynamics._tendons import tendon_kinematics

MJX_DATA = pathlib.Path(mujoco.__file__).parent / "mjx" / "test_data"
GYM_ASSETS = pathlib.Path(__import__("gymnasium").__file__).parent / "envs" / "mujoco" / "assets"

#: every tendon model MJX ships (armature.xml has its own test below)
TENDON_FILES = sorted(p.name for p in (MJX_DATA / "tendon").glob("*.xml") if p.name != "no_tendon.xml")
NUM_CONFIGS = 40
RTOL = 1e-10

SPRING_XML = """
<mujoco><option timestep="0.01"/>
  <worldbody><site name="anchor" pos="0 0 1"/>
    <body><joint name="a" type="slide" axis="1 0 0"/><geom size=".1" mass="1"/><site name="s1" pos="0.1 0 0"/>
      <body pos="0 0 1"><joint name="b" type="hinge" axis="0 1 0"/><geom size=".1" mass="2"/>
        <site name="s2" pos="0 0.1 0.2"/></body></body></worldbody>
  <tendon>
    <fixed name="dead_band" damping="50" stiffness="30" springlength="0.1 0.3">
      <joint joint="a" coef="1"/><joint joint="b" coef="0.5"/></fixed>
    <spatial name="spring" damping="3" stiffness="40" springlength="0.5">
      <site site="anchor"/><site site="s1"/><site site="s2"/></spatial>
  </tendon>
  <actuator><motor tendon="spring" gear="2"/><position tendon="dead_band" kp="10" kv="1"/></actuator>
</mujoco>
"""


def _load_xml(xml: str) -> jc.Model:
    """``jc.load`` of an MJCF string (through a temporary file, as a user would)."""
    with tempfile.TemporaryDirectory() as directory:
        path = pathlib.Path(directory) / "model.xml"
        path.write_text(xml)
        return jc.load(path)


def _dense_tendon_jacobian(mj, data) -> np.ndarray:
    """MuJoCo 4 stores ``ten_J`` sparse (row addresses and column indices in the model)."""
    J = np.zeros((mj.ntendon, mj.nv))
    for t in range(mj.ntendon):
        start, count = mj.ten_J_rowadr[t], mj.ten_J_rownnz[t]
        J[t, mj.ten_J_colind[start:start + count]] = data.ten_J[start:start + count]
    return J


def _random_states(mj, count: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    data = mujoco.MjData(mj)
    for _ in range(count):
        data.qpos[:] = mj.qpos0 + rng.normal(size=mj.nq) * 0.6
        mujoco.mj_normalizeQuat(mj, data.qpos)
        data.qvel[:] = rng.normal(size=mj.nv)
        data.ctrl[:] = rng.normal(size=mj.nu) * 2.0
        mujoco.mj_forward(mj, data)
        yield data


@functools.cache
def _batched_tendon_quantities(with_energy: bool):
    def quantities(model, q, v, ctrl):
        kin = dynamics.forward_kinematics(model, q)
        tendon = tendon_kinematics(model, q, kin, dynamics.motion_axes(model, kin))
        out = dict(length=tendon.length, jacobian=tendon.jacobian, velocity=tendon.velocity(v),
                   passive=dynamics.passive_forces(model, q, v, tendon),
                   actuator=dynamics.actuator_forces(model, q, v, ctrl, tendon))
        if with_energy:  # a second tendon evaluation in the program: only where springs are
            out["energy"] = dynamics.potential_energy(model, q)
        return out

    return jax.jit(jax.vmap(quantities, in_axes=(None, 0, 0, 0)))


def _compare(path_or_xml: str, from_string: bool = False):
    mj = (mujoco.MjModel.from_xml_string(path_or_xml) if from_string
          else mujoco.MjModel.from_xml_path(path_or_xml))
    mj.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_ENERGY)
    model = _load_xml(path_or_xml) if from_string else jc.load(path_or_xml)
    reference = {k: [] for k in ("length", "jacobian", "velocity", "passive", "actuator", "energy")}
    qs, vs, ctrls = [], [], []
    for data in _random_states(mj, NUM_CONFIGS):
        qs.append(data.qpos.copy())
        vs.append(data.qvel.copy())
        ctrls.append(data.ctrl.copy())
        reference["length"].append(data.ten_length.copy())
        reference["jacobian"].append(_dense_tendon_jacobian(mj, data))
        reference["velocity"].append(data.ten_velocity.copy())
        reference["passive"].append(data.qfrc_passive.copy())
        reference["actuator"].append(data.qfrc_actuator.copy())
        reference["energy"].append(data.energy[0])
    with_energy = bool(np.any(mj.tendon_stiffness > 0) or np.any(mj.jnt_stiffness > 0))
    if not with_energy:
        del reference["energy"]
    ours = _batched_tendon_quantities(with_energy)(model, jnp.asarray(np.array(qs)), jnp.asarray(np.array(vs)),
                                        jnp.asarray(np.array(ctrls).reshape(NUM_CONFIGS, mj.nu)))
    for name, values in reference.items():
        expected, got = np.asarray(values), np.asarray(ours[name])
        scale = max(float(np.max(np.abs(expected), initial=0.0)), 1.0)
        error = float(np.max(np.abs(got - expected), initial=0.0)) / scale
        assert error <= RTOL, f"{path_or_xml if not from_string else 'xml'}: {name} error {error:.2e}"
    return model


@pytest.mark.parametrize("name", TENDON_FILES)
def test_mjx_tendon_models_match_mujoco(name):
    """Fixed, spatial, wrapping (sphere, cylinder, side sites) and pulley tendons of MJX's test
    models: ten_length, ten_J, ten_velocity, qfrc_passive, qfrc_actuator, potential energy."""
    model = _compare(str(MJX_DATA / "tendon" / name))
    assert model.ntendon > 0


def test_springs_dampers_actuators_and_clamped_tendon_forces_match_mujoco():
    """A dead-band spring on a fixed tendon, a spring on a spatial one, a motor and a servo on
    tendons, and MJX's model of actuator-force ranges on tendons (forces scaled to the range)."""
    _compare(SPRING_XML, from_string=True)
    _compare(str(MJX_DATA / "actuator" / "tendon_force_clamp.xml"))


def test_gymnasium_humanoid_loads_and_matches_mujoco():
    """gymnasium's humanoid (two fixed tendons) used to be refused."""
    _compare(str(GYM_ASSETS / "humanoid.xml"))


def test_tendon_inside_default_is_not_a_tendon():
    """``<default><tendon .../></default>`` only sets defaults: gymnasium's inverted pendulum has
    no tendon and loads."""
    model = jc.load(GYM_ASSETS / "inverted_pendulum.xml")
    assert model.ntendon == 0


def _check_armature_against_mujoco(model: jc.Model, mj) -> None:
    """qM, qfrc_bias and one mj_step (velocity) equal MuJoCo's on random states."""
    step = jax.jit(jc.step)
    for data in _random_states(mj, 10):
        full = np.zeros((mj.nv, mj.nv))
        mujoco.mj_fullM(mj, data, full)
        q, v = jnp.asarray(data.qpos), jnp.asarray(data.qvel)
        np.testing.assert_allclose(jc.mass_matrix(model, q), full, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(jc.bias_forces(model, q, v), data.qfrc_bias, rtol=1e-12, atol=1e-12)
        stepped = mujoco.MjData(mj)
        stepped.qpos[:], stepped.qvel[:] = data.qpos, data.qvel
        mujoco.mj_step(mj, stepped)
        np.testing.assert_allclose(step(model, jc.init(model, q=q, v=v)).v, stepped.qvel, atol=1e-12)


def test_tendon_armature_matches_mujoco_mass_matrix_bias_and_step():
    """Tendon armature (MJX's armature.xml, two spatial tendons): ``Jᵀ a J`` in the mass matrix and
    ``Jᵀ a J̇v`` in the bias forces equal MuJoCo's qM / qfrc_bias, and one step its mj_step."""
    path = MJX_DATA / "tendon" / "armature.xml"
    model = jc.load(path)
    assert model.tendons.armature_tendons == (0, 1)
    _check_armature_against_mujoco(model, mujoco.MjModel.from_xml_path(str(path)))


def test_tendon_armature_across_two_trees_couples_them():
    """A tendon with armature between two separate bodies couples their dofs: its kinetic energy
    ``½ a l̇²`` with ``l̇ = J v`` puts ``a Jᵢ Jⱼ`` between the trees. MuJoCo 4.0.0 keeps only the
    within-tree entries (its ``qM`` has the trees' sparsity; its bias forces are complete); the
    engine keeps all of them and factorises ``M`` as one dense block. Reference: MuJoCo's ``qM``,
    plus the cross-tree entries from its ``ten_J``; one step = ``v + h M⁻¹ (−qfrc_bias)``."""
    xml = """
<mujoco><option gravity="0 0 -9.81"/><worldbody><site name="a" pos="0 0 1"/>
  <body><joint type="slide" axis="1 0 0"/><joint type="hinge" axis="0 0 1"/><geom size=".1"/>
    <site name="b" pos=".05 .02 0"/></body>
  <body pos="1 0 0"><joint type="slide" axis="0 1 0"/><geom size=".1"/><site name="c"/></body>
</worldbody>
<tendon><spatial name="across" armature="2"><site site="b"/><site site="c"/></spatial></tendon></mujoco>"""
    model = _load_xml(xml)
    mj = mujoco.MjModel.from_xml_string(xml)
    assert model.tendons.multi_tree_tendons == (0,) and len(model.tree.dof_tree_groups) == 2
    first_tree, second_tree = np.arange(2), np.arange(2, 3)
    step = jax.jit(jc.step)
    for data in _random_states(mj, 5):
        full = np.zeros((mj.nv, mj.nv))
        mujoco.mj_fullM(mj, data, full)
        moment = _dense_tendon_jacobian(mj, data)[0]
        cross = 2.0 * np.outer(moment, moment)
        full[np.ix_(first_tree, second_tree)] += cross[np.ix_(first_tree, second_tree)]
        full[np.ix_(second_tree, first_tree)] += cross[np.ix_(second_tree, first_tree)]
        q, v = jnp.asarray(data.qpos), jnp.asarray(data.qvel)
        np.testing.assert_allclose(jc.mass_matrix(model, q), full, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(jc.bias_forces(model, q, v), data.qfrc_bias, rtol=1e-12, atol=1e-12)
        expected = data.qvel + mj.opt.timestep * np.linalg.solve(full, -data.qfrc_bias)
        np.testing.assert_allclose(step(model, jc.init(model, q=q, v=v)).v, expected, atol=1e-12)


def test_tendon_frictionloss_holds_below_and_slips_above_its_bound():
    """A slider driven through a fixed tendon (coefficient 2) with tendon frictionloss 2 N: a
    force along the tendon of 1.9 N leaves it at rest, 2.1 N moves it."""
    xml = """
<mujoco><option timestep="0.002" gravity="0 0 0"/>
  <worldbody><body><joint name="slide" type="slide" axis="1 0 0"/><geom size=".05" mass="1"/></body></worldbody>
  <tendon><fixed name="belt" frictionloss="2"><joint joint="slide" coef="2"/></fixed></tendon>
  <actuator><motor tendon="belt"/></actuator>
</mujoco>"""
    model = _load_xml(xml)
    assert model.tendons.frictionloss_tendons == (0,)
    step = jax.jit(jc.step)
    for force, moves in ((1.9, False), (2.1, True)):
        state = jc.init(model)
        for _ in range(10):
            state = step(model, state, jnp.asarray([force]))
        assert (abs(float(state.v[0])) > 1e-6) == moves, (force, state.v)


LIMITED_PENDULUM = """
<mujoco><option timestep="0.002" gravity="0 0 -9.81"/>
  <worldbody><site name="anchor" pos="0.6 0 0.5"/>
    <body><joint name="swing" type="hinge" axis="0 1 0" pos="0 0 0.5"/>
      <geom type="capsule" fromto="0 0 0.5 0 0 0" size="0.02" mass="1" contype="0" conaffinity="0"/>
      <site name="tip" pos="0 0 0"/></body>
  </worldbody>
  <tendon><spatial name="rope" limited="true" range="0 0.6" stiffness="{stiffness}">
    <site site="anchor"/><site site="tip"/></spatial></tendon>
</mujoco>
"""
#: the swing angle at which the rope is at its 0.6 m limit: 0.6 sin θ + 0.25 = 0
LIMIT_ANGLE = float(np.arcsin(-0.25 / 0.6))


def _limited_pendulum(stiffness=0.0):
    """A pendulum hanging from a hinge, its tip tied by a rope of at most 0.6 m to an anchor 0.6 m
    to the side at the hinge's height: at rest the rope holds it at ``LIMIT_ANGLE``."""
    return _load_xml(LIMITED_PENDULUM.format(stiffness=stiffness))


def _rope_length(model, q):
    kin = dynamics.forward_kinematics(model, q)
    return tendon_kinematics(model, q, kin, dynamics.motion_axes(model, kin)).length[0]


def test_tendon_limit_is_a_hard_unilateral_constraint():
    """Released hanging straight (rope 0.78 m, beyond its limit) the pendulum is pulled inside by
    the capped push-out, then rests on the rope: over 1000 steps the rope stretches by at most
    1e-8 m, never pushes (force ≥ 0), and the passive run never gains energy (1e-6 J)."""
    model = _limited_pendulum()
    state = jc.init(model)
    step = jax.jit(jc.step)
    for _ in range(500):
        state = step(model, state)
    energy = jax.jit(lambda q, v: dynamics.potential_energy(model, q) + dynamics.kinetic_energy(model, q, v))
    length = jax.jit(lambda q: _rope_length(model, q))
    previous = float(energy(state.q, state.v))
    worst_stretch, worst_gain = -np.inf, 0.0
    for _ in range(1000):
        state = step(model, state)
        worst_stretch = max(worst_stretch, float(length(state.q)) - 0.6)
        current = float(energy(state.q, state.v))
        worst_gain = max(worst_gain, current - previous)
        previous = current
        force = np.asarray(state.contact.force)[np.asarray(state.contact.active)]
        assert force.shape[0] == 1 and force[0, 2] > 0  # the rope holds it
    assert int(state.error) == 0
    assert worst_stretch <= 1e-8, worst_stretch
    assert worst_gain <= 1e-6, worst_gain
    np.testing.assert_allclose(float(state.q[0]), LIMIT_ANGLE, atol=1e-6)


GRAVCOMP_XML = """
<mujoco>
  <worldbody>
    <body pos="0 0 1"><freejoint/><geom size=".1" mass="2"/>
      <body pos="0.3 0 0" gravcomp="0.5">
        <joint name="h" type="hinge" axis="0 1 0" actuatorgravcomp="true" actuatorfrcrange="-1.5 1.5"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size=".03" mass="1"/>
        <body pos="0.3 0 0" gravcomp="1"><joint type="ball"/><geom size=".05" pos="0.1 0 0" mass="0.5"/></body>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="h"/></actuator>
</mujoco>
"""


def test_gravity_compensation_matches_mujoco():
    """Body ``gravcomp`` (an upward force of that fraction of the weight at the centre of mass) in
    qfrc_passive, and in qfrc_actuator on a joint with ``actuatorgravcomp``, clamped with the
    motor's force by the joint's ``actuatorfrcrange`` (a URDF effort limit becomes one) — both
    used to be ignored or refused (MJX's pendula.xml)."""
    model = _compare(GRAVCOMP_XML, from_string=True)
    assert model.gravcomp_bodies == (2, 3) and len(model.joint_actuator_gravcomp) == 1


FREE_AND_BALL_SPRINGS = """
<mujoco>
  <worldbody>
    <body pos="0 0 1"><joint type="free" stiffness="3"/><geom size=".1" mass="2"/>
      <body pos="0.3 0 0"><joint type="ball" stiffness="5"/><geom size=".05" pos="0.1 0 0" mass="0.5"/></body>
    </body>
  </worldbody>
</mujoco>
"""


def test_free_and_ball_joint_springs_match_mujoco():
    """Stiffness on free and ball joints (position and ``subQuat`` rotation-vector springs towards
    ``qpos_spring``): qfrc_passive and the potential energy — it used to be refused."""
    model = _compare(FREE_AND_BALL_SPRINGS, from_string=True)
    assert model.rotational_spring_joints == (0, 1)
