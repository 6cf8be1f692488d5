"""Scenario problems and the one exception that carries all of them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a scenario file.

    Attributes
    ----------
    path : str
        Key path of the offending value, e.g. ``bodies[1].inertia``.  Problems
        that belong to no key use ``<file>`` (cannot read or decode the file),
        ``<yaml>`` (not valid YAML) or ``<top>`` (the top-level mapping).
    line : int or None
        1-based line in the file, when known.
    message : str
        What is wrong, phrased to follow the path (``must be positive definite``).
    """

    path: str
    line: Optional[int]
    message: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path} (line {self.line})"
        return f"{where}: {self.message}"


class ScenarioError(Exception):
    """A scenario was refused; ``problems`` lists everything found, in file order.

    Parameters
    ----------
    problems : list of Problem
        At least one problem.
    source : str or None
        Path of the file, if the scenario came from one.
    """

    def __init__(self, problems: list[Problem], source: Optional[str] = None):
        self.problems = list(problems)
        self.source = source
        super().__init__(self.report())

    def report(self) -> str:
        """Return ``FILE: N problem(s)`` followed by one indented problem per line."""
        n = len(self.problems)
        head = f"{self.source or '<scenario>'}: {n} problem{'' if n == 1 else 's'}"
        return "\n".join([head] + [f"  {p}" for p in self.problems])

    def __str__(self) -> str:
        return self.report()
