"""The MuJoCo-compatible constraint model (issue 45): one step equals ``mj_step``.

MuJoCo C is the reference: from the same ``qpos`` / ``qvel``, one ``jc.step`` of a model loaded
with ``constraint_model="mujoco"`` must give MuJoCo's next ``qpos`` / ``qvel``. MuJoCo's own
Newton stops at a relative cost decrease (``<option tolerance>``, default 1e-8), which leaves its
elliptic-cone answers ~1e-6 away from the exact one; the comparisons run MuJoCo at tolerance 1e-15
so that both sides are exact to round-off.
"""

from __future__ import annotations

from pathlib import Path
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.constraints._soft import impedance

MODELS = Path(__file__).resolve().parents[1] / "models"
GYM = Path(__import__("gymnasium").__file__).parent / "envs" / "mujoco" / "assets"


def _states(mj, count: int, seed: int = 0):
    """``count`` states ``(qpos, qvel)`` of ``mj``: settled for 0, 50, 100, ... MuJoCo steps
    from ``qpos0``, then given random velocities (contacts, limits and equalities active)."""
    rng = np.random.default_rng(seed)
    data = mujoco.MjData(mj)
    for k in range(count):
        mujoco.mj_resetData(mj, data)
        for _ in range(50 * k):
            mujoco.mj_step(mj, data)
        data.qvel[:] += rng.normal(size=mj.nv) * 0.5
        yield data.qpos.copy(), data.qvel.copy()


def _compare(path: Path, count: int, edit=None, tmp_path=None):
    """Worst ``|Δqpos|``, ``|Δqvel|`` of one step against ``mj_step`` over ``count`` states, and
    the number of constraint rows MuJoCo had."""
    if edit is not None:
        text = edit(path.read_text())
        path = tmp_path / path.name
        path.write_text(text)
    model = jc.load(path, constraint_model="mujoco")
    mj = jc.io.compile_mjmodel(path, exclude_self_overlaps=False)
    # the exact answer: MuJoCo's Newton, whatever solver the file names (PGS stops short of it)
    mj.opt.tolerance, mj.opt.iterations = 1e-15, 1000
    mj.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    data = mujoco.MjData(mj)
    step = jax.jit(jc.step)
    worst_q = worst_v = 0.0
    rows = 0
    for qpos, qvel in _states(mj, count):
        data.qpos[:], data.qvel[:] = qpos, qvel
        mujoco.mj_forward(mj, data)
        rows += data.nefc
        ours = step(model, jc.init(model, q=jnp.asarray(qpos), v=jnp.asarray(qvel)))
        mujoco.mj_step(mj, data)
        assert int(ours.error) == 0
        worst_q = max(worst_q, float(np.abs(np.asarray(ours.q) - data.qpos).max()))
        worst_v = max(worst_v, float(np.abs(np.asarray(ours.v) - data.qvel).max()))
    return worst_q, worst_v, rows


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_every_row_kind_matches_mj_step(cone, tmp_path):
    """Contacts (sphere, box, capsule on a plane; priority, solmix, margin, condim 1), hinge and
    slide limits with their own solref / solimp, dof and tendon frictionloss, a tendon limit,
    joint, connect and weld equalities (MuJoCo's ``J̇ v`` on the last two), joint damping (the
    forces solved with ``M``, the velocity with Euler's ``M + dt D``)."""
    worst_q, worst_v, rows = _compare(
        MODELS / "soft_mixed.xml", 4,
        edit=lambda text: text.replace('cone="pyramidal"', f'cone="{cone}"'), tmp_path=tmp_path)
    assert rows > 100  # every state has its constraints active
    # the bar is 1e-8; measured 2e-13 (pyramidal) and 2e-10 (elliptic: the cone's Newton
    # stops at its 1e-10 residual)
    assert worst_q < 1e-10 and worst_v < 1e-8, (worst_q, worst_v)


def test_gymnasium_half_cheetah_matches_mj_step():
    """A model nobody here wrote: gymnasium's half_cheetah (Euler, joint damping and limits,
    capsule and sphere feet on a plane)."""
    worst_q, worst_v, rows = _compare(GYM / "half_cheetah.xml", 3)
    assert rows > 0
    assert worst_q < 1e-10 and worst_v < 1e-8, (worst_q, worst_v)


def test_hard_model_differs_on_the_same_state():
    """The comparison above can fail: the hard model on the same file and state does not match
    ``mj_step`` (so the agreement is the soft model's, not a contact-free step's)."""
    path = MODELS / "soft_mixed.xml"
    mj = jc.io.compile_mjmodel(path, exclude_self_overlaps=False)
    mj.opt.tolerance = 1e-15
    qpos, qvel = list(_states(mj, 2))[1]
    data = mujoco.MjData(mj)
    data.qpos[:], data.qvel[:] = qpos, qvel
    mujoco.mj_step(mj, data)
    hard = jc.load(path, exclude_self_overlaps=False)
    ours = jax.jit(jc.step)(hard, jc.init(hard, q=jnp.asarray(qpos), v=jnp.asarray(qvel)))
    assert np.abs(np.asarray(ours.v) - data.qvel).max() > 1e-3


def test_impedance_closed_form():
    """MuJoCo's impedance curve (Computation chapter, "solimp"): ``d0`` at zero violation,
    ``dwidth`` from ``width`` on, the two power-law halves meeting at ``midpoint``."""
    solimp = jnp.array([0.5, 0.9, 0.2, 0.3, 3.0])
    pos = jnp.array([0.0, -0.01, -0.2, -0.5, 0.06, -0.15])
    got = np.asarray(impedance(solimp, pos, jnp.zeros_like(pos)))
    x = np.minimum(np.abs(np.asarray(pos)) / 0.2, 1.0)
    y = np.where(x <= 0.3, x ** 3 / 0.3 ** 2, 1 - (1 - x) ** 3 / 0.7 ** 2)
    np.testing.assert_allclose(got, 0.5 + 0.4 * y, rtol=1e-14)
    flat = impedance(jnp.array([0.7, 0.7, 0.2, 0.5, 2.0]), pos, jnp.zeros_like(pos))
    np.testing.assert_allclose(np.asarray(flat), 0.7)


@pytest.mark.parametrize("gradient, integrator", [("implicit", "Euler"), ("unrolled", "Euler"),
                                                  ("implicit", "RK4")])
def test_soft_contact_step_derivatives_agree(gradient, integrator):
    """jacfwd = jacrev = central differences of ``v⁺(v)`` for a sliding, penetrating ball on the
    plane under the soft pyramid: the implicit rule at PrimalNewton's solution, the derivative
    through its unrolled iterations, and RK4's four solves in one scan."""
    xml = f"""<mujoco><option timestep="0.002" integrator="{integrator}"/><worldbody><geom type="plane" size="5 5 .1"/>
      <body pos="0 0 0.098"><freejoint/><geom type="sphere" size=".1" friction="0.5"/></body>
      </worldbody></mujoco>"""
    forward = _velocity_jacobians_agree(xml, gradient, jnp.array([0.3, -0.1, -0.2, 0.5, 0.2, -0.4]))
    assert np.abs(forward - np.eye(6)).max() > 1e-2  # the contact does act on the derivative


def _velocity_jacobians_agree(xml: str, gradient: str, v0) -> np.ndarray:
    """``∂v⁺/∂v`` of one soft step of the free body of ``xml`` at ``v0`` ``(6,)``: asserts jacfwd =
    jacrev (1e-10) = central differences (1e-5) and returns the forward one."""
    model = jc.io.from_mjmodel(mujoco.MjModel.from_xml_string(xml))
    model = jc.io.mujoco_compatible(model, mujoco.MjModel.from_xml_string(xml))
    model = model.replace_options(gradient=gradient)
    q = model.qpos0

    @jax.jit
    def next_velocity(v):
        return jc.step(model, jc.init(model, q=q, v=v)).v

    forward = np.asarray(jax.jacfwd(next_velocity)(v0))
    reverse = np.asarray(jax.jacrev(next_velocity)(v0))
    eps = 1e-6
    columns = [(np.asarray(next_velocity(v0.at[i].add(eps))) - np.asarray(next_velocity(v0.at[i].add(-eps))))
               / (2 * eps) for i in range(6)]
    central = np.stack(columns, axis=1)
    np.testing.assert_allclose(forward, reverse, atol=1e-10)
    np.testing.assert_allclose(forward, central, atol=1e-5)
    return forward


def test_torsional_and_rolling_friction_match_mj_step():
    """``condim`` 4 and 6 under the pyramidal cone: the torsional and rolling edges ``J_n ± μ_j
    J_ω,j`` (free balls on the floor and on each other, a box, a ``<pair>`` with five friction
    coefficients on a slide-hinge wheel). With condim 3 instead MuJoCo's next velocities move by
    ~3.7, so the rotational edges are what agrees here."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the <pair>'s own friction is used: no warning
        warnings.filterwarnings("ignore", category=jc.io.IgnoredOptionWarning)
        jc.load(MODELS / "soft_condim.xml", constraint_model="mujoco")
    worst_q, worst_v, rows = _compare(MODELS / "soft_condim.xml", 3)
    assert rows > 100
    # measured 6e-16 / 2e-14
    assert worst_q < 1e-10 and worst_v < 1e-8, (worst_q, worst_v)


def test_override_flag_matches_mj_step(tmp_path):
    """``<flag override="enable">``: every contact takes ``o_solref`` (friction rows too),
    ``o_solimp``, the five ``o_friction`` (two different sliding ones here) and ``o_margin`` as
    the pair's margin; no "ignored" warning in this mode."""
    def override(text):
        return text.replace(
            "<option ", '<option o_solref="0.05 0.8" o_solimp="0.8 0.95 0.002 0.5 2" o_margin="0.003" '
            'o_friction="0.6 0.4 0.01 0.002 0.001" ').replace(
            'iterations="1000"/>', 'iterations="1000"><flag override="enable"/></option>')
    path = tmp_path / "override.xml"
    path.write_text(override((MODELS / "soft_condim.xml").read_text()))
    with warnings.catch_warnings():
        warnings.simplefilter("error", jc.io.IgnoredOptionWarning)
        warnings.filterwarnings("ignore", message=".*iterations=1000, tolerance=1e-15")
        jc.load(path, constraint_model="mujoco")
    worst_q, worst_v, rows = _compare(MODELS / "soft_condim.xml", 3, edit=override, tmp_path=tmp_path)
    assert rows > 100
    # measured 3e-16 / 6e-15 (and 4e-14 on soft_mixed.xml)
    assert worst_q < 1e-10 and worst_v < 1e-8, (worst_q, worst_v)


def test_out_of_range_parameters_are_named_and_used_as_mujoco_uses_them(tmp_path):
    """``solimp`` outside ``[1e-4, 0.9999]``, a time constant below ``2 timestep`` and mixed-sign
    ``solref`` on a geom and a joint limit: one ``ClampedParameterWarning`` names each element,
    and the step still equals ``mj_step`` (MuJoCo clamps and replaces them the same way)."""
    path = tmp_path / "bad.xml"
    path.write_text("""<mujoco><option timestep="0.002" tolerance="1e-15" iterations="1000"/><worldbody>
      <geom name="floor" type="plane" size="5 5 .1" solimp="1.2 0.95 0.001 0.5 2" solref="0.001 1"/>
      <body pos="0 0 0.1"><freejoint/><geom name="ball" type="sphere" size=".1" solref="0.02 -1"/></body>
      <body pos="1 0 0.5"><joint name="hinge" type="hinge" range="-0.2 0.2" solreflimit="-100 0.5"/>
        <geom type="capsule" size=".05" fromto="0 0 0 0.3 0 0" contype="0" conaffinity="0"/></body>
      </worldbody></mujoco>""")
    with pytest.warns(jc.io.ClampedParameterWarning) as record:
        jc.load(path, constraint_model="mujoco")
    message = str(record[0].message)
    for expected in ("geom 'floor': solimp [1.2", "geom 'floor': solref time constant 0.001",
                     "geom 'ball': mixed-sign solref", "joint limit 'hinge': mixed-sign solref"):
        assert expected in message, message
    with warnings.catch_warnings():
        warnings.simplefilter("error", jc.io.ClampedParameterWarning)
        jc.load(path)  # the hard model does not use them: no warning
    worst_q, worst_v, rows = _compare(path, 3)
    assert rows > 0
    assert worst_q < 1e-10 and worst_v < 1e-8, (worst_q, worst_v)


def test_solver_choices_are_not_warned_and_refsafe_is_honoured(tmp_path):
    """In this mode ``solver="CG"``, ``jacobian`` and the line-search settings do not change the
    converged answer (not warned about), ``refsafe="disable"`` is applied (a time constant below
    ``2 timestep`` kept: the step still equals ``mj_step``), and ``noslip_iterations`` — a
    post-processing that changes MuJoCo's forces — is still named."""
    path = tmp_path / "options.xml"
    path.write_text("""<mujoco><option timestep="0.002" solver="CG" jacobian="sparse" ls_iterations="7"
        noslip_iterations="3" tolerance="1e-15" iterations="1000"><flag refsafe="disable"/></option>
      <worldbody><geom name="floor" type="plane" size="5 5 .1" solref="0.003 1"/>
      <body pos="0 0 0.1"><freejoint/><geom name="ball" type="sphere" size=".1"/></body>
      </worldbody></mujoco>""")
    with pytest.warns(jc.io.IgnoredOptionWarning) as record:
        jc.load(path, constraint_model="mujoco")
    soft_message = " ".join(str(r.message) for r in record)
    assert "noslip_iterations=3" in soft_message
    for honoured in ("solver=", "jacobian=", "ls_iterations=", "refsafe"):
        assert honoured not in soft_message, soft_message
    with pytest.warns(jc.io.IgnoredOptionWarning) as record:
        jc.load(path)
    hard_message = " ".join(str(r.message) for r in record)
    assert "solver=" in hard_message and "refsafe=disable" in hard_message
    no_noslip = tmp_path / "no_noslip.xml"
    no_noslip.write_text(path.read_text().replace('noslip_iterations="3"', ""))
    worst_q, worst_v, rows = _compare(no_noslip, 3)
    assert rows > 0
    assert worst_q < 1e-10 and worst_v < 1e-8, (worst_q, worst_v)


def test_ball_joint_limits_match_mj_step():
    """Limited ball joints (a hanging chain swinging into its cones; one joint with its own
    ``solreflimit`` / ``solimplimit`` / ``margin``): MuJoCo's row ``−axis`` on the joint's dofs
    while ``max(range) − θ < margin``."""
    worst_q, worst_v, rows = _compare(MODELS / "soft_ball_limits.xml", 6)
    assert rows >= 4
    # measured 7e-16 / 5e-13
    assert worst_q < 1e-10 and worst_v < 1e-8, (worst_q, worst_v)


def test_coincident_sphere_centres_take_mujocos_normal(tmp_path):
    """Two spheres with one centre (MJX's sensor/model.xml has such a pair): the normal is
    undefined and MuJoCo takes ``+x`` (``mju_normalize3``'s fallback); so does the engine, so the
    step matches (with ``+z`` it was 3.6 m/s off and the model later diverged)."""
    path = tmp_path / "coincident.xml"
    path.write_text("""<mujoco><option gravity="0 0 0" tolerance="1e-15" iterations="1000"/><worldbody>
      <body><freejoint/><geom name="a" size="0.1"/></body>
      <body><joint type="slide" axis="0 0 1"/><joint type="slide" axis="1 0 0"/><geom name="b" size="0.1"/></body>
      </worldbody></mujoco>""")
    worst_q, worst_v, rows = _compare(path, 1)
    assert rows > 0
    assert worst_q < 1e-10 and worst_v < 1e-8, (worst_q, worst_v)


def test_cylinders_on_a_plane_take_mujocos_points(tmp_path):
    """Plane–cylinder contacts are MuJoCo's points (``mjc_PlaneCylinder``: the deepest rim point,
    its twin on the other cap, two more at ±120° on the near cap), so cylinders on their side,
    upright and tilted step as in ``mj_step`` (the earlier four-point rim manifold did not)."""
    path = tmp_path / "cylinders.xml"
    path.write_text("""<mujoco><option timestep="0.002" tolerance="1e-15" iterations="1000"/><worldbody>
      <geom name="floor" type="plane" size="5 5 .1"/>
      <body pos="0 0 0.099"><freejoint/><geom type="cylinder" size="0.1 0.2" euler="0 90 0"/></body>
      <body pos="1 0 0.199"><freejoint/><geom type="cylinder" size="0.1 0.2"/></body>
      <body pos="2 0 0.3" euler="30 20 0"><freejoint/><geom type="cylinder" size="0.1 0.2"/></body>
      </worldbody></mujoco>""")
    worst_q, worst_v, rows = _compare(path, 4)
    assert rows > 50
    # measured 7e-16 / 2e-14
    assert worst_q < 1e-10 and worst_v < 1e-8, (worst_q, worst_v)


def _elliptic(text: str) -> str:
    """soft_condim.xml under MuJoCo's elliptic cone, its <pair>'s two sliding coefficients made
    equal (the elliptic cone here is isotropic in sliding; its rolling ones stay 0.01 / 0.02)."""
    return text.replace('cone="pyramidal"', 'cone="elliptic"').replace(
        'friction="0.9 0.7 ', 'friction="0.9 0.9 ')


def _world_contact_wrenches(model, contact):
    """Our active contacts ``{geom pair: [(point, world force, world torque)]}``: each contact
    slot with the torsional / rolling torque of its spin slot."""
    from jaxsim_contact.collision._narrowphase import KEY_STRIDE
    from jaxsim_contact.collision._pairs import collision_structure

    pairs = collision_structure(model).pair_geoms
    ranges = jc.constraints.slot_ranges(model)
    span, spin = ranges["contacts"], ranges["contact_spin"]
    active, frame, force = (np.asarray(x) for x in (contact.active, contact.frame, contact.force))
    out = {}
    for k in np.flatnonzero(active[span]):
        s = spin.start + k
        torque = frame[s].T @ force[s] if active[s] else np.zeros(3)
        geoms = frozenset(int(g) for g in pairs[int(contact.key[k]) // KEY_STRIDE])
        out.setdefault(geoms, []).append((np.asarray(contact.point[k]), frame[k].T @ force[k], torque))
    return out


def test_elliptic_torsional_and_rolling_friction_match_mj_step(tmp_path):
    """``condim`` 4 and 6 under the elliptic cone: torsional and rolling rows widen each
    contact's cone to MuJoCo's ``Σ (f_j/μ_j)² ≤ f_n²`` over five friction rows (spin slots,
    solved by PrimalNewton). One step equals ``mj_step``, and each contact's world force and
    torque equal ``mj_contactForce``'s; with every condim 3 MuJoCo's own next velocities move by
    more than 1e-2, so the spin rows are what agrees here."""
    worst_q, worst_v, rows = _compare(MODELS / "soft_condim.xml", 3, edit=_elliptic, tmp_path=tmp_path)
    assert rows > 50
    # measured 9e-13 / 9e-10 (the elliptic Newton stops at its 1e-10 residual)
    assert worst_q < 1e-10 and worst_v < 1e-8, (worst_q, worst_v)

    path = tmp_path / "elliptic_condim.xml"
    path.write_text(_elliptic((MODELS / "soft_condim.xml").read_text()))
    model = jc.load(path, constraint_model="mujoco")
    mj = jc.io.compile_mjmodel(path, exclude_self_overlaps=False)
    mj.opt.tolerance, mj.opt.iterations = 1e-15, 1000
    qpos, qvel = list(_states(mj, 3))[2]
    data = mujoco.MjData(mj)
    data.qpos[:], data.qvel[:] = qpos, qvel
    mujoco.mj_forward(mj, data)
    ours = _world_contact_wrenches(model, jax.jit(jc.step)(
        model, jc.init(model, q=jnp.asarray(qpos), v=jnp.asarray(qvel))).contact)
    wrench = np.zeros(6)
    dims, worst_force, worst_torque = [], 0.0, 0.0
    for i in range(data.ncon):
        con = data.contact[i]
        if con.efc_address < 0:
            continue
        mujoco.mj_contactForce(mj, data, i, wrench)
        frame = np.asarray(con.frame).reshape(3, 3)
        point, force, torque = min(ours[frozenset((int(con.geom1), int(con.geom2)))],
                                   key=lambda o: np.abs(o[0] - con.pos).max())
        assert np.abs(point - con.pos).max() < 1e-9
        worst_force = max(worst_force, np.abs(force - frame.T @ wrench[:3]).max())
        worst_torque = max(worst_torque, np.abs(torque - frame.T @ wrench[3:]).max())
        dims.append(con.dim)
    assert {4, 6} <= set(dims)
    # measured 2e-10 N and 1e-12 N·m (torques up to 0.7 N·m)
    assert worst_force < 1e-7 and worst_torque < 1e-8, (worst_force, worst_torque)

    # the same states with every condim 3: MuJoCo's answer moves
    flat = mujoco.MjModel.from_xml_string(path.read_text().replace('condim="6"', 'condim="3"')
                                          .replace('condim="4"', 'condim="3"'))
    flat.opt.tolerance, flat.opt.iterations = 1e-15, 1000
    moved = 0.0
    for qpos, qvel in _states(mj, 3):
        steps = []
        for m in (mj, flat):
            d = mujoco.MjData(m)
            d.qpos[:], d.qvel[:] = qpos, qvel
            mujoco.mj_step(m, d)
            steps.append(d.qvel.copy())
        moved = max(moved, float(np.abs(steps[0] - steps[1]).max()))
    assert moved > 1e-2, moved


@pytest.mark.parametrize("gradient", ["implicit", "unrolled"])
def test_elliptic_spin_step_derivatives_agree(gradient):
    """jacfwd = jacrev = central differences of ``v⁺(v)`` for a ball spinning and rolling on the
    plane with ``condim`` 6 under the elliptic cone: the fixed-point implicit rule of the widened
    cone (``jc.contact``'s ``_compliant_implicit``) and the unrolled Newton iterations."""
    xml = """<mujoco><option timestep="0.002" cone="elliptic"/><worldbody><geom type="plane" size="5 5 .1"/>
      <body pos="0 0 0.098"><freejoint/><geom type="sphere" size=".1" condim="6" friction="0.5 0.05 0.02"/></body>
      </worldbody></mujoco>"""
    # spinning about the normal
    forward = _velocity_jacobians_agree(xml, gradient, jnp.array([0.3, -0.1, -0.2, 0.5, 0.2, -4.0]))
    # the torsional row acts: the spin's derivative is not the free flight's
    assert abs(forward[5, 5] - 1.0) > 1e-3


def test_elliptic_anisotropic_pair_is_refused_by_name(tmp_path):
    """``condim`` 6 under the elliptic cone loads (spin rows); a ``<pair>`` with two different
    sliding coefficients does not (an anisotropic elliptic cone): refused naming its geoms, while
    the pyramid takes it."""
    path = tmp_path / "rolling.xml"
    path.write_text("""<mujoco><option cone="elliptic"/><worldbody>
      <geom name="floor" type="plane" size="5 5 .1"/>
      <body pos="0 0 0.1"><freejoint/><geom name="ball" type="sphere" size=".1" condim="6"/></body>
      </worldbody></mujoco>""")
    model = jc.load(path, constraint_model="mujoco")
    assert jc.constraints.slot_ranges(model)["contact_spin"].stop > jc.constraints.slot_ranges(model)["contact_spin"].start
    anisotropic = (MODELS / "soft_condim.xml").read_text()
    path.write_text(anisotropic.replace('cone="pyramidal"', 'cone="elliptic"'))
    with pytest.raises(NotImplementedError, match=r"<pair> of geoms 'floor' and 'wheel' has two sliding"):
        jc.load(path, constraint_model="mujoco")
    path.write_text(anisotropic)
    jc.load(path, constraint_model="mujoco")


@pytest.mark.parametrize("integrator, cone", [("RK4", "elliptic"), ("implicit", "pyramidal")])
def test_other_integrators_match_mj_step(integrator, cone, tmp_path):
    """RK4 re-solves every row kind at each of its four stages (``mj_RungeKutta`` runs a full
    forward pass per stage); ``implicit`` moves the velocity by its non-symmetric ``H`` (LU) after
    solving the forces with ``M``."""
    worst_q, worst_v, rows = _compare(
        MODELS / "soft_mixed.xml", 2, tmp_path=tmp_path,
        edit=lambda text: text.replace('cone="pyramidal"', f'cone="{cone}"').replace(
            "<option ", f'<option integrator="{integrator}" '))
    assert rows > 50
    # measured: RK4 elliptic 3e-14 / 7e-11, implicit pyramidal 1e-15 / 9e-14
    assert worst_q < 1e-10 and worst_v < 1e-8, (worst_q, worst_v)


def test_model_without_mujoco_parameters_is_refused():
    """A model with no MuJoCo parameters (``Model.soft is None``, as one built by hand) cannot
    switch to the MuJoCo-compatible model."""
    model = jc.load(MODELS / "soft_mixed.xml")
    soft_less = eqx.tree_at(lambda m: m.soft, model, None, is_leaf=lambda x: x is None)
    with pytest.raises(ValueError, match=r"Model\.soft"):
        soft_less.replace_options(constraint_model="mujoco")


def test_unknown_constraint_model_names_the_accepted_values():
    with pytest.raises(ValueError, match=r"constraint_model=...\) must be one of \[.hard., .mujoco.\]"):
        jc.load(MODELS / "soft_mixed.xml", constraint_model="soft")


def test_rollout_gradient_is_finite_where_mjx_reverse_mode_fails():
    """``jax.grad`` of a 100-step soft-contact rollout (a ball launched along the floor, rolling
    and sliding under MuJoCo's pyramid): finite, equal to forward mode and to central differences.
    MJX's reverse mode fails on the same model (its solver's ``while_loop``, mujoco issue 2259)."""
    from mujoco import mjx

    xml = """<mujoco><option timestep="0.005"/><worldbody><geom type="plane" size="5 5 .1"/>
      <body pos="0 0 0.1"><freejoint/><geom type="sphere" size=".1" friction="0.5"/></body>
      </worldbody></mujoco>"""
    mj = mujoco.MjModel.from_xml_string(xml)
    model = jc.io.mujoco_compatible(jc.io.from_mjmodel(mj), mj)
    ctrls = jnp.zeros((100, 0))

    def final_x(speed):
        start = jc.init(model, v=jnp.zeros(6).at[0].set(speed))
        final, _ = jc.rollout(model, start, ctrls)
        return final.q[0]

    reverse = float(jax.jit(jax.grad(final_x))(1.0))
    # one forward-mode program gives the tangent and the values the central difference needs
    value_and_tangent = jax.jit(jax.vmap(lambda s: jax.jvp(final_x, (s,), (jnp.ones_like(s),))))
    eps = 1e-5
    values, tangents = value_and_tangent(jnp.asarray([1.0, 1.0 + eps, 1.0 - eps]))
    forward = float(tangents[0])
    central = float((values[1] - values[2]) / (2 * eps))
    assert np.isfinite(reverse) and 0.05 < reverse < 0.5  # friction slows it: < 0.5 s of travel
    np.testing.assert_allclose(reverse, forward, rtol=1e-10)
    np.testing.assert_allclose(reverse, central, rtol=1e-5)

    mx = mjx.put_model(mj)
    data = mjx.make_data(mx)

    def mjx_final_x(speed):
        d = data.replace(qvel=data.qvel.at[0].set(speed))
        d, _ = jax.lax.scan(lambda d, _: (mjx.step(mx, d), None), d, None, length=100)
        return d.qpos[0]

    # tracing the reverse pass raises, as a plain jax.grad call does after running the forward
    # pass eagerly (35 s of op-by-op MJX on one core)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        jax.jit(jax.grad(mjx_final_x)).trace(1.0)
