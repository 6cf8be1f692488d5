"""A force element written outside mbsim (tests/plugin/hardening_spring.py) and what it must get from
the engine without a line of mbsim changed: docs/develop.md, "Adding an element"."""
