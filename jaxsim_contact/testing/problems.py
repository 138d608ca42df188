"""Host-side builders of contact problems for free rigid bodies (tests, benchmarks, notebooks).

Each body has 6 velocity coordinates ``(v, ω)`` (linear velocity of its centre of mass, angular
velocity, both in the world frame), mass ``m`` and world-frame inertia ``I`` about the centre, so
``M = diag(m I₃, I)``. A contact ``i`` between body ``a`` and body ``b`` (``b = -1`` for the fixed
world) at world point ``p`` with unit normal ``n`` pointing from ``b`` to ``a`` has frame rows
``(t1, t2, n)`` and relative velocity ``c = F [(v_a + ω_a × (p − x_a)) − (v_b + ω_b × (p − x_b))]``,
which defines ``J``. Then (seed 001 eqs. 2, 5, 9) ``G = J M⁻¹ Jᵀ`` and ``g = J v_f`` with
``v_f = v + Δt M⁻¹ f_ext``.

Problems are returned in *force units* by default (seed 001 §II: ``g ← g/Δt``, so ``λ`` is in N
and the criteria do not scale with ``Δt``); ``units="impulse"`` keeps ``λ`` in N·s.
Everything here is NumPy on the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..contact._problem import ContactProblem

__all__ = [
    "RigidContactSystem",
    "box_inertia",
    "contact_frame",
    "box_corners",
    "cube_on_plane",
    "box_stack",
    "random_problem",
]


def box_inertia(mass: float, half_extents) -> np.ndarray:
    """``(3, 3)`` inertia (kg m²) of a solid box about its centre, box axes = world axes."""
    hx, hy, hz = np.asarray(half_extents, float) * 2.0
    return mass / 12.0 * np.diag([hy**2 + hz**2, hx**2 + hz**2, hx**2 + hy**2])


def contact_frame(normal) -> np.ndarray:
    """``(3, 3)`` rows ``(t1, t2, n)`` of a right-handed frame with unit normal ``n`` last."""
    n = np.asarray(normal, float)
    n = n / np.linalg.norm(n)
    helper = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = helper - n * (helper @ n)
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(n, t1)
    return np.stack([t1, t2, n])


def box_corners(center, half_extents, face: str = "bottom") -> np.ndarray:
    """``(4, 3)`` world corners of the bottom (or top) face of an axis-aligned box."""
    c = np.asarray(center, float)
    hx, hy, hz = np.asarray(half_extents, float)
    z = c[2] - hz if face == "bottom" else c[2] + hz
    return np.array([[c[0] + sx * hx, c[1] + sy * hy, z] for sx in (-1, 1) for sy in (-1, 1)])


def _skew(r):
    return np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])


@dataclass
class RigidContactSystem:
    """Free rigid bodies plus point contacts (host side).

    Attributes:
      masses: ``(b,)`` kg. inertias: ``(b, 3, 3)`` world-frame, kg m². positions: ``(b, 3)`` m.
      velocities: ``(b, 6)`` ``(v, ω)``. contacts: list of ``(body_a, body_b, point (3,),
      normal (3,), friction)`` with ``body_b = -1`` for the world.
    """

    masses: np.ndarray
    inertias: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    contacts: list = field(default_factory=list)

    @property
    def num_dofs(self) -> int:
        return 6 * len(self.masses)

    def mass_matrix(self) -> np.ndarray:
        """``(6b, 6b)`` block-diagonal ``M``."""
        b = len(self.masses)
        M = np.zeros((6 * b, 6 * b))
        for k in range(b):
            M[6 * k:6 * k + 3, 6 * k:6 * k + 3] = self.masses[k] * np.eye(3)
            M[6 * k + 3:6 * k + 6, 6 * k + 3:6 * k + 6] = self.inertias[k]
        return M

    def jacobian(self) -> np.ndarray:
        """``(3n, 6b)`` contact Jacobian in the ``(t1, t2, n)`` frames."""
        J = np.zeros((3 * len(self.contacts), self.num_dofs))
        for i, (a, b, p, normal, _) in enumerate(self.contacts):
            F = contact_frame(normal)
            for body, sign in ((a, 1.0), (b, -1.0)):
                if body < 0:
                    continue
                r = np.asarray(p, float) - self.positions[body]
                block = np.hstack([np.eye(3), -_skew(r)])  # v + ω × r
                J[3 * i:3 * i + 3, 6 * body:6 * body + 6] += sign * F @ block
        return J

    def free_velocity(self, dt: float, gravity=(0.0, 0.0, -9.81), external=None) -> np.ndarray:
        """``(6b,)`` ``v_f = v + Δt M⁻¹ (f_gravity + external)``; ``external`` ``(b, 6)`` wrenches."""
        b = len(self.masses)
        f = np.zeros((b, 6))
        f[:, :3] = self.masses[:, None] * np.asarray(gravity, float)[None, :]
        if external is not None:
            f += np.asarray(external, float)
        acc = np.linalg.solve(self.mass_matrix(), f.reshape(-1))
        return self.velocities.reshape(-1) + dt * acc

    def problem(self, dt: float, gravity=(0.0, 0.0, -9.81), external=None, compliance=None,
                units: str = "force", dtype=np.float64) -> ContactProblem:
        """The :class:`ContactProblem` ``(G, g, μ)`` of the next time step (seed 001 eq. 9)."""
        if units not in ("force", "impulse"):
            raise ValueError(f"units must be 'force' or 'impulse', got {units!r}")
        J = self.jacobian()
        M = self.mass_matrix()
        G = J @ np.linalg.solve(M, J.T)
        G = 0.5 * (G + G.T)
        g = J @ self.free_velocity(dt, gravity, external)
        if units == "force":
            g = g / dt
        mu = np.array([c[4] for c in self.contacts], float)
        return ContactProblem(G.astype(dtype), g.astype(dtype), mu.astype(dtype),
                              compliance=compliance)

    def velocity_update(self, force, dt: float, gravity=(0.0, 0.0, -9.81), external=None,
                        units: str = "force") -> np.ndarray:
        """``(b, 6)`` ``v⁺ = v_f + M⁻¹ Jᵀ λ`` (seed 001 eq. 5); ``force`` ``(n, 3)``."""
        lam = np.asarray(force, float).reshape(-1) * (dt if units == "force" else 1.0)
        J = self.jacobian()
        v = self.free_velocity(dt, gravity, external) + np.linalg.solve(self.mass_matrix(), J.T @ lam)
        return v.reshape(-1, 6)


def cube_on_plane(mass: float = 1.0, half_size: float = 0.1, velocity=(0.0, 0.0, 0.0),
                  friction: float = 0.5, position=(0.0, 0.0, None)) -> RigidContactSystem:
    """A cube resting on the plane ``z = 0`` with its 4 bottom corners in contact
    (seed 001 §IV-A sliding cube / stiction experiments). ``velocity`` is the ``(3,)`` linear or
    ``(6,)`` full initial velocity."""
    h = np.full(3, half_size)
    pos = np.array([position[0], position[1], half_size if position[2] is None else position[2]])
    vel = np.zeros(6)
    vel[: len(velocity)] = velocity
    sys = RigidContactSystem(np.array([mass]), box_inertia(mass, h)[None], pos[None], vel[None])
    for p in box_corners(pos, h):
        p = p.copy()
        p[2] = 0.0
        sys.contacts.append((0, -1, p, np.array([0.0, 0.0, 1.0]), friction))
    return sys


def box_stack(masses, half_size: float = 0.1, friction: float = 0.5) -> RigidContactSystem:
    """Boxes stacked on the plane ``z = 0`` (``masses[0]`` at the bottom), 4 corner contacts per
    interface, ``4 × len(masses)`` contacts (seed 001 §IV-A, Fig. 13 heavy-on-light stack)."""
    masses = np.asarray(masses, float)
    h = np.full(3, half_size)
    pos = np.array([[0.0, 0.0, half_size * (2 * k + 1)] for k in range(len(masses))])
    inertias = np.stack([box_inertia(m, h) for m in masses])
    sys = RigidContactSystem(masses, inertias, pos, np.zeros((len(masses), 6)))
    for k in range(len(masses)):
        for p in box_corners(pos[k], h):
            sys.contacts.append((k, k - 1, p, np.array([0.0, 0.0, 1.0]), friction))
    return sys


def random_problem(rng: np.random.Generator, num_contacts: int, num_dofs: int | None = None,
                   friction_range=(0.2, 1.0), dtype=np.float64,
                   coupling: float | None = None) -> ContactProblem:
    """A random feasible problem: ``G = J M⁻¹ Jᵀ`` from a random ``(3n, n_v)`` ``J`` and SPD ``M``,
    ``g = J v_f`` with ``v_f`` pushing the contacts into penetration on average. With
    ``num_dofs < 3n`` the Delassus matrix is rank deficient (hyperstatic, seed 001 §II). With
    ``coupling = c`` the Jacobian is ``I + c · noise`` (``num_dofs = 3n``): a well-conditioned,
    nearly diagonal ``G`` for small ``c`` (the regime where Gauss-Seidel is expected to converge)."""
    m = 3 * num_contacts
    nv = m if num_dofs is None else num_dofs
    J = rng.normal(size=(m, nv)) if coupling is None else np.eye(m) + coupling * rng.normal(size=(m, m))
    B = rng.normal(size=(nv, nv))
    M = B @ B.T / nv + np.eye(nv)
    G = J @ np.linalg.solve(M, J.T)
    G = 0.5 * (G + G.T)
    # v_f = v0 − M⁻¹ Jᵀ e_N pushes the contacts towards each other on average while keeping
    # g = J v_f in range(J) (bounded CCP even when G is rank deficient).
    e_n = np.zeros(m)
    e_n[2::3] = 1.0
    v_f = rng.normal(size=nv) - np.linalg.solve(M, J.T @ e_n)
    g = J @ v_f
    mu = rng.uniform(*friction_range, size=num_contacts)
    return ContactProblem(G.astype(dtype), g.astype(dtype), mu.astype(dtype))
