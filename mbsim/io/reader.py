"""Read trajectory files (OUTPUT.md) back: all arrays, or a short summary."""
from __future__ import annotations

import math
import time
import warnings
from typing import Optional

import h5py
import numpy as np

from ..energy import energy_drift
from .writer import CHECKPOINT_GROUP, CHECKPOINT_SLOTS, FLUSH_BYTES, FORMAT, FRAME_DATASETS, JOINT_DATASETS, frame_datasets

# every per-frame dataset a file may hold (the /joints ones only when it has joints)
_PER_FRAME = frame_datasets(1)


class ResultFileError(Exception):
    """The file is missing, not HDF5, or not an mbsim trajectory."""


class ModesError(ResultFileError):
    """The ``/modes`` group of a result file is damaged (a dataset missing, of another shape or type)."""


class UnequalLengthsWarning(UserWarning):
    """The per-frame datasets of a file hold different numbers of frames.

    The writer resizes all of them before it fills a block, so a process
    killed in between leaves some datasets longer than others (the extra
    rows are unwritten).  Only the frames that every dataset holds are read.
    """


def _str(v):
    return v.decode("utf-8", errors="replace") if isinstance(v, bytes) else v  # a damaged attribute stays readable


# whatever h5py or a damaged file can raise while a dataset or attribute is read
_READ_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError, UnicodeDecodeError, IndexError,
                AttributeError, OverflowError)
_NAMES = ("name", "type", "body_a", "body_b")  # the string datasets of /connectors and /joints


def _being_written(exc) -> bool:
    """Whether opening failed because another process holds the file's write lock (a run writing it)."""
    return isinstance(exc, OSError) and "lock" in str(exc)


# a file being written that reads as damaged is read again, this many times, this far apart [s]: its
# writer was flushing a block (seen once in CI: "Can't get number of chunks (addr overflow ...)")
WRITTEN_TRIES, WRITTEN_WAIT = 5, 0.1


def _open(path):
    """The open file, checked by :func:`_check` (every problem a :class:`ResultFileError`).  A file that a
    run is still writing (its process holds HDF5's lock) is opened without the lock, as it stands at its
    last flush: a snapshot that may, rarely, catch a block half flushed; such a file that reads as damaged
    is opened again (:data:`WRITTEN_TRIES` times) before it is said to be."""
    try:
        f = h5py.File(path, "r")
    except _READ_ERRORS as exc:
        if not _being_written(exc):
            raise ResultFileError(f"{path}: cannot open as HDF5 ({exc})") from None
        for k in range(WRITTEN_TRIES):
            try:
                return _opened(path, h5py.File(path, "r", locking=False))
            except ResultFileError:
                if k == WRITTEN_TRIES - 1:
                    raise
            except _READ_ERRORS as exc2:
                if k == WRITTEN_TRIES - 1:
                    raise ResultFileError(f"{path}: cannot open as HDF5 while it is being written ({exc2})") \
                        from None
            time.sleep(WRITTEN_WAIT)
    return _opened(path, f)


def _opened(path, f):
    """``f`` (open) checked: returned, or closed and a :class:`ResultFileError` raised."""
    try:
        fmt = _typed("format", f.attrs.get("format"))
        if fmt != FORMAT:
            raise ResultFileError(f"{path}: not an mbsim trajectory file (no format='{FORMAT}' attribute)")
        _check(f, path)
    except ResultFileError:
        f.close()
        raise
    except _READ_ERRORS as exc:
        f.close()
        raise ResultFileError(f"{path}: damaged: {type(exc).__name__}: {exc}") from None
    return f


def _dataset(f, path, name):
    obj = f.get(name)
    if obj is None:
        raise ResultFileError(f"{path}: /{name} is missing (OUTPUT.md requires it)")
    if not isinstance(obj, h5py.Dataset):
        raise ResultFileError(f"{path}: /{name} is a {type(obj).__name__.lower()}, not a dataset")
    return obj


def _strings(f, path, name, scalar=False) -> list:
    ds = _dataset(f, path, name)
    if not h5py.check_string_dtype(ds.dtype):
        raise ResultFileError(f"{path}: /{name} holds {ds.dtype}, not text")
    if scalar != (ds.shape == ()) or (not scalar and len(ds.shape) != 1):
        raise ResultFileError(f"{path}: /{name} has shape {ds.shape}, expected "
                              f"{'a scalar' if scalar else 'a list'}")
    try:
        data = ds.asstr()[()]
    except UnicodeDecodeError as exc:
        raise ResultFileError(f"{path}: /{name} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return [data] if scalar else [str(x) for x in data]


def _check(f, path) -> None:
    """The OUTPUT.md datasets a reader relies on: present, of the right type and shape, strings that
    decode, and per-frame datasets no longer than the storage they really hold (a dataset resized to
    10⁷ frames with nothing written would cost gigabytes to read)."""
    _strings(f, path, "scenario", scalar=True)
    sizes = {"B": len(_strings(f, path, "bodies/name")), "C": len(_strings(f, path, "connectors/name"))}
    for k in _NAMES[1:]:
        if len(_strings(f, path, f"connectors/{k}")) != sizes["C"]:
            raise ResultFileError(f"{path}: /connectors/{k} and /connectors/name differ in length")
    for k, kind in (("bodies/fixed", "b"), ("bodies/mass", "f")):
        ds = _dataset(f, path, k)
        if ds.shape != (sizes["B"],) or ds.dtype.kind not in ("biuf" if kind == "b" else "iuf"):
            raise ResultFileError(f"{path}: /{k} has shape {ds.shape} and type {ds.dtype}, expected "
                                  f"({sizes['B']},) {'booleans' if kind == 'b' else 'numbers'}")
    per_frame = dict(FRAME_DATASETS)
    if "joints" in f:
        sizes["J"] = len(_strings(f, path, "joints/name"))
        for k in _NAMES[1:]:
            if len(_strings(f, path, f"joints/{k}")) != sizes["J"]:
                raise ResultFileError(f"{path}: /joints/{k} and /joints/name differ in length")
        per_frame.update(JOINT_DATASETS)
    for name, (tail, _, _) in per_frame.items():
        ds = _dataset(f, path, name)
        want = tuple(sizes.get(d, d) for d in tail)
        if len(ds.shape) != 1 + len(want) or tuple(ds.shape[1:]) != want:
            raise ResultFileError(f"{path}: /{name} has shape {ds.shape}, expected (frames,) + {want}")
        if ds.dtype.kind not in "iuf":
            raise ResultFileError(f"{path}: /{name} holds {ds.dtype}, not numbers")
        held = _frames_held(ds)
        row = max(1, int(np.prod(want, dtype=np.int64)) * ds.dtype.itemsize)
        # a dataset may claim more than its storage holds by the block a writer killed between resizing
        # and filling leaves unwritten (at most FLUSH_BYTES), or one chunk
        if ds.shape[0] > held + max(ds.chunks[0] if ds.chunks else 0, FLUSH_BYTES // row):
            raise ResultFileError(f"{path}: /{name} claims {ds.shape[0]} frames but its storage holds about "
                                  f"{held}: resized without data, as no mbsim writer leaves a file")


def _frames_held(ds) -> int:
    """Frames a per-frame dataset's storage really holds: its allocated chunks (compressed or not), or all
    of them when it is stored contiguously (allocated whole)."""
    if not ds.chunks:
        return ds.shape[0]
    per_slab = 1
    for n, c in zip(ds.shape[1:], ds.chunks[1:]):
        per_slab *= max(1, -(-n // c))
    return ds.id.get_num_chunks() // per_slab * ds.chunks[0]


def read_trajectory(path, *, common_length: bool = False) -> dict:
    """Every dataset (as numpy arrays; strings decoded) and root attribute of a result file.

    Keys are dataset paths without the leading slash (``"bodies/position"``) and
    ``"attrs"`` for the root attributes: those of OUTPUT.md as str, float or int, one of
    another type (an array, text where a number belongs) left out as if missing.

    Parameters
    ----------
    path : str or os.PathLike
        A file written by ``mbsim run`` (or :func:`mbsim.io.writer.write_trajectory`).
    common_length : bool
        Read the per-frame datasets of OUTPUT.md only up to the shortest of
        their lengths, with an :class:`UnequalLengthsWarning` when they differ
        (a writer killed between resizing and filling a block).  Default:
        every dataset as stored.
    """
    with _open(path) as f:
        return _guarded(path, _read_all, f, path, common_length)


def _guarded(path, fn, *args):
    """``fn(*args)``, with whatever a damaged file makes h5py raise turned into a ResultFileError."""
    try:
        return fn(*args)
    except ResultFileError:
        raise
    except _READ_ERRORS as exc:
        raise ResultFileError(f"{path}: damaged: {type(exc).__name__}: {exc}") from None


def read_frames(path, start: int = 0) -> tuple[dict, dict]:
    """The root attributes and the per-frame datasets of OUTPUT.md from frame ``start`` to the last frame
    that every one of them holds, of a result that may still be being written (see :func:`_open`): for a
    reader that follows a run (``mbsim view``).  A run writes whole blocks and flushes them, and this
    reads between its flushes; the caller checks what it got (times increasing) and reads the file again
    once the run is over to be sure."""
    with _open(path) as f:
        def read():
            n = _common_length(f, path) or 0
            return _root_attributes(f)[0], {k: f[k][start:n] for k in _PER_FRAME if k in f}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnequalLengthsWarning)  # (a block being flushed: read what all hold)
            return _guarded(path, read)


def _read_all(f, path, common_length) -> dict:
    out = {}
    out["attrs"] = _root_attributes(f)[0]
    n = _common_length(f, path) if common_length else None

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            if obj.dtype.kind == "O" or h5py.check_string_dtype(obj.dtype):
                data = obj.asstr()[()]
                out[name] = data if obj.shape == () else [str(x) for x in data]
            elif n is not None and name in _PER_FRAME:
                out[name] = obj[:n]
            else:
                out[name] = obj[()]
    f.visititems(visit)
    return out


def _common_length(f, path) -> int | None:
    """Frames that every per-frame dataset holds (None: the file has none of them)."""
    lengths = {k: f[k].shape[0] for k in _PER_FRAME if k in f and f[k].shape}
    if not lengths:
        return None
    n, longest = min(lengths.values()), max(lengths.values())
    if n != longest:
        short = sorted(k for k, v in lengths.items() if v == n)
        warnings.warn(f"{path}: the per-frame datasets have unequal lengths ({n} to {longest} frames; "
                      f"shortest: {', '.join(short[:3])}{', ...' if len(short) > 3 else ''}), as a run "
                      f"killed while writing leaves them; reading the first {n} frames, which all of "
                      f"them hold", UnequalLengthsWarning, stacklevel=5)
    return n


# frames per block when read_summary reduces the joints' datasets (bounded memory for large files)
_SUMMARY_BLOCK = 256


def joint_summary(f, frames: int) -> list:
    """Per joint of an open result: name, type, bodies and the largest reaction and constraint errors.

    Returns a list (scenario order, empty without joints) of dicts with ``name``, ``type``,
    ``body_a``, ``body_b``, ``max_force_N`` and ``max_moment_N_m`` (largest magnitude of the
    reaction force and moment on body A over the first ``frames`` frames) and
    ``max_position_error_m``, ``max_angle_error_rad`` (largest constraint errors).  NaN where
    there is no frame.
    """
    if "joints/name" not in f:
        return []
    static = {k: [str(x) for x in f[f"joints/{k}"].asstr()[()]] for k in ("name", "type", "body_a", "body_b")}
    J = len(static["name"])
    peaks = {k: np.full(J, -np.inf) for k in ("force", "moment", "position_error", "angle_error")}
    n = min([frames] + [f[f"joints/{k}"].shape[0] for k in peaks])
    for t0 in range(0, n, _SUMMARY_BLOCK):  # block by block: a 10 000-joint chain need not fit in memory
        t1 = min(n, t0 + _SUMMARY_BLOCK)
        for k in peaks:
            v = f[f"joints/{k}"][t0:t1]
            mag = np.linalg.norm(v, axis=-1) if k in ("force", "moment") else np.abs(v)
            peaks[k] = np.fmax(peaks[k], np.nanmax(mag, axis=0, initial=-np.inf))
    for v in peaks.values():
        v[~np.isfinite(v) & (v < 0)] = np.nan  # no frame (or NaN everywhere): nothing to report
    names = {"force": "max_force_N", "moment": "max_moment_N_m", "position_error": "max_position_error_m",
             "angle_error": "max_angle_error_rad"}
    return [{**{k: static[k][j] for k in static}, **{names[k]: float(peaks[k][j]) for k in peaks}}
            for j in range(J)]


def read_summary(path) -> dict:
    """What is in a result: name, status, frames, bodies, connectors, joints, counters, energy drift.

    ``joints`` is the list of :func:`joint_summary` (empty for a result without joints).  A root
    attribute of OUTPUT.md that is absent is None and named in ``missing_attributes``; one of another
    type (an array, text where a number belongs) is None too and named in ``wrongly_typed_attributes``."""
    with _open(path) as f:
        return _guarded(path, _summary, f, path)




def _attrs(f) -> dict:
    """The root attributes that can be read (a damaged attribute header loses that one, not the file)."""
    out = {}
    for k in list(f.attrs.keys()):
        try:
            out[k] = f.attrs[k]
        except _READ_ERRORS:
            continue
    return out


# The root attributes of OUTPUT.md (and `integrator`, which `mbsim info` shows) with the type every reader
# relies on: text, a real number, or a whole number (the work counters).  OUTPUT_ATTRIBUTES are the ones
# OUTPUT.md requires of a trajectory file (`format` is checked when the file is opened).
_TEXT, _REAL, _WHOLE = "text", "a number", "a whole number"
ATTRIBUTE_TYPES = {
    "format": _TEXT, "format_version": _WHOLE, "mbsim_version": _TEXT, "scenario_name": _TEXT, "status": _TEXT,
    "message": _TEXT, "created_utc": _TEXT, "rho_inf": _REAL, "alpha_f": _REAL, "alpha_m": _REAL, "beta": _REAL,
    "gamma": _REAL, "tangent": _TEXT, "integrator": _TEXT, "steps": _WHOLE, "newton_iterations": _WHOLE,
    "rejected_steps": _WHOLE, "wall_time_s": _REAL,
}
OUTPUT_ATTRIBUTES = tuple(k for k in ATTRIBUTE_TYPES if k not in ("format", "integrator"))

# The root attributes of the files of `mbsim statics` and `mbsim modes` (OUTPUT.md, "Statics and modes
# files"), type-checked as those above.  Kept apart from ATTRIBUTE_TYPES, whose every entry a trajectory of
# `mbsim run` holds (tests/integration/test_damaged_files.py deletes and retypes each of them in one): a
# time integration's file has none of these but `analysis` (and a file without it is "dynamics").
ANALYSIS_ATTRIBUTE_TYPES = {
    "analysis": _TEXT, "stability": _TEXT, "load_factor_steps": _WHOLE, "linearized_about": _TEXT,
    "degrees_of_freedom": _WHOLE,
}
# the root attributes of a run with error-controlled steps (time.tolerance): its smallest and largest
# accepted step [s]
STEP_ATTRIBUTE_TYPES = {"smallest_step": _REAL, "largest_step": _REAL}
# the root attributes a statics or modes file has besides OUTPUT_ATTRIBUTES (missing: reported as such), and
# those of OUTPUT_ATTRIBUTES it need not have (no time integration: no integrator settings)
_ANALYSIS_REQUIRES = {"statics": ("analysis", "stability", "load_factor_steps"),
                      "modes": ("analysis", "stability", "linearized_about", "degrees_of_freedom")}
_INTEGRATOR_ATTRIBUTES = ("rho_inf", "alpha_f", "alpha_m", "beta", "gamma", "tangent")


def _typed(key, value):
    """``value`` of root attribute ``key`` as the Python type OUTPUT.md gives it (str, float or int), or
    None when it is not of that type (an array, a complex number, an empty attribute, text for a number,
    a count that is not whole...).  Attributes OUTPUT.md does not name are returned as read."""
    kind = ATTRIBUTE_TYPES.get(key) or ANALYSIS_ATTRIBUTE_TYPES.get(key) or STEP_ATTRIBUTE_TYPES.get(key)
    value = _str(value)
    if kind is None:
        return value
    if kind == _TEXT:
        return str(value) if isinstance(value, str) else None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    if kind == _REAL:
        return float(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    return int(value) if math.isfinite(value) and float(value).is_integer() else None


def _root_attributes(f) -> tuple:
    """``(attributes, wrongly_typed)``: the root attributes that can be read, those of OUTPUT.md as str,
    float or int, and the names of those that are not of their OUTPUT.md type (left out of the first:
    a reader treats them as missing, which every reader handles, rather than trip over an array where
    it expects a number)."""
    out, wrong = {}, []
    for k, v in _attrs(f).items():
        t = _typed(k, v)
        if t is None:
            wrong.append(k)
        else:
            out[k] = t
    return out, wrong


def _non_finite(f, frames: int) -> list:
    """The per-frame datasets holding NaN or inf in their first ``frames`` frames (read block by block;
    connectors/length is NaN for torsional dampers by design: only its infinities count)."""
    bad = []
    names = [k for k in _PER_FRAME if k in f and k != "solver/residual_norm"]
    for k in names:
        ds = f[k]
        for t0 in range(0, min(frames, ds.shape[0]), _SUMMARY_BLOCK):
            v = ds[t0:t0 + _SUMMARY_BLOCK]
            if (np.isinf(v).any() if k == "connectors/length" else not np.isfinite(v).all()):
                bad.append(k)
                break
    return bad


def _summary(f, path) -> dict:
    a, wrong = _root_attributes(f)
    t = f["time"][()]
    e = {k: f[f"energy/{k}"][()] for k in ("kinetic", "potential", "dissipated", "external_work")}
    n = min(len(t), *(len(v) for v in e.values()))
    with np.errstate(all="ignore"):
        drift, rel = energy_drift(*(e[k][:n] for k in ("kinetic", "potential", "dissipated", "external_work")))
    fixed = f["bodies/fixed"][()]
    ctypes = [str(x) for x in f["connectors/type"].asstr()[()]]
    analysis = a.get("analysis", "dynamics")
    required = OUTPUT_ATTRIBUTES
    if analysis in _ANALYSIS_REQUIRES:
        required = tuple(k for k in OUTPUT_ATTRIBUTES if k not in _INTEGRATOR_ATTRIBUTES) + _ANALYSIS_REQUIRES[analysis]
    modes = _modes(f, path) if "modes" in f else None
    return {
        "path": str(path),
        "scenario_name": a.get("scenario_name"),
        "status": a.get("status"),
        "message": a.get("message"),
        "mbsim_version": a.get("mbsim_version"),
        "created_utc": a.get("created_utc"),
        "frames": int(len(t)),
        "t_start": float(t[0]) if len(t) else None,
        "t_end": float(t[-1]) if len(t) else None,
        "bodies": int(len(fixed)),
        "fixed_bodies": int(np.sum(fixed)),
        "connectors": {k: ctypes.count(k) for k in sorted(set(ctypes))},
        "joints": joint_summary(f, len(t)),
        "integrator": {k: a.get(k) for k in ("integrator", "rho_inf", "alpha_f", "alpha_m", "beta",
                                             "gamma", "tangent")},
        "counters": {k: a.get(k) for k in ("steps", "newton_iterations", "rejected_steps", "wall_time_s",
                                           "smallest_step", "largest_step")},
        "energy_drift_J": drift,
        "energy_drift_relative": rel,
        # statics and modes files (OUTPUT.md): None where a file does not say (a time integration's)
        "analysis": analysis,
        "stability": a.get("stability"),
        "load_factor_steps": a.get("load_factor_steps"),
        "linearized_about": a.get("linearized_about"),
        "degrees_of_freedom": a.get("degrees_of_freedom"),
        "modes": mode_table(modes, [str(x) for x in f["bodies/name"].asstr()[()]]) if modes is not None else None,
        # reported, not fatal (None above): OUTPUT.md's root attributes that are absent, or of another type
        "missing_attributes": [k for k in required if k not in a and k not in wrong],
        "wrongly_typed_attributes": wrong,
        "non_finite": _non_finite(f, len(t)),
        # the newest complete checkpoint (docs/output.md): {"time", "frames"}, or None
        "checkpoint": _checkpoint_point(f),
    }


def _checkpoint_point(f) -> Optional[dict]:
    _, attrs = _checkpoint(f)
    if not attrs:
        return None
    return {"time": float(attrs.get("time", math.nan)), "frames": int(attrs.get("frames", 0))}


# /modes of a modes file (OUTPUT.md): dataset -> (shape after the modes' axis, 'B' = bodies; dtype kinds)
MODE_DATASETS = {
    "eigenvalue": ((2,), "iuf"), "frequency": ((), "iuf"), "damping_ratio": ((), "iuf"),
    "shape": (("B", 6), "iuf"), "shape_imag": (("B", 6), "iuf"), "rigid_body": ((), "biu"),
}
# the components of a shape's six entries per body, as `mbsim info` names them
SHAPE_COMPONENTS = tuple(("translation", a) for a in "xyz") + tuple(("rotation", a) for a in "xyz")


def read_modes(source) -> Optional[dict]:
    """The modes of a file written by ``mbsim modes`` (OUTPUT.md, "Statics and modes files"), or None
    when it has no ``/modes`` (a time integration's or a statics file).

    Parameters
    ----------
    source : str, os.PathLike or h5py.File
        A result file, or one already open (its trajectory datasets are then not checked again).

    Returns
    -------
    dict or None
        ``eigenvalue`` (K, 2) [Re, Im] in 1/s, ``frequency`` (K,) in Hz, ``damping_ratio`` (K,) (NaN for a
        rigid-body mode), ``shape`` and ``shape_imag`` (K, B, 6): real and imaginary part of each mode's
        [δr (m), δθ (rad)] per body in world axes, ``rigid_body`` (K,) bool, all numpy arrays; and the root
        attributes ``degrees_of_freedom`` (int) and ``linearized_about`` (str), None where the file lacks them.

    Raises
    ------
    ResultFileError
        The file is not an mbsim result; :class:`ModesError` (a ResultFileError) when its ``/modes`` is
        damaged: a dataset missing or not numbers, shapes that disagree on K or do not have B = the file's
        number of bodies, values not finite.
    """
    if isinstance(source, (h5py.File, h5py.Group)):
        path = source.file.filename
        return _guarded(path, _read_modes, source, path)
    with _open(source) as f:
        return _guarded(source, _read_modes, f, source)


def _read_modes(f, path) -> Optional[dict]:
    if "modes" not in f:
        return None
    out = _modes(f, path)
    a = _root_attributes(f)[0]
    out["degrees_of_freedom"] = a.get("degrees_of_freedom")
    out["linearized_about"] = a.get("linearized_about")
    return out


def _modes(f, path) -> dict:
    """The arrays of ``/modes``, checked: every dataset of :data:`MODE_DATASETS` there, numbers of the
    shape OUTPUT.md gives (one K for all, B the file's bodies), finite (but a rigid-body mode's NaN
    damping ratio), else a :class:`ModesError` saying what is wrong."""
    group = f.get("modes")
    if not isinstance(group, h5py.Group):
        raise ModesError(f"{path}: /modes is a {type(group).__name__.lower()}, not a group (OUTPUT.md: "
                         f"the group of a modes file)")
    B = len(_strings(f, path, "bodies/name"))
    K, first, data = None, None, {}
    for name, (tail, kinds) in MODE_DATASETS.items():
        try:
            ds = _dataset(f, path, f"modes/{name}")
        except ResultFileError as exc:
            raise ModesError(str(exc)) from None
        want = tuple(B if d == "B" else d for d in tail)
        if len(ds.shape) != 1 + len(want) or tuple(ds.shape[1:]) != want:
            expected = ", ".join(["K", *(str(d) for d in want)])
            raise ModesError(f"{path}: /modes/{name} has shape {ds.shape}, expected ({expected}) for K "
                             f"modes" + (f" of the file's {B} bodies" if "B" in tail else ""))
        if K is None:
            K, first = ds.shape[0], name
        elif ds.shape[0] != K:
            raise ModesError(f"{path}: /modes/{name} holds {ds.shape[0]} modes, /modes/{first} {K}")
        if ds.dtype.kind not in kinds:
            raise ModesError(f"{path}: /modes/{name} holds {ds.dtype}, not "
                             f"{'booleans' if name == 'rigid_body' else 'numbers'}")
    if K > 6 * B:  # (and a dataset claiming more modes than it holds is not read)
        raise ModesError(f"{path}: /modes holds {K} modes, more than the 6 × {B} coordinates of its bodies")
    for name in MODE_DATASETS:
        data[name] = np.asarray(f[f"modes/{name}"][()], dtype=bool if name == "rigid_body" else float)
    for name in ("eigenvalue", "frequency", "shape", "shape_imag"):
        if not np.isfinite(data[name]).all():
            raise ModesError(f"{path}: /modes/{name} holds NaN or inf (no mbsim modes analysis stores them)")
    return data


def mode_table(modes: dict, bodies: list) -> list:
    """One dict per mode of :func:`read_modes` (the order of the file, numbered from 1): ``mode``,
    ``frequency_Hz``, ``damping_ratio``, ``eigenvalue`` ([Re, Im] in 1/s), ``rigid_body``, and where it
    moves most: ``body`` (the name of the body with the entry of largest modulus of the complex shape),
    ``motion`` (``translation`` or ``rotation``) and ``axis`` (``x``, ``y`` or ``z``, world axes); those
    three None for a shape that is zero everywhere."""
    out = []
    mag = np.hypot(modes["shape"], modes["shape_imag"])
    for k in range(len(modes["frequency"])):
        row = {"mode": k + 1, "frequency_Hz": float(modes["frequency"][k]),
               "damping_ratio": float(modes["damping_ratio"][k]),
               "eigenvalue": [float(x) for x in modes["eigenvalue"][k]], "rigid_body": bool(modes["rigid_body"][k]),
               "body": None, "motion": None, "axis": None}
        if mag[k].size and mag[k].max() > 0:
            b, c = np.unravel_index(int(np.argmax(mag[k])), mag[k].shape)
            row["body"] = bodies[b]
            row["motion"], row["axis"] = SHAPE_COMPONENTS[c]
        out.append(row)
    return out


def being_written(path) -> bool:
    """Whether a process holds ``path`` open for writing (HDF5's lock: a run writing its result)."""
    try:
        h5py.File(path, "r").close()
    except _READ_ERRORS as exc:
        return _being_written(exc)
    return False


def result_status(path) -> Optional[str]:
    """``status`` of an existing mbsim result, or None when ``path`` is not one (or unreadable)."""
    try:
        with _open(path) as f:
            return _typed("status", f.attrs.get("status"))
    except ResultFileError:
        return None


def read_resume_point(path) -> dict:
    """What a resumed run needs from an unfinished result: the last complete frame.

    Returns a dict with ``time`` (float), the last frame's body arrays
    (``position``, ``orientation``, ``velocity``, ``acceleration``,
    ``angular_velocity``, ``angular_acceleration``: (B, ·)), ``dissipated`` and
    ``external_work`` (floats), the energy histories (``energy/…``, to keep the
    drift of the whole run), ``frames`` (the common length of the per-frame
    datasets), ``scenario`` (the stored text) and ``attrs``.

    A run with error-controlled steps goes on from its newest complete checkpoint
    (``/checkpoint``, docs/output.md) instead: then ``checkpoint`` holds its
    arrays and ``checkpoint_attrs`` its attributes, and the frame, ``frames``
    and the energy histories are those up to its ``frames`` (a process killed
    after flushing frames but before their checkpoint wrote more).  Without one
    ``checkpoint`` is None.
    """
    with _open(path) as f:
        return _guarded(path, _resume_point, f, path)


def _checkpoint(f) -> tuple:
    """The newest complete checkpoint of an open result: (arrays, attributes), or (None, {})."""
    group = f.get(CHECKPOINT_GROUP)
    slots = [group[k] for k in CHECKPOINT_SLOTS if group is not None and k in group]
    slots = [g for g in slots if bool(g.attrs.get("complete", False))]
    if not slots:
        return None, {}
    g = max(slots, key=lambda g: int(g.attrs.get("sequence", 0)))
    return {k: g[k][()] for k in g}, {k: _plain(v) for k, v in g.attrs.items()}


def _plain(v):
    return v.item() if isinstance(v, np.generic) else v


def _resume_point(f, path) -> dict:
    T = min(f[k].shape[0] for k in FRAME_DATASETS)
    arrays, cattrs = _checkpoint(f)
    if arrays is not None:
        T = min(T, int(cattrs["frames"]))
    if T == 0:
        raise ResultFileError(f"{path}: holds no frame to resume from")
    i = T - 1
    out = {"frames": T, "time": float(f["time"][i]), "scenario": f["scenario"].asstr()[()],
           "attrs": _root_attributes(f)[0],
           "dissipated": float(f["energy/dissipated"][i]),
           "external_work": float(f["energy/external_work"][i])}
    for k in ("position", "orientation", "velocity", "acceleration", "angular_velocity",
              "angular_acceleration"):
        out[k] = f[f"bodies/{k}"][i]
    for k in ("kinetic", "potential", "dissipated", "external_work"):
        out[f"energy/{k}"] = f[f"energy/{k}"][:T]
    out["checkpoint"], out["checkpoint_attrs"] = arrays, cattrs
    return out
