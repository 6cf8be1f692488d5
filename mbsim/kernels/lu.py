"""Factorize and solve the Newton system with the LU its model uses: the one compiled dispatch.

``solver`` = ``(dense, nm, ndof, parent, order, flat, sym)`` says which (:class:`mbsim.linalg.LinearSolver`
chooses it, once per model): the dense LU (``dense``; ``flat`` the row-major position of every stored
entry), the block sparse LU (``sym`` not empty: its symbolic structure) or the block tree LU (``parent``,
``order`` of the forest of the ``nm`` moving bodies).  The tangent is assembled in the solver's storage
``data``; the block LUs factorize it in place (``lu`` is ``data``), the dense LU into ``lu`` (ndof²).
"""
from __future__ import annotations

from . import blocklu, dense, njit, tree


@njit(cache=True)
def factorize(solver, data, lu, piv):
    """Factorize the tangent ``data`` into ``lu``; −1, or the block whose pivot is singular: a moving
    body's (the dense LU: the body of the zero pivot's column, a guess -- with row pivoting the
    dependency may involve earlier bodies), or ``nm`` + an element-owned unknown (the dense LU), or,
    for the block sparse LU, the own unknowns' block of an element closing a loop."""
    is_dense, nm, ndof, parent, order, flat, sym = solver
    if is_dense:
        bad = dense.factorize(data, flat, ndof, lu, piv)
        if bad < 0:
            return -1
        return bad // 6 if bad < 6 * nm else nm + bad - 6 * nm
    if data.ctypes.data != lu.ctypes.data:
        for i in range(data.shape[0]):
            lu[i] = data[i]
    if sym.shape[0] > 0:
        return blocklu.factorize(lu, sym, piv)
    return tree.factorize(lu, nm, parent, order, piv)


@njit(cache=True)
def solve(solver, lu, piv, rhs, out, work):
    """``out ← K⁻¹ rhs`` with the factors in ``lu`` (``work``: max(18·nm, ndof) values)."""
    is_dense, nm, ndof, parent, order, flat, sym = solver
    if sym.shape[0] > 0:
        blocklu.solve_into(lu, sym, piv, rhs, work, out)
    elif is_dense:
        for i in range(rhs.shape[0]):
            out[i] = rhs[i]
        dense.lu_block_solve(lu, 0, ndof, piv, 0, out, 0)
    else:
        tree.solve_into(lu, nm, parent, order, piv, rhs, work, out)
