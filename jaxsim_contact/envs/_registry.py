"""Registry of environments: ``jc.envs.make(name, **kwargs)`` (DESIGN §5 "RL")."""

from __future__ import annotations

from typing import Callable

from ._base import Env

__all__ = ["make", "register", "registered"]

_REGISTRY: dict[str, Callable[..., Env]] = {}


def register(name: str, factory: Callable[..., Env]) -> None:
    """Make ``make(name, **kwargs)`` return ``factory(**kwargs)``.

    Raises:
      ValueError: ``name`` is already registered (or not a non-empty string).
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"environment names are non-empty strings, got {name!r}")
    if name in _REGISTRY:
        raise ValueError(f"environment {name!r} is already registered")
    _REGISTRY[name] = factory


def registered() -> tuple[str, ...]:
    """Names accepted by :func:`make`, sorted."""
    return tuple(sorted(_REGISTRY))


def make(name: str, **kwargs) -> Env:
    """Build the environment ``name`` (host side: loads and compiles its model once).

    Built in: ``cartpole_swingup`` (seed 004 appendix F, eq. 60), ``hopper`` (eqs. 61–63),
    ``go2_run`` (quadruped on the Unitree Go2 URDF), ``push_box`` (fingertip pushing a cube to a
    goal pose). Keyword arguments go to the task's constructor (e.g. ``episode_length``,
    ``frame_skip``, ``dtype``, or a ready ``model``).

    Raises:
      ValueError: unknown ``name`` (the message lists the available names).
      TypeError: a keyword the task does not accept.
    """
    if name not in _REGISTRY:
        raise ValueError(f"unknown environment {name!r}; available: {', '.join(registered())}")
    return _REGISTRY[name](**kwargs)
