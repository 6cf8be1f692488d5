"""Linear spring between points of two bodies (THEORY §7, spring; §8 for ``seed``)."""
from __future__ import annotations

import numpy as np

from ..kernels import njit
from ..kernels.vec import put, put_block, row
from .base import (DERIVATIVES, X_D, Y_P, Y_POTENTIAL, Y_POWER, ElementKind, block_offset, material_arms, offsets,
                   points_distance, read_points)

# Below this length (relative to the rest length) a spring with L0 > 0 has no
# direction: the step fails instead of producing a huge, arbitrary force.
_DEGENERATE_LENGTH = 1e-12

MAX_CURVE = 32  # points of a force curve
# a force curve's knots: per point its deflection, force, slope and the integral of the curve from the first
# point to it; g0 the integral from the first point to deflection 0 (the potential's origin)
FIELDS = (("ZA", 3), ("ZB", 3), ("k", 1), ("L0", 1), ("n", 1), ("g0", 1), ("curve", 4 * MAX_CURVE))
_K, _L0, _N, _G0, _CURVE = offsets(FIELDS)[2:]
_DD = block_offset("dd")  # ∂p_d/∂d


@njit(cache=True)
def curve_at(p, e, n, x):
    """The force curve of instance ``e`` (``n`` knots) at deflection ``x``: (force, its derivative, its
    integral from the first knot): the C¹ cubic Hermite interpolant of the knots' forces and slopes,
    continued linearly with the end slopes (THEORY §13)."""
    c = _CURVE
    x0, y0, m0 = p[e, c], p[e, c + 1], p[e, c + 2]
    if x <= x0:
        u = x - x0
        return y0 + m0 * u, m0, u * (y0 + 0.5 * m0 * u)
    last = c + 4 * (n - 1)
    xn, yn, mn, gn = p[e, last], p[e, last + 1], p[e, last + 2], p[e, last + 3]
    if x >= xn:
        u = x - xn
        return yn + mn * u, mn, gn + u * (yn + 0.5 * mn * u)
    i = 0
    while i < n - 2 and x >= p[e, c + 4 * (i + 1)]:
        i += 1
    a = c + 4 * i
    xa, ya, ma, ga = p[e, a], p[e, a + 1], p[e, a + 2], p[e, a + 3]
    xb, yb, mb = p[e, a + 4], p[e, a + 5], p[e, a + 6]
    h = xb - xa
    s = (x - xa) / h
    s2, s3 = s * s, s * s * s
    f = (2 * s3 - 3 * s2 + 1) * ya + (s3 - 2 * s2 + s) * h * ma + (-2 * s3 + 3 * s2) * yb + (s3 - s2) * h * mb
    df = ((6 * s2 - 6 * s) * ya + (6 * s - 6 * s2) * yb) / h + (3 * s2 - 4 * s + 1) * ma + (3 * s2 - 2 * s) * mb
    s4 = s2 * s2
    g = ga + h * ((s - s3 + 0.5 * s4) * ya + h * (0.5 * s2 - 2.0 * s3 / 3.0 + 0.25 * s4) * ma
                  + (s3 - 0.5 * s4) * yb + h * (0.25 * s4 - s3 / 3.0) * mb)
    return f, df, g


@njit(cache=True)
def law(lo, hi, p, x, t, want, y, dy):
    """``f = k (1 − L0/L) d`` on A (zero rest length: ``f = k d``), ``p_d = −f``, and
    ``∂p_d/∂d = −k P``, ``P = (1 − L0/L) I + (L0/L) n⊗n``; returns the first instance with L0 > 0
    collapsed to L = 0 (no direction), or −1."""
    failed = -1
    for e in range(lo, hi):
        k, L0 = p[e, _K], p[e, _L0]
        c = row(x, e, X_D)
        L = np.sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2])
        nk = int(p[e, _N])
        if nk:  # a force curve: tension T(L − L0)
            T, dT, g = curve_at(p, e, nk, L - L0)
            # no direction for a force that is not zero (as the linear spring: below 1e-12 of L0)
            if (L0 > 0.0 and L <= _DEGENERATE_LENGTH * L0) or (L == 0.0 and T != 0.0):
                if failed < 0:
                    failed = e
                T = 0.0
            safe = L if L > 0.0 else 1.0
            n0, n1, n2 = c[0] / safe, c[1] / safe, c[2] / safe
            put(y, e, Y_P, (-T * n0, -T * n1, -T * n2))  # the force on A is T n (tension pulls A towards B)
            put(y, e, Y_P + 3, (0.0, 0.0, 0.0))
            put(y, e, Y_P + 6, (0.0, 0.0, 0.0))
            y[e, Y_POTENTIAL] = g - p[e, _G0]
            y[e, Y_POWER] = 0.0
            if want & DERIVATIVES:  # ∂(T n)/∂d = T' n⊗n + (T/L)(I − n⊗n); at L = 0 (L0 = 0, T = 0): T' I
                q = T / safe if L > 0.0 else dT
                a = dT - q if L > 0.0 else 0.0
                put_block(dy, e, _DD, (-(a * n0 * n0 + q), -(a * n0 * n1), -(a * n0 * n2),
                                      -(a * n1 * n0), -(a * n1 * n1 + q), -(a * n1 * n2),
                                      -(a * n2 * n0), -(a * n2 * n1), -(a * n2 * n2 + q)))
            continue
        deg = L0 > 0.0 and L <= _DEGENERATE_LENGTH * L0
        if deg and failed < 0:
            failed = e
        safe = 1.0 if (deg or L == 0.0) else L
        ratio = L0 / safe if L0 > 0.0 else 0.0
        s = k * (1.0 - ratio)
        put(y, e, Y_P, (-(s * c[0]), -(s * c[1]), -(s * c[2])))
        put(y, e, Y_P + 3, (0.0, 0.0, 0.0))
        put(y, e, Y_P + 6, (0.0, 0.0, 0.0))
        y[e, Y_POTENTIAL] = 0.5 * k * (L - L0) ** 2
        y[e, Y_POWER] = 0.0
        if want & DERIVATIVES:
            n0, n1, n2 = c[0] / safe, c[1] / safe, c[2] / safe
            q = 1.0 - ratio
            put_block(dy, e, _DD, (-k * (ratio * n0 * n0 + q), -k * (ratio * n0 * n1), -k * (ratio * n0 * n2),
                                  -k * (ratio * n1 * n0), -k * (ratio * n1 * n1 + q), -k * (ratio * n1 * n2),
                                  -k * (ratio * n2 * n0), -k * (ratio * n2 * n1), -k * (ratio * n2 * n2 + q)))
    return failed


class Spring(ElementKind):
    """Linear spring between a point of body A and a point of body B."""

    type = "spring"
    keys = ("points", "stiffness", "rest_length", "force_curve", "law", "parameters")
    fields = FIELDS
    points = ("ZA", "ZB")
    blocks = ("dd",)
    stiffness = "k"
    failure = ("collapsed to zero length under a force (a positive rest length, or a force curve not zero at zero "
               "length); its direction is undefined")
    draw = "coil"
    outputs = ("force",)
    dissipates = False
    law = law

    @classmethod
    def owns(cls, spec) -> bool:
        return spec.type == "spring" and not (spec.params and spec.params.get("law") is not None)

    @classmethod
    def seed_of(cls, spec) -> bool:
        # THEORY §8: the excerpt's eq. rbs-8, for a linear spring (a force curve: the consistent tangent)
        return not (spec.params and spec.params.get("force_curve") is not None)

    @staticmethod
    def read(r, m) -> dict:
        fields = read_points(r, m)
        given = r.exactly_one(m, ("stiffness", "force_curve", "law"))
        fields["stiffness"] = r.required_number(m, "stiffness", ">=0") if given == "stiffness" else None
        fields["force_curve"] = _read_curve(r, m) if given == "force_curve" else None
        if m.has("parameters") and given != "law":
            r.report(m.sub("parameters"), m.get("parameters"), "belongs to a law: give 'law' too, or remove it")
        points = fields["points"]
        if given == "law":
            if m.has("rest_length"):
                r.report(m.sub("rest_length"), m.get("rest_length"), "has no meaning with a law (its tension is a "
                                                                     "function of the length itself: pass a rest "
                                                                     "length among its parameters)")
            fields["law"] = _read_law(r, m, points)
            fields["rest_length"] = None
            return fields
        # halves first (read_points refuses points too far apart for a finite length)
        default = None if points is None else points_distance(points)
        if default is not None and not np.isfinite(default):
            default = None
        fields["rest_length"] = r.optional(m, "rest_length", lambda n, p: r.number(n, p, ">=0"), default)
        return fields

    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        points = np.array([s.points for s in specs], dtype=float).reshape(-1, 2, 3)
        ZA, ZB = material_arms(points, ia, ib, r0, R0)
        n = len(specs)
        k, count, g0, rows = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros((n, 4 * MAX_CURVE))
        for i, s in enumerate(specs):
            curve = s.params.get("force_curve") if s.params else None
            if curve is None:
                k[i] = s.stiffness
                continue
            knots = curve_knots(curve)
            count[i] = len(knots)
            rows[i, :knots.size] = knots.ravel()
            k[i] = float(np.max(np.abs(knots[:, 2])))  # the stiffest slope: the round-off floor's stiffness
            g0[i] = _integral_to_zero(knots)
        return {"ZA": ZA, "ZB": ZB, "k": k, "L0": [s.rest_length for s in specs], "n": count, "g0": g0,
                "curve": rows}


def curve_knots(curve) -> np.ndarray:
    """(n, 4) per point of a force curve [[d, F], …]: d, F, the slope of SciPy's shape-preserving
    monotone cubic (PCHIP, Fritsch–Carlson) there, and the integral of the interpolant from the first point."""
    from scipy.interpolate import PchipInterpolator
    c = np.asarray(curve, dtype=float).reshape(-1, 2)
    d, f = c[:, 0], c[:, 1]
    slopes = PchipInterpolator(d, f).derivative()(d) if len(d) > 2 else np.full(len(d), (f[1] - f[0]) / (d[1] - d[0]))
    h = np.diff(d)
    # ∫ of the cubic Hermite segment: h (y_a + y_b)/2 + h² (m_a − m_b)/12
    seg = h * (f[:-1] + f[1:]) / 2.0 + h * h * (slopes[:-1] - slopes[1:]) / 12.0
    return np.column_stack((d, f, slopes, np.concatenate(([0.0], np.cumsum(seg)))))


def _integral_to_zero(knots) -> float:
    """The integral of the curve from its first point to deflection 0 (linear continuation outside)."""
    d, f, m, g = knots.T
    x = 0.0
    if x <= d[0]:
        u = x - d[0]
        return u * (f[0] + 0.5 * m[0] * u)
    if x >= d[-1]:
        u = x - d[-1]
        return g[-1] + u * (f[-1] + 0.5 * m[-1] * u)
    i = int(np.searchsorted(d, x, side="right")) - 1
    h = d[i + 1] - d[i]
    s = (x - d[i]) / h
    return g[i] + h * ((s - s ** 3 + 0.5 * s ** 4) * f[i] + h * (0.5 * s ** 2 - 2 * s ** 3 / 3 + 0.25 * s ** 4) * m[i]
                       + (s ** 3 - 0.5 * s ** 4) * f[i + 1] + h * (0.25 * s ** 4 - s ** 3 / 3) * m[i + 1])


def _read_law(r, m, points):
    """``law: "module:function"`` and ``parameters: {name: value, …}`` (THEORY §13): the law imported,
    compiled and tried at the initial length (:func:`mbsim.elements.user_law.resolve`), unless the reader
    only checks the form (``r.laws`` False: a scenario read back from a result)."""
    from . import user_law
    node = m.get("law")
    text = r.string(node, m.sub("law"))
    if text is None:
        return None
    try:
        user_law.parse_reference(text)
    except ValueError as e:
        r.report(m.sub("law"), node, str(e))
        return None
    names, values = (), ()
    pnode = m.get("parameters")
    if pnode is not None:
        value = getattr(pnode, "value", None)
        given = [getattr(k, "value", None) for k, _ in value] if isinstance(value, list) else []
        pm = r.mapping(pnode, m.sub("parameters"), [k for k in given if isinstance(k, str)])
        if pm is None:
            return None
        before = len(r.problems)
        names = tuple(pm.items)
        values = tuple(r.number(pm.get(k), pm.sub(k)) for k in names)
        if len(r.problems) > before:
            return None
        if len(names) > user_law.MAX_PARAMETERS:
            r.report(m.sub("parameters"), pnode, f"at most {user_law.MAX_PARAMETERS} parameters, got {len(names)}")
            return None
    if points is None:
        return None
    length = points_distance(points)
    ref = user_law.LawRef(text, getattr(r, "base", None), names, tuple(float(v) for v in values), float(length))
    if getattr(r, "laws", True):
        try:
            ref.compiled()
        except user_law.LawError as e:
            r.report(m.sub("law"), node, str(e))
            return None
    return ref


def _read_curve(r, m):
    """``force_curve: [[d, F], …]``: 2 to MAX_CURVE points, d strictly increasing [m], F [N], tension positive."""
    node = m.get("force_curve")
    path = m.sub("force_curve")
    items = r.sequence(node, path, "a list of points [deflection, force]")
    if items is None:
        return None
    before = len(r.problems)
    pts = [r.numbers(sub, f"{path}[{i}]", 2, what="numbers [deflection, force]") for i, sub in enumerate(items)]
    if len(r.problems) > before:
        return None
    pts = np.asarray(pts, dtype=float).reshape(-1, 2)
    if not 2 <= len(pts) <= MAX_CURVE:
        r.report(path, node, f"needs 2 to {MAX_CURVE} points [deflection, force], got {len(pts)}")
        return None
    steps = np.diff(pts[:, 0])
    if np.any(steps <= 0):
        i = int(np.flatnonzero(steps <= 0)[0])
        r.report(path, node, f"the deflections must increase strictly: point {i + 1} has {pts[i + 1, 0]:g} after "
                             f"{pts[i, 0]:g}")
        return None
    return pts
