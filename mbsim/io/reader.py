"""Read trajectory files (OUTPUT.md) back: all arrays, or a short summary."""
from __future__ import annotations

import warnings
from typing import Optional

import h5py
import numpy as np

from ..energy import energy_drift
from .writer import FORMAT, frame_datasets

# every per-frame dataset a file may hold (the /joints ones only when it has joints)
_PER_FRAME = frame_datasets(1)


class ResultFileError(Exception):
    """The file is missing, not HDF5, or not an mbsim trajectory."""


class UnequalLengthsWarning(UserWarning):
    """The per-frame datasets of a file hold different numbers of frames.

    The writer resizes all of them before it fills a block, so a process
    killed in between leaves some datasets longer than others (the extra
    rows are unwritten).  Only the frames that every dataset holds are read.
    """


def _str(v):
    return v.decode() if isinstance(v, bytes) else v


def _open(path):
    try:
        f = h5py.File(path, "r")
    except (OSError, ValueError) as exc:
        raise ResultFileError(f"{path}: cannot open as HDF5 ({exc})") from None
    if _str(f.attrs.get("format")) != FORMAT:
        f.close()
        raise ResultFileError(f"{path}: not an mbsim trajectory file (no format='{FORMAT}' attribute)")
    return f


def read_trajectory(path, *, common_length: bool = False) -> dict:
    """Every dataset (as numpy arrays; strings decoded) and root attribute of a result file.

    Keys are dataset paths without the leading slash (``"bodies/position"``) and
    ``"attrs"`` for the root attributes.

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
    out = {}
    with _open(path) as f:
        out["attrs"] = {k: _str(v) for k, v in f.attrs.items()}
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
                      f"them hold", UnequalLengthsWarning, stacklevel=3)
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

    ``joints`` is the list of :func:`joint_summary` (empty for a result without joints)."""
    with _open(path) as f:
        a = {k: _str(v) for k, v in f.attrs.items()}
        t = f["time"][()]
        e = {k: f[f"energy/{k}"][()] for k in ("kinetic", "potential", "dissipated", "external_work")}
        n = min(len(t), *(len(v) for v in e.values()))
        drift, rel = energy_drift(*(e[k][:n] for k in ("kinetic", "potential", "dissipated", "external_work")))
        fixed = f["bodies/fixed"][()]
        ctypes = [str(x) for x in f["connectors/type"].asstr()[()]]
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
            "counters": {k: a.get(k) for k in ("steps", "newton_iterations", "rejected_steps", "wall_time_s")},
            "energy_drift_J": drift,
            "energy_drift_relative": rel,
        }


def result_status(path) -> Optional[str]:
    """``status`` of an existing mbsim result, or None when ``path`` is not one (or unreadable)."""
    try:
        with h5py.File(path, "r") as f:
            if _str(f.attrs.get("format")) != FORMAT:
                return None
            return _str(f.attrs.get("status"))
    except (OSError, ValueError):
        return None


def read_resume_point(path) -> dict:
    """What a resumed run needs from an unfinished result: the last complete frame.

    Returns a dict with ``time`` (float), the last frame's body arrays
    (``position``, ``orientation``, ``velocity``, ``acceleration``,
    ``angular_velocity``, ``angular_acceleration``: (B, ·)), ``dissipated`` and
    ``external_work`` (floats), the energy histories (``energy/…``, to keep the
    drift of the whole run), ``frames`` (the common length of the per-frame
    datasets), ``scenario`` (the stored text) and ``attrs``.
    """
    from .writer import FRAME_DATASETS
    with _open(path) as f:
        T = min(f[k].shape[0] for k in FRAME_DATASETS)
        if T == 0:
            raise ResultFileError(f"{path}: holds no frame to resume from")
        i = T - 1
        out = {"frames": T, "time": float(f["time"][i]), "scenario": f["scenario"].asstr()[()],
               "attrs": {k: _str(v) for k, v in f.attrs.items()},
               "dissipated": float(f["energy/dissipated"][i]),
               "external_work": float(f["energy/external_work"][i])}
        for k in ("position", "orientation", "velocity", "acceleration", "angular_velocity",
                  "angular_acceleration"):
            out[k] = f[f"bodies/{k}"][i]
        for k in ("kinetic", "potential", "dissipated", "external_work"):
            out[f"energy/{k}"] = f[f"energy/{k}"][:T]
    return out
