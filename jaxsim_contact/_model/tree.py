"""The static structure of a model: :class:`KinematicTree` (hashable; no arrays)."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from .._types import JointType


@dataclasses.dataclass(frozen=True, eq=True)
class KinematicTree:
    """Static structure of the kinematic tree (hashable; no arrays).

    All tuples are indexed like MuJoCo's model arrays. Derived numpy incidence matrices are
    computed once per structure (cached on the instance) and enter traced code as constants.

    Attributes:
      body_parent: ``(nbody,)`` parent body index; ``body_parent[0] == 0`` (the world).
      body_joint_adr, body_joint_num: first joint index and number of joints of each body.
      joint_type: ``(njnt,)`` :class:`JointType`.
      joint_body: ``(njnt,)`` body that each joint moves.
      joint_qpos_adr, joint_dof_adr: start of each joint in ``q`` and in ``v``.
      dof_body, dof_joint: ``(nv,)`` body and joint of each degree of freedom.
      levels: bodies grouped by depth in the tree: ``levels[k]`` holds the bodies at depth
        ``k + 1`` (children of the world are depth 1); forward kinematics composes poses in
        this order.
    """

    body_parent: tuple[int, ...]
    body_joint_adr: tuple[int, ...]
    body_joint_num: tuple[int, ...]
    joint_type: tuple[JointType, ...]
    joint_body: tuple[int, ...]
    joint_qpos_adr: tuple[int, ...]
    joint_dof_adr: tuple[int, ...]
    dof_body: tuple[int, ...]
    dof_joint: tuple[int, ...]
    levels: tuple[tuple[int, ...], ...]

    @property
    def nbody(self) -> int:
        return len(self.body_parent)

    @property
    def njnt(self) -> int:
        return len(self.joint_type)

    @property
    def nv(self) -> int:
        return len(self.dof_body)

    @property
    def nq(self) -> int:
        return sum(JointType(t).nq for t in self.joint_type)

    @property
    def max_joints_per_body(self) -> int:
        return max(self.body_joint_num, default=0)

    @functools.cached_property
    def body_ancestor(self) -> np.ndarray:
        """``(nbody, nbody)`` bool: ``A[i, j]`` iff body ``j`` is ``i`` or an ancestor of ``i``."""
        n = self.nbody
        anc = np.zeros((n, n), dtype=bool)
        for i in range(n):
            j = i
            anc[i, j] = True
            while j != 0:
                j = self.body_parent[j]
                anc[i, j] = True
        return anc

    @functools.cached_property
    def dof_moves_body(self) -> np.ndarray:
        """``(nbody, nv)`` 0/1: dof ``d`` moves body ``i`` (its body is ``i`` or an ancestor)."""
        return self.body_ancestor[:, np.asarray(self.dof_body, dtype=int)].astype(np.float64) if self.nv else np.zeros((self.nbody, 0))

    @functools.cached_property
    def dof_ancestor(self) -> np.ndarray:
        """``(nv, nv)`` bool: ``D[a, b]`` iff the body of dof ``b`` is the body of ``a`` or an
        ancestor of it (the sparsity pattern of the mass matrix's lower-and-diagonal part)."""
        body = np.asarray(self.dof_body, dtype=int)
        return self.body_ancestor[body][:, body] if self.nv else np.zeros((0, 0), bool)

    @functools.cached_property
    def body_root(self) -> np.ndarray:
        """``(nbody,)`` int: the root of each body's kinematic tree — its ancestor-or-self that is a
        child of the world (0 for the world)."""
        root = np.zeros(self.nbody, dtype=np.int64)
        for b in range(1, self.nbody):
            r = b
            while self.body_parent[r] != 0:
                r = self.body_parent[r]
            root[b] = r
        return root

    @functools.cached_property
    def moving_trees(self) -> tuple[np.ndarray, np.ndarray]:
        """``(tree_of_body (nbody,), dofs_of_tree (ntree,))`` int32: the kinematic trees with at
        least one dof, numbered in root order, and their dof counts; ``tree_of_body`` is −1 for
        the world and bodies welded to it."""
        dofs = np.bincount(self.body_root[np.asarray(self.dof_body, dtype=np.int64)],
                           minlength=self.nbody) if self.nv else np.zeros(self.nbody, np.int64)
        roots = [r for r in range(1, self.nbody) if self.body_parent[r] == 0 and dofs[r] > 0]
        index = np.full(self.nbody, -1, dtype=np.int32)
        index[roots] = np.arange(len(roots), dtype=np.int32)
        tree_of_body = np.where(np.arange(self.nbody) > 0, index[self.body_root], -1).astype(np.int32)
        return tree_of_body, dofs[roots].astype(np.int32)

    @functools.cached_property
    def dof_tree_groups(self) -> tuple[tuple[tuple[int, ...], ...], ...]:
        """The dofs of each kinematic tree (the bodies below one child of the world), trees of
        equal dof count grouped: a tuple of groups, each a tuple of sorted dof-index tuples of
        one length (groups by increasing length, trees by first dof). The mass matrix has no
        entry between two trees, so it factorises block by block
        (:func:`jaxsim_contact._linalg.grouped_cholesky`)."""
        trees: dict[int, list[int]] = {}
        for dof, body in enumerate(self.dof_body):
            trees.setdefault(int(self.body_root[body]), []).append(dof)
        by_size: dict[int, list[tuple[int, ...]]] = {}
        for dofs in sorted(trees.values()):
            by_size.setdefault(len(dofs), []).append(tuple(sorted(dofs)))
        return tuple(tuple(by_size[size]) for size in sorted(by_size))

    @functools.cached_property
    def dof_frame_velocity(self) -> np.ndarray:
        """``(nv, nv)`` 0/1: which dofs of the same body add to the velocity of the frame in which
        dof ``a``'s motion axis is fixed (the rest comes from the parent body).

        A hinge/slide axis is fixed in the frame just after its joint; the three axes of a ball and
        the rotational axes of a free joint are fixed in the body frame after the whole joint; the
        translational axes of a free joint are world axes. MuJoCo's ``cdof_dot`` uses the same
        frames (mj_comVel), which this reproduces.
        """
        nv = self.nv
        mat = np.zeros((nv, nv))
        for a in range(nv):
            jnt = self.dof_joint[a]
            jtype = JointType(self.joint_type[jnt])
            body = self.dof_body[a]
            first_dof_of_body = self.joint_dof_adr[self.body_joint_adr[body]]
            joint_start = self.joint_dof_adr[jnt]
            joint_end = joint_start + jtype.nv
            if jtype == JointType.FREE and a < joint_start + 3:
                last = joint_start  # world-fixed translation axes: parent (world) velocity only
            elif jtype in (JointType.FREE, JointType.BALL):
                last = joint_end
            else:
                last = a + 1
            mat[a, first_dof_of_body:last] = 1.0
        return mat

    @functools.cached_property
    def joint_slots(self) -> np.ndarray:
        """``(nbody, max_joints_per_body)`` joint index per body slot, ``-1`` for empty slots."""
        slots = -np.ones((self.nbody, max(self.max_joints_per_body, 1)), dtype=np.int64)
        for b in range(self.nbody):
            for k in range(self.body_joint_num[b]):
                slots[b, k] = self.body_joint_adr[b] + k
        return slots
