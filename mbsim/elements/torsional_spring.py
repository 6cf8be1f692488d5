"""Torsional spring between two bodies (THEORY §13): the moment ``κ θ`` of the relative rotation vector
θ = log(Λ_B Λ_B0ᵀ Λ_A0 Λ_Aᵀ) since t = 0 (|θ| < π) on A, its opposite on B, potential ½κ|θ|²; with
``damping`` χ also the moment of the rate of θ.  It is the bushing's law (:mod:`.bushing`) with the
stiffness κ I and damping χ I on the rotation, nothing on the translation, at the bodies' centres: the
exact derivative of the logarithm map is its tangent (for an isotropic stiffness J_l(θ)⁻ᵀ θ = θ, so the
moment is κθ itself).

The variant about an axis, whose angle turns through full turns (unwrapped as an angle drive's), needs
a memory of the turns taken that the engine does not keep yet: ``axis`` is refused, saying so."""
from __future__ import annotations

import numpy as np

from .base import ElementKind
from .bushing import FIELDS, law


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

    @staticmethod
    def read(r, m) -> dict:
        if m.has("axis"):
            r.report(m.sub("axis"), m.get("axis"),
                     "a torsional spring about an axis (its angle through full turns) is not supported yet; "
                     "leave out `axis` for the spring on the relative rotation vector (|rotation| < 180°), or "
                     "combine it with a revolute joint on that axis")
        return dict(stiffness=r.required_number(m, "stiffness", ">=0"),
                    damping=r.optional(m, "damping", lambda n, p: r.number(n, p, ">=0"), 0.0))

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
