"""mbsim: implicit multibody dynamics of rigid bodies with springs, dampers and torsional dampers."""

__version__ = "0.1.0"
