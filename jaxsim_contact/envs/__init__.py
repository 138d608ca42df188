"""Reinforcement-learning environments (DESIGN §5 "RL", issue 7; seed 004 §IV-C, appendix F).

Brax-style functional API::

    env = jc.envs.make("cartpole_swingup")
    state = env.reset(jax.random.key(0))            # EnvState: obs, reward, done, metrics, sim, ...
    state = env.step(state, action)                   # pure; jit / vmap / grad / shard it
    env.action_size, env.observation_size, env.model

Tasks: ``cartpole_swingup``, ``hopper``, ``go2_run`` (quadruped), ``push_box`` (manipulation).
Batches: :func:`reset_batch`, :func:`rollout`; devices: :func:`batch_mesh`, :func:`shard_batch`.
Interoperability: :class:`jaxsim_contact.envs.gym.GymnasiumVectorEnv` (needs ``gymnasium``) and
:func:`jaxsim_contact.envs.brax.to_brax` (needs ``brax``), imported on demand.
"""

from ._base import Env, EnvErrorFlag, EnvState
from ._cartpole import CartpoleSwingup
from ._hopper import Hopper
from ._push import PushBox
from ._quadruped import Go2Run, go2_model
from ._registry import make, register, registered
from ._sharding import batch_mesh, reset_batch, rollout, shard_batch

register("cartpole_swingup", CartpoleSwingup)
register("hopper", Hopper)
register("go2_run", Go2Run)
register("push_box", PushBox)

__all__ = [
    "Env",
    "EnvState",
    "EnvErrorFlag",
    "make",
    "register",
    "registered",
    "CartpoleSwingup",
    "Hopper",
    "Go2Run",
    "go2_model",
    "PushBox",
    "batch_mesh",
    "shard_batch",
    "reset_batch",
    "rollout",
]
