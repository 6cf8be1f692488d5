"""Torsional damper with joint projection P1/P2/P3/none (THEORY §7; §8 for ``seed``)."""
from __future__ import annotations

import numpy as np

from ..kernels import njit
from ..scenario.spec import JOINT_PROJECTION, PROJECTIONS
from ..kernels.connectors import CONSISTENT, NONE, add_block, dot, mv, row, skew_right
from .base import FORCE, LENGTH, MOMENT, POTENTIAL, POWER, ElementKind, offsets

# P = c0 I + c1 n⊗n for each projection; DP·ω then contributes W = −c1[(n·ω)I + n⊗ω] n̂'
# (THEORY §7 lists W for P2 (+) and P3 (−); P1 and none have W = 0).
_WEIGHTS = {"P1": (1.0, 0.0), "P2": (1.0, -1.0), "P3": (0.0, 1.0), "none": (0.0, 0.0)}

FIELDS = (("E", 3), ("chi", 1), ("c0", 1), ("c1", 1))
_E, _CHI, _C0, _C1 = offsets(FIELDS)


@njit(cache=True)
def law(lo, hi, body, p, first, lam, scale, target, af, g, mode, r1, rn, dr, R1, Rn, v1, vn, w1, wn, T, Om, res, K, out, pos,
        data, scr, cache):
    """Pure moment ``m = χ_r P (ω_B,α − ω_A,α)`` on A, P = c0 I + c1 n⊗n with the axis n turning with
    body A, for instances ``lo … hi−1``; returns −1 (defined at every state).
    (scr: S[0] = P, S[1] = W, S[2] = A, S[3] = M_A, S[4] = M_B.)"""
    direct = pos.shape[0] > 0
    bf = 1.0 - af
    for e in range(lo, hi):
        a, b = body[e, 0], body[e, 1]
        chi, c0, c1 = p[e, _CHI], p[e, _C0], p[e, _C1]
        w = ((af * w1[b, 0] + bf * wn[b, 0]) - (af * w1[a, 0] + bf * wn[a, 0]),
             (af * w1[b, 1] + bf * wn[b, 1]) - (af * w1[a, 1] + bf * wn[a, 1]),
             (af * w1[b, 2] + bf * wn[b, 2]) - (af * w1[a, 2] + bf * wn[a, 2]))
        Ee = row(p, e, _E)
        n1 = mv(R1, a, Ee)
        nn = mv(Rn, a, Ee)
        nv = (af * n1[0] + bf * nn[0], af * n1[1] + bf * nn[1], af * n1[2] + bf * nn[2])
        for r in range(3):
            for q in range(3):
                scr[0, r, q] = c1 * nv[r] * nv[q] + (c0 if r == q else 0.0)
        pw = 0.0
        for r in range(3):
            mr = chi * (scr[0, r, 0] * w[0] + scr[0, r, 1] * w[1] + scr[0, r, 2] * w[2])
            out[e, FORCE + r] = 0.0
            out[e, MOMENT + r] = mr
            pw += mr * w[r]
            res[e, r] = 0.0
            res[e, 3 + r] = mr
            res[e, 6 + r] = 0.0
            res[e, 9 + r] = -mr
        out[e, POWER] = pw
        out[e, LENGTH] = np.nan
        out[e, POTENTIAL] = 0.0
        if mode > NONE:
            nw = dot(nv, w)
            for r in range(3):  # A = (n·ω) I + n⊗ω
                for q in range(3):
                    scr[2, r, q] = nv[r] * w[q] + (nw if r == q else 0.0)
            skew_right(scr, 2, n1, scr, 1)  # W = −c1 A n̂'
            for r in range(3):
                for q in range(3):
                    scr[1, r, q] *= -c1
            if mode == CONSISTENT:  # MA = χ(−P Ω_A + W), MB = χ P Ω_B
                for r in range(3):
                    for q in range(3):
                        sa = 0.0
                        sb = 0.0
                        for j in range(3):
                            sa += scr[0, r, j] * Om[a, j, q]
                            sb += scr[0, r, j] * Om[b, j, q]
                        scr[3, r, q] = chi * (scr[1, r, q] - sa)
                        scr[4, r, q] = chi * sb
            else:  # seed: C_X = g P T(θ_X)ᵀ, K_mθA = χ(−C_A + W), K_mθB = χ C_B
                for r in range(3):
                    for q in range(3):
                        sa = 0.0
                        sb = 0.0
                        for j in range(3):
                            sa += scr[0, r, j] * T[a, q, j]
                            sb += scr[0, r, j] * T[b, q, j]
                        scr[3, r, q] = chi * (scr[1, r, q] - g * sa)
                        scr[4, r, q] = chi * g * sb
            ke = 0 if direct else e
            for r in range(12):
                for q in range(12):
                    K[ke, r, q] = 0.0
            for r in range(3):
                for q in range(3):
                    K[ke, 3 + r, 3 + q] = -af * scr[3, r, q]
                    K[ke, 3 + r, 9 + q] = -af * scr[4, r, q]
                    K[ke, 9 + r, 3 + q] = af * scr[3, r, q]
                    K[ke, 9 + r, 9 + q] = af * scr[4, r, q]
            if direct:
                add_block(K, ke, pos, e, data)
    return -1


class TorsionalDamper(ElementKind):
    """Torsional damper between two bodies, on their relative angular velocity projected by P."""

    type = "torsional_damper"
    keys = ("damping", "projection", "joint", "axis")
    fields = FIELDS
    law = law

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
