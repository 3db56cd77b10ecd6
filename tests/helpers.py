"""Plain helpers and constants shared by test modules in any folder (pyproject's pytest
`pythonpath` puts tests/ on the path, so `from helpers import ...` works everywhere).

Test modules never import each other: what two of them share lives here, in scripted.py
(scripted models), in servers.py (servers on 127.0.0.1) or, for fixtures, in a conftest.py.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path

import yaml  # mkdocs' own dependency: the site's navigation

from veriloop.records import Trajectory

ROOT = Path(__file__).resolve().parents[1]
"""The project's root (README.md, run.sh, src/)."""
SHARED_DATA = ROOT.parent / "shared" / "data"
TEST_REPLY_TOKENS = 32
"""The reply cap (VERILOOP_MAX_REPLY_TOKENS) conftest.py sets for the whole suite."""
"""The papers' data files beside the project (the `shared_data` fixture skips without them)."""
TEST_DATA = Path(__file__).resolve().parent / "data"
"""tests/data: small files of our own (Logistics PDDL, a MathQA sample)."""
DOCS = ROOT / "docs"
"""The documentation site's pages (mkdocs.yml at the root builds them)."""


def doc_pages() -> list[Path]:
    """The README, then every page of the site's navigation in its order (the order the
    examples build on one another: a page may use what an earlier one wrote)."""
    def walk(entries: list[object]) -> list[str]:
        found: list[str] = []
        for entry in entries:
            if isinstance(entry, dict):
                for value in entry.values():
                    found += walk(value) if isinstance(value, list) else [value]
            elif isinstance(entry, str):
                found.append(entry)
        return found

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    # index.md is the README itself, copied in at build time (docs/gen_pages.py); the
    # reference pages made at build time have no file here.
    pages = [DOCS / name for name in walk(nav) if name != "index.md"]
    return [ROOT / "README.md", *(page for page in pages if page.is_file())]


def command_environ(home: Path | None = None, columns: str | None = "200", env: Mapping[str, str] | None = None,
                    unset: tuple[str, ...] = ()) -> dict[str, str]:
    """This process's environment as a command gets it: COLUMNS (help and tables are laid
    out for it; None: unset), VERILOOP_HOME, `env` set and `unset` removed."""
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", *unset)}
    if columns is not None:
        environ["COLUMNS"] = columns
    if home is not None:
        environ["VERILOOP_HOME"] = str(home)
    environ.update(env or {})
    return environ


def veriloop_process(*args: str, home: Path | None = None, cwd: Path | None = None, columns: str | None = "200",
                     env: Mapping[str, str] | None = None, unset: tuple[str, ...] = (),
                     stdin: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """`python -m veriloop.cli ARGS` in a subprocess, its output captured (the options are
    command_environ's)."""
    return subprocess.run(
        [sys.executable, "-m", "veriloop.cli", *args], capture_output=True, text=True, input=stdin,
        env=command_environ(home, columns, env, unset), cwd=cwd, timeout=timeout,
    )


PROG = "python -m veriloop.cli"
"""The program name `python -m veriloop.cli` shows in its usage lines."""


def veriloop(*args: str, home: Path | None = None, cwd: Path | None = None,
             columns: str | None = "200", env: Mapping[str, str] | None = None,
             unset: tuple[str, ...] = (), stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`veriloop ARGS` through the CLI's own `main()` in this process: the exit status,
    stdout and stderr veriloop_process() gets from `python -m veriloop.cli`, without
    starting an interpreter and importing veriloop again (half a second or more each).

    For commands whose process is not the point. A signal, a lock between processes, a
    check that exits or never returns, or a model loaded for good need a real process:
    veriloop_process().

    Args:
        home, columns, env, unset: its environment, as command_environ makes it (columns
            None: output piped without COLUMNS, 160 columns on stdout, rich's own on stderr).
        cwd: the working directory while it runs.
        stdin: what it reads from standard input.
    """
    from veriloop import cli, progress
    from veriloop.cli import common

    environ = command_environ(home, columns, env, unset)
    stdout, stderr = io.StringIO(), io.StringIO()
    app = cli.app
    # The consoles are made at import time from the interpreter's COLUMNS: give them the
    # widths a fresh `python -m veriloop.cli` with these COLUMNS would have.
    widths = common.out._width, progress.err._width
    code: int
    with _process_state(environ, cwd, [PROG, *args], stdin, stdout, stderr):
        common.out._width = int(columns) if columns else 160
        progress.err._width = int(columns) if columns else None
        cli.app = lambda: app(args=list(args), prog_name=PROG)  # type: ignore[assignment]  # main() calls app()
        try:
            cli.main()
            code = 0
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except KeyboardInterrupt:
            raise
        except BaseException:  # as the interpreter would: the traceback on stderr, status 1
            traceback.print_exc(file=sys.stderr)
            code = 1
        finally:
            cli.app = app
            common.out._width, progress.err._width = widths
    return subprocess.CompletedProcess([PROG, *args], code, stdout.getvalue(), stderr.getvalue())


@contextlib.contextmanager
def _process_state(environ: dict[str, str], cwd: Path | None, argv: list[str], stdin: str,
                   stdout: io.StringIO, stderr: io.StringIO) -> Iterator[None]:
    """The environment, working directory, argv and standard streams of a command run in
    this process, each put back afterwards."""
    saved_environ, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), sys.argv
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    os.environ.clear()
    os.environ.update(environ)
    try:
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = argv
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(stdin), stdout, stderr
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_environ)


def fake_distribution(folder: Path, name: str, entry_points: dict[str, dict[str, str]],
                      modules: dict[str, str]) -> None:
    """An installed distribution as pip leaves one: NAME-1.0.dist-info with its METADATA and
    entry_points.txt, and its modules beside it (put `folder` on sys.path to install it)."""
    info = folder / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in points.items())
        for group, points in entry_points.items()
    ))
    for module, source in modules.items():
        (folder / f"{module}.py").write_text(source)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    """The command exited 2 with one `error:` message (no traceback) holding every fragment."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    text = " ".join(lines)
    assert text.startswith("error:"), proc.stderr
    for fragment in fragments:
        assert fragment in text, (fragment, proc.stderr)


def the_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The one `error:` line of a command that failed mid-run (progress lines may precede it)."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


def read_trajectories(run_dir: Path) -> list[Trajectory]:
    return [Trajectory.model_validate_json(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]


# The experiment file the experiments issue gave as its example: read by the file format's
# tests and run for real by `veriloop eval`'s.
ISSUE_EXAMPLE = """\
name = "demo"
seeds = [0]
strategies = ["standard", "sampling:k=3", "backprompt:verifier=llm,feedback=llm,max_rounds=3"]

[models.small]
id = "smollm2-135m"

[models.judge]
id = "openai/judge"
base_url = "URL"

[roles]
verifier_model = "judge"   # who judges when a strategy asks the LLM to verify

[[domains]]
name = "game24"
n = 3

[[domains]]
name = "coloring"
n = 2
"""


def processes_with(marker: str) -> list[int]:
    """The processes whose environment holds `marker` (the `marked` fixture tags every
    sandboxed process so): what a run left behind. Only this run's: every program runs
    as a uid of its own, so another's processes (a fork bomb's, still being killed on
    another xdist worker) take nothing from the next program."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            if marker.encode() in environ:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def leftovers(marker: str, seconds: float = 60) -> list[int]:
    """processes_with(marker) once none are left, or after `seconds`: the kernel may still
    be killing a fork bomb's processes when its run returns, and on a loaded machine that
    took more than the 5 s the tests once allowed. A hang guard: a clean run waits none of it."""
    import time

    deadline = time.monotonic() + seconds
    while (found := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def booby_trapped_check(folder: Path, name: str = "their_check.py") -> tuple[Path, Path]:
    """(a check file, its marker): the check file writes the marker when it is imported, so a
    reader of someone else's run directory that names it can be shown never to import it."""
    marker = folder / f"{Path(name).stem}-ran"
    check = folder / name
    check.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n\n\n"
                     "def check(record, answer):\n    return True\n")
    return check, marker


# A meta path finder put first on sys.meta_path: every module of an extra is "not found",
# as in `pip install veriloop` without extras (the modules stay installed for the rest of the suite).
_CORE_ONLY = """\
import sys

class _CoreOnly:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (a core-only install)", name=name)
        return None

sys.meta_path.insert(0, _CoreOnly())
"""


def core_only_process(*args: str, code: str | None = None, home: Path | None = None, cwd: Path | None = None,
                      env: Mapping[str, str] | None = None, stdin: str | None = None,
                      blocked: tuple[str, ...] | None = None, timeout: float = 300,
                      ) -> subprocess.CompletedProcess[str]:
    """`python -m veriloop ARGS` (or the Python `code`) in a subprocess that finds none of
    the modules of veriloop's extras (`blocked`: those modules, default all of
    veriloop.extras.EXTRAS'), its output captured."""
    from veriloop.extras import EXTRAS

    if blocked is None:
        blocked = tuple(module for modules, _ in EXTRAS.values() for module in modules)
    prelude = _CORE_ONLY.format(blocked=set(blocked))
    body = code if code is not None else (
        f"import runpy\nsys.argv = ['veriloop', *{list(args)!r}]\n"
        "runpy.run_module('veriloop', run_name='__main__', alter_sys=True)\n"
    )
    environ = command_environ(home, "200", env)
    environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *filter(None, [environ.get("PYTHONPATH")])])
    return subprocess.run([sys.executable, "-c", prelude + body], capture_output=True, text=True, input=stdin,
                          env=environ, cwd=cwd, timeout=timeout)


def pairwise_auroc(scores: list[float], labels: list[bool]) -> float | None:
    """AUROC counted pair by pair, the reference for veriloop's: wins of a right answer over
    a wrong one, ties counting half, over right x wrong (None with one class only)."""
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    if not pos or not neg:
        return None
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))
