"""User force laws on a spring (THEORY §13, SCENARIO.md: a spring's ``law``; docs/user-laws.md).

The user writes a plain Python function of the line between the spring's two points::

    def tension(length, rate, time, params):          # params: the scenario's parameters, in order
        return T, dT_dlength, dT_drate                 # or T alone; or these three and the energy V(L)

:func:`resolve` imports it (from the scenario's directory first, then ``sys.path``), compiles it with numba
(``nopython``), calls it once at the spring's initial length to learn what it returns, and wraps it in a
C-callable function (``numba.cfunc``) of one fixed signature,

    ``int64 law(double L, double L̇, double t, double *params, int64 n, double *out)``

writing ``out = (T, ∂T/∂L, ∂T/∂L̇, V, V′)`` and returning 0, or 1 when a value is not finite.  A law that
gives the tension alone gets its derivatives by central differences (:data:`EPS3`-relative steps); a law
with a potential gets V′ the same way.  The wrapper's address goes into the spring's parameter row, and the
compiled law of the kind (:func:`law`) calls it through that address (:func:`call`: an indirect call the
engine's cached machine code makes; no Python per evaluation, and no recompilation of the engine for a new
law).  Run as plain Python (:mod:`mbsim.compiling`, NUMBA_DISABLE_JIT), :func:`call` calls ``fill``, the
compiled function the wrapper wraps (its plain Python under NUMBA_DISABLE_JIT).

The tension pulls A towards B: the force on A is ``T n``, n the unit vector from A's point to B's.  Energy
(THEORY §9): a law that returns a fourth value V(L) stores V, and the rest of its work, ``(T − V′) L̇``, is
dissipated; a law without one puts its power ``−T L̇`` into the bodies as external work (``Y_WORK``).
"""
from __future__ import annotations

import importlib
import importlib.util
import math
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from ..kernels import njit, on_numba
from ..kernels.vec import put, row
from .base import (DERIVATIVES, X_D, X_DV, Y_P, Y_PHI, Y_POTENTIAL, Y_POWER, Y_WORK, ElementKind, block_offset,
                   material_arms, offsets)

MAX_PARAMETERS = 16
EPS3 = float(np.finfo(float).eps ** (1.0 / 3.0))  # central differences: the step relative to the value
_DEGENERATE_LENGTH = 1e-12  # below this fraction of the initial length, the line has no direction
# per instance: the arms, the wrapper's address, the number of parameters and their values, whether it
# has a potential, the initial length (the scale of the degenerate length), the values of its last
# failure (T, ∂T/∂L, ∂T/∂L̇, L, L̇), for the message, and its stiffness |∂T/∂L| at the initial length (the
# Newton iteration's round-off floor, as a spring's k)
FIELDS = (("ZA", 3), ("ZB", 3), ("address", 1), ("n", 1), ("parameters", MAX_PARAMETERS), ("potential", 1),
          ("size", 1), ("failed", 5), ("k", 1))
_ADDRESS, _N, _PARAMETERS, _POTENTIAL, _SIZE, _FAILED = offsets(FIELDS)[2:8]
_DD, _DV = block_offset("dd"), block_offset("dv")
_REFERENCE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*):([A-Za-z_][A-Za-z0-9_]*)\Z")


class LawError(ValueError):
    """A law that cannot be used: the message says why (the loader reports it at the key ``law``)."""


@dataclass(frozen=True)
class Compiled:
    """A law compiled for this process: what the user's function returns (1, 3 or 4 values), ``fill`` --
    ``fill(L, L̇, t, params, out) -> 0 | 1``, the user's function (compiled) with the central differences
    around it, callable from Python -- and the C wrapper of ``fill`` whose address the engine calls (None
    where numba does not compile: NUMBA_DISABLE_JIT, whose plain runs call ``fill``)."""

    reference: str
    origin: str  # the module's file (or its name)
    returns: int
    fill: object = field(repr=False)
    wrapper: object = field(repr=False)

    @property
    def address(self) -> int:
        return int(self.wrapper.address) if self.wrapper is not None else id(self)

    @property
    def potential(self) -> bool:
        return self.returns == 4

    @property
    def differences(self) -> bool:
        """Whether its derivatives are formed by central differences (it returns the tension alone)."""
        return self.returns == 1


_lock = threading.Lock()
_compiled: dict[tuple, Compiled] = {}  # (module file or name, function, its code) -> Compiled
_by_address: dict[int, Compiled] = {}


def parse_reference(text: str) -> tuple[str, str]:
    """``"module:function"`` (a dotted module path) as (module, function); ValueError if not that form."""
    m = _REFERENCE.match(text)
    if m is None:
        raise ValueError(f"must be 'module:function' (e.g. 'tendon:tension'), got {text!r}")
    return m.group(1), m.group(2)


def _import(module: str, base: Optional[str]):
    """The module: ``<base>/<module path>.py`` beside the scenario first, else ``import module``."""
    if base is not None:
        path = Path(base, *module.split(".")).with_suffix(".py")
        if path.is_file():
            name = f"_mbsim_law_{abs(hash(str(path.resolve()))):x}_{module.replace('.', '_')}"
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod, str(path.resolve())
    where = f"beside the scenario ({base}) nor " if base is not None else ""
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module.split(".")[0] and e.name != module:
            raise
        raise LawError(f"cannot find module {module!r}: not {where}on sys.path") from None
    return mod, getattr(mod, "__file__", None) or module


def resolve(reference: str, base: Optional[str], parameters, length: float) -> Compiled:
    """Import, compile and try the law ``reference`` (``module:function``) with ``parameters`` at the length
    ``length`` (rate 0, time 0).  Raises LawError saying what is wrong.  Compiled once per process and
    module file."""
    module, function = parse_reference(reference)
    try:
        mod, origin = _import(module, base)
    except LawError:
        raise
    except Exception as e:  # noqa: BLE001 - any error of the user's module: say which
        raise LawError(f"cannot import module {module!r}: {type(e).__name__}: {e}") from None
    func = getattr(mod, function, None)
    if func is None:
        raise LawError(f"module {module!r} ({origin}) has no function {function!r}")
    if not callable(func):
        raise LawError(f"{reference} is not a function")
    key = (origin, function, getattr(func, "__code__", None))
    with _lock:
        done = _compiled.get(key)
        if done is None:
            done = _compile(reference, origin, func, np.asarray(parameters, dtype=float), float(length))
            _compiled[key] = done
            _by_address[done.address] = done
    _try(done, np.asarray(parameters, dtype=float), float(length))
    return done


def _compile(reference: str, origin: str, func, parameters: np.ndarray, length: float) -> Compiled:
    import numba
    from .. import kernels
    kernels.prepare()  # (numba types mbsim's kernels, _finite among them, as their dispatchers)
    from numba.core.errors import NumbaError
    if getattr(func, "py_func", None) is not None:  # already a numba function: its Python source
        func = func.py_func
    jit = not numba.config.DISABLE_JIT
    f = numba.njit(error_model="numpy")(func)
    try:
        value = f(length, 0.0, 0.0, parameters)
    except NumbaError as e:
        first = [ln for ln in str(e).splitlines() if ln.strip()][:4]
        raise LawError(f"{reference} does not compile with numba (nopython): {' '.join(first)}") from None
    except Exception as e:  # noqa: BLE001 - it compiled and raised: say what
        raise LawError(f"{reference} raised {type(e).__name__}: {e} at the initial length {length:g} m") from None
    if isinstance(value, tuple):
        returns = len(value)
        if returns not in (3, 4) or not all(isinstance(v, (float, int, np.floating, np.integer)) for v in value):
            raise LawError(f"{reference} returns {returns} values; expected the tension alone, (tension, "
                           f"dT/dlength, dT/drate), or those and the stored energy")
    elif isinstance(value, (float, int, np.floating, np.integer)):
        returns = 1
    else:
        raise LawError(f"{reference} returns {type(value).__name__}; expected a number or a tuple of numbers")
    fill = _fill(f, returns)
    if not jit:
        return Compiled(reference, origin, returns, fill, None)
    fill = numba.njit(error_model="numpy")(fill)
    return Compiled(reference, origin, returns, fill, _wrap(fill))


def _try(done: Compiled, parameters: np.ndarray, length: float) -> None:
    """The law at the initial length, rate 0, time 0 must give finite values."""
    out = np.zeros(5)
    if done.fill(length, 0.0, 0.0, np.ascontiguousarray(parameters, dtype=float), out) != 0:
        names = ("tension", "dT/dlength", "dT/drate", "energy", "dV/dlength")
        raise LawError(f"{done.reference} gives a value that is not finite at the initial length {length:g} m "
                       f"(rate 0, time 0): " + ", ".join(f"{n} = {v:g}" for n, v in zip(names, out)))


@njit(cache=True)
def _finite(out, k):
    """0 when the first ``k`` values of ``out`` are finite, else 1."""
    for i in range(k):
        if not math.isfinite(out[i]):
            return 1
    return 0


def _fill(f, returns: int):
    """``fill(L, L̇, t, params, out)``: the user's ``f`` into out = (T, ∂T/∂L, ∂T/∂L̇, V, V′), the missing
    derivatives by central differences (module docstring); 0, or 1 when a value is not finite."""
    h = EPS3
    finite = _finite

    if returns == 1:
        def fill(L, Ld, t, prm, out):
            out[0] = f(L, Ld, t, prm)
            a, b = L + h * max(abs(L), 1e-9), L - h * max(abs(L), 1e-9)
            out[1] = (f(a, Ld, t, prm) - f(b, Ld, t, prm)) / (a - b)
            c, d = Ld + h * max(abs(Ld), abs(L), 1e-9), Ld - h * max(abs(Ld), abs(L), 1e-9)
            out[2] = (f(L, c, t, prm) - f(L, d, t, prm)) / (c - d)
            out[3] = 0.0
            out[4] = 0.0
            return finite(out, 3)
    elif returns == 3:
        def fill(L, Ld, t, prm, out):
            r = f(L, Ld, t, prm)
            out[0], out[1], out[2] = r[0], r[1], r[2]
            out[3] = 0.0
            out[4] = 0.0
            return finite(out, 3)
    else:
        def fill(L, Ld, t, prm, out):
            r = f(L, Ld, t, prm)
            out[0], out[1], out[2], out[3] = r[0], r[1], r[2], r[3]
            a, b = L + h * max(abs(L), 1e-9), L - h * max(abs(L), 1e-9)
            out[4] = (f(a, Ld, t, prm)[3] - f(b, Ld, t, prm)[3]) / (a - b)
            return finite(out, 5)
    return fill


def _wrap(fill):
    """The C wrapper of the compiled ``fill`` (module docstring)."""
    from numba import carray, cfunc, types
    signature = types.int64(types.float64, types.float64, types.float64, types.CPointer(types.float64),
                            types.int64, types.CPointer(types.float64))

    def law_c(L, Ld, t, pp, n, out):
        return fill(L, Ld, t, carray(pp, (n,)), carray(out, (5,)))
    return cfunc(signature, error_model="numpy")(law_c)


def call(address, L, Ld, t, params, out):
    """The law at ``address`` (of :func:`resolve`) at length L, rate L̇, time t with ``params``, into ``out``
    (5); 0, or 1 when a value is not finite.  As plain Python: its ``fill``; compiled: an indirect call of
    its C wrapper (:func:`_register`)."""
    return _by_address[int(address)].fill(L, Ld, t, np.ascontiguousarray(params), out)


@on_numba
def _register():
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic, overload

    @intrinsic
    def _through(typingctx, address, L, Ld, t, params, out):
        sig = types.int64(types.int64, types.float64, types.float64, types.float64, params, out)

        def codegen(context, builder, signature, args):
            a, l_, ld, tt, pa, po = args
            arr_p = context.make_array(signature.args[4])(context, builder, pa)
            arr_o = context.make_array(signature.args[5])(context, builder, po)
            n = builder.extract_value(arr_p.shape, 0)
            dbl, i64 = ir.DoubleType(), ir.IntType(64)
            fnty = ir.FunctionType(i64, [dbl, dbl, dbl, dbl.as_pointer(), i64, dbl.as_pointer()])
            fn = builder.inttoptr(a, fnty.as_pointer())
            return builder.call(fn, [l_, ld, tt, arr_p.data, n, arr_o.data])
        return sig, codegen

    @overload(call, jit_options={"error_model": "numpy"})
    def _call(address, L, Ld, t, params, out):
        def impl(address, L, Ld, t, params, out):
            return _through(address, L, Ld, t, params, out)
        return impl


@njit(cache=True)
def law(lo, hi, p, x, t, want, y, dy):
    """The user's tension T(L, L̇, t) along the line from A's point to B's: ``p_d = −T n``; with a potential
    its energy V and the dissipated power (T − V′) L̇, without one the power −T L̇ into the bodies as
    external work; the derivatives ``∂(T n)/∂d = T_L n⊗n + (T/L)(I − n⊗n) + T_v n⊗(I − n⊗n)ḋ/L`` and
    ``∂(T n)/∂ḋ = T_v n⊗n``.  Returns the first instance whose law gave a value that is not finite (its
    values kept in its row for the message) or whose points met, or −1."""
    failed = -1
    for e in range(lo, hi):
        c = row(x, e, X_D)
        dv = row(x, e, X_DV)
        L = np.sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2])
        bad = L <= _DEGENERATE_LENGTH * p[e, _SIZE]
        safe = 1.0 if bad else L
        n0, n1, n2 = c[0] / safe, c[1] / safe, c[2] / safe
        Ld = n0 * dv[0] + n1 * dv[1] + n2 * dv[2]
        out = y[e, Y_PHI:Y_PHI + 5]  # (scratch: a connector has no rows)
        m = int(p[e, _N])
        status = call(int(p[e, _ADDRESS]), L, Ld, t, p[e, _PARAMETERS:_PARAMETERS + m], out)
        T, TL, Tv = out[0], out[1], out[2]
        if status != 0 or bad:
            if failed < 0:
                failed = e
            p[e, _FAILED], p[e, _FAILED + 1], p[e, _FAILED + 2] = T, TL, Tv
            p[e, _FAILED + 3], p[e, _FAILED + 4] = L, Ld
            T, TL, Tv = 0.0, 0.0, 0.0
        put(y, e, Y_P, (-T * n0, -T * n1, -T * n2))
        put(y, e, Y_P + 3, (0.0, 0.0, 0.0))
        put(y, e, Y_P + 6, (0.0, 0.0, 0.0))
        if p[e, _POTENTIAL] != 0.0:
            y[e, Y_POTENTIAL] = out[3]
            y[e, Y_POWER] = (T - out[4]) * Ld
            y[e, Y_WORK] = 0.0
        else:
            y[e, Y_POTENTIAL] = 0.0
            y[e, Y_POWER] = 0.0
            y[e, Y_WORK] = -T * Ld
        if want & DERIVATIVES:
            q = T / safe
            a = TL - q
            w0, w1, w2 = dv[0] - Ld * n0, dv[1] - Ld * n1, dv[2] - Ld * n2  # (I − n⊗n) ḋ
            s = Tv / safe
            nn = (n0, n1, n2)
            ww = (w0, w1, w2)
            for r in range(3):
                for k in range(3):
                    dy[e, _DD + 3 * r + k] = -(a * nn[r] * nn[k] + (q if r == k else 0.0) + s * nn[r] * ww[k])
                    dy[e, _DV + 3 * r + k] = -(Tv * nn[r] * nn[k])
    return failed


class SpringLaw(ElementKind):
    """A spring whose tension is a user's law (THEORY §13): written ``type: spring`` with ``law``."""

    type = "spring_law"
    variant_of = "spring"
    fields = FIELDS
    points = ("ZA", "ZB")
    blocks = ("dd", "dv")
    failure = "has a law that gave a value that is not finite, or its points met"
    draw = "coil"
    outputs = ("force",)
    stiffness = "k"
    dissipates = True
    works = True
    law = law

    @classmethod
    def owns(cls, spec) -> bool:
        return spec.type == "spring" and bool(spec.params) and spec.params.get("law") is not None

    @classmethod
    def dissipates_in(cls, specs) -> bool:
        return any(s.params["law"].compiled().potential for s in specs)

    @staticmethod
    def failure_of(elements, e: int) -> str:
        T, TL, Tv, L, Ld = elements.data[e, _FAILED:_FAILED + 5]
        if L <= _DEGENERATE_LENGTH * elements.data[e, _SIZE]:
            return f"has collapsed to zero length (L = {L:g} m): the direction of its law's tension is undefined"
        return (f"(a user law) gave a value that is not finite at length {L:.9g} m, rate {Ld:.9g} m/s: "
                f"tension {T:g}, dT/dlength {TL:g}, dT/drate {Tv:g}")


    @staticmethod
    def pack(specs, ia, ib, r0, R0) -> dict:
        points = np.array([s.points for s in specs], dtype=float).reshape(-1, 2, 3)
        ZA, ZB = material_arms(points, ia, ib, r0, R0)
        n = len(specs)
        out = {"ZA": ZA, "ZB": ZB, "address": np.zeros(n), "n": np.zeros(n), "potential": np.zeros(n),
               "parameters": np.zeros((n, MAX_PARAMETERS)), "size": np.zeros(n), "failed": np.zeros((n, 5)),
               "k": np.zeros(n)}
        for i, s in enumerate(specs):
            ref = s.params["law"]
            done = ref.compiled()
            out["address"][i] = float(done.address)
            values = ref.values
            out["n"][i] = len(values)
            out["parameters"][i, :len(values)] = values
            out["potential"][i] = 1.0 if done.potential else 0.0
            out["size"][i] = float(np.linalg.norm(points[i, 1] - points[i, 0]))
            probe = np.zeros(5)
            done.fill(out["size"][i], 0.0, 0.0, np.array(values, dtype=float), probe)
            out["k"][i] = abs(probe[1]) if np.isfinite(probe[1]) else 0.0
        return out


@dataclass(frozen=True)
class LawRef:
    """A spring's ``law`` as the scenario gives it: ``module:function``, the directory of the scenario file
    (None: ``sys.path`` only), the parameters' names and values in order, and the initial length at
    which it was tried.  :meth:`compiled` is the law compiled for this process (again after a pickle)."""

    reference: str
    base: Optional[str]
    names: tuple
    values: tuple
    length: float

    def compiled(self) -> Compiled:
        return resolve(self.reference, self.base, self.values, self.length)

    def __str__(self) -> str:
        return self.reference


def notes(scenario) -> list[str]:
    """What a run should say of its laws: those whose derivatives are central differences."""
    out = []
    for c in scenario.connectors:
        ref = (c.params or {}).get("law")
        if ref is not None and ref.compiled().differences:
            out.append(f"spring '{c.name}': its law {ref.reference} gives the tension alone; its derivatives "
                       f"are formed by central differences (five calls per evaluation; return (tension, "
                       f"dT/dlength, dT/drate) to give them exactly)")
    return out

