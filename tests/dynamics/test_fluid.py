"""Fluid forces (MuJoCo's inertia-box and ellipsoid models): the swimmers, brax's fluid test
models, a model mixing both fluid models and the fluid body of MuJoCo's own test model against
MuJoCo C 4.0.0 (``qfrc_passive`` on random states, 200-step trajectories with contacts and limits
off, the velocity-implicit integrators and RK4 with the ellipsoid model), derivatives against
central differences, bad input named."""

from __future__ import annotations

import pathlib
import warnings
import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.dynamics._fluid import fluid_forces
from jaxsim_contact.io import InvalidFluidError
from mujoco_comparison import (assert_derivatives_match_central_differences,
                               assert_trajectory_equals_mujoco)

BRAX = pathlib.Path(__import__("brax").__file__).parent
GYM_ASSETS = pathlib.Path(__import__("gymnasium").__file__).parent / "envs" / "mujoco" / "assets"
MIXED = pathlib.Path(__file__).parents[1] / "models" / "fluid_mixed.xml"
#: inertia box: box, box with offset centre of mass, two spheres, wind, swimmers (Euler and RK4);
#: ellipsoid model: brax's box; both models, several geom types, wind: fluid_mixed
MODELS = {
    "fluid_box": BRAX / "test_data" / "fluid_box.xml",
    "fluid_box_offset_com": BRAX / "test_data" / "fluid_box_offset_com.xml",
    "fluid_two_spheres": BRAX / "test_data" / "fluid_two_spheres.xml",
    "fluid_wind": BRAX / "test_data" / "fluid_wind.xml",
    "brax_swimmer": BRAX / "envs" / "assets" / "swimmer.xml",
    "gymnasium_swimmer": GYM_ASSETS / "swimmer.xml",
    "fluid_ellipsoid": BRAX / "test_data" / "fluid_ellipsoid.xml",
    "fluid_mixed": MIXED,
}


def _constraint_free(path: pathlib.Path, integrator: str | None = None):
    mj = mujoco.MjModel.from_xml_path(str(path))
    if integrator is not None:
        mj.opt.integrator = int(getattr(mujoco.mjtIntegrator, f"mjINT_{integrator.upper()}"))
    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_LIMIT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the swimmers' MuJoCo solver settings
        return mj, jc.io.from_mjmodel(mj, source=str(path))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_fluid_model_equals_mujoco(name):
    """``qfrc_passive`` (fluid included) on 20 random states to 1e-10 relative, and a 200-step
    trajectory (``qpos``, ``qvel``) to 1e-8."""
    mj, model = _constraint_free(MODELS[name])
    assert model.fluid_bodies or model.fluid_geoms
    assert float(model.options.fluid_density + model.options.fluid_viscosity) > 0
    _assert_equals_mujoco(mj, model)


def _fluid_and_passive(model, q, v):
    kin = jc.dynamics.forward_kinematics(model, q)
    fluid = fluid_forces(model, kin, jc.dynamics.motion_axes(model, kin), v)
    return fluid, jc.dynamics.passive_forces(model, q, v)


def _assert_equals_mujoco(mj, model):
    """``qfrc_fluid`` (relative to its largest entry) and ``qfrc_passive`` on 20 random states to
    1e-10, a 200-step trajectory to 1e-8."""
    forces = jax.jit(lambda q, v: _fluid_and_passive(model, q, v))
    rng = np.random.default_rng(0)
    data = mujoco.MjData(mj)
    for _ in range(20):
        data.qpos[:] = mj.qpos0 + 0.5 * rng.normal(size=mj.nq)
        mujoco.mj_normalizeQuat(mj, data.qpos)
        data.qvel[:] = 2.0 * rng.normal(size=mj.nv)
        mujoco.mj_forward(mj, data)
        fluid, passive = forces(jnp.asarray(data.qpos), jnp.asarray(data.qvel))
        scale = float(np.abs(data.qfrc_fluid).max())
        assert scale > 0
        np.testing.assert_allclose(fluid, data.qfrc_fluid, rtol=0, atol=1e-10 * scale)
        scale = max(1.0, float(np.abs(data.qfrc_passive).max()))
        np.testing.assert_allclose(passive, data.qfrc_passive, rtol=0, atol=1e-10 * scale)
    data.qpos[:] = mj.qpos0 + 0.2 * rng.normal(size=mj.nq)
    mujoco.mj_normalizeQuat(mj, data.qpos)
    data.qvel[:] = rng.normal(size=mj.nv)
    data.ctrl[:] = rng.uniform(-1.0, 1.0, size=mj.nu)
    assert_trajectory_equals_mujoco(mj, model, data.qpos.copy(), data.qvel.copy(), data.ctrl.copy(), 200)


def test_each_body_uses_one_fluid_model():
    """A body with a ``fluidshape="ellipsoid"`` geom uses the ellipsoid model for each such geom
    (its other geoms, the keel, do not count) and no inertia box; every other body with mass uses
    the inertia box (MuJoCo ``mj_fluid``)."""
    _, model = _constraint_free(MIXED)
    geom = {name: g for g, name in enumerate(model.geom_names)}
    body = {name: b for b, name in enumerate(model.body_names)}
    assert model.fluid_geoms == tuple(sorted(geom[n] for n in (
        "hull", "fin", "upper", "forearm", "ball", "bob", "raft", "mast")))
    assert model.fluid_bodies == tuple(sorted(body[n] for n in ("paddle", "brick", "pendulum")))
    np.testing.assert_array_equal(model.geom_fluid[geom["fin"], :6], [1.0, 0.3, 0.1, 1.2, 2.0, 0.5])
    assert not np.any(np.asarray(model.geom_fluid[geom["keel"]]))


@pytest.mark.parametrize("integrator", ["rk4", "implicit", "implicitfast"])
def test_ellipsoid_model_with_other_integrators_equals_mujoco(integrator):
    """RK4 and the velocity-implicit integrators, whose ``∂f/∂v`` includes the ellipsoid model's
    (not symmetric: added mass, Magnus and Kutta lift); MuJoCo's ``implicitfast`` symmetrises it
    except on lone free bodies (the raft, a free body with a welded child that has mass, is one
    in MuJoCo 4.0.0): 200-step trajectory to 1e-8."""
    mj, model = _constraint_free(MIXED, integrator)
    rng = np.random.default_rng(1)
    data = mujoco.MjData(mj)
    data.qpos[:] = mj.qpos0 + 0.2 * rng.normal(size=mj.nq)
    mujoco.mj_normalizeQuat(mj, data.qpos)
    data.qvel[:] = rng.normal(size=mj.nv)
    assert_trajectory_equals_mujoco(mj, model, data.qpos.copy(), data.qvel.copy(), np.zeros(mj.nu), 200)


def test_mujoco_test_model_fluid_body_equals_mujoco(tmp_path):
    """MuJoCo's own test model (``mujoco/testdata/model.xml``: a height field, refused) has one
    ellipsoid-model body, "tumbling": two thin boxes (0.1 mm thick) of 0.1 g in air with wind.
    That body with the model's medium, on its own, against MuJoCo like the models above."""
    source = ET.parse(pathlib.Path(mujoco.__file__).parent / "testdata" / "model.xml").getroot()
    medium = {k: v for k, v in source.find("option").attrib.items() if k in ("density", "viscosity", "wind")}
    tumbling = source.find(".//body[@name='tumbling']")
    assert tumbling is not None and all(g.get("fluidshape") == "ellipsoid" for g in tumbling.iter("geom"))
    root = ET.Element("mujoco")
    ET.SubElement(root, "option", medium)
    ET.SubElement(root, "worldbody").append(tumbling)
    path = tmp_path / "tumbling.xml"
    ET.ElementTree(root).write(path)
    mj, model = _constraint_free(path)
    assert len(model.fluid_geoms) == 2 and model.fluid_bodies == ()
    _assert_equals_mujoco(mj, model)


def _step_in_medium(model, q0):
    """``(v, (density, viscosity)) -> (q⁺, v⁺)``: one step from ``(q0, v)`` in that medium."""
    def next_state(v, medium):
        moved = model.replace_options(fluid_density=medium[0], fluid_viscosity=medium[1])
        nxt = jc.step(moved, jc.init(moved, q=q0, v=v), jnp.zeros(model.nu))
        return jnp.concatenate([nxt.q, nxt.v])
    return next_state


def test_fluid_step_derivatives_forward_reverse_and_central_differences_agree():
    """``jacfwd`` = ``jacrev`` = central differences for one swimmer step with respect to ``v``
    and to the medium (density, viscosity: dynamic options)."""
    _, model = _constraint_free(MODELS["brax_swimmer"])
    inputs = (jnp.linspace(-0.8, 0.9, model.nv), jnp.asarray([4000.0, 0.1]))
    assert_derivatives_match_central_differences(_step_in_medium(model, model.qpos0 + 0.1), inputs,
                                                 steps=(1e-6, 1e-3))


def test_ellipsoid_model_derivatives_agree_and_are_finite_at_rest():
    """The same for one step of brax's ellipsoid-model box in wind and for the passive forces of
    the model mixing both fluid models; and finite derivatives of those forces at rest in still
    air, where the ellipsoid model's speeds, projected areas and drag norms are all zero
    (``|u| u`` has a zero derivative there)."""
    _, box = _constraint_free(MODELS["fluid_ellipsoid"])
    box = box.replace_options(wind=jnp.asarray([0.5, -1.0, 0.2]))
    inputs = (jnp.linspace(-0.8, 0.9, box.nv), jnp.asarray([1.2, 0.15]))
    assert_derivatives_match_central_differences(_step_in_medium(box, box.qpos0 + 0.1), inputs,
                                                 steps=(1e-6, 1e-6))

    _, model = _constraint_free(MIXED)
    q1 = model.qpos0

    def passive(v, medium):
        moved = model.replace_options(fluid_density=medium[0], fluid_viscosity=medium[1])
        return jc.dynamics.passive_forces(moved, q1, v)

    inputs = (jnp.linspace(-0.8, 0.9, model.nv), jnp.asarray([1000.0, 0.01]))
    assert_derivatives_match_central_differences(passive, inputs, steps=(1e-6, 1e-3))
    still = model.replace_options(wind=jnp.zeros(3))
    at_rest = jax.jit(lambda v: (jax.jacfwd(lambda w: jc.dynamics.passive_forces(still, q1, w))(v),
                                 jax.jacrev(lambda w: jc.dynamics.passive_forces(still, q1, w))(v)))
    forward, reverse = at_rest(jnp.zeros(model.nv))
    assert np.all(np.isfinite(forward)) and np.all(np.isfinite(reverse))


def _write(tmp_path, option: str, geom: str = 'size=".1"') -> pathlib.Path:
    path = tmp_path / "model.xml"
    path.write_text(f'<mujoco><option {option}/><worldbody><body><freejoint/>'
                    f'<geom name="hull" {geom}/></body></worldbody></mujoco>')
    return path


def test_bad_fluid_input_is_named(tmp_path):
    path = _write(tmp_path, 'density="-1"')
    with pytest.raises(InvalidFluidError, match=r"density=-1\.0") as info:
        jc.load(path)
    assert str(path) in str(info.value)
    path = _write(tmp_path, 'density="1.2"', 'size=".1" fluidshape="ellipsoid" fluidcoef="0.5 nan 1.5 1 1"')
    with pytest.raises(InvalidFluidError, match=r"geom 'hull'.*fluidcoef=\[0\.5, nan, 1\.5, 1\.0, 1\.0\]") as info:
        jc.load(path)
    assert str(path) in str(info.value)


def test_a_geom_with_fluidshape_ellipsoid_loads(tmp_path):
    model = jc.load(_write(tmp_path, 'density="1.2"', 'size=".1" fluidshape="ellipsoid"'))
    assert model.fluid_geoms == (0,) and model.fluid_bodies == ()
    # a floor added afterwards gets an empty geom_fluid row
    assert jc.io.add_floor(model).geom_fluid.shape == (2, 12)


def test_a_model_without_fluid_has_no_fluid_bodies(tmp_path):
    assert jc.load(_write(tmp_path, 'gravity="0 0 -9.81"')).fluid_bodies == ()
