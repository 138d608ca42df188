"""Kinematics, mass matrix and generalised forces against MuJoCo C at random configurations.

Float64, relative agreement 1e-8 (DESIGN §6, issue 5 "Must show"): a humanoid (Talos), the Panda
arm, a quadruped (Go2), a hand (Allegro), all from example-robot-data URDFs, and our own MJCF
covering every joint type (free, ball, hinge, slide, welded chains, several joints in one body,
off-axis anchors, reference angles, non-diagonal inertias, springs, dampers, actuators).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact import dynamics

from dynamics_reference import SCENES, random_configuration

RTOL = 1e-8
NUM_CONFIGS = 6


def relative_error(ours, reference) -> float:
    ours, reference = np.asarray(ours), np.asarray(reference)
    assert ours.shape == reference.shape, (ours.shape, reference.shape)
    return float(np.max(np.abs(ours - reference)) / max(np.max(np.abs(reference)), 1e-300))


@functools.cache
def _batched_quantities():
    """One jitted, vmapped function for everything compared (compiled once per model)."""

    def quantities(model, q, v, ctrl):
        kin = dynamics.forward_kinematics(model, q)
        return dict(
            xpos=kin.body_pos,
            xmat=kin.body_rot,
            xipos=kin.com_pos,
            xanchor=kin.joint_anchor,
            xaxis=kin.joint_axis,
            poses_pos=jc.body_poses(model, q).pos,
            M=jc.mass_matrix(model, q),
            bias=jc.bias_forces(model, q, v),
            passive=dynamics.passive_forces(model, q, v),
            actuator=dynamics.actuator_forces(model, q, v, ctrl),
            energy_pos=dynamics.potential_energy(model, q),
            energy_vel=dynamics.kinetic_energy(model, q, v),
        )

    return jax.jit(jax.vmap(quantities, in_axes=(None, 0, 0, 0)))


def mujoco_reference(mj, qs, vs, ctrls):
    mj = mj.__copy__()
    mj.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_ENERGY)
    data = mujoco.MjData(mj)
    out = {k: [] for k in ("xpos", "xmat", "xipos", "xanchor", "xaxis", "M", "bias", "passive",
                           "actuator", "energy_pos", "energy_vel")}
    for q, v, ctrl in zip(qs, vs, ctrls):
        data.qpos[:], data.qvel[:], data.ctrl[:] = q, v, ctrl
        mujoco.mj_forward(mj, data)
        mujoco.mj_energyPos(mj, data)
        mujoco.mj_energyVel(mj, data)
        full = np.zeros((mj.nv, mj.nv))
        mujoco.mj_fullM(mj, data, full)
        out["xpos"].append(data.xpos.copy())
        out["xmat"].append(data.xmat.reshape(-1, 3, 3).copy())
        out["xipos"].append(data.xipos.copy())
        out["xanchor"].append(data.xanchor.copy())
        out["xaxis"].append(data.xaxis.copy())
        out["M"].append(full)
        out["bias"].append(data.qfrc_bias.copy())
        out["passive"].append(data.qfrc_passive.copy())
        out["actuator"].append(data.qfrc_actuator.copy())
        out["energy_pos"].append(data.energy[0])
        out["energy_vel"].append(data.energy[1])
    return {k: np.asarray(val) for k, val in out.items()}


@pytest.fixture(scope="module")
def comparison(scene):
    cache = {}

    def get(name):
        if name not in cache:
            model, mj = scene(name)
            rng = np.random.default_rng(abs(hash(name)) % 2**32)
            qs = np.stack([random_configuration(mj, rng) for _ in range(NUM_CONFIGS)])
            vs = rng.standard_normal((NUM_CONFIGS, mj.nv))
            ctrls = rng.uniform(-2, 2, (NUM_CONFIGS, mj.nu))
            ours = _batched_quantities()(model, jnp.asarray(qs), jnp.asarray(vs), jnp.asarray(ctrls))
            cache[name] = (model, mj, jax.device_get(ours), mujoco_reference(mj, qs, vs, ctrls))
        return cache[name]

    return get


@pytest.mark.parametrize("name", list(SCENES))
def test_forward_kinematics_matches_mujoco(comparison, name):
    model, mj, ours, ref = comparison(name)
    assert relative_error(ours["xpos"], ref["xpos"]) < RTOL
    assert relative_error(ours["poses_pos"], ref["xpos"]) < RTOL
    assert relative_error(ours["xmat"], ref["xmat"]) < RTOL
    assert relative_error(ours["xipos"], ref["xipos"]) < RTOL
    assert relative_error(ours["xanchor"], ref["xanchor"]) < RTOL
    non_free = [j for j in range(mj.njnt) if mj.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE]
    assert relative_error(ours["xaxis"][:, non_free], ref["xaxis"][:, non_free]) < RTOL


@pytest.mark.parametrize("name", list(SCENES))
def test_mass_matrix_matches_mujoco(comparison, name):
    model, mj, ours, ref = comparison(name)
    assert ours["M"].shape == (NUM_CONFIGS, mj.nv, mj.nv)
    assert relative_error(ours["M"], ref["M"]) < RTOL
    # symmetric positive definite at every configuration
    np.testing.assert_array_equal(ours["M"], np.swapaxes(ours["M"], -1, -2))
    assert np.all(np.linalg.eigvalsh(ours["M"]) > 0)


@pytest.mark.parametrize("name", list(SCENES))
def test_bias_and_passive_forces_match_mujoco(comparison, name):
    model, mj, ours, ref = comparison(name)
    assert relative_error(ours["bias"], ref["bias"]) < RTOL
    if np.any(ref["passive"]):
        assert relative_error(ours["passive"], ref["passive"]) < RTOL
    else:
        assert np.all(ours["passive"] == 0)


@pytest.mark.parametrize("name", list(SCENES))
def test_energy_matches_mujoco(comparison, name):
    model, mj, ours, ref = comparison(name)
    assert relative_error(ours["energy_pos"], ref["energy_pos"]) < RTOL
    assert relative_error(ours["energy_vel"], ref["energy_vel"]) < RTOL


def test_actuator_forces_match_mujoco(comparison):
    # all_joints has a geared motor, a position servo (kp, kv) and a force-limited motor; the
    # random controls exceed the control ranges so both clamps act.
    model, mj, ours, ref = comparison("all_joints")
    assert model.nu == 3 and np.any(ref["actuator"])
    assert relative_error(ours["actuator"], ref["actuator"]) < RTOL


def test_the_robots_have_the_expected_structure(scene):
    # guards against comparing trivial models: sizes of the robots as MuJoCo compiles them
    sizes = {name: (scene(name)[0].nq, scene(name)[0].nv) for name in SCENES}
    assert sizes["panda"] == (9, 9)
    assert sizes["go2"] == (19, 18)
    assert sizes["allegro"] == (16, 16)
    assert sizes["talos"][1] == sizes["talos"][0] - 1 and sizes["talos"][1] >= 30
    joint_types = set(scene("all_joints")[0].tree.joint_type)
    assert joint_types == {jc.JointType.FREE, jc.JointType.BALL, jc.JointType.HINGE, jc.JointType.SLIDE}
