"""Time series of a trajectory and their matplotlib plots: contact forces and energies.

``contact_force_series`` / ``energy_series`` return NumPy arrays (no matplotlib needed);
``plot_contact_forces`` / ``plot_energy`` draw them on a matplotlib ``Axes`` (matplotlib is
imported only there: ``pip install matplotlib``). Host-side only.
"""

from __future__ import annotations

from functools import lru_cache

import jax
import numpy as np

from ..constraints import contact_slots
from ..dynamics import kinetic_energy, potential_energy

__all__ = ["contact_force_series", "energy_series", "plot_contact_forces", "plot_energy", "select_env"]


def select_env(trajectory, env_id=None, batch_axis: int = 0):
    """One environment of a trajectory: ``State`` leaves ``(T, ...)``.

    Args:
      trajectory: stacked states from ``jc.rollout`` (``q (T, nq)``), or a batch of them
        (``q (B, T, nq)`` with ``batch_axis=0``, ``(T, B, nq)`` with ``batch_axis=1``).
      env_id: environment of a batched trajectory (default 0); for an unbatched one, None or 0.
    Raises:
      ValueError: empty trajectory, ``q`` without a time axis, ``env_id`` out of range.
    """
    import jax

    q = np.asarray(getattr(trajectory, "q", trajectory))
    if q.ndim not in (2, 3):
        raise ValueError(f"trajectory.q must have shape (T, nq) or (B, T, nq); got {q.shape}")
    if q.ndim == 2:
        if env_id not in (None, 0):
            raise ValueError(f"env_id {env_id} out of range: the trajectory is not batched (only env 0 exists)")
        selected = trajectory
    else:
        if batch_axis not in (0, 1):
            raise ValueError(f"batch_axis must be 0 (B, T, nq) or 1 (T, B, nq); got {batch_axis}")
        num_envs = q.shape[batch_axis]
        index = 0 if env_id is None else int(env_id)
        if not 0 <= index < num_envs:
            raise ValueError(f"env_id {env_id} out of range: the trajectory has {num_envs} environments")
        selected = jax.tree_util.tree_map(
            lambda x: np.asarray(x)[index] if batch_axis == 0 else np.asarray(x)[:, index], trajectory)
    if np.asarray(getattr(selected, "q", selected)).shape[0] == 0:
        raise ValueError("trajectory is empty: it has 0 frames")
    return selected


def _times(model, trajectory, num_frames: int) -> np.ndarray:
    time = getattr(trajectory, "time", None)
    if time is None:
        return np.arange(num_frames) * float(model.options.dt)
    return np.asarray(time, np.float64)


def contact_force_series(model, trajectory, env_id=None, batch_axis: int = 0) -> dict:
    """Per-step totals of the contact forces of one environment.

    Args:
      model: the scene; trajectory: stacked states with contact data (``jc.rollout``), batched or
        not (see :func:`select_env`); env_id, batch_axis: as in :func:`select_env`.
    Returns:
      dict of ``(T,)`` arrays: ``time`` (s); ``normal``: sum of the normal forces over the active
      contact slots (N); ``friction``: sum of the tangential force magnitudes (N) —
      self-cancelling internal forces count too (forces at stiction are not unique: a resting
      cube's corners may pull against each other, seed 001 §IV-A);
      ``num_active``: active contact slots; ``penetration``: deepest penetration (m).
      Joint-limit slots are excluded (they follow the contact slots, DESIGN §2 stage 6).
    Raises:
      ValueError: a trajectory without contact data, or the errors of :func:`select_env`.

    Forces are the solver's ``λ`` in the contact frame ``(t1, t2, n)`` (seed 001 §II), in newtons.
    """
    one = select_env(trajectory, env_id, batch_axis)
    contact = getattr(one, "contact", None)
    if contact is None:
        raise ValueError("the trajectory has no contact data (trajectory.contact is None): "
                         "pass the stacked states of jc.rollout")
    slots = contact_slots(model)
    force = np.asarray(contact.force, np.float64)[:, :slots]
    active = np.asarray(contact.active, bool)[:, :slots]
    normal = np.where(active, force[..., 2], 0.0).sum(axis=1)
    friction = np.where(active, np.linalg.norm(force[..., :2], axis=-1), 0.0).sum(axis=1)
    return dict(time=_times(model, one, len(force)), normal=normal, friction=friction,
                num_active=active.sum(axis=1), penetration=np.asarray(contact.penetration, np.float64))


@lru_cache(maxsize=None)
def _energy_function():
    def energies(model, q, v):
        return kinetic_energy(model, q, v), potential_energy(model, q)

    return jax.jit(jax.vmap(energies, in_axes=(None, 0, 0)))


def energy_series(model, trajectory, env_id=None, batch_axis: int = 0) -> dict:
    """Kinetic, potential and total energy (J) of one environment at every step.

    Args: as in :func:`contact_force_series` (the trajectory needs ``q`` and ``v``).
    Returns:
      dict of ``(T,)`` arrays: ``time`` (s), ``kinetic`` (``½ vᵀM(q)v``), ``potential``
      (gravity + joint springs, zero at the world origin height), ``total``.
    """
    one = select_env(trajectory, env_id, batch_axis)
    if getattr(one, "v", None) is None:
        raise ValueError("energy_series needs velocities: pass the stacked states of jc.rollout")
    q, v = np.asarray(one.q), np.asarray(one.v)
    if q.shape[-1] != model.nq or v.shape[-1] != model.nv or len(q) != len(v):
        raise ValueError(f"trajectory q {q.shape} / v {v.shape} do not fit the model (nq={model.nq}, nv={model.nv})")
    dtype = np.asarray(model.qpos0).dtype
    kinetic, potential = _energy_function()(model, q.astype(dtype), v.astype(dtype))
    kinetic, potential = np.asarray(kinetic, np.float64), np.asarray(potential, np.float64)
    return dict(time=_times(model, one, len(q)), kinetic=kinetic, potential=potential,
                total=kinetic + potential)


def _axes(ax):
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:  # matplotlib is optional at run time
        raise ImportError("the plot helpers need matplotlib: pip install matplotlib") from error
    return plt.subplots(figsize=(7, 3.5))[1]


def plot_contact_forces(model, trajectory, env_id=None, ax=None, batch_axis: int = 0):
    """Plot :func:`contact_force_series` (total normal and friction force vs time; the number of
    active contacts on a twin axis). Returns the matplotlib ``Axes``."""
    series = contact_force_series(model, trajectory, env_id, batch_axis)
    ax = _axes(ax)
    ax.plot(series["time"], series["normal"], label="normal (sum)", color="#4e79a7")
    ax.plot(series["time"], series["friction"], label="friction |t| (sum)", color="#f28e2b")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("contact force (N)")
    twin = ax.twinx()
    twin.step(series["time"], series["num_active"], where="post", color="#999999", lw=0.8,
              label="active contacts")
    twin.set_ylabel("active contacts")
    twin.set_ylim(0, 1.15 * max(1, int(np.max(series["num_active"]))))
    lines = ax.get_legend_handles_labels()
    more = twin.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="upper right", fontsize="small")
    ax.set_title("contact forces" + ("" if env_id is None else f" (env {env_id})"))
    return ax


def plot_energy(model, trajectory, env_id=None, ax=None, batch_axis: int = 0):
    """Plot :func:`energy_series` (kinetic, potential, total vs time). Returns the ``Axes``."""
    series = energy_series(model, trajectory, env_id, batch_axis)
    ax = _axes(ax)
    ax.plot(series["time"], series["kinetic"], label="kinetic", color="#e15759")
    ax.plot(series["time"], series["potential"], label="potential", color="#59a14f")
    ax.plot(series["time"], series["total"], label="total", color="black", lw=1.5)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("energy (J)")
    ax.legend(loc="best", fontsize="small")
    ax.set_title("energy" + ("" if env_id is None else f" (env {env_id})"))
    return ax
