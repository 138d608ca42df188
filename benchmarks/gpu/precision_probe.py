"""Probe (issue 42/47): float32 solver iterations on the GPU under JAX's default matmul
precision (TF32 on H100/H200) against ``highest``. Usage:
``python benchmarks/gpu/precision_probe.py PRECISION SCENE BATCH``."""
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import jax
import numpy as np
precision, scene, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
if precision != "default":
    jax.config.update("jax_default_matmul_precision", precision)
import run as gpu_run

fn, args = gpu_run._prepare_ours(scene, batch, gpu_run.DEFAULT, 20)
t0 = time.perf_counter()
compiled = jax.jit(fn).lower(*args).compile()
print("compile", time.perf_counter() - t0, flush=True)
out = jax.block_until_ready(compiled(*args))
for _ in range(3):
    out = jax.block_until_ready(compiled(out[0]))
t0 = time.perf_counter()
out = jax.block_until_ready(compiled(out[0]))
dt = time.perf_counter() - t0
s = gpu_run._summarize_ours(out)
print(f"RESULT precision={precision} scene={scene} batch={batch} steps/s={batch*20/dt:,.0f} {s}", flush=True)
