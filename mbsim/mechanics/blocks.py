"""The elements' forces and their derivatives at one state, instance by instance (THEORY §12): what the
mechanism at a state (:mod:`mbsim.mechanics.mechanism`) assembles into f, K, C, Φ and G."""
from __future__ import annotations

from ..elements.base import Y_PHI
from ..kernels import njit
from ..kernels.vec import EYE33, row
from .chain import body_forces, body_rows, force_block, put_forces


@njit(cache=True)
def at_state(el, y, dy, arms, w, out):
    """From an evaluation with derivatives (:func:`mbsim.mechanics.evaluate.at_state`): per instance its
    forces and moments about the bodies' centres ``Q`` (n, 12), the blocks ``Kq = −∂Q/∂q`` and ``Kv =
    −∂Q/∂v`` (n, 12, 12) in ``[δr_A, δθ_A, δr_B, δθ_B]`` and ``[δv_A, δω_A, δv_B, δω_B]`` (the
    geometric stiffness of its own unknowns' forces included), and per own unknown its row Φ − F and its
    Jacobian's row ``G`` (n_own, 12) with respect to the bodies' unknowns (``out`` = (Q, Kq, Kv, phi,
    G)); ``w`` the bodies' angular velocities."""
    start, body, first, count, mask = el[0], el[1], el[7], el[8], el[9]
    Q, Kq, Kv, phi, G = out
    for kind in range(start.shape[0] - 1):
        mk = mask[kind]
        for e in range(start[kind], start[kind + 1]):
            put_forces(Q, e, body_forces(y, e, arms))
            a, b = body[e, 0], body[e, 1]
            zA, zB = row(arms, e, 0), row(arms, e, 3)
            arms4 = (zA, zB, zA, zB)
            pd = row(y, e, 0)
            spin = (1.0, EYE33, EYE33, row(w, a, 0), row(w, b, 0))
            force_block(Kq, e, dy, e, mk, pd, arms4, spin, (1.0, 0.0), True)
            force_block(Kv, e, dy, e, mk, pd, arms4, spin, (0.0, 1.0), False)
            m = count[e]
            if m:
                body_rows(dy, e, m, (zA, zB), G, first[e])
                for i in range(m):
                    phi[first[e] + i] = y[e, Y_PHI + i]
