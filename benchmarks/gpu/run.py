"""The one command for a lent GPU (issue 47): everything measured in one call, into one folder.

    python benchmarks/gpu/run.py --out RESULTS_DIR              # on the GPU, ≤ 8 minutes
    python benchmarks/gpu/run.py --out RESULTS_DIR --toy        # any machine, toy sizes (the test)

What it measures, each engine in the same process on the same device:

* **step** — env-steps/s of ``jit(vmap(scan(step)))`` for the humanoid, ant, Go2, Panda and the
  10-box tower (``benchmarks/_scenes.py``) at batch 1024 / 4096 / 16384 in float32 and 4096 in
  float64 (and the humanoid at 8192, the batch of the issue's target), with our default hard model
  (ADMM-NCP, default options) and MuJoCo's soft model (``constraint_model="mujoco"``,
  ``jc.io.mujoco_compatible``: the physics MJX simulates, its Newton capped at the file's
  iterations), next to MJX (``impl="jax"``) on the same ``MjModel``. Our
  solver iterations per step are reported as the lane mean and the *lane max* (the mean over steps
  of the largest count in the batch: what a vmapped loop costs on a GPU). Each lane starts with
  its own small random velocity (``LANE_VELOCITY_SCALE``, the same for both engines), and the
  timed calls continue the simulation: ``settle_calls`` untimed calls of 20 steps first, then each
  timed call from the previous call's final states — so a dropped robot is timed standing on the
  floor, not falling towards it.
* **gjk** — batched ``jc.collision.distance`` (GJK, EPA when penetrating) at 4096 and 65536 pairs of
  random ellipsoids and 100-vertex hulls, separated and overlapping, µs per query — to set against
  coal's native CPU time in ``benchmarks/results/gjk*.md``.
* **gradient** — ``vmap(grad)`` of a 100-step rollout loss (sum of squares of the final ``q`` and
  ``v``, with respect to the initial velocity) at batch 1024, next to the forward rollout.
* **memory** — XLA's own estimate per executable (arguments + outputs + temporaries) and the
  device's peak bytes in use per process.

Budget. Two child processes, float32 then float64 (``jax_enable_x64`` is per process), each with a
deadline. Work is in priority groups (the headline batch 4096 and the humanoid at 8192 first); a
group's executables are lowered one after another, then compiled in parallel threads (XLA releases
the GIL; ``--compile-workers``), then run one at a time on an idle host. A group that no longer
fits is reported as skipped, never silently dropped; every job's result is written as soon as it
exists, so a run cut short keeps what it measured. Compile times are wall times of one compile
among ``--compile-workers`` concurrent ones (the report says how many): compare ours with MJX's
in the same run, not with a compile alone.

Timings: the first call after compiling is a warm-up, then the median of ``--repeats`` calls, each
blocked on its result (``jax.block_until_ready``), wall clock.

Writes ``RESULTS_DIR/gpu_<device>.md`` and ``.json`` (``<device>`` from ``device_kind``, e.g.
``nvidia_h200``) and one log per child. ``benchmarks/README.md`` has the exact device call and
``benchmarks/gpu/fetch_carry.sh`` the wheels and model files it carries.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import functools
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
BENCHMARKS = HERE.parent
REPO = BENCHMARKS.parent

#: the two child processes and their shares of the budget
DTYPE_SHARES = (("float32", 0.68), ("float64", 0.32))

FULL = dict(
    scenes=("humanoid", "ant", "go2", "panda", "tower"),
    batches_f32=(1024, 4096, 16384), batch_f64=4096, headline_batch=4096,
    target=("humanoid", 8192), steps=20, repeats=3, settle_calls=3,
    gjk_pairs=(4096, 65536), gjk_distinct=256,
    gjk_cases=(("ellipsoid", "separated"), ("ellipsoid", "overlapping"),
               ("hull100", "separated"), ("hull100", "overlapping")),
    grad_scene="go2", grad_batch=1024, grad_steps=100, float64_extras=True,
)
TOY = dict(
    scenes=("box",), batches_f32=(2,), batch_f64=2, headline_batch=2, target=None,
    steps=2, repeats=1, settle_calls=1, gjk_pairs=(8,), gjk_distinct=4,
    gjk_cases=(("ellipsoid", "overlapping"), ("hull100", "separated")),
    grad_scene="box", grad_batch=2, grad_steps=3, float64_extras=False,
)

#: the command's sections (``--sections``)
SECTIONS = ("step", "gjk", "gradient")

SOFT = "MuJoCo soft"
DEFAULT = "default hard"

#: hint appended to an out-of-memory error (issue 47, "Bad input")
OOM_HINT = ("out of device memory: use a smaller batch, or jc.chunked_vmap(fn, chunk) to run the "
            "batch in chunks of `chunk` environments")


# ---- orchestrator -------------------------------------------------------------------------------

def main(argv=None) -> int:
    args = parse_args(argv)
    if args.child:
        return child(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    deadline = start + args.budget_s
    reports = []
    shares = [(d, s) for d, s in DTYPE_SHARES if d in args.dtypes]
    passthrough = (["--toy"] if args.toy else []) + (["--no-target"] if args.no_target else []) + (
        ["--scenes", *args.scenes] if args.scenes else []) + ["--sections", *args.sections]
    for index, (dtype, share) in enumerate(shares):
        left_shares = sum(s for _, s in shares[index:])
        now = time.time()
        child_deadline = now + (deadline - now) * share / left_shares
        command = [sys.executable, str(Path(__file__).resolve()), "--child", dtype,
                   "--deadline", f"{child_deadline:.1f}", "--out", str(out),
                   "--compile-workers", str(args.compile_workers)] + passthrough
        log = out / f"log_{dtype}.txt"
        print(f"[gpu] {dtype}: until +{child_deadline - start:.0f} s, log {log}", flush=True)
        with open(log, "w") as handle:
            try:
                # the child exits itself at its deadline; this only catches a hang
                subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT,
                               timeout=child_deadline - now + 60, check=False)
            except subprocess.TimeoutExpired:
                print(f"[gpu] {dtype} child killed after its deadline", flush=True)
        path = out / f"child_{dtype}.json"
        if path.exists():
            reports.append(json.loads(path.read_text()))
        else:
            reports.append(dict(meta=dict(dtype=dtype, error=f"no results (see {log.name})"),
                                rows=[]))
        print(log.read_text()[-3000:], flush=True)
    result = dict(meta=dict(command=" ".join(["python", "benchmarks/gpu/run.py"] + (argv or sys.argv[1:])),
                            budget_s=args.budget_s, wall_s=round(time.time() - start, 1),
                            date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                            commit=_git_commit(), nvidia_smi=_nvidia_smi()),
                  children=reports)
    device = next((r["meta"].get("device_kind") for r in reports if r["meta"].get("device_kind")), "unknown")
    stem = "gpu_" + (re.sub(r"[^a-z0-9]+", "_", device.lower()).strip("_") or "unknown")
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1))
    (out / f"{stem}.md").write_text(markdown(result))
    print((out / f"{stem}.md").read_text())
    return 0


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="results folder (created)")
    parser.add_argument("--toy", action="store_true", help="toy sizes (CPU, the test suite)")
    parser.add_argument("--budget-s", type=float, default=420.0,
                        help="wall-clock budget of the whole run (s); default 7 minutes")
    parser.add_argument("--compile-workers", type=int, default=max(1, (os.cpu_count() or 2) - 2),
                        help="executables compiled at once (threads)")
    parser.add_argument("--dtypes", nargs="+", default=[d for d, _ in DTYPE_SHARES],
                        choices=[d for d, _ in DTYPE_SHARES], help="children to run (default both)")
    parser.add_argument("--scenes", nargs="+", default=None,
                        help="step scenes, the first one leading (default: humanoid ant go2 panda tower)")
    parser.add_argument("--no-target", action="store_true",
                        help="leave out the humanoid at batch 8192 (the issue's target row)")
    parser.add_argument("--sections", nargs="+", default=list(SECTIONS), choices=SECTIONS,
                        help="what to measure (default all): a rerun can spend its budget on the "
                             "step rows a first call left out")
    parser.add_argument("--child", choices=[d for d, _ in DTYPE_SHARES], help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _nvidia_smi() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "no nvidia-smi"


# ---- jobs ---------------------------------------------------------------------------------------

@dataclasses.dataclass
class Job:
    """One executable to compile and time. ``prepare() -> (fn, args)``; ``summarize(out) -> dict``
    turns the last call's output into metrics; ``work`` is env-steps (or queries) per call."""

    section: str
    group: int
    key: dict
    prepare: Callable[[], tuple[Callable, tuple]]
    summarize: Callable[[Any], dict]
    work: int
    #: for a step job: the next call's arguments from this call's output (the final states)
    advance: Callable[[Any], tuple] | None = None
    result: dict = dataclasses.field(default_factory=dict)


def child(args) -> int:
    """One dtype's process: plan, then per group lower → compile in parallel → time serially."""
    dtype = args.child
    import jax

    jax.config.update("jax_enable_x64", dtype == "float64")
    sizes = dict(TOY if args.toy else FULL)
    if args.scenes:
        sizes["scenes"] = tuple(args.scenes)
    if args.no_target:
        sizes["target"] = None
    sys.path.insert(0, str(BENCHMARKS))
    device = jax.devices()[0]
    meta = dict(dtype=dtype, backend=jax.default_backend(), device_kind=device.device_kind,
                devices=len(jax.devices()), jax=jax.__version__, python=platform.python_version(),
                compile_workers=args.compile_workers, steps_per_call=sizes["steps"],
                repeats=sizes["repeats"], deadline_in_s=round(args.deadline - time.time(), 1))
    out_path = Path(args.out) / f"child_{dtype}.json"
    jobs = [job for job in plan(sizes, dtype) if job.section in args.sections]
    meta["groups"] = sorted({j.group for j in jobs})

    def save():
        meta["peak_bytes_in_use"] = _peak_bytes(device)
        rows = [dict(section=j.section, group=j.group, **j.key, **j.result) for j in jobs]
        out_path.write_text(json.dumps(dict(meta=meta, rows=rows), indent=1, default=float))

    save()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.compile_workers)
    for group in meta["groups"]:
        members = [j for j in jobs if j.group == group]
        left = args.deadline - time.time()
        if left < (5 if args.toy else 20):
            for job in members:
                job.result = dict(skipped=f"budget: {left:.0f} s left before group {group}")
            continue
        print(f"[{dtype}] group {group}: {len(members)} jobs, {left:.0f} s left", flush=True)
        futures = {}
        for job in members:  # tracing and lowering hold the GIL: one after another
            if time.time() > args.deadline - 10:
                job.result = dict(skipped="budget: deadline reached while lowering")
                continue
            try:
                t0 = time.perf_counter()
                fn, fn_args = job.prepare()
                if bool(jax.config.jax_enable_x64) != (dtype == "float64"):
                    # a library or script flipped the process's dtype while preparing
                    raise RuntimeError(f"jax_enable_x64 changed while preparing {job.key}")
                floats = {str(x.dtype) for x in jax.tree_util.tree_leaves(fn_args)
                          if jax.numpy.issubdtype(x.dtype, jax.numpy.floating)}
                if floats - {dtype}:
                    raise RuntimeError(f"{job.key}: arguments in {sorted(floats)}, not {dtype}")
                lowered = jax.jit(fn).lower(*fn_args)
                job.result["lower_s"] = time.perf_counter() - t0
                futures[pool.submit(_compile, lowered)] = (job, fn_args)
            except Exception as err:  # one scene an engine cannot run is reported, not fatal
                job.result["error"] = _describe(err)
                print(f"[{dtype}] {job.key}: {job.result['error']}", flush=True)
        # leave a quarter of what is left for running what compiled
        wait_s = max(1.0, 0.75 * (args.deadline - time.time()))
        done, pending = concurrent.futures.wait(futures, timeout=wait_s)
        for future in pending:
            job, _ = futures[future]
            job.result["skipped"] = f"budget: compile not finished within {wait_s:.0f} s"
        for future in done:
            job, fn_args = futures[future]
            try:
                compiled, compile_s = future.result()
                job.result["compile_s"] = compile_s
                job.result.update(_memory(compiled))
                if time.time() > args.deadline - 2:
                    job.result["skipped"] = "budget: deadline reached before running"
                    continue
                job.result.update(_time(compiled, fn_args, sizes["repeats"], job.work,
                                        job.advance, sizes["settle_calls"]))
                job.result.update(job.summarize(job.result.pop("out")))
            except Exception as err:
                job.result["error"] = _describe(err)
            print(f"[{dtype}] {job.key}: " + json.dumps(
                {k: (round(v, 4) if isinstance(v, float) else v) for k, v in job.result.items()}),
                flush=True)
            save()
        save()
    save()
    sys.stdout.flush()
    # compiles still running in threads are abandoned: the process ends at its deadline
    os._exit(0)


def _compile(lowered):
    t0 = time.perf_counter()
    compiled = lowered.compile()
    return compiled, time.perf_counter() - t0


def _time(compiled, fn_args, repeats: int, work: int, advance=None, settle_calls: int = 0) -> dict:
    """Blocked wall times of ``compiled(*fn_args)``: the first call apart, then the median of
    ``repeats``. With ``advance`` (a step job), each call continues from the previous one's final
    state (``fn_args = advance(out)``) and ``settle_calls`` untimed calls come first, so the timed
    steps are those of a settled simulation (a robot dropped onto the floor is standing on it),
    not the first steps from the start pose over and over."""
    import jax

    t0 = time.perf_counter()
    out = jax.block_until_ready(compiled(*fn_args))
    first = time.perf_counter() - t0
    calls_over_10s = first >= 10
    for _ in range(0 if advance is None or calls_over_10s else settle_calls):
        fn_args = advance(out)
        out = jax.block_until_ready(compiled(*fn_args))
    # a call over 10 s is timed once more, not `repeats` times
    times = []
    for _ in range(1 if calls_over_10s else repeats):
        if advance is not None:
            fn_args = advance(out)
        t0 = time.perf_counter()
        out = jax.block_until_ready(compiled(*fn_args))
        times.append(time.perf_counter() - t0)
    seconds = statistics.median(times)
    return dict(first_call_s=first, seconds=seconds, rate_per_s=work / seconds, out=out)


def _memory(compiled) -> dict:
    try:
        analysis = compiled.memory_analysis()
        total = (analysis.argument_size_in_bytes + analysis.output_size_in_bytes
                 + analysis.temp_size_in_bytes)
        return dict(xla_memory_mib=total / 2**20, xla_temp_mib=analysis.temp_size_in_bytes / 2**20)
    except Exception:  # not every backend reports it
        return {}


def _peak_bytes(device) -> int | None:
    try:
        return int(device.memory_stats()["peak_bytes_in_use"])
    except Exception:  # the CPU backend keeps no statistics
        return None


def _describe(err: BaseException) -> str:
    text = f"{type(err).__name__}: {err}"
    if "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower():
        text = f"{OOM_HINT}. {text}"
    tail = "".join(traceback.format_tb(err.__traceback__)[-2:])
    return (text[:600] + " | " + tail[-400:]).replace("\n", " ")


# ---- the plan -----------------------------------------------------------------------------------

def plan(sizes: dict, dtype: str) -> list[Job]:
    """Every job of one dtype, each in its priority group (1 runs first; a later group is what a
    short budget drops). float32: the humanoid (the issue's target), the gradient and GJK; the
    other scenes; the soft setting; the other batch sizes. float64: batch 4096 only."""
    jobs: list[Job] = []
    scenes, steps = sizes["scenes"], sizes["steps"]
    lead, others = scenes[0], scenes[1:]
    if dtype == "float32":
        batch = sizes["headline_batch"]
        jobs += step_jobs(lead, batch, group=1, steps=steps)
        if sizes["target"]:
            jobs += step_jobs(*sizes["target"], group=1, steps=steps)
        jobs += [gradient_job(sizes, "forward", group=1), gradient_job(sizes, "grad", group=1)]
        jobs += gjk_jobs(sizes, group=1)
        for scene in others:
            jobs += step_jobs(scene, batch, group=2, steps=steps)
        for scene in scenes:
            jobs += step_jobs(scene, batch, group=3, steps=steps, settings=(SOFT,), engines=("ours",))
        others_batches = sorted((b for b in sizes["batches_f32"] if b != batch), reverse=True)
        for index, other in enumerate(others_batches):  # the largest batch first
            for scene in scenes:
                jobs += step_jobs(scene, other, group=4 + index, steps=steps)
                jobs += step_jobs(scene, other, group=4 + len(others_batches) + index,
                                  steps=steps, settings=(SOFT,), engines=("ours",))
        return jobs
    batch = sizes["batch_f64"]
    for scene in scenes:
        jobs += step_jobs(scene, batch, group=1, steps=steps)
    if sizes["float64_extras"]:
        jobs += gjk_jobs(sizes, group=2)
        for scene in scenes:
            jobs += step_jobs(scene, batch, group=3, steps=steps, settings=(SOFT,), engines=("ours",))
    return jobs


_SCENE_CACHE: dict = {}
_PER_ENV: dict = {}


def _per_env(key, fn):
    """One ``jax.jit(fn)`` per ``key``, vmapped by every job that shares it: the jobs of one
    scene and setting at other batch sizes then reuse its (unbatched) trace — vmap batches the
    inner jaxpr instead of tracing the library again, which costs seconds per scene. (Nested jits
    are inlined when lowered: no effect on the compiled program.)"""
    import jax

    if key not in _PER_ENV:
        _PER_ENV[key] = jax.jit(fn)
    return _PER_ENV[key]


def _scene(name: str):
    if name not in _SCENE_CACHE:
        import _scenes

        _SCENE_CACHE[name] = _scenes.load(name)
    return _SCENE_CACHE[name]


def _ours_model(mj, setting: str):
    import jaxsim_contact as jc

    model = jc.io.from_mjmodel(mj)
    if setting == SOFT:  # the same physics and Newton cap as MJX (issue 45)
        model = jc.io.mujoco_compatible(model, mj)
    return model


def step_jobs(scene: str, batch: int, group: int, steps: int, settings=(DEFAULT,),
              engines=("ours", "mjx")):
    """Jobs timing ``steps`` steps per call of ``scene`` at ``batch`` per engine and setting."""
    jobs = []
    for engine in engines:
        for setting in settings:
            key = dict(scene=scene, engine=engine, setting=setting if engine == "ours" else "MJX",
                       batch=batch)
            prepare = (_prepare_ours if engine == "ours" else _prepare_mjx)
            jobs.append(Job("step", group, key,
                            functools.partial(prepare, scene, batch, setting, steps),
                            _summarize_ours if engine == "ours" else _summarize_mjx,
                            work=batch * steps, advance=lambda out: (out[0],)))
    return jobs


def _prepare_ours(scene: str, batch: int, setting: str, steps: int):
    import jax
    import jax.numpy as jnp

    import jaxsim_contact as jc

    mj, q0 = _scene(scene)
    model = _ours_model(mj, setting)
    state = jc.init(model, q=jnp.asarray(q0))
    states = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), state)
    states = jax.vmap(lambda s, v: jc.init(model, q=s.q, v=v))(
        states, jnp.asarray(lane_velocities(batch, mj.nv)))
    ctrl = jnp.zeros((model.nu,))

    def run(s):
        def body(s, _):
            s = jc.step(model, s, ctrl)
            return s, (s.contact.iterations, s.contact.residual)

        s, (iterations, residual) = jax.lax.scan(body, s, None, length=steps)
        return s, iterations, residual

    return jax.vmap(_per_env(("ours", scene, setting, steps), run)), (states,)


#: initial velocity of each lane, m/s or rad/s per dof: lanes that start apart diverge as a real
#: batch does (identical lanes would hide what a vmapped loop pays for its slowest lane)
LANE_VELOCITY_SCALE = 1e-2


def lane_velocities(batch: int, nv: int):
    """``(batch, nv)`` initial velocities, the same for every engine (seeded)."""
    import numpy as np

    return LANE_VELOCITY_SCALE * np.random.default_rng(2).standard_normal((batch, nv))


def _summarize_ours(out) -> dict:
    import numpy as np

    final, iterations, residual = out
    q, residual = np.asarray(final.q), np.asarray(residual)
    spread = lane_spread(iterations)
    return dict(finite_fraction=float(np.mean(np.all(np.isfinite(q.reshape(q.shape[0], -1)), axis=1))),
                mean_iterations=spread["mean"], lane_max_iterations=spread["lane_max"],
                max_iterations=spread["max"], max_residual=float(np.nanmax(residual)))


def lane_spread(iterations) -> dict:
    """``iterations`` ``(batch, steps)`` → mean, lane max (mean over steps of the max over
    lanes: what a vmapped loop pays), their ratio, and the largest count."""
    import numpy as np

    iterations = np.asarray(iterations, dtype=float).reshape(np.shape(iterations)[0], -1)
    mean = float(iterations.mean())
    lane_max = float(iterations.max(axis=0).mean())
    return dict(mean=mean, lane_max=lane_max, ratio=lane_max / mean if mean > 0 else None,
                max=int(iterations.max()))


def _prepare_mjx(scene: str, batch: int, setting: str, steps: int):
    import jax
    import jax.numpy as jnp
    from mujoco import mjx

    mj, q0 = _scene(scene)
    if ("mjx_model", scene) not in _SCENE_CACHE:
        _SCENE_CACHE["mjx_model", scene] = mjx.put_model(mj, impl="jax")
    mx = _SCENE_CACHE["mjx_model", scene]
    data = mjx.make_data(mx)
    data = data.replace(qpos=jnp.asarray(q0, dtype=data.qpos.dtype))
    datas = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), data)
    datas = datas.replace(qvel=jnp.asarray(lane_velocities(batch, mj.nv), dtype=data.qvel.dtype))

    def run(d):
        d, _ = jax.lax.scan(lambda d, _: (mjx.step(mx, d), None), d, None, length=steps)
        return (d,)

    return jax.vmap(_per_env(("mjx", scene, steps), run)), (datas,)


def _summarize_mjx(out) -> dict:
    import numpy as np

    q = np.asarray(out[0].qpos)
    return dict(finite_fraction=float(np.mean(np.all(np.isfinite(q), axis=1))))


def gradient_job(sizes: dict, mode: str, group: int) -> Job:
    scene, batch, steps = sizes["grad_scene"], sizes["grad_batch"], sizes["grad_steps"]

    def prepare():
        import jax
        import jax.numpy as jnp

        import jaxsim_contact as jc

        mj, q0 = _scene(scene)
        model = _ours_model(mj, DEFAULT)
        state = jc.init(model, q=jnp.asarray(q0))
        ctrls = jnp.zeros((steps, model.nu))

        def loss(v0):
            final, _ = jc.rollout(model, jc.init(model, q=state.q, v=v0), ctrls)
            return jnp.sum(final.q ** 2) + jnp.sum(final.v ** 2)

        rng = jax.random.PRNGKey(0)
        v0 = state.v + 0.01 * jax.random.normal(rng, (batch,) + state.v.shape, state.v.dtype)
        fn = jax.vmap(loss if mode == "forward" else jax.grad(loss))
        return fn, (v0,)

    def summarize(out) -> dict:
        import numpy as np

        x = np.asarray(out).reshape(batch, -1)
        return dict(finite_fraction=float(np.mean(np.all(np.isfinite(x), axis=1))))

    key = dict(scene=scene, engine="ours", setting=f"{mode}, {steps} steps", batch=batch)
    return Job("gradient", group, key, prepare, summarize, work=batch * steps)


def gjk_jobs(sizes: dict, group: int) -> list[Job]:
    jobs = []
    for pairs in sizes["gjk_pairs"]:
        for shape, placement in sizes["gjk_cases"]:
            key = dict(scene=shape, engine="ours", setting=placement, batch=pairs)
            jobs.append(Job("gjk", group, key,
                            functools.partial(prepare_gjk, shape, placement, pairs,
                                              sizes["gjk_distinct"]),
                            _summarize_gjk, work=pairs))
    return jobs


@functools.lru_cache(maxsize=None)
def _random_pairs(shape: str, distinct: int, seed: int = 0):
    """``distinct`` random shape pairs and their bounding radii (max, min) ``(2, distinct)``."""
    import jax.numpy as jnp
    import numpy as np

    import jaxsim_contact as jc

    rng = np.random.default_rng(seed)
    radii = rng.uniform(0.05, 1.0, size=(2, distinct, 3))
    if shape == "ellipsoid":
        sides = [jc.Ellipsoid(jnp.asarray(radii[k])) for k in range(2)]
        return sides, radii.max(-1), radii.min(-1)
    import jax

    sides, outer, inner = [], np.zeros((2, distinct)), np.zeros((2, distinct))
    for k in range(2):
        meshes = []
        for i in range(distinct):
            direction = rng.normal(size=(100, 3))
            direction /= np.linalg.norm(direction, axis=1, keepdims=True)
            points = direction * radii[k, i]
            meshes.append(jc.ConvexMesh.from_points(points, max_vertices=100, max_neighbors=32,
                                                    max_faces=196))
            outer[k, i] = np.linalg.norm(points, axis=1).max()
            # the hull holds the ellipsoid's inscribed sphere shrunk by the facet sag: a safe
            # overlap depth is a fraction of the smallest semi-axis
            inner[k, i] = 0.5 * radii[k, i].min()
        sides.append(jax.tree_util.tree_map(lambda *x: jnp.stack(x), *meshes))
    return sides, outer, inner


def prepare_gjk(shape: str, placement: str, pairs: int, distinct: int):
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxsim_contact as jc
    from jaxsim_contact.collision import distance

    (side_a, side_b), outer, inner = _random_pairs(shape, distinct)
    rng = np.random.default_rng(1)
    index = np.arange(pairs) % distinct
    take = lambda tree: jax.tree_util.tree_map(lambda x: x[index], tree)  # noqa: E731
    direction = rng.normal(size=(pairs, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    if placement == "separated":  # the bounding spheres 0.1 m apart: GJK alone
        centre = outer[0, index] + outer[1, index] + 0.1
    else:  # centres closer than the smaller inscribed radius: EPA after GJK
        centre = 0.5 * np.minimum(inner[0, index], inner[1, index])
    quats = rng.normal(size=(2, pairs, 4))
    quats /= np.linalg.norm(quats, axis=-1, keepdims=True)
    dtype = jnp.zeros(()).dtype
    pose_a = jc.Transform(jnp.zeros((pairs, 3), dtype), jnp.asarray(quats[0], dtype))
    pose_b = jc.Transform(jnp.asarray(direction * centre[:, None], dtype), jnp.asarray(quats[1], dtype))

    def query(a, pa, b, pb):
        result = distance(a, pa, b, pb)
        return result.signed_distance, result.iterations, result.epa_iterations, result.converged

    return jax.vmap(_per_env(("gjk", shape), query)), (take(side_a), pose_a, take(side_b), pose_b)


def _summarize_gjk(out) -> dict:
    import numpy as np

    signed, iterations, epa_iterations, converged = (np.asarray(x) for x in out)
    return dict(finite_fraction=float(np.mean(np.isfinite(signed))),
                mean_iterations=float(iterations.mean()), max_iterations=int(iterations.max()),
                mean_epa_iterations=float(epa_iterations.mean()),
                max_epa_iterations=int(epa_iterations.max()),
                converged_fraction=float(np.mean(converged)),
                negative_fraction=float(np.mean(signed < 0)))


# ---- report -------------------------------------------------------------------------------------

def _fmt(x, spec=",.0f"):
    return "—" if x is None else format(x, spec)


def markdown(result: dict) -> str:
    meta = result["meta"]
    children = result["children"]
    device = next((c["meta"].get("device_kind") for c in children if c["meta"].get("device_kind")), "?")
    first = children[0]["meta"] if children else {}
    lines = [
        f"# GPU run: {device}",
        "",
        f"`{meta['command']}` — {meta['date']}, commit {meta['commit']}, jax {first.get('jax')} "
        f"({first.get('backend')}), Python {first.get('python')}; nvidia-smi: {meta['nvidia_smi']}. "
        f"Budget {meta['budget_s']:.0f} s, wall {meta['wall_s']:.0f} s. Each child compiled up to "
        f"{first.get('compile_workers')} executables at once (compile times are contended wall "
        f"times: compare ours with MJX's, not with a lone compile); {first.get('steps_per_call')} "
        f"steps per timed call, median of {first.get('repeats')} blocked calls after a warm-up.",
        "",
    ]
    for c in children:
        m = c["meta"]
        peak = m.get("peak_bytes_in_use")
        lines.append(f"- {m.get('dtype')}: device peak memory in use "
                     f"{_fmt(peak / 2**30 if peak else None, '.2f')} GiB"
                     + (f"; error: {m['error']}" if m.get("error") else ""))
    lines += ["", "## Step throughput (env-steps/s)", "",
              "Ours: default hard = ADMM-NCP, default options; MuJoCo soft = `constraint_model=\"mujoco\"` "
              "(MuJoCo's soft model, PrimalNewton capped at the file's iterations). MJX: `impl=\"jax\"`, the "
              "model's own soft-contact options. Iterations: per step, lane mean / lane max (mean "
              "over steps of the batch's largest count: a vmapped loop's cost) / max.",
              "",
              "| scene | dtype | batch | ours setting | ours env-steps/s | MJX env-steps/s | ours / MJX "
              "| compile ours / MJX (s) | ours iterations mean / lane-max / max | ours finite | "
              "XLA memory ours / MJX (MiB) |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in children:
        dtype = c["meta"].get("dtype")
        rows = [r for r in c["rows"] if r["section"] == "step"]
        mjx = {(r["scene"], r["batch"]): r for r in rows if r["engine"] == "mjx"}
        for r in rows:
            if r["engine"] != "ours":
                continue
            peer = mjx.get((r["scene"], r["batch"]), {})
            rate, peer_rate = r.get("rate_per_s"), peer.get("rate_per_s")
            ratio = f"{rate / peer_rate:.2f}" if rate and peer_rate else "—"
            lines.append(
                f"| {r['scene']} | {dtype} | {r['batch']} | {r['setting']} | {_status(r, rate)} | "
                f"{_status(peer, peer_rate) if peer else '—'} | {ratio} | "
                f"{_fmt(r.get('compile_s'), '.1f')} / {_fmt(peer.get('compile_s'), '.1f')} | "
                f"{_fmt(r.get('mean_iterations'), '.1f')} / {_fmt(r.get('lane_max_iterations'), '.1f')}"
                f" / {_fmt(r.get('max_iterations'), 'd')} | {_fmt(r.get('finite_fraction'), '.3f')} | "
                f"{_fmt(r.get('xla_memory_mib'), ',.0f')} / {_fmt(peer.get('xla_memory_mib'), ',.0f')} |")
    lines += ["", "## Batched GJK / EPA (`jc.collision.distance`, µs per query)", "",
              "Random shapes (semi-axes in [0.05, 1] m; hulls of 100 points on such an ellipsoid), "
              "random rotations; separated: bounding spheres 0.1 m apart (GJK alone); overlapping: "
              "centres within half the smaller semi-axis (GJK then EPA). Default tolerances. coal's "
              "native CPU times for comparison: `benchmarks/results/gjk*.md`.", "",
              "| shape | placement | dtype | pairs | µs / query | GJK it mean / max | EPA it mean / max "
              "| converged | compile (s) |",
              "|---|---|---|---|---|---|---|---|---|"]
    for c in children:
        for r in c["rows"]:
            if r["section"] != "gjk":
                continue
            us = 1e6 / r["rate_per_s"] if r.get("rate_per_s") else None
            lines.append(
                f"| {r['scene']} | {r['setting']} | {c['meta'].get('dtype')} | {r['batch']:,} | "
                f"{_status(r, us, '.4f')} | {_fmt(r.get('mean_iterations'), '.1f')} / "
                f"{_fmt(r.get('max_iterations'), 'd')} | {_fmt(r.get('mean_epa_iterations'), '.1f')} / "
                f"{_fmt(r.get('max_epa_iterations'), 'd')} | {_fmt(r.get('converged_fraction'), '.3f')} "
                f"| {_fmt(r.get('compile_s'), '.1f')} |")
    lines += ["", "## Gradient of a rollout", "",
              "`vmap(grad(loss))` against `vmap(loss)`, loss = |q_T|² + |v_T|² of a rollout from "
              "the scene's start with a perturbed initial velocity (the argument), default hard "
              "model, default gradient options.", "",
              "| scene | dtype | batch | rollout | seconds | env-steps/s | grad / forward | compile (s) "
              "| finite | XLA memory (MiB) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for c in children:
        rows = [r for r in c["rows"] if r["section"] == "gradient"]
        forward = next((r for r in rows if r["setting"].startswith("forward")), {})
        for r in rows:
            ratio = (f"{r['seconds'] / forward['seconds']:.2f}"
                     if r.get("seconds") and forward.get("seconds") else "—")
            lines.append(
                f"| {r['scene']} | {c['meta'].get('dtype')} | {r['batch']} | {r['setting']} | "
                f"{_status(r, r.get('seconds'), '.4f')} | {_fmt(r.get('rate_per_s'))} | {ratio} | "
                f"{_fmt(r.get('compile_s'), '.1f')} | {_fmt(r.get('finite_fraction'), '.3f')} | "
                f"{_fmt(r.get('xla_memory_mib'), ',.0f')} |")
    problems = [(c["meta"].get("dtype"), r) for c in children for r in c["rows"]
                if r.get("error") or r.get("skipped")]
    if problems:
        lines += ["", "## Not measured", ""]
        for dtype, r in problems:
            what = r.get("error") or r.get("skipped")
            lines.append(f"- {r['section']} {r['scene']} {r['engine']} {r['setting']} batch "
                         f"{r['batch']} ({dtype}): {what[:300]}")
    return "\n".join(lines) + "\n"


def _status(row: dict, value, spec=",.0f") -> str:
    if value is not None:
        return format(value, spec)
    if row.get("error"):
        return "error"
    if row.get("skipped"):
        return "skipped"
    return "—"


if __name__ == "__main__":
    sys.exit(main())
