"""The summary table of a study: one row per case, as CSV and as an xarray Dataset (HDF5).

Columns: ``case``, one per parameter (its key path), ``status`` (``ok``,
``failed``, ``lost``, ``cancelled``), ``message``, ``steps``,
``newton_iterations``, ``wall_time_s`` (the case's time loop, as its file's
counter says) and one per metric (the CSV header carries its units:
``peak [m]``).

In the Dataset (``summary.h5``, netCDF-4 through h5netcdf) a grid is a
labelled N-d array: one dimension per parameter, its values the coordinate,
every column a variable over all of them; a samples design has the dimension
``case`` with the parameters as coordinates along it.  Metric variables carry
``units`` and ``description`` attributes.
"""
from __future__ import annotations

import csv
import math
import os

import numpy as np

from .. import __version__
from ..io.writer import utc_now
from .studyfile import TABLE_COLUMNS

STATUSES = ("ok", "failed", "lost", "cancelled")
CSV_NAME = "summary.csv"
H5_NAME = "summary.h5"


def ordered(study, rows: dict) -> list:
    """The rows of every case in case order (``rows``: case index -> row)."""
    return [rows[c.index] for c in study.cases]


def metric_header(m) -> str:
    return f"{m.name} [{m.units}]"


def write_csv(study, rows: list, path: str) -> None:
    """``summary.csv``: a header, then one line per case (written under a temporary name, then moved)."""
    header = ["case", *study.parameter_names, *TABLE_COLUMNS[1:], *(metric_header(m) for m in study.metrics)]
    by_case = {c.index: c for c in study.cases}
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        for row in rows:
            values = by_case[row["case"]].values
            w.writerow([row["case"], *(_cell(v) for v in values), row["status"], row["message"], row["steps"],
                        row["newton_iterations"], _cell(row["wall_time_s"]),
                        *(_cell(row["metrics"][m.name]) for m in study.metrics)])
    os.replace(tmp, path)


def _cell(v):
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    return v


def dataset(study, rows: list):
    """The table as an :class:`xarray.Dataset` (grid: a labelled N-d array; samples: along ``case``)."""
    import xarray as xr
    n = len(rows)
    columns = {
        "case": (np.array([r["case"] for r in rows], dtype=np.int64), {"description": "case index (case_NNNNN.h5)"}),
        "status": (np.array([r["status"] for r in rows], dtype=object),
                   {"description": "ok, failed (solver failure or error: see message), lost (the worker died), "
                                   "cancelled (not run: the study was interrupted)"}),
        "message": (np.array([r["message"] for r in rows], dtype=object), {"description": "why a case is not ok"}),
        "steps": (np.array([r["steps"] for r in rows], dtype=np.int64), {"description": "time steps taken"}),
        "newton_iterations": (np.array([r["newton_iterations"] for r in rows], dtype=np.int64),
                              {"description": "Newton iterations, all steps"}),
        "wall_time_s": (np.array([r["wall_time_s"] for r in rows], dtype=float),
                        {"units": "s", "description": "wall time of the case's time loop"}),
    }
    for m in study.metrics:
        columns[m.name] = (np.array([r["metrics"][m.name] for r in rows], dtype=float),
                           {"units": m.units, "description": m.description, "quantity": m.quantity.text,
                            "reduce": m.reduce, "metric": 1})
    params = study.parameter_names
    by_case = {c.index: c for c in study.cases}
    attrs = {"study": study.name, "scenario": study.scenario_path, "scenario_name": study.scenario.name,
             "design": study.design.kind, "parameters": list(params), "metrics": [m.name for m in study.metrics],
             "mbsim_version": __version__, "created_utc": utc_now(), "description": study.description}
    if study.design.kind == "samples":
        attrs.update(samples=study.design.samples, method=study.design.method, seed=study.design.seed)
    if study.design.kind == "grid" and n == len(study.cases):
        shape = tuple(len(p.values) for p in study.parameters)
        coords = {p.path: (p.path, _column(p.values), _parameter_attrs(p)) for p in study.parameters}
        data = {k: (params, v.reshape(shape), a) for k, (v, a) in columns.items()}
        return xr.Dataset(data, coords=coords, attrs=attrs)
    coords = {"case": ("case", columns.pop("case")[0], {"description": "case index (case_NNNNN.h5)"})}
    for k, p in enumerate(study.parameters):
        coords[p.path] = ("case", _column([by_case[r["case"]].values[k] for r in rows]), _parameter_attrs(p))
    data = {k: ("case", v, a) for k, (v, a) in columns.items()}
    return xr.Dataset(data, coords=coords, attrs=attrs)


def _parameter_attrs(p) -> dict:
    """A parameter coordinate's attributes: what it is, and how its values were given (``form``:
    list, linspace, logspace, uniform, normal, lognormal; plots use a log axis for logspace and
    lognormal)."""
    return {"description": f"parameter: {p.path} of the scenario", "form": p.form, "parameter": 1}


def _column(values) -> np.ndarray:
    a = np.asarray(list(values))
    return a.astype(object) if a.dtype.kind == "U" else a


def write_h5(ds, path: str) -> None:
    """``summary.h5``: the Dataset as netCDF-4 through h5netcdf (under a temporary name, then moved)."""
    tmp = f"{path}.tmp-{os.getpid()}"
    ds.to_netcdf(tmp, engine="h5netcdf")
    os.replace(tmp, path)


def read(path: str):
    """The Dataset of a study folder's ``summary.h5`` (or of that file)."""
    import xarray as xr
    if os.path.isdir(path):
        path = os.path.join(path, H5_NAME)
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        return ds.load()
