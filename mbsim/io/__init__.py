"""HDF5 trajectory files (OUTPUT.md): the only package that imports h5py."""
from .reader import read_summary  # noqa: F401
from .writer import TrajectoryWriter  # noqa: F401
