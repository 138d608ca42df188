"""Stress run of ``jc.collision.distance`` against the certified references of the test suite.

Draws many random pairs per shape-pair type and target distance (tests/collision/collision_reference.py),
runs every GJK variant batched, and prints each query that breaks the accuracy contract: distance
error (1e-6 separated/touching, 1e-5 penetrating), witness consistency (support planes and
d = -(overlap along the normal)), |pa - pb| = |d|, or not converged. The test suite runs a fixed
small sample of this; run it after touching GJK/EPA.

    python scripts/collision_stress.py --seeds 6 --base 1000 [--pairs box-box cone-cone]
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "collision"))

import jaxsim_contact as jc  # noqa: E402
from collision_reference import make_pairs, world_support_value  # noqa: E402

TARGETS = (-0.1, -0.01, 0.0, 0.01, 0.1, 1.0)
PAIRS = ("ellipsoid-ellipsoid", "box-box", "capsule-cylinder", "cylinder-cylinder", "cone-cone",
         "hull100-hull100", "ellipsoid-box", "cone-hull100", "sphere-capsule")


@functools.lru_cache(None)
def batched(method):
    return jax.jit(jax.vmap(functools.partial(jc.collision.distance, method=method)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--base", type=int, default=1000, help="first seed")
    parser.add_argument("--samples", type=int, default=8, help="pairs per target and seed")
    parser.add_argument("--pairs", nargs="+", default=list(PAIRS))
    parser.add_argument("--methods", nargs="+", default=["nesterov", "vanilla", "polyak"])
    args = parser.parse_args()
    failures = total = 0
    for pair in args.pairs:
        kinds = tuple(pair.split("-"))
        for seed in range(args.base, args.base + args.seeds):
            sa, sb, pa, pb, ref = make_pairs(*kinds, TARGETS, args.samples, seed)
            t = np.repeat(TARGETS, args.samples)
            for method in args.methods:
                r = batched(method)(sa, pa, sb, pb)
                d = np.asarray(r.signed_distance)
                err = np.where(t > 0, np.abs(d - t), np.where(t == 0, np.abs(d), np.abs(d - ref)))
                dtol = np.where(t < 0, 1e-5, 1e-6)
                wtol = np.where(t <= 0, 1e-5, 1e-6)
                h_a = np.asarray(jax.vmap(world_support_value)(sa, pa, r.normal))
                h_b = np.asarray(jax.vmap(world_support_value)(sb, pb, -r.normal))
                on_a = np.asarray(jnp.sum(r.normal * r.point_a, -1))
                on_b = np.asarray(-jnp.sum(r.normal * r.point_b, -1))
                werr = np.maximum.reduce([np.abs(on_a - h_a), np.abs(on_b - h_b), np.abs(d + on_a + on_b)])
                gap = np.abs(np.linalg.norm(np.asarray(r.point_a - r.point_b), axis=-1) - np.abs(d))
                bad = (err > dtol) | (werr > wtol) | (gap > 1e-6) | ~np.asarray(r.converged)
                total += len(d)
                failures += int(bad.sum())
                for i in np.flatnonzero(bad):
                    print(f"{pair} seed {seed} {method} #{i} target {t[i]:+.2f} d {d[i]:.9f} ref {ref[i]:.9f} "
                          f"err {err[i]:.1e} witness {werr[i]:.1e} gap {gap[i]:.1e} "
                          f"converged {bool(r.converged[i])} it {int(r.iterations[i])}/{int(r.epa_iterations[i])}",
                          flush=True)
        print(f"done {pair}", flush=True)
    print(f"{failures} of {total} queries broke the contract")
    return int(failures > 0)


if __name__ == "__main__":
    sys.exit(main())
