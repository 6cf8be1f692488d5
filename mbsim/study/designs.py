"""Designs of a parameter study: which parameter values each case gets.

- ``grid``: the full factorial of the parameters' value lists, in the order the
  parameters are written, the last one varying fastest (case 0 takes every
  first value).  Only value lists (written out, ``linspace``, ``logspace``).
- ``{samples: N, method: random | lhs, seed: S}``: N cases.  Each parameter
  gets a column of N numbers u in [0, 1): independent uniform draws
  (``random``, numpy's PCG64 seeded with S) or a Latin hypercube (``lhs``,
  :class:`scipy.stats.qmc.LatinHypercube` seeded with S: each column takes
  exactly one u from each of the N strata [k/N, (k+1)/N)).  u becomes a value
  through the parameter's distribution: ``uniform [lo, hi]`` lo + u (hi − lo);
  ``normal [mu, sigma]`` and ``lognormal [mu, sigma]`` through the inverse
  normal CDF (lognormal: exp of a normal with that mu and sigma); a value list
  takes its item floor(u n).

The same seed gives the same cases on any machine.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

DISTRIBUTIONS = ("uniform", "normal", "lognormal")
RANGES = ("linspace", "logspace")
METHODS = ("random", "lhs")


@dataclass(frozen=True)
class ParameterSpec:
    """A validated parameter: its key path and either a list of values or a distribution."""

    path: str  # the key path as written
    segments: tuple
    values: Optional[tuple] = None  # a value list (written out, linspace or logspace)
    distribution: Optional[str] = None  # uniform | normal | lognormal
    arguments: Optional[tuple] = None  # the distribution's two numbers
    line: Optional[int] = None
    form: str = "list"  # how it was written: list, linspace, logspace, or the distribution

    @property
    def random(self) -> bool:
        return self.distribution is not None


@dataclass(frozen=True)
class Design:
    """``grid``, or ``samples`` cases drawn by ``method`` from ``seed``."""

    kind: str  # grid | samples
    samples: int = 0
    method: str = "lhs"
    seed: int = 0


def linspace(a: float, b: float, n: int) -> tuple:
    """n equally spaced values from a to b (both included)."""
    return tuple(float(x) for x in np.linspace(a, b, n))


def logspace(a: float, b: float, n: int) -> tuple:
    """n values from a to b (both > 0, both included) equally spaced on a log scale: the values, not
    exponents (numpy's geomspace, not logspace)."""
    return tuple(float(x) for x in np.geomspace(a, b, n))


def grid_size(parameters) -> int:
    return math.prod(len(p.values) for p in parameters)


def unit_samples(design: Design, d: int) -> np.ndarray:
    """(N, d) numbers in [0, 1) for a samples design over d parameters."""
    if design.method == "random":
        return np.random.default_rng(design.seed).random((design.samples, d))
    from scipy.stats import qmc
    try:
        engine = qmc.LatinHypercube(d=d, rng=design.seed)
    except TypeError:  # SciPy before 1.15 calls it seed
        engine = qmc.LatinHypercube(d=d, seed=design.seed)
    return engine.random(design.samples)


def from_unit(p: ParameterSpec, u: np.ndarray) -> list:
    """Values of parameter ``p`` for the numbers ``u`` in [0, 1)."""
    if p.values is not None:
        n = len(p.values)
        return [p.values[min(int(x * n), n - 1)] for x in u]
    a, b = p.arguments
    if p.distribution == "uniform":
        return [float(a + x * (b - a)) for x in u]
    from scipy.special import ndtri
    z = ndtri(np.clip(u, 1e-300, 1.0 - 1e-16))  # u = 0 is a possible draw: keep it finite
    if p.distribution == "normal":
        return [float(a + b * x) for x in z]
    return [float(math.exp(a + b * x)) for x in z]


def cases(parameters, design: Design) -> list:
    """The parameter values of every case: a list of tuples, one value per parameter, in case order."""
    if design.kind == "grid":
        return [tuple(c) for c in itertools.product(*(p.values for p in parameters))]
    u = unit_samples(design, len(parameters))
    columns = [from_unit(p, u[:, k]) for k, p in enumerate(parameters)]
    return list(zip(*columns))


__all__ = ["DISTRIBUTIONS", "RANGES", "METHODS", "ParameterSpec", "Design", "linspace", "logspace", "grid_size",
           "unit_samples", "from_unit", "cases"]
