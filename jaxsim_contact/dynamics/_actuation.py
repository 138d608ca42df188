"""Actuator activation dynamics and muscles (MuJoCo Computation chapter "Actuation model").

An actuator maps its input ``u`` (the control, clamped to ``ctrlrange``) to a scalar force
``gain(l, l̇) · w + bias(l, l̇)``, ``l`` / ``l̇`` its length and velocity. ``w`` is ``u`` for a
stateless actuator, else its activation ``a`` (``State.act``), which follows

    integrator    ȧ = u
    filter        ȧ = (u − a) / τ                      (Euler)
    filterexact   a⁺ = a + (u − a)(1 − e^{−h/τ})      (exact for constant u)
    muscle        ȧ = (ū − a) / τ(ū − a, a)            ū = clip(u, 0, 1), MuJoCo's time constants
                  τ_act (0.5 + 1.5 ā), τ_deact / (0.5 + 1.5 ā), ā = clip(a, 0, 1), switched by a
                  sigmoid of width ``dynamics_prm[2]`` (hard switch when 0)

and is clamped to ``actrange`` after each step (MuJoCo ``mj_nextActivation``). With ``actearly``
the force already uses ``a⁺``. A muscle's gain is ``−F · FL(L) · FV(V)`` and its bias
``−F · fpmax · FP(L)`` with MuJoCo's piecewise-quadratic curves of the normalised length ``L`` and
velocity ``V`` (``mju_muscleGain``, ``mju_muscleBias``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._model import ActuatorDynamics, Model

__all__ = ["clamp_controls", "activation_rate", "next_activation", "actuator_input",
           "muscle_gain", "muscle_bias"]

#: MuJoCo's ``mjMINVAL``: the floor of every divisor in the muscle curves
_MINVAL = 1e-15


def clamp_controls(model: Model, ctrl: jax.Array) -> jax.Array:
    """``ctrl`` ``(nu,)`` clamped to ``actuator_ctrl_range`` where limited."""
    ctrl_range = model.actuator_ctrl_range.astype(ctrl.dtype)
    return jnp.where(jnp.asarray(model.actuator_ctrl_limited, dtype=bool),
                     jnp.clip(ctrl, ctrl_range[:, 0], ctrl_range[:, 1]), ctrl)


def _kinds(model: Model) -> np.ndarray:
    states = model.actuator_states
    return np.asarray([states.dynamics[k] for k in states.stateful], dtype=object)


def _muscle_dynamics(ctrl, act, prm):
    """MuJoCo's muscle activation rate ``ȧ`` (``mju_muscleDynamics``)."""
    ctrl_clamped = jnp.clip(ctrl, 0.0, 1.0)
    act_clamped = jnp.clip(act, 0.0, 1.0)
    tau_act = prm[:, 0] * (0.5 + 1.5 * act_clamped)
    tau_deact = prm[:, 1] / (0.5 + 1.5 * act_clamped)
    width = prm[:, 2]
    excess = ctrl_clamped - act
    hard = jnp.where(excess > 0, tau_act, tau_deact)
    safe_width = jnp.where(width < _MINVAL, 1.0, width)
    smooth = tau_deact + (tau_act - tau_deact) * _sigmoid(excess / safe_width + 0.5)
    tau = jnp.where(width < _MINVAL, hard, smooth)
    return excess / jnp.maximum(_MINVAL, tau)


def _sigmoid(x):
    """MuJoCo's ``mju_sigmoid``: 0 below 0, 1 above 1, the quintic ``6x⁵ − 15x⁴ + 10x³`` between."""
    y = jnp.clip(x, 0.0, 1.0)
    return y * y * y * (3.0 * y * (2.0 * y - 5.0) + 10.0)


def activation_rate(model: Model, ctrl: jax.Array, act: jax.Array) -> jax.Array:
    """``ȧ`` ``(na,)`` of the stateful actuators (module docstring; MuJoCo ``act_dot``).

    Args:
      ctrl: ``(nu,)`` controls, already clamped (:func:`clamp_controls`).
      act: ``(na,)`` activations.
    """
    states = model.actuator_states
    index = np.asarray(states.stateful, dtype=np.int64)
    if index.size == 0:
        return jnp.zeros((0,), act.dtype)
    kinds = _kinds(model)
    u = ctrl[index]
    prm = states.dynamics_prm.astype(act.dtype)[index]
    tau = jnp.maximum(_MINVAL, prm[:, 0])
    filtered = (u - act) / tau
    rate = jnp.where(jnp.asarray(kinds == ActuatorDynamics.INTEGRATOR), u, filtered)
    if (kinds == ActuatorDynamics.MUSCLE).any():
        rate = jnp.where(jnp.asarray(kinds == ActuatorDynamics.MUSCLE),
                         _muscle_dynamics(u, act, prm), rate)
    return rate


def next_activation(model: Model, act: jax.Array, rate: jax.Array, dt: jax.Array) -> jax.Array:
    """``a⁺`` ``(na,)`` after one step of ``dt`` at rate ``rate`` (MuJoCo ``mj_nextActivation``):
    exact for ``filterexact``, Euler otherwise, clamped to ``actrange`` where limited."""
    states = model.actuator_states
    index = np.asarray(states.stateful, dtype=np.int64)
    if index.size == 0:
        return act
    kinds = _kinds(model)
    tau = jnp.maximum(_MINVAL, states.dynamics_prm.astype(act.dtype)[index, 0])
    exact = act + rate * tau * (1.0 - jnp.exp(-dt / tau))
    out = jnp.where(jnp.asarray(kinds == ActuatorDynamics.FILTEREXACT), exact, act + rate * dt)
    limited = np.asarray(states.act_limited, dtype=bool)[index]
    if limited.any():
        act_range = states.act_range.astype(act.dtype)[index]
        out = jnp.where(jnp.asarray(limited), jnp.clip(out, act_range[:, 0], act_range[:, 1]), out)
    return out


def actuator_input(model: Model, ctrl: jax.Array, act: jax.Array | None, dt: jax.Array) -> jax.Array:
    """``w`` ``(nu,)``: what multiplies each actuator's gain — its clamped control, its
    activation, or (``act_early``) its activation after this step."""
    states = model.actuator_states
    index = np.asarray(states.stateful, dtype=np.int64)
    if index.size == 0:
        return ctrl
    act = jnp.zeros((index.size,), ctrl.dtype) if act is None else act
    early = np.asarray(states.act_early, dtype=bool)[index]
    used = act
    if early.any():
        following = next_activation(model, act, activation_rate(model, ctrl, act), dt)
        used = jnp.where(jnp.asarray(early), following, act)
    return ctrl.at[index].set(used)


def _normalised(length, prm, length_range):
    """MuJoCo's optimal length ``L0`` and normalised length ``L`` of a muscle."""
    optimal = (length_range[:, 1] - length_range[:, 0]) / jnp.maximum(_MINVAL, prm[:, 1] - prm[:, 0])
    return optimal, prm[:, 0] + (length - length_range[:, 0]) / jnp.maximum(_MINVAL, optimal)


def _peak_force(prm, acc0):
    """``force``, or ``scale / acc0`` when ``force`` is negative (MuJoCo's automatic scaling)."""
    return jnp.where(prm[:, 2] < 0, prm[:, 3] / jnp.maximum(_MINVAL, acc0), prm[:, 2])


def _length_curve(length, lmin, lmax):
    """MuJoCo's ``mju_muscleGainLength``: 0 outside ``[lmin, lmax]``, peak 1 at ``L = 1``."""
    a = 0.5 * (lmin + 1.0)
    b = 0.5 * (1.0 + lmax)
    rising = 0.5 * ((length - lmin) / jnp.maximum(_MINVAL, a - lmin)) ** 2
    below_peak = 1.0 - 0.5 * ((1.0 - length) / jnp.maximum(_MINVAL, 1.0 - a)) ** 2
    above_peak = 1.0 - 0.5 * ((length - 1.0) / jnp.maximum(_MINVAL, b - 1.0)) ** 2
    falling = 0.5 * ((lmax - length) / jnp.maximum(_MINVAL, lmax - b)) ** 2
    curve = jnp.where(length <= a, rising,
                      jnp.where(length <= 1.0, below_peak, jnp.where(length <= b, above_peak, falling)))
    return jnp.where((lmin <= length) & (length <= lmax), curve, 0.0)


def muscle_gain(length, velocity, prm, length_range, acc0):
    """MuJoCo's muscle gain ``−F · FL(L) · FV(V)`` ``(k,)`` (``mju_muscleGain``).

    Args:
      length, velocity: ``(k,)`` actuator lengths (m) and velocities (m/s).
      prm: ``(k, 9)`` ``(range₀, range₁, force, scale, lmin, lmax, vmax, fpmax, fvmax)``.
      length_range: ``(k, 2)``; acc0: ``(k,)``.
    """
    force = _peak_force(prm, acc0)
    optimal, normal_length = _normalised(length, prm, length_range)
    normal_velocity = velocity / jnp.maximum(_MINVAL, optimal * prm[:, 6])
    length_curve = _length_curve(normal_length, prm[:, 4], prm[:, 5])
    fvmax = prm[:, 8]
    y = fvmax - 1.0
    velocity_curve = jnp.where(
        normal_velocity <= -1.0, 0.0,
        jnp.where(normal_velocity <= 0.0, (normal_velocity + 1.0) ** 2,
                  jnp.where(normal_velocity <= y,
                            fvmax - (y - normal_velocity) ** 2 / jnp.maximum(_MINVAL, y), fvmax)))
    return -force * length_curve * velocity_curve


def muscle_bias(length, prm, length_range, acc0):
    """MuJoCo's passive muscle force ``−F · fpmax · FP(L)`` ``(k,)`` (``mju_muscleBias``):
    half-quadratic from ``L = 1`` to ``(1 + lmax)/2``, linear beyond. Shapes as
    :func:`muscle_gain`."""
    force = _peak_force(prm, acc0)
    _, normal_length = _normalised(length, prm, length_range)
    b = 0.5 * (1.0 + prm[:, 5])
    width = jnp.maximum(_MINVAL, b - 1.0)
    quadratic = 0.5 * ((normal_length - 1.0) / width) ** 2
    linear = 0.5 + (normal_length - b) / width
    curve = jnp.where(normal_length <= 1.0, 0.0, jnp.where(normal_length <= b, quadratic, linear))
    return -force * prm[:, 7] * curve
