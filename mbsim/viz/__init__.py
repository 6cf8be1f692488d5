"""Pictures of results: plots (``mbsim.viz.plot``), animations (``mbsim.viz.animate``)
and the geometry both draw from (``mbsim.viz.geometry``).

Plotting needs matplotlib, an optional dependency (``pip install 'mbsim[plot]'``).
Importing this package does not import it: :func:`require` checks for an
optional package and raises :class:`MissingDependency` with the install hint,
so a command line can say what to do instead of failing with a traceback.
"""
from __future__ import annotations

import importlib

# package to import -> (the extra of pyproject.toml that installs it, what it is needed for)
OPTIONAL = {
    "matplotlib": ("plot", "plots and animations"),
    "PIL": ("plot", "GIF animations"),
    "meshio": ("vtk", "VTK export"),
    "xarray": ("sweep", "the tables of parameter studies"),
    "h5netcdf": ("sweep", "the tables of parameter studies"),
}


class MissingDependency(ImportError):
    """An optional package is not installed; the message is a one-line install hint."""


def require(package: str):
    """Import and return the optional ``package``, or raise :class:`MissingDependency`.

    The message names the pip command, e.g.
    ``matplotlib is needed for plots and animations: pip install 'mbsim[plot]'``.
    """
    try:
        return importlib.import_module(package)
    except ImportError:
        extra, purpose = OPTIONAL.get(package, (None, "this"))
        how = f"pip install 'mbsim[{extra}]'" if extra else f"pip install {package}"
        name = "Pillow" if package == "PIL" else package
        raise MissingDependency(f"{name} is needed for {purpose}: {how}") from None


__all__ = ["MissingDependency", "require", "OPTIONAL"]
