"""Fixtures shipped with the library for tests, benchmarks and notebooks (``jc.testing``).

* :mod:`.problems` — host-side contact problems of free rigid bodies (a cube on a plane, box
  stacks, random problems; seed 001 §IV), in force or impulse units;
* :mod:`.fuzz` — random configurations and counting of non-finite values and derivatives of the
  collision query, the contact solver and the step (NaN fuzzing).

Neither is used by the simulation itself.
"""

from . import fuzz, problems

__all__ = ["fuzz", "problems"]
