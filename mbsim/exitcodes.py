"""Exit codes of the ``mbsim`` command (documented in ``mbsim --help`` and the README).

A module of its own so that the command line can name them without
importing the numerical code.
"""
EXIT_OK = 0
EXIT_DIFFERENCES = 1  # `mbsim compare`: beyond tolerance; `mbsim verify`: an order is not 2
EXIT_INVALID = 2
EXIT_SOLVER = 3
EXIT_INTERNAL = 4
EXIT_INTERRUPTED = 130
