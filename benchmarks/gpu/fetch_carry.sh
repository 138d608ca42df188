#!/usr/bin/env bash
# Fill .gpu_carry/ (git-ignored, ~30 MiB) with what benchmarks/gpu/run.py needs on a lent GPU
# machine that has JAX with CUDA, equinox, optax, lineax, chex and scipy but cannot install from
# the network (issue 47):
#   whl/     mujoco, mujoco-core, mujoco-mjx, trimesh and equinox (the version tested here) wheels
#            for CPython 3.12 on x86-64 Linux
#            (installed there with --no-deps into /tmp/site);
#   models/  Brax's ant.xml (the humanoid comes inside the mujoco-mjx wheel);
#   site/    example-robot-data's go2_description and panda_description, laid out as the installed
#            package is (site/cmeel.prefix/share/example-robot-data/robots/...), so that putting
#            site/ on PYTHONPATH lets jaxsim_contact.io._urdf.default_package_dirs find them.
# Run it here, from the repository root, with the test and bench extras installed
# (pip install -e ".[test,bench]"). The device call is in benchmarks/README.md.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
grep -qx '/.gpu_carry/' .git/info/exclude 2>/dev/null || echo '/.gpu_carry/' >> .git/info/exclude
rm -rf .gpu_carry
mkdir -p .gpu_carry/whl .gpu_carry/models .gpu_carry/site
version() { python -c "import importlib.metadata as m; print(m.version('$1'))"; }
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
           --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" -d .gpu_carry/whl \
  "mujoco==$(version mujoco)" "mujoco-core==$(version mujoco-core)" \
  "mujoco-mjx==$(version mujoco-mjx)" "trimesh==$(version trimesh)" "equinox==$(version equinox)"
python - <<'EOF'
import shutil
from pathlib import Path

import brax

from jaxsim_contact.io._urdf import default_package_dirs

shutil.copy(Path(brax.__file__).parent / "envs" / "assets" / "ant.xml", ".gpu_carry/models/ant.xml")
robots = next(d for d in default_package_dirs() if d.name == "robots")
target = Path(".gpu_carry/site/cmeel.prefix/share/example-robot-data/robots")
for name in ("go2_description", "panda_description"):
    shutil.copytree(robots / name, target / name)
EOF
du -sh .gpu_carry
