"""`python -m proem_client URL AGENT [proem build flags]`."""

from ._cli import run

run()
