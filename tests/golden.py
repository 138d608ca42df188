"""Recorded float64 trajectories of five scenes: the reference for behaviour-preserving refactors.

For each scene (the demo, MJX's humanoid, the Go2 and the Panda on a floor, the 10-box tower):
100 steps from a fixed start with fixed controls — ``q``, ``v`` and the contact forces of every
step — and one step Jacobian ``∂v⁺/∂(q, v)`` (``jax.jacfwd``) at step 50. The arrays are stored in
``tests/data/golden/<scene>.npz``; ``<scene>.json`` holds their SHA-256 digests **per machine**.

Bits depend on the machine: XLA:CPU compiles for the host's vector units (AVX-512 vs AVX2 changes
reduction orders and FMA contractions), and jaxlib's version changes the compiler. The same code gave
other bits on the two CPU types CI has run on (panda's ``q`` by 1e-17, the chaotic humanoid's by 1e-5
after 100 steps). So :func:`machine_key` fingerprints the floating-point path (jaxlib version, the
XLA flags, the CPU's SIMD features, the digest of a small canary program, and the number of cores
the process may use — the script pins itself to one core, as the suite's workers are), and
``tests/test_golden.py``:

- on a machine with recorded digests, requires every array **bit for bit**;
- on any other machine, requires the first ``PREFIX_STEPS`` steps of ``q``, ``v`` and the forces to
  match the stored arrays within ``PREFIX_RTOL`` of each array's scale (rounding differences grow
  chaotically later: the humanoid's ``q`` differs by 3e-6 at step 50 between two CPUs, while
  step 25 agrees to 1e-13 relative; any real change of the step moves its first steps by far more).

Regenerate (only when a numerical change is intended, and say so in the commit and the note, with
the size of the difference): ``python tests/golden.py --write`` — it replaces the arrays and every
machine's digests with this machine's. On a new machine with unchanged code,
``python tests/golden.py --add-machine`` adds this machine's digests (after the prefix check passes).
The arrays are compiled and run under the test suite's XLA settings (``tests/conftest.py``), so this
script sets the same flags.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import warnings
from pathlib import Path

GOLDEN_DIR = Path(__file__).resolve().parent / "data" / "golden"
SCENES = ("demo", "humanoid", "go2", "panda", "tower")
STEPS = 100
JACOBIAN_AT = 50
# the cross-machine check: the first PREFIX_STEPS steps, relative to each array's largest entry
PREFIX_STEPS = 25
PREFIX_RTOL = 1e-9
_SIMD_FEATURES = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl",
                  "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "asimd", "sve")


def _robot(name: str):
    """The Go2 (floating, 0.45 m up) or the Panda (fixed base) on a floor, self-collision off,
    start clipped into the joint ranges (as ``tests/dynamics/test_robots_and_state.py``)."""
    import jax.numpy as jnp
    import numpy as np

    import jaxsim_contact as jc
    from jaxsim_contact.io._urdf import default_package_dirs

    robots = next(d for d in default_package_dirs() if d.name == "robots")
    if name == "go2":
        path, kwargs, height = robots / "go2_description/urdf/go2.urdf", {"floating_base": True}, 0.45
    else:
        path, kwargs, height = robots / "panda_description/urdf/panda.urdf", {"ignore_equality": True}, None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*ignoring equality constraint")
        model = jc.load(path, **kwargs)
    model = jc.io.add_floor(model)
    model = jc.io.set_collision(model, self_collision=False, world_is_robot_base=height is None)
    q0 = np.asarray(model.qpos0).copy()
    if height is not None:
        q0[2] = height
    for j in range(model.njnt):
        adr = model.tree.joint_qpos_adr[j]
        if model.joint_limited[j] and model.tree.joint_type[j] in (jc.JointType.HINGE, jc.JointType.SLIDE):
            lo, hi = np.asarray(model.joint_range[j])
            q0[adr] = np.clip(q0[adr], lo, hi)
    return model, jnp.asarray(q0)


def scene(name: str):
    """``(model, initial state, controls (STEPS, nu))`` of a golden scene, float64."""
    import jax.numpy as jnp
    import numpy as np

    import jaxsim_contact as jc

    if name in ("demo", "tower"):
        model = jc.scenes.load(name, dtype=jnp.float64)
        state = jc.init(model)
    elif name == "humanoid":
        import mujoco.mjx

        path = Path(mujoco.mjx.__file__).parent / "test_data" / "humanoid" / "humanoid.xml"
        mj = jc.io.compile_mjmodel(path)
        model = jc.io.from_mjmodel(mj)
        state = jc.init(model, q=jnp.asarray(mj.key_qpos[0]))
    else:
        model, q0 = _robot(name)
        state = jc.init(model, q=q0)
    rng = np.random.default_rng(7)
    ctrls = jnp.asarray(rng.uniform(-1.0, 1.0, (STEPS, model.nu)), jnp.float64)
    return model, state, ctrls


def compute(name: str) -> dict:
    """The golden arrays of one scene: ``q (T, nq)``, ``v (T, nv)``, ``force (T, slots, 3)``,
    ``jacobian (nv, nq + nv)``."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxsim_contact as jc

    model, state, ctrls = scene(name)
    _, traj = jax.jit(jc.rollout)(model, state, ctrls)
    # the state after JACOBIAN_AT steps: row JACOBIAN_AT - 1 of the stacked trajectory
    at = jax.tree_util.tree_map(lambda x: x[JACOBIAN_AT - 1], traj)

    def next_velocity(q, v):
        return jc.step(model, eqx_replace(at, q=q, v=v), ctrls[JACOBIAN_AT]).v

    jq, jv = jax.jit(jax.jacfwd(next_velocity, argnums=(0, 1)))(at.q, at.v)
    return {"q": np.asarray(traj.q), "v": np.asarray(traj.v), "force": np.asarray(traj.contact.force),
            "jacobian": np.concatenate([np.asarray(jq), np.asarray(jv)], axis=1)}


def eqx_replace(state, **changes):
    import equinox as eqx

    names = list(changes)
    return eqx.tree_at(lambda s: [getattr(s, n) for n in names], state, [changes[n] for n in names])


def digest(array) -> str:
    """SHA-256 of an array's dtype, shape and bytes (C order)."""
    import numpy as np

    array = np.ascontiguousarray(array)
    h = hashlib.sha256(f"{array.dtype.str}{array.shape}".encode())
    h.update(array.tobytes())
    return h.hexdigest()


def _canary():
    """A small float64 program with the operations whose bits depend on the CPU's code generation:
    long and short reductions, a matrix product, transcendental functions, a linear solve."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    x = jnp.asarray(np.random.default_rng(3).uniform(-1.0, 1.0, 257))
    square = x[:225].reshape(15, 15)

    @jax.jit
    def program(x, square):
        return jnp.concatenate([
            jnp.sum(x)[None], jnp.cumsum(x), (square @ square.T).ravel(), jnp.exp(x), jnp.sin(7.0 * x),
            jnp.log1p(x * x), jnp.arctan2(x, x[::-1]), jnp.sqrt(jnp.abs(x)),
            jnp.linalg.solve(square + 15.0 * jnp.eye(15), x[:15]), jnp.linalg.norm(square, axis=1)])

    return program(x, square)


def machine_key() -> str:
    """Fingerprint of this machine's float64 arithmetic as the suite compiles it: ``jaxlib``'s
    version, the XLA flags, the CPU's architecture and SIMD features, the digest of
    :func:`_canary`'s result and the number of cores the process may use (12 hex digits of their
    SHA-256)."""
    import platform

    import jaxlib

    try:
        cpu_flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        cpu_flags = set()
    # the flags as a set: the suite's workers inherit XLA_FLAGS with the suite's flags appended again
    xla_flags = " ".join(sorted(set(os.environ.get("XLA_FLAGS", "").split())))
    # the cores this process may use: XLA:CPU's legacy emitters split large loops over its thread
    # pool, and the humanoid's step Jacobian differs by 6e-14 between one core (the suite's pinned
    # workers) and two
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    parts = [jaxlib.__version__, xla_flags, platform.machine(),
             ",".join(f for f in _SIMD_FEATURES if f in cpu_flags), digest(_canary()), str(cores)]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:12]


def prefix_differences(now: dict, stored) -> dict:
    """``{array: relative difference}`` for ``q``, ``v`` and ``force`` over the first
    ``PREFIX_STEPS`` steps where it exceeds ``PREFIX_RTOL`` (difference / the stored array's
    largest entry over the prefix); empty when the prefix agrees."""
    import numpy as np

    over = {}
    for key in ("q", "v", "force"):
        value, reference = now[key][:PREFIX_STEPS], stored[key][:PREFIX_STEPS]
        if value.shape != reference.shape:
            over[key] = f"shape {value.shape} != {reference.shape}"
            continue
        scale = max(float(np.max(np.abs(reference), initial=0.0)), 1e-300)
        relative = float(np.max(np.abs(value - reference), initial=0.0)) / scale
        if not relative <= PREFIX_RTOL:
            over[key] = relative
    return over


def load_record(name: str) -> dict:
    """``{"machines": {machine key: {array: digest}}}`` of a scene."""
    return json.loads((GOLDEN_DIR / f"{name}.json").read_text())


def _save_record(name: str, record: dict) -> None:
    (GOLDEN_DIR / f"{name}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def write(names) -> None:
    """Recompute and store the arrays; this machine's digests replace every machine's."""
    import numpy as np

    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    key = machine_key()
    for name in names:
        arrays = compute(name)
        np.savez_compressed(GOLDEN_DIR / f"{name}.npz", **arrays)
        _save_record(name, {"machines": {key: {k: digest(v) for k, v in arrays.items()}}})
        print(name, key, {k: v.shape for k, v in arrays.items()})


def add_machine(names) -> None:
    """Add this machine's digests, provided its arrays pass the cross-machine prefix check."""
    import numpy as np

    key = machine_key()
    for name in names:
        arrays = compute(name)
        over = prefix_differences(arrays, np.load(GOLDEN_DIR / f"{name}.npz"))
        if over:
            raise SystemExit(f"{name}: the first {PREFIX_STEPS} steps differ from the stored ones "
                             f"beyond {PREFIX_RTOL:g} (relative): {over}; not adding machine {key}")
        record = load_record(name)
        record["machines"][key] = {k: digest(v) for k, v in arrays.items()}
        _save_record(name, record)
        print(name, "added machine", key)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true",
                        help="recompute and store the golden arrays (drops other machines' digests)")
    parser.add_argument("--add-machine", action="store_true",
                        help="add this machine's digests (code unchanged, new CPU or jaxlib)")
    parser.add_argument("--scenes", nargs="*", default=list(SCENES), choices=SCENES)
    args = parser.parse_args()
    # one core, as each of the suite's xdist workers is pinned (tests/conftest.py): see machine_key
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    # the suite's XLA settings (tests/suite_flags.py, set by tests/conftest.py)
    from suite_flags import SUITE_XLA_FLAGS

    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + SUITE_XLA_FLAGS).strip()
    import jax

    jax.config.update("jax_enable_x64", True)
    if args.write:
        write(args.scenes)
    elif args.add_machine:
        add_machine(args.scenes)
    else:
        key = machine_key()
        for name in args.scenes:
            stored = load_record(name)["machines"].get(key)
            now = {k: digest(v) for k, v in compute(name).items()}
            if stored is None:
                print(name, f"no digests recorded for machine {key}")
            else:
                print(name, "unchanged" if now == stored
                      else f"CHANGED: {sorted(k for k in now if now[k] != stored[k])}")
