"""Torsional spring between two bodies (THEORY §13): the moment ``κ θ`` of the relative rotation vector
θ = log(Λ_B Λ_B0ᵀ Λ_A0 Λ_Aᵀ) since t = 0 (|θ| < π) on A, its opposite on B, potential ½κ|θ|²; with
``damping`` χ also the moment of the rate of θ.  It is the bushing's law (:mod:`.bushing`) with the
stiffness κ I and damping χ I on the rotation, nothing on the translation, at the bodies' centres: the
exact derivative of the logarithm map is its tangent (for an isotropic stiffness J_l(θ)⁻ᵀ θ = θ, so the
moment is κθ itself).

With ``axis`` n (fixed in A), :class:`TorsionalSpringAxis`: the angle φ of B about n since t = 0 through
full turns, as an angle drive's (THEORY §11: φ = atan2(w_A·u_B, u_A·u_B) + 2πk, the turns k counted from
one accepted state to the next: :func:`mbsim.elements.joints.unwrapped_angle`), the generalized force
−κφ − χφ̇ on it; rotation across the axis is left free (combine it with a revolute joint)."""
from __future__ import annotations

import numpy as np

from ..kernels import njit
from ..kernels.vec import ZERO, dot, put, row, sub
from .base import COMMIT, DERIVATIVES, DQ, DV, X_AXES, X_WA, X_WB, Y_P, Y_POTENTIAL, Y_POWER, Y_WORK, ElementKind, offsets
from .bushing import FIELDS, law
from .joints import angle_force, triad, unwrapped_angle


class TorsionalSpring(ElementKind):
    """A torsional spring on the relative rotation vector (the module docstring)."""

    type = "torsional_spring"
    keys = ("stiffness", "damping", "axis")
    fields = FIELDS
    axes = (("A1", "A"), ("A2", "A"), ("A3", "A"), ("B1", "B"), ("B2", "B"), ("B3", "B"))
    interpolate = "forces"
    draw = "point"
    outputs = ("moment",)
    stiffness = "kappa"
    measures_rotation = True  # its rotation vector is valid below a half turn (the driver warns past it)
    law = law

    @classmethod
    def owns(cls, spec) -> bool:
        return spec.type == "torsional_spring" and spec.axis is None

    @staticmethod
    def read(r, m) -> dict:
        axis = None
        if m.has("axis"):
            axis = r.vector(m.get("axis"), m.sub("axis"))
            if axis is not None:
                norm = float(np.linalg.norm(axis))
                if not norm > 0.0 or not np.isfinite(norm):
                    r.report(m.sub("axis"), m.get("axis"), "must be a nonzero direction")
                    axis = None
                else:
                    axis = np.asarray(axis, dtype=float) / norm
        return dict(stiffness=r.required_number(m, "stiffness", ">=0"),
                    damping=r.optional(m, "damping", lambda n, p: r.number(n, p, ">=0"), 0.0), axis=axis)

    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        n = len(specs)
        K = np.zeros((n, 6, 6))
        C = np.zeros((n, 6, 6))
        for i, s in enumerate(specs):
            K[i, 3:, 3:] = s.stiffness * np.eye(3)
            C[i, 3:, 3:] = (s.damping or 0.0) * np.eye(3)
        EA = R0[ia].transpose(0, 2, 1)  # the world axes at t = 0 as material vectors of A (rows)
        EB = R0[ib].transpose(0, 2, 1)
        return {"ZA": np.zeros((n, 3)), "ZB": np.zeros((n, 3)), "A1": EA[:, :, 0], "A2": EA[:, :, 1],
                "A3": EA[:, :, 2], "B1": EB[:, :, 0], "B2": EB[:, :, 1], "B3": EB[:, :, 2], "K": K.reshape(n, 36),
                "C": C.reshape(n, 36), "P": np.zeros((n, 6)), "asym": np.zeros(n), "kappa": [s.stiffness for s in specs]}


# the triads (n, u, w) of the axis in A and in B (material), κ, χ, and the angle at the last accepted state
AXIS_FIELDS = (("NA", 3), ("UA", 3), ("WA", 3), ("NB", 3), ("UB", 3), ("WB", 3), ("kappa", 1), ("chi", 1),
               ("turn", 1))
_KAPPA, _CHI, _TURN = offsets(AXIS_FIELDS)[6:]


@njit(cache=True)
def axis_law(lo, hi, p, x, t, want, y, dy):
    """The generalized force F = −κφ − χφ̇ on the angle φ through full turns: the moment p_A = F g on A,
    p_B = −p_A (g = ∂φ/∂θ_A); energy ½κφ², dissipated χφ̇²; with COMMIT the angle is kept as the reference
    of the next states'.  Returns −1 (defined while B's u has a component across n)."""
    derivatives = (want & DERIVATIVES) != 0
    for e in range(lo, hi):
        TA = (row(x, e, X_AXES), row(x, e, X_AXES + 3), row(x, e, X_AXES + 6))
        TB = (row(x, e, X_AXES + 9), row(x, e, X_AXES + 12), row(x, e, X_AXES + 15))
        if derivatives:
            for k in range(81):
                dy[e, DQ + k] = 0.0
                dy[e, DV + k] = 0.0
        q, g = unwrapped_angle(p, e, _TURN, TA, TB, (want & COMMIT) != 0)
        wr = sub(row(x, e, X_WA), row(x, e, X_WB))
        qd = dot(g, wr)
        kappa, chi = p[e, _KAPPA], p[e, _CHI]
        pa = angle_force(dy, e, TA, TB, g, wr, -kappa * q - chi * qd, -kappa, -chi, derivatives)
        put(y, e, Y_P, ZERO)
        put(y, e, Y_P + 3, pa)
        put(y, e, Y_P + 6, (-pa[0], -pa[1], -pa[2]))
        y[e, Y_POTENTIAL] = 0.5 * kappa * q * q
        y[e, Y_POWER] = chi * qd * qd
        y[e, Y_WORK] = 0.0
    return -1


class TorsionalSpringAxis(ElementKind):
    """A torsional spring about an axis (the module docstring): written ``type: torsional_spring`` with
    ``axis``."""

    type = "torsional_spring_axis"
    variant_of = "torsional_spring"
    fields = AXIS_FIELDS
    axes = (("NA", "A"), ("UA", "A"), ("WA", "A"), ("NB", "B"), ("UB", "B"), ("WB", "B"))
    blocks = ("aa", "ab", "ba", "bb", "aA", "aB", "bA", "bB")
    interpolate = "forces"
    draw = "point"
    outputs = ("moment",)
    stiffness = "kappa"
    law = axis_law

    @classmethod
    def owns(cls, spec) -> bool:
        return spec.type == "torsional_spring" and spec.axis is not None

    @classmethod
    def remembers_in(cls, specs) -> bool:
        return True


    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        n = len(specs)
        out = {name: np.zeros((n, width)) for name, width in AXIS_FIELDS}
        for k, s in enumerate(specs):
            t = triad(np.asarray(s.axis, dtype=float))
            for name, vec in zip(("NA", "UA", "WA"), t):
                out[name][k] = R0[ia[k]].T @ vec
            for name, vec in zip(("NB", "UB", "WB"), t):
                out[name][k] = R0[ib[k]].T @ vec
            out["kappa"][k] = s.stiffness
            out["chi"][k] = s.damping or 0.0
        return out
