"""Seed 004 §IV-B (b): joint torques that hold a standing quadruped at zero acceleration.

A Unitree Go2 (``example-robot-data``) stands on a floor with its four feet in contact, at rest
(``v = 0``). Twelve joint motors apply ``τ`` (N·m). We look for the torques whose next velocity is
zero, seed 004 eq. (15):

    min_τ ½‖v⁺(q, v = 0, τ)‖²        v⁺ from one ``jc.step`` (hard NCP contact, ADMM)

by Gauss–Newton: ``τ ← τ − J⁺ v⁺`` with ``J = ∂v⁺/∂τ`` (18 × 12) from ``jax.jacfwd`` (or
``jax.jacrev``) of ``jc.step`` through the implicit derivative of the contact solve. Starting
from ``τ = 0`` the robot sags (the feet slide); the fixed point holds it with sticking contacts.

Modelling choices, all needed for ``v⁺ = 0`` to be reachable at all:

* the Baumgarte term is off (``baumgarte = 0``): with it, a foot 10 µm into the floor is pushed
  out at ``β φ / dt`` and ``v⁺`` cannot vanish;
* the feet start ``PENETRATION`` into the floor (all four on the same side of the contact
  switch ``φ = 0``), a tight solver (ADMM, tolerance 1e-12);
* no speculative contacts (``contact_margin = 0``): with the default 1 mm margin every foot
  vertex within 1 mm of the floor becomes a contact (16 instead of 4), 12 of them without force,
  and ADMM needs > 1000 iterations to reach 1e-12 at the held stance instead of ~200;
* the feet are the only geoms that collide with the floor (``feet_only=True``, the default): the
  other 15 collision meshes of the Go2 never reach the floor in this pose and would only make
  each step larger.

    python examples/inverse_standing_quadruped.py [--mode jacfwd|jacrev] [--all-geoms]

Measured 2026-11-23 (jacfwd and jacrev alike): ‖v⁺‖ = 0.313 at τ = 0, 1.8e-14 after one
Gauss–Newton step — in this stance the feet stick, so ``v⁺`` is affine in ``τ`` until a foot's
force reaches its friction cone, and one step lands on the fixed point; the floor then carries
the robot's weight on its four feet (42, 44, 35, 36 N).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxsim_contact as jc  # noqa: E402

#: standing pose of the Go2: (hip, thigh, calf) angles (rad) of every leg
STANDING_LEG = (0.0, 0.8, -1.5)
#: depth (m) of the lowest foot vertex below the floor in the standing pose
PENETRATION = 1e-5
TIGHT = dict(max_iterations=500, tolerance=1e-12, factorization="cholesky")


def go2_mjmodel(feet_only: bool = True):
    """The Go2 URDF with a floating base, a floor (μ = 1), a motor (gear 1, unlimited) on each of
    its 12 joints, self-collision off; ``feet_only`` leaves only the four foot meshes colliding
    with the floor. Returns a compiled ``mujoco.MjModel``."""
    import mujoco

    from jaxsim_contact.io._urdf import default_package_dirs

    root = next(d for d in default_package_dirs() if d.name == "robots")
    path = root / "go2_description/urdf/go2.urdf"
    spec = jc.io.prepare_spec(path, floating_base=True)
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[10, 10, 0.1],
                            friction=[1.0, 0.005, 0.0001])
    bodies = [b.name for b in spec.bodies if b.name != "world"]
    for i, a in enumerate(bodies):  # self-collision off
        for b in bodies[i + 1:]:
            spec.add_exclude(bodyname1=a, bodyname2=b)
    if feet_only:
        for geom in spec.geoms:
            if geom.name == "floor":
                continue
            mesh = spec.mesh(geom.meshname) if geom.meshname else None
            is_foot = mesh is not None and "foot" in mesh.file
            if not is_foot:
                geom.contype, geom.conaffinity = 0, 0
    for joint in spec.joints:
        if joint.type == mujoco.mjtJoint.mjJNT_HINGE:
            spec.add_actuator(name=f"{joint.name}_motor", target=joint.name,
                              trntype=mujoco.mjtTrn.mjTRN_JOINT)
    return jc.io.compile_spec(spec, path)


def standing_configuration(mj, penetration: float = PENETRATION) -> np.ndarray:
    """``qpos`` of the standing pose with the lowest foot vertex ``penetration`` below the floor
    (MuJoCo kinematics on the compiled model, mesh vertices in the world frame)."""
    import mujoco

    q = mj.qpos0.copy()
    q[3:7] = (1.0, 0.0, 0.0, 0.0)
    q[7:19] = np.tile(STANDING_LEG, 4)
    data = mujoco.MjData(mj)
    data.qpos[:] = q
    mujoco.mj_kinematics(mj, data)
    lowest = np.inf
    for g in range(mj.ngeom):
        if mj.geom_type[g] != mujoco.mjtGeom.mjGEOM_MESH or mj.geom_contype[g] == 0:
            continue
        m = mj.geom_dataid[g]
        verts = mj.mesh_vert[mj.mesh_vertadr[m]: mj.mesh_vertadr[m] + mj.mesh_vertnum[m]]
        world = data.geom_xpos[g] + verts @ data.geom_xmat[g].reshape(3, 3).T
        lowest = min(lowest, world[:, 2].min())
    q[2] -= lowest + penetration
    return q


def standing_go2(feet_only: bool = True, dtype=jnp.float64):
    """``(model, q)``: the Go2 of :func:`go2_mjmodel` as a ``jc.Model`` with Baumgarte off and a
    tight ADMM solver and no contact margin, and its standing configuration."""
    mj = go2_mjmodel(feet_only)
    model = jc.io.from_mjmodel(mj, dtype=dtype)
    model = model.replace_options(baumgarte=0.0, contact_margin=0.0,
                                  solver=jc.contact.ADMM("ncp", **TIGHT))
    return model, jnp.asarray(standing_configuration(mj), dtype)


def next_velocity(tau, model, state):
    """``v⁺ (nv,)`` after one step from ``state`` with joint torques ``tau (12,)`` (N·m)."""
    return jc.step(model, state, tau).v


def gauss_newton(jacobian_and_velocity, tau0, iterations: int = 20, tolerance: float = 1e-6):
    """Gauss–Newton on ½‖v⁺(τ)‖²: ``τ ← τ − lstsq(J, v⁺)``. ``jacobian_and_velocity(τ)`` returns
    ``(J (nv, nu), v⁺ (nv,))``. Returns ``(τ, [‖v⁺‖ per iterate])``; stops below ``tolerance``
    (the last entry is the residual of the returned τ)."""
    tau = tau0
    history = []
    for _ in range(iterations + 1):
        jac, v_next = jacobian_and_velocity(tau)
        history.append(float(jnp.linalg.norm(v_next)))
        if history[-1] < tolerance or len(history) > iterations:
            break
        step, *_ = jnp.linalg.lstsq(jac, -v_next)
        tau = tau + step
    return tau, history


def make_solver(model, state, mode: str = "jacfwd"):
    """Jitted ``τ -> (∂v⁺/∂τ, v⁺)`` through ``jax.jacfwd`` or ``jax.jacrev`` of ``jc.step``."""
    differentiate = {"jacfwd": jax.jacfwd, "jacrev": jax.jacrev}[mode]

    def jacobian_and_velocity(tau):
        v_next = next_velocity(tau, model, state)
        return differentiate(next_velocity)(tau, model, state), v_next

    return jax.jit(jacobian_and_velocity)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="jacfwd", choices=["jacfwd", "jacrev"])
    parser.add_argument("--all-geoms", action="store_true",
                        help="every Go2 collision mesh collides with the floor (slower)")
    parser.add_argument("--tolerance", type=float, default=1e-12)
    args = parser.parse_args()

    model, q = standing_go2(feet_only=not args.all_geoms)
    state = jc.init(model, q=q)
    solver = make_solver(model, state, args.mode)
    print(f"nv {model.nv}, nu {model.nu}")
    with jc.compile_report(f"the step's {args.mode} Jacobian and velocity"):
        jax.block_until_ready(solver(jnp.zeros(model.nu)))
    t0 = time.perf_counter()
    tau, history = gauss_newton(solver, jnp.zeros(model.nu), tolerance=args.tolerance)
    for k, err in enumerate(history):
        print(f"iter {k:2d}  ||v+|| = {err:.3e}")
    print(f"{len(history) - 1} Gauss-Newton steps in {time.perf_counter() - t0:.2f} s")
    nxt = jax.jit(jc.step)(model, state, tau)
    print("tau (N m):", np.array2string(np.asarray(tau), precision=4))
    print("active contacts:", int(nxt.contact.num_active), " converged:", bool(nxt.contact.converged),
          " normal forces (N):", np.round(np.asarray(nxt.contact.force[:, 2]), 3))


if __name__ == "__main__":
    main()
