"""Read trajectory files (OUTPUT.md) back: all arrays, or a short summary."""
from __future__ import annotations

import h5py
import numpy as np

from ..diagnostics import energy_drift
from .writer import FORMAT


class ResultFileError(Exception):
    """The file is missing, not HDF5, or not an mbsim trajectory."""


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


def read_trajectory(path) -> dict:
    """Every dataset (as numpy arrays; strings decoded) and root attribute of a result file.

    Keys are dataset paths without the leading slash (``"bodies/position"``) and
    ``"attrs"`` for the root attributes.
    """
    out = {}
    with _open(path) as f:
        out["attrs"] = {k: _str(v) for k, v in f.attrs.items()}

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                if obj.dtype.kind == "O" or h5py.check_string_dtype(obj.dtype):
                    data = obj.asstr()[()]
                    out[name] = data if obj.shape == () else [str(x) for x in data]
                else:
                    out[name] = obj[()]
        f.visititems(visit)
    return out


def read_summary(path) -> dict:
    """What is in a result: name, status, frames, bodies, connectors, counters, energy drift."""
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
            "integrator": {k: a.get(k) for k in ("integrator", "rho_inf", "alpha_f", "alpha_m", "beta",
                                                 "gamma", "tangent")},
            "counters": {k: a.get(k) for k in ("steps", "newton_iterations", "rejected_steps", "wall_time_s")},
            "energy_drift_J": drift,
            "energy_drift_relative": rel,
        }
