"""One compiled path from the packed elements to the residual and tangent.

:func:`evaluate` runs the law of every registered kind over its range of the
packed arrays (:class:`mbsim.elements.base.Elements`).  The switch from kind
id to law, :func:`law`, is written here as plain Python (what runs uncompiled,
e.g. under ``NUMBA_DISABLE_JIT=1``) and, for numba, generated from the
registry as an ``if kind == 0: … elif kind == 1: …`` chain of direct calls
(:func:`_compiled_switch`), so that registering a kind is all it takes.
"""
from __future__ import annotations

import numpy as np

from ..kernels import njit, on_numba
from ..kernels.connectors import PREPARE, SCRATCH
from .. import elements as registry  # ELEMENTS read at use: register() may extend it first
from .base import N_OUT, ElementEval, Elements

# tangent argument -> law mode: the Newton tangents, and the constrained systems at one state of the joints
# (THEORY §11: "acceleration", M a + Gᵀλ = f, G a = F̈ − γ; "velocity", the projection's G v = Ḟ), in which a
# law with own unknowns writes its k·G blocks and the right side k·(target − γ) or k·target of its rows, and the
# other laws only their forces (modes below 0 are no tangent to them)
MODES = {None: 0, "consistent": 1, "seed": 2, "acceleration": -1, "velocity": -2}
# and, once at the start of every step, PREPARE (−3): a kind that ``prepares`` writes into its ``cache`` rows
# what stays constant through the step's Newton iteration (a joint: G(q_n), the t_n half of its α-interpolated
# Jacobian); the other kinds are not called.  Modes 0-2 with α_f < 1 read it

# The arguments every law takes, in order (the contract of docs/develop.md, item 5).
LAW_ARGUMENTS = ("lo", "hi", "body", "p", "first", "lam", "scale", "target", "af", "g", "mode", "r1", "rn", "dr", "R1", "Rn", "v1", "vn", "w1", "wn",
                 "T", "Om", "res", "K", "out", "pos", "data", "scr", "cache")


def law(kind, lo, hi, body, p, first, lam, scale, target, af, g, mode, r1, rn, dr, R1, Rn, v1, vn, w1, wn, T, Om, res, K, out,
        pos, data, scr, cache):
    """The law of kind id ``kind`` on instances ``lo … hi−1``; returns the first instance it finds
    undefined, or −1."""
    cls = registry.ELEMENTS[kind]
    if mode == PREPARE and not cls.prepares:
        return -1
    return cls.law(lo, hi, body, p, first, lam, scale, target, af, g, mode, r1, rn, dr, R1, Rn, v1, vn, w1, wn, T, Om, res, K,
                   out, pos, data, scr, cache)


def _compiled_switch(kind, lo, hi, body, p, first, lam, scale, target, af, g, mode, r1, rn, dr, R1, Rn, v1, vn, w1, wn, T, Om,
                     res, K, out, pos, data, scr, cache):
    """numba's implementation of :func:`law`: a chain of direct calls, generated from the registry."""
    names = ", ".join(LAW_ARGUMENTS)
    lines = [f"def switch(kind, {names}):"]
    kinds = registry.ELEMENTS
    for k in range(len(kinds)):
        lines.append(f"    {'if' if k == 0 else 'elif'} kind == {k}:")
        if not kinds[k].prepares:
            lines.append(f"        if mode == {PREPARE}:")
            lines.append("            return -1")
        lines.append(f"        return law_{k}({names})")
    lines.append("    return -1")
    namespace = {f"law_{k}": cls.law for k, cls in enumerate(kinds)}  # kernels: numba calls them directly
    exec("\n".join(lines), namespace)  # noqa: S102 - source built above from the registry alone
    return namespace["switch"]


@on_numba
def _register_switch():
    from numba.extending import overload
    overload(law, jit_options={"error_model": "numpy"})(_compiled_switch)


@njit(cache=True)
def evaluate(start, body, p, first, lam, scale, target, af, g, mode, r1, rn, dr, R1, Rn, v1, vn, w1, wn, T, Om, res, K, out, pos,
             data, scr, cache):
    """Every element instance: residual rows into ``res`` (n, W), outputs into ``out`` (n, N_OUT), and
    with ``mode`` its tangent blocks into ``K`` (n, W, W), or, given scatter positions ``pos``
    (n, W·W), added straight into ``data`` through ``K`` (1, W, W); W = 12 + the most own unknowns
    of a kind.  ``lam`` holds the own unknowns of all instances (physical), ``first`` where each
    instance's start, ``scale`` the factor k of each, ``target`` the value each row holds (a drive's F(t); see
    :mod:`mbsim.elements.base`).  ``cache`` (n, 12·(W − 12)): the step's constants of the kinds that
    ``prepare`` (mode PREPARE, once per step; read by modes 0-2 when α_f < 1).  Returns the
    first instance a law finds undefined, or −1."""
    failed = -1
    for kind in range(start.shape[0] - 1):
        lo, hi = start[kind], start[kind + 1]
        if hi > lo:
            f = law(kind, lo, hi, body, p, first, lam, scale, target, af, g, mode, r1, rn, dr, R1, Rn, v1, vn, w1, wn, T, Om, res, K, out,
                    pos, data, scr, cache)
            if f >= 0 and failed < 0:
                failed = f
    return failed


_UNUSED = np.zeros((1, 3, 3))  # stands in for T(θ) and Ω at a single state (no tangent: not read)
_NODATA = np.zeros(0)


def evaluate_at(el: Elements, kin, tangent=None, lam=None, scale=None, target=None) -> ElementEval:
    """All instances at the iterate or state ``kin`` (:class:`mbsim.model.kinematics.Kinematics`),
    tangent blocks returned when ``tangent`` is ``'consistent'`` or ``'seed'`` (or the constrained
    systems' blocks, ``'acceleration'``, ``'velocity'``: see MODES); ``lam`` the own unknowns (zero when
    not given), ``scale`` their factors k (one when not given) and ``target`` the values their rows hold
    (a drive's F(t), or Ḟ, F̈ for the constrained systems; zero when not given)."""
    n, w = el.n, el.width
    lam = np.zeros(el.n_unknowns) if lam is None else np.ascontiguousarray(lam, dtype=float)
    scale = np.ones(el.n_unknowns) if scale is None else np.ascontiguousarray(scale, dtype=float)
    target = np.zeros(el.n_unknowns) if target is None else np.ascontiguousarray(target, dtype=float)
    res, out = np.zeros((n, w)), np.zeros((n, N_OUT))  # (a connector leaves the joint columns 0)
    K = np.zeros((n, w, w) if tangent is not None else (1, w, w))
    T, Om = (kin.T, kin.Omega) if kin.T is not None else (_UNUSED, _UNUSED)
    nopos, scr, cache = np.zeros((0, w * w), np.int32), np.empty(SCRATCH), np.zeros((n, 12 * (w - 12)))
    # the positions' increments over the step: the solver's own (kin.dr) when given, else r1 − rn
    if kin.dr is not None:
        dr = np.ascontiguousarray(kin.dr, dtype=float)
        if dr.shape != kin.r1.shape:  # every body's, fixed ones (0) included: the laws index it by body
            raise ValueError(f"dr has shape {dr.shape}, the positions {kin.r1.shape}")
    elif kin.r1 is kin.rn:
        dr = np.zeros((0, 3))  # one state
    else:
        dr = np.ascontiguousarray(kin.r1 - kin.rn, dtype=float)
    if kin.alpha_f < 1.0:  # the step's constants first, as the step does
        evaluate(el.start, el.body, el.data, el.first, lam, scale, target, kin.alpha_f, kin.g, PREPARE, kin.rn, kin.rn,
                 np.zeros((0, 3)), kin.Rn, kin.Rn, kin.vn, kin.vn, kin.wn, kin.wn, T, Om, res, K, out, nopos, _NODATA,
                 scr, cache)
    failed = evaluate(el.start, el.body, el.data, el.first, lam, scale, target, kin.alpha_f, kin.g, MODES[tangent], kin.r1,
                      kin.rn, dr, kin.R1, kin.Rn, kin.v1, kin.vn, kin.w1, kin.wn, T, Om, res, K, out, nopos, _NODATA, scr,
                      cache)
    return ElementEval(residual=res, tangent=K if tangent is not None else None, out=out, failed=int(failed))
