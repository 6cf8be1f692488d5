"""The picture of a parameter study: each metric against each parameter (``mbsim plot STUDY_DIR``).

Takes the summary Dataset of :mod:`mbsim.study.table` (``summary.h5``) and
returns a :class:`matplotlib.figure.Figure`, built without ``pyplot`` like
:mod:`mbsim.viz.plot` (whose :func:`~mbsim.viz.plot.save` writes it):

- a grid over one parameter (parameters with a single value do not count):
  one panel per metric, the metric against the parameter as a line;
- a grid over two: one heat map per metric, the two parameters as axes;
- a grid over three or more: one panel per metric and parameter, a line per
  combination of the other parameters (at most 8, the rest thin and grey);
- samples: one scatter panel per metric and parameter.

Cases that are not ``ok`` have no metric values and leave gaps (a grid) or
are left out (samples); the title counts them.  Axes carry the metrics'
units; a parameter given by ``logspace`` or ``lognormal`` gets a log axis.
"""
from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure

from .plot import DPI, FigureTooSmall

PANEL = (420, 320)  # pixels per panel, for the default size
MIN_PANEL = (200, 160)
MAX_LINES = 8
MAX_COLUMNS = 4


def metric_names(ds) -> list:
    """The metric variables of a summary Dataset, in study order."""
    names = list(np.atleast_1d(ds.attrs.get("metrics", [])))
    return [str(n) for n in names if str(n) in ds.data_vars]


def parameter_names(ds) -> list:
    return [str(n) for n in np.atleast_1d(ds.attrs.get("parameters", []))]


def varying(ds) -> list:
    """The parameters with more than one value."""
    return [p for p in parameter_names(ds) if np.unique(np.asarray(ds[p].values).astype(str)).size > 1]


def layout(ds) -> tuple:
    """``(kind, panels)``: kind ``lines``, ``heatmap`` or ``scatter``; panels a list of (metric, parameter
    or None)."""
    metrics, params = metric_names(ds), varying(ds) or parameter_names(ds)[:1]
    if ds.attrs.get("design") == "grid":
        if len(params) == 2:
            return "heatmap", [(m, None) for m in metrics]
        return "lines", [(m, p) for m in metrics for p in params]
    return "scatter", [(m, p) for m in metrics for p in params]


def default_size(ds) -> tuple:
    _, panels = layout(ds)
    rows, cols = _grid(len(panels))
    return max(640, cols * PANEL[0]), max(420, rows * PANEL[1] + 80)


def _grid(n: int) -> tuple:
    cols = min(MAX_COLUMNS, max(1, n)) if n != 4 else 2
    return math.ceil(max(n, 1) / cols), cols


def plot_study(ds, *, size=None, dpi: int = DPI) -> Figure:
    """Each metric of the study against each parameter (see the module docstring)."""
    kind, panels = layout(ds)
    rows, cols = _grid(len(panels))
    w, h = size or default_size(ds)
    if w < cols * MIN_PANEL[0] or h < rows * MIN_PANEL[1]:
        raise FigureTooSmall(f"the study figure ({len(panels)} panels) needs at least "
                             f"{cols * MIN_PANEL[0]}x{rows * MIN_PANEL[1]} pixels, got {w}x{h}")
    fig = Figure(figsize=(w / dpi, h / dpi), dpi=dpi, layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for ax, (metric, param) in zip(axes, panels):
        if kind == "heatmap":
            _heatmap(fig, ax, ds, metric, varying(ds))
        elif kind == "lines":
            _lines(ax, ds, metric, param)
        else:
            _scatter(ax, ds, metric, param)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    if not panels:
        ax = axes[0]
        ax.set_visible(True)
        ax.text(0.5, 0.5, "the study has no metrics", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
    _title(fig, ds, kind)
    return fig


def _label(ds, name: str) -> str:
    units = ds[name].attrs.get("units")
    return f"{name} [{units}]" if units else name


def _log(ds, param: str) -> bool:
    return ds[param].attrs.get("form") in ("logspace", "lognormal")


def _numeric(values) -> bool:
    return np.asarray(values).dtype.kind in "iuf"


def _lines(ax, ds, metric: str, param: str) -> None:
    da = ds[metric]
    others = [d for d in da.dims if d != param]
    flat = da.transpose(param, *others).values.reshape(da.sizes[param], -1)
    x = ds[param].values
    xs = x if _numeric(x) else np.arange(len(x))
    combos = list(np.ndindex(*[da.sizes[d] for d in others])) or [()]
    for k in range(flat.shape[1]):
        label = ", ".join(f"{d} = {_short(ds[d].values[i])}" for d, i in zip(others, combos[k])
                          if ds.sizes[d] > 1) or None
        if k < MAX_LINES:
            ax.plot(xs, flat[:, k], marker="o", ms=4, label=label)
        else:
            ax.plot(xs, flat[:, k], color="0.7", lw=0.8)
    if flat.shape[1] > 1 and any(ds.sizes[d] > 1 for d in others):
        ax.legend(fontsize=7, title=None if flat.shape[1] <= MAX_LINES else f"first {MAX_LINES} of {flat.shape[1]}")
    if not _numeric(x):
        ax.set_xticks(xs, [_short(v) for v in x])
    if _log(ds, param):
        ax.set_xscale("log")
    ax.set_xlabel(param)
    ax.set_ylabel(_label(ds, metric))
    ax.grid(True, alpha=0.3)


def _heatmap(fig, ax, ds, metric: str, params: list) -> None:
    py, px = params  # the first parameter down the rows, the second across
    da = ds[metric].transpose(py, px, ...)
    z = da.values.reshape(da.sizes[py], da.sizes[px])
    mesh = ax.pcolormesh(np.arange(z.shape[1] + 1) - 0.5, np.arange(z.shape[0] + 1) - 0.5,
                         np.ma.masked_invalid(z), shading="flat", cmap="viridis")
    fig.colorbar(mesh, ax=ax, label=_label(ds, metric))
    for axis, p, n in ((ax.xaxis, px, z.shape[1]), (ax.yaxis, py, z.shape[0])):
        step = max(1, math.ceil(n / 10))
        ticks = np.arange(0, n, step)
        axis.set_ticks(ticks, [_short(ds[p].values[i]) for i in ticks])
    ax.set_xlabel(px)
    ax.set_ylabel(py)
    ax.set_title(metric, fontsize=10)


def _scatter(ax, ds, metric: str, param: str) -> None:
    x, y = ds[param].values, ds[metric].values
    ok = np.isfinite(y)
    xs = x if _numeric(x) else np.unique(x.astype(str), return_inverse=True)[1]
    ax.scatter(xs[ok], y[ok], s=14, alpha=0.8)
    if not _numeric(x):
        labels = np.unique(x.astype(str))
        ax.set_xticks(np.arange(len(labels)), labels)
    if _log(ds, param):
        ax.set_xscale("log")
    ax.set_xlabel(param)
    ax.set_ylabel(_label(ds, metric))
    ax.grid(True, alpha=0.3)


def _short(v) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.4g}"
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v)).lower()
    return str(v)


def _title(fig, ds, kind: str) -> None:
    status = np.asarray(ds["status"].values).astype(str).ravel()
    counts = ", ".join(f"{int((status == s).sum())} {s}" for s in ("ok", "failed", "lost", "cancelled")
                       if (status == s).any())
    what = {"lines": "each metric against each parameter", "heatmap": "each metric over the two parameters",
            "scatter": "each metric against each parameter (samples)"}[kind]
    fig.suptitle(f"study {ds.attrs.get('study', '')} of {ds.attrs.get('scenario_name', '')}: {what}\n"
                 f"{status.size} cases: {counts}", fontsize=12)
