"""Cost of the gradient rules on one step of the pushed ball (CPU time, one process).

`jax.jacfwd` of one `jc.step` w.r.t. (q, v) of `jc.scenes.pushed_ball` (contact margin 2 cm, ball
1.5 mm above the floor falling at 0.1 m/s, so the contact is made within the step) with
``gradient="implicit"``, ``RelaxedComplementarity(1.0)`` and ``RandomizedSmoothing(key, 2.0, M)``
for M = 16 and 64; median of 20 blocked calls, compile time of the first call.

    PYTHONPATH=. taskset -c 1 python benchmarks/probes/smoothed_gradient_cost.py
"""
import time, os
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
import jaxsim_contact as jc
base = jc.scenes.load("pushed_ball", dtype=jnp.float64).replace_options(contact_margin=0.02)
def t(fn, *a):
    t0=time.process_time(); jax.block_until_ready(fn(*a)); first=time.process_time()-t0
    ts = []
    for _ in range(20):
        t0=time.process_time(); jax.block_until_ready(fn(*a)); ts.append(time.process_time()-t0)
    return np.median(ts), first
print("load", os.getloadavg())
for name, rule in [("implicit","implicit"), ("relaxed", jc.contact.RelaxedComplementarity(1.0)),
                   ("randomized M=16", jc.contact.RandomizedSmoothing(jax.random.key(0), 2.0, 16)),
                   ("randomized M=64", jc.contact.RandomizedSmoothing(jax.random.key(0), 2.0, 64))]:
    m = base.replace_options(gradient=rule)
    st = jc.init(m, q=jnp.array([0.0, 1.5e-3]), v=jnp.array([0.0, -0.1]))
    x = jnp.concatenate([st.q, st.v])
    f = lambda x: jc.step(m, jc.State(q=x[:2], v=x[2:], time=st.time, error=st.error, contact=st.contact)).v
    step = jax.jit(f); jac = jax.jit(jax.jacfwd(f))
    s, _ = t(step, x); j, c = t(jac, x)
    print(f"{name}: step {s*1e3:.3f} ms, jacfwd {j*1e3:.3f} ms (x{j/s:.1f}), jacfwd compile {c:.1f} s")
print("load", os.getloadavg())
