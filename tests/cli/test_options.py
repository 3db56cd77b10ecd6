"""The option groups (cli/options.py): each option declared once, the same in every command."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Annotated

import pytest
import typer
from helpers import assert_one_line_error, veriloop
from typer.main import get_command
from typer.testing import CliRunner

import veriloop.cli as cli_package
from veriloop.cli import app
from veriloop.cli.options import (
    TYPED,
    CacheFlags,
    ExecutorFlags,
    MainModelFlags,
    ModelFlags,
    OptionGroup,
    ServerFlags,
    grouped,
)

CLI = Path(cli_package.__file__).parent
# The shared declarations (cli/common.py: Opt) that only a group may use.
GROUPED_OPTS = {"BaseUrl", "ApiKey", "Threads", "Deployment", "RetryBudget", "StallTimeout", "AttemptTimeout",
                "MaxReplyBytes", "ReasoningEffort", "Cache", "Executor", "Address", "ShardSize", "Batch",
                "BatchPollSeconds"}


def commands() -> dict[str, object]:
    """Every command of the app by its path ("reproduce critic"), help loaded."""
    found = {}

    def walk(command: object, path: tuple[str, ...]) -> None:
        sub = getattr(command, "commands", None)
        if sub is None:
            found[" ".join(path)] = command
            return
        for name in sub:
            walk(command.get_command(None, name), (*path, name))  # type: ignore[attr-defined]

    walk(get_command(app), ())
    return found


def test_no_command_declares_a_grouped_option_itself():
    """The model, cache, executor and batch options appear in cli/ only in options.py."""
    users = []
    for path in sorted(CLI.glob("*.py")):
        if path.name in ("options.py", "common.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Opt"
                    and node.attr in GROUPED_OPTS):
                users.append(f"{path.name}:{node.lineno} Opt.{node.attr}")
    assert users == []


def test_an_option_has_one_help_text_in_every_command():
    helps: dict[str, set[str]] = {}
    for command in commands().values():
        for param in command.params:  # type: ignore[attr-defined]
            if param.opts[0] in ("--base-url", "--api-key", "--threads", "--deployment", "--retry-budget",
                                 "--stall-timeout", "--attempt-timeout", "--max-reply-bytes", "--reasoning-effort",
                                 "--cache", "--no-cache", "--executor", "--address", "--shard-size"):
                helps.setdefault(param.opts[0], set()).add(param.help)
    assert sorted(helps) == sorted(["--base-url", "--api-key", "--threads", "--deployment", "--retry-budget",
                                    "--stall-timeout", "--attempt-timeout", "--max-reply-bytes",
                                    "--reasoning-effort", "--cache", "--no-cache", "--executor", "--address",
                                    "--shard-size"])
    assert {flag: len(texts) for flag, texts in helps.items()} == dict.fromkeys(helps, 1)


@pytest.mark.parametrize("path", ["chat", "selfcheck", "study verification", "reproduce critic",
                                  "reproduce selfcheck", "reproduce self-verification", "rescore"])
def test_every_model_command_takes_the_whole_server_group(path):
    names = {param.name for param in commands()[path].params}  # type: ignore[attr-defined]
    wanted = {f.name for f in dataclasses.fields(ServerFlags)} | {f.name for f in dataclasses.fields(CacheFlags)}
    assert wanted - names == set()


def demo_app() -> typer.Typer:
    demo = typer.Typer()

    @demo.command()
    @grouped
    def go(
        word: Annotated[str, typer.Option(help="A word.")] = "hi",
        model: ModelFlags = TYPED,
        cache: CacheFlags = TYPED,
        where: ExecutorFlags = TYPED,
    ) -> None:
        choice = model.choice(cache, concurrency=3)
        print(word, choice.settings.id, choice.settings.base_url, choice.settings.concurrency, choice.threads,
              choice.use_cache, choice.cache, where.where.executor)

    @demo.command()
    def other() -> None:  # two commands, so `go` is a subcommand by name
        pass

    return demo


def test_a_group_is_built_from_what_was_typed():
    result = CliRunner().invoke(demo_app(), ["go", "--word", "yo", "--model", "openai/x", "--base-url",
                                             "http://127.0.0.1:9/v1", "--threads", "2", "--no-cache"])
    assert result.exit_code == 0, result.output
    assert result.output.split() == ["yo", "openai/x", "http://127.0.0.1:9/v1", "3", "2", "False", "None", "local"]


def test_a_group_left_alone_has_its_defaults():
    result = CliRunner().invoke(demo_app(), ["go"])
    assert result.exit_code == 0, result.output
    assert result.output.split() == ["hi", "qwen2.5-coder-1.5b", "None", "3", "None", "True", "None", "local"]


def test_a_groups_own_check_is_a_one_line_error():
    from veriloop.errors import VeriloopError

    with pytest.raises(VeriloopError, match=r"^--reasoning-effort must be one of minimal, low, medium, high, not "
                                            r"'huge'$"):
        ModelFlags(reasoning_effort="huge")
    with pytest.raises(VeriloopError, match=r"^--address goes with --executor ray$"):
        ExecutorFlags(address="auto")


@pytest.mark.parametrize("path", [["chat", "-q", "hi"], ["selfcheck", "--question", "q", "--solution", "s"],
                                  ["reproduce", "critic"]])
def test_a_model_command_refuses_an_unknown_reasoning_effort_before_loading_a_model(path, tmp_path):
    proc = veriloop(*path, "--reasoning-effort", "huge", home=tmp_path)
    assert_one_line_error(proc, "--reasoning-effort must be one of minimal, low, medium, high, not 'huge'")


def test_given_names_the_flags_typed_away_from_their_defaults():
    assert MainModelFlags(model="m", base_url="http://h/v1").given() == ["--base-url", "--model"]
    assert CacheFlags(no_cache=True).given() == ["--no-cache"]
    assert ExecutorFlags().given() == []


def test_main_model_flags_are_overrides_of_the_files_main_model():
    assert MainModelFlags().overrides() == {}
    assert MainModelFlags(model="smollm2-135m", threads="2", retry_budget=5.0).overrides() == {
        "models.main.id": "smollm2-135m", "models.main.threads": 2, "models.main.retry_budget": 5.0,
    }


@dataclasses.dataclass
class Twice(OptionGroup):
    cache: Annotated[str | None, typer.Option()] = None


def test_two_groups_sharing_a_field_are_refused_when_the_command_is_declared():
    def command(one: CacheFlags = TYPED, two: Twice = TYPED) -> None:
        pass

    with pytest.raises(TypeError, match=r"^command: option\(s\) cache declared twice$"):
        grouped(command)
