"""Torsional damper with joint projection P1/P2/P3/none (THEORY §7; §8 for ``seed``)."""
from __future__ import annotations

import numpy as np

from ..kernels import njit
from ..kernels.vec import dot, hat_hat, mneg, mscale, put, put_block, row
from .base import DERIVATIVES, X_AXES, X_MOVES, X_WA, X_WB, Y_P, Y_POTENTIAL, Y_POWER, ElementKind, block_offset, offsets

PROJECTIONS = ("P1", "P2", "P3", "none")
# the projection a joint type implies (SCENARIO.md, torsional_damper)
JOINT_PROJECTION = {
    "prismatic": "P1", "lock": "P1",
    "revolute": "P2", "cylindrical": "P2", "planar": "P2",
    "spherical": "none",
}

# P = c0 I + c1 n⊗n for each projection; DP·ω then contributes W = −c1[(n·ω)I + n⊗ω] n̂'
# (THEORY §7 lists W for P2 (+) and P3 (−); P1 and none have W = 0).
_WEIGHTS = {"P1": (1.0, 0.0), "P2": (1.0, -1.0), "P3": (0.0, 1.0), "none": (0.0, 0.0)}

FIELDS = (("E", 3), ("chi", 1), ("c0", 1), ("c1", 1))
_E, _CHI, _C0, _C1 = offsets(FIELDS)

# where its derivative blocks go (p_A = m, p_B = −m): ∂p_A/∂θ_A, ∂p_B/∂θ_A; ∂p_A/∂ω_A, ∂p_A/∂ω_B, ∂p_B/∂ω_A, ∂p_B/∂ω_B
_AA, _BA = block_offset("aa"), block_offset("ba")
_A_WA, _A_WB, _B_WA, _B_WB = block_offset("aA"), block_offset("aB"), block_offset("bA"), block_offset("bB")


@njit(cache=True)
def law(lo, hi, p, x, t, want, y, dy):
    """Pure moment ``m = χ_r P (ω_B − ω_A)`` on A, ``P = c0 I + c1 n⊗n`` with the axis n turning with
    body A; ``p = (0, m, −m)``.  Returns −1 (defined at every state)."""
    for e in range(lo, hi):
        chi, c0, c1 = p[e, _CHI], p[e, _C0], p[e, _C1]
        wa, wb = row(x, e, X_WA), row(x, e, X_WB)
        w = (wb[0] - wa[0], wb[1] - wa[1], wb[2] - wa[2])
        n = row(x, e, X_AXES)
        P = (c1 * n[0] * n[0] + c0, c1 * n[0] * n[1], c1 * n[0] * n[2],
             c1 * n[1] * n[0], c1 * n[1] * n[1] + c0, c1 * n[1] * n[2],
             c1 * n[2] * n[0], c1 * n[2] * n[1], c1 * n[2] * n[2] + c0)
        m = (chi * (P[0] * w[0] + P[1] * w[1] + P[2] * w[2]), chi * (P[3] * w[0] + P[4] * w[1] + P[5] * w[2]),
             chi * (P[6] * w[0] + P[7] * w[1] + P[8] * w[2]))
        put(y, e, Y_P, (0.0, 0.0, 0.0))
        put(y, e, Y_P + 3, m)
        put(y, e, Y_P + 6, (-m[0], -m[1], -m[2]))
        y[e, Y_POWER] = m[0] * w[0] + m[1] * w[1] + m[2] * w[2]
        y[e, Y_POTENTIAL] = 0.0
        if want & DERIVATIVES:
            cP = mscale(chi, P)
            put_block(dy, e, _A_WA, mneg(cP))
            put_block(dy, e, _A_WB, cP)
            put_block(dy, e, _B_WA, cP)
            put_block(dy, e, _B_WB, mneg(cP))
            # the axis turns with A: ∂m/∂θ_A = χ ∂(P w)/∂n · (−n̂_m) = χ W, W = −c1 [(n·w) I + n⊗w] n̂_m
            nm = row(x, e, X_MOVES)
            nw = dot(n, w)
            A = (n[0] * w[0] + nw, n[0] * w[1], n[0] * w[2], n[1] * w[0], n[1] * w[1] + nw, n[1] * w[2],
                 n[2] * w[0], n[2] * w[1], n[2] * w[2] + nw)
            W = (A[1] * nm[2] - A[2] * nm[1], -A[0] * nm[2] + A[2] * nm[0], A[0] * nm[1] - A[1] * nm[0],
                 A[4] * nm[2] - A[5] * nm[1], -A[3] * nm[2] + A[5] * nm[0], A[3] * nm[1] - A[4] * nm[0],
                 A[7] * nm[2] - A[8] * nm[1], -A[6] * nm[2] + A[8] * nm[0], A[6] * nm[1] - A[7] * nm[0])
            cW = mscale(-chi * c1, W)
            put_block(dy, e, _AA, cW)
            put_block(dy, e, _BA, mneg(cW))
    return -1


class TorsionalDamper(ElementKind):
    """Torsional damper between two bodies, on their relative angular velocity projected by P."""

    type = "torsional_damper"
    keys = ("damping", "projection", "joint", "axis")
    fields = FIELDS
    axes = (("E", "A"),)
    blocks = ("aa", "ba", "aA", "aB", "bA", "bB")
    draw = "twist"
    outputs = ("moment",)
    law = law

    @classmethod
    def seed_of(cls, spec) -> bool:
        return True  # THEORY §8: the excerpt's eq. td-*

    @staticmethod
    def read(r, m) -> dict:
        """``projection`` or ``joint`` (exactly one), the ``axis`` P2/P3 need, and ``damping``."""
        projection = joint = None
        given = r.exactly_one(m, ("projection", "joint"))
        if given == "projection":
            projection = r.choice(m.get("projection"), m.sub("projection"), PROJECTIONS, "projection")
        elif given == "joint":
            joint = r.choice(m.get("joint"), m.sub("joint"), JOINT_PROJECTION, "joint")
            projection = None if joint is None else JOINT_PROJECTION[joint]
        axis = None
        if projection in ("P2", "P3"):
            node = r.require(m, "axis", f" (projection {projection} needs the joint axis)")
            axis = None if node is None else r.unit(node, m.sub("axis"))
        elif m.has("axis"):
            r.vector(m.get("axis"), m.sub("axis"))  # checked, then ignored: P1 and none use no axis
        return dict(projection=projection, joint=joint, axis=axis, damping=r.required_number(m, "damping", ">=0"))

    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        axis = np.array([s.axis if s.axis is not None else np.zeros(3) for s in specs], dtype=float).reshape(-1, 3)
        cc = np.array([_WEIGHTS[s.projection] for s in specs], dtype=float).reshape(-1, 2)
        return {"E": np.einsum("nji,nj->ni", R0[ia], axis),  # material axis in A's frame
                "chi": [s.damping for s in specs], "c0": cc[:, 0], "c1": cc[:, 1]}
