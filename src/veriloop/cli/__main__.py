"""`python -m veriloop.cli`: the same as the `veriloop` command."""

from . import main

main()
