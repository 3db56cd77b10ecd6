"""`veriloop view`: runs and experiments as one self-contained HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import VeriloopError
from .common import out


def view(
    paths: Annotated[list[Path], typer.Argument(
        metavar="PATH", help="Run directories, experiment directories, audit directories or trajectories.jsonl "
        "files; several are compared in one report.", show_default=False,
    )],
    out_file: Annotated[Path | None, typer.Option(
        "--out", metavar="FILE", help="Where to write the report. Default: report.html in the PATH when one "
        "directory is given, else in the current directory.",
    )] = None,
    serve: Annotated[bool, typer.Option(
        "--serve", help="Also serve the report on 127.0.0.1 and reload it as the runs write new trajectories "
        "(Ctrl-C stops).",
    )] = False,
    port: Annotated[int, typer.Option(
        metavar="N", help="With --serve: the port (0 picks a free one).", min=0, max=65535,
    )] = 8765,
    title: Annotated[str | None, typer.Option(
        metavar="TEXT", help="The report's title. Default: the paths' names.",
    )] = None,
    references: Annotated[bool, typer.Option(
        "--references/--no-references", help="Show each instance's reference answer, as the run recorded it in "
        "its instances.jsonl (older runs have none; viewing never rebuilds a run's domain or runs its check).",
    )] = True,
) -> None:
    """Write one HTML file that shows what the loops did: the results table with the
    accuracy-by-round and accuracy-vs-tokens charts, every trajectory with filters
    (strategy, model, solved, stop reason, verifier against ground truth), each one as
    a timeline of its calls, verdicts, feedback, tool calls and SelfCheck steps, and one
    instance under two strategies side by side. Audits (`veriloop audit` directories,
    or an experiment's) show their false-accept table and the dressed answers each
    verifier accepted.

    The file is self-contained (no network; it opens from disk) and model output in it
    is shown as text, never run. Several PATHs are compared in one report."""
    from ..view.report import build

    target = out_file or (paths[0] / "report.html" if len(paths) == 1 and paths[0].is_dir() else Path("report.html"))
    if target.exists() and target.is_dir():
        raise VeriloopError(f"--out {target} is a directory; give a file name such as {target / 'report.html'}")
    if serve:
        _serve(paths, target, port, title, references)
        return
    built = build(paths, title, references=references)
    _write(target, built.html)
    audits = f", {built.audits} audit{'' if built.audits == 1 else 's'}" if built.audits else ""
    each = f" ({built.bytes_per_trajectory:.0f} per trajectory)" if built.trajectories else ""
    out.print(f"wrote {target}: {built.trajectories} trajectories{audits}, {built.size} bytes{each}", highlight=False)


def _write(target: Path, html: str) -> None:
    from ..files import write_error, write_file

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(target, exc, advice="") from None
    write_file(target, html, advice="")  # a page being served or opened is never seen half-written


def _serve(paths: list[Path], target: Path, port: int, title: str | None, references: bool) -> None:
    from ..view import data
    from ..view.report import build
    from ..view.serve import LivePage, ViewServer

    data.discover(paths)  # a wrong path is an error now, not a page that fails to build

    def make(version: str) -> str:
        # Each rebuild reads the recorded references again: they are data, read in a moment.
        return build(paths, title, live=True, version=version, references=references, allow_empty=True).html

    page = LivePage(paths, make, on_build=lambda html: _write(target, html))
    try:
        server = ViewServer(page, port)
    except OSError as exc:
        raise VeriloopError(f"cannot serve on 127.0.0.1:{port}: {exc.strerror}; try another --port") from None
    page.html()  # build once before announcing the address, so errors show here
    out.print(f"serving {server.url} (the report is also written to {target}); Ctrl-C stops", highlight=False)
    out.file.flush()  # the address is what a caller piping the output waits for
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        out.print("stopped", highlight=False)
