"""``python -m mbsim``: the same command line as the ``mbsim`` script."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
