"""Known physics of each contact model (seed 001 §IV-A): CCP normal velocity when sliding, LCP
pyramid bias, internal forces at stiction, heavy-on-light stack conditioning."""

import numpy as np

import jaxsim_contact as jc

C = jc.contact
B = jc.testing.problems
DT = 1e-3


def test_sliding_ncp_zero_normal_velocity_ccp_lifts():
    sysm = B.cube_on_plane(mass=1.0, half_size=0.1, velocity=(1.0, 0.0, 0.0), friction=0.3)
    p = sysm.problem(DT, units="impulse")
    ncp = C.solve(p, C.ADMM("ncp", tolerance=1e-10))
    ccp = C.solve(p, C.ADMM("ccp", tolerance=1e-10))
    assert bool(ncp.converged) and bool(ccp.converged)
    for sol in (ncp, ccp):
        f = np.asarray(sol.force)
        assert np.all(f[:, 2] > 1e-4)  # all four corners pushing while sliding
    vn, vc = np.asarray(ncp.velocity), np.asarray(ccp.velocity)
    assert np.all(np.linalg.norm(vn[:, :2], axis=1) > 0.9)  # still sliding
    np.testing.assert_allclose(vn[:, 2], 0.0, atol=1e-8)  # Signorini holds under NCP
    # CCP: c_N = mu |c_T|, i.e. the cube moves up by dt * mu * |c_T| per step (Anitescu)
    mu = 0.3
    np.testing.assert_allclose(vc[:, 2], mu * np.linalg.norm(vc[:, :2], axis=1), rtol=1e-6)
    assert np.all(vc[:, 2] > 0.25)


def _particle_slide(angle_deg, solver):
    a = np.deg2rad(angle_deg)
    # a unit-mass particle sliding at 2 m/s along direction `a`, one contact, G = I
    g = np.array([2 * np.cos(a), 2 * np.sin(a), -9.81 * DT])
    p = C.ContactProblem(np.eye(3), g, np.array([0.5]))
    sol = C.solve(p, solver)
    f = np.asarray(sol.force)[0]
    return np.rad2deg(np.arctan2(-f[1], -f[0])), sol


def test_lcp_pyramid_biases_friction_toward_corners():
    ang_lcp, s_lcp = _particle_slide(30.0, C.PGS("lcp", tolerance=1e-10))
    ang_ncp, s_ncp = _particle_slide(30.0, C.ADMM("ncp", tolerance=1e-10))
    ang_pgs, s_pgs = _particle_slide(30.0, C.PGS("ncp", tolerance=1e-10))
    assert bool(s_lcp.converged) and bool(s_ncp.converged) and bool(s_pgs.converged)
    assert abs(ang_lcp - 45.0) < 1e-6  # pushed to the pyramid corner
    assert abs(ang_ncp - 30.0) < 1e-4  # opposed to the sliding velocity
    assert abs(ang_pgs - 30.0) < 1e-4


def test_stiction_internal_forces_admm_vs_pgs():
    sysm = B.cube_on_plane(mass=1.0, half_size=0.1, friction=0.5)
    p = sysm.problem(DT, external=np.array([[2.0, 0, 0, 0, 0, 0]]))  # push below mu m g
    G = np.asarray(p.delassus)
    w, Q = np.linalg.eigh(G)
    null = Q[:, w < 1e-9 * w.max()]  # forces invisible to the dynamics (internal forces)
    admm = C.solve(p, C.ADMM("ncp", tolerance=1e-9))
    pgs = C.solve(p, C.PGS("ncp", tolerance=1e-9, max_iterations=5000))
    assert bool(admm.converged) and bool(pgs.converged)
    np.testing.assert_allclose(admm.velocity, pgs.velocity, atol=1e-6)  # same motion (sticking)
    internal_admm = np.linalg.norm(null.T @ np.asarray(admm.force).reshape(-1))
    internal_pgs = np.linalg.norm(null.T @ np.asarray(pgs.force).reshape(-1))
    assert internal_admm < 1e-8
    assert internal_pgs > 0.1
    # ADMM's tangential forces are the minimum-norm split: -0.5 N on each corner
    np.testing.assert_allclose(np.asarray(admm.force)[:, 0], -0.5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(admm.force)[:, 1], 0.0, atol=1e-7)


def test_heavy_on_light_stack():
    """1e3 kg box on a 1e-3 kg box (seed 001 Fig. 13). In impulse units (in force units the
    absolute 1e-6 criterion is ~1e-10 relative to the 1e4 N forces and no solver here or in
    Pinocchio reaches it)."""
    sysm = B.box_stack([1e-3, 1e3], friction=0.5)
    p = sysm.problem(DT, units="impulse")
    tol = 1e-6
    admm = C.solve(p, C.ADMM("ncp", tolerance=tol, max_iterations=2000))
    stag = C.solve(p, C.StaggeredProjections(tolerance=tol))
    diag = np.asarray(p.delassus).diagonal().reshape(-1, 3).mean(1)
    pc = C.ContactProblem(p.delassus, p.free_velocity, p.friction,
                          compliance=np.repeat(1e-6 * diag, 3))
    newton = C.solve(pc, C.PrimalNewton(tolerance=tol, max_iterations=200))
    pgs = C.solve(p, C.PGS("ncp", tolerance=tol, max_iterations=2000))
    raisim = C.solve(p, C.Raisim(tolerance=1e-12, max_iterations=2000))
    for s in (admm, stag, newton):
        assert bool(s.converged), float(s.criterion)
    assert float(C.criterion(p, admm.force)) <= tol
    assert float(C.criterion(p, stag.force)) <= tol
    assert not bool(pgs.converged)
    assert float(pgs.criterion) > 1e3 * tol  # PGS stalls (residual gap of >= 3 orders)
    assert float(C.criterion(p, raisim.force)) > 1e3 * tol
