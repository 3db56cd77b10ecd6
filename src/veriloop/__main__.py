"""`python -m veriloop`: the same as the `veriloop` command."""

from .cli import main

main()
