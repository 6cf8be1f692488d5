"""The user force law of ``benchmarks/user_law.py``: the chain's linear spring written as a user law
(THEORY §13, docs/user-laws.md), T = k (L − L0) with its derivatives; params (k, L0)."""


def spring(length, rate, time, params):
    k, rest = params[0], params[1]
    return k * (length - rest), k, 0.0
