"""Commands imported when they run (issue 30, item 3).

A group lists every command with its short help without importing any: a command's
module, and whatever it imports, loads when that command runs or shows its own help.
Each command is still a plain function whose signature declares its options; typer
turns it into a click command at that moment, as it would have at start-up.

The mechanism is typer's own: a group class (`typer.Typer(cls=...)`) whose mapping of
commands builds a command the first time it is looked up (`get_command`), the lazy
group of click's documentation."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from gettext import gettext as _
from typing import TYPE_CHECKING, Any, ClassVar

import typer
from typer._click import Command  # typer's own copy of click
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    from typer._click import Context, HelpFormatter


@dataclass(frozen=True)
class LazyCommand:
    """A command by where it lives: `function` of `veriloop.cli.<module>`, named `name`.

    `short_help` and `cls` (a class of the same module, by name) are what `app.command()`
    would be given. A command with no `short_help` is listed by its docstring's first
    sentence, which click shortens to the listing's width: `summary` is that sentence,
    so the listing needs no import (tests/cli/test_lazy_cli.py checks it against the
    docstring)."""

    name: str
    module: str
    function: str
    short_help: str | None = None
    summary: str | None = None
    cls: str | None = None

    def __post_init__(self) -> None:
        if (self.short_help is None) == (self.summary is None):
            raise ValueError(f"command {self.name!r}: give short_help or summary, not both or neither")

    def load(self, rich_markup_mode: Any) -> Command:
        """The command as typer makes it from the function (its options from the signature)."""
        module = importlib.import_module(f"{__package__}.{self.module}")
        one = typer.Typer(rich_markup_mode=rich_markup_mode, pretty_exceptions_enable=False, add_completion=False)
        one.command(self.name, cls=getattr(module, self.cls) if self.cls else None, short_help=self.short_help)(
            getattr(module, self.function)
        )
        return typer.main.get_command(one)

    def listing(self) -> Command:
        """A stand-in with the command's name and short help alone, for the group's list."""
        return TyperCommand(self.name, help=self.summary, short_help=self.short_help)


class Commands(MutableMapping[str, Command]):
    """A group's commands by name, in the order of the listing; a lazy one is imported and
    built the first time it is looked up, and kept."""

    def __init__(self, entries: dict[str, LazyCommand | Command], rich_markup_mode: Any) -> None:
        self._entries = entries
        self._rich_markup_mode = rich_markup_mode

    def __getitem__(self, name: str) -> Command:
        entry = self._entries[name]
        if isinstance(entry, LazyCommand):
            entry = self._entries[name] = entry.load(self._rich_markup_mode)
        return entry

    def __setitem__(self, name: str, command: Command) -> None:
        self._entries[name] = command

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def listed(self, name: str) -> Command:
        """The command if it is built, else its stand-in: what the listing needs, no import."""
        entry = self._entries[name]
        return entry.listing() if isinstance(entry, LazyCommand) else entry


class LazyGroup(TyperGroup):
    """A typer group whose `lazy` commands come first, in their order, and load on use;
    the typer-made ones (sub-groups) follow. Made by `lazy_group()`."""

    lazy: ClassVar[tuple[LazyCommand, ...]] = ()

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        entries: dict[str, LazyCommand | Command] = {command.name: command for command in self.lazy}
        entries.update(self.commands)
        self.commands = Commands(entries, self.rich_markup_mode)

    def list_commands(self, ctx: Context) -> list[str]:
        # TyperGroup's walks the commands' values, which would import every one.
        return list(self.commands)

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        """TyperGroup's list of commands with their short help, each from `Commands.listed`."""
        assert isinstance(self.commands, Commands)
        shown = [(name, self.commands.listed(name)) for name in self.list_commands(ctx)]
        shown = [(name, command) for name, command in shown if not command.hidden]
        if shown:
            # allow for 3 times the default spacing, as click does
            limit = formatter.width - 6 - max(len(name) for name, _command in shown)
            with formatter.section(_("Commands")):
                formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in shown])


def lazy_group(*commands: LazyCommand) -> type[LazyGroup]:
    """A group class (for `typer.Typer(cls=...)`) whose commands are `commands`, each
    imported when it runs or shows its help."""
    return type("LazyGroup", (LazyGroup,), {"lazy": commands})
