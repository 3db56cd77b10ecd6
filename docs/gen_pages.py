"""The site's generated pages, written by mkdocs-gen-files at build time (nothing here is
kept in the repository):

- `index.md`: the README, its links into `docs/` made relative to the site;
- `reference/cli.md`: every command, argument and option, from the Typer app itself by
  Typer's own Markdown generator (what `typer veriloop.cli utils docs` prints);
- `reference/experiment-file.md`: every key of an experiment file, from the pydantic
  models `veriloop eval` validates a file with;
- `reference/records.md`: the record formats (trajectory, call, round, verdict) as tables
  and as the JSON schema pydantic generates from the same models.

Descriptions come from the classes' docstrings (`Attributes:` sections, read by griffe,
the parser mkdocstrings uses), so a key's meaning is written once, next to its code.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from pathlib import Path
from typing import Any

import griffe
import mkdocs_gen_files
import typer
import typer.cli
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from veriloop import cli
from veriloop.experiment import schema as spec
from veriloop.records import CallRecord, Instance, RoundRecord, ToolRecord, Trajectory, Verdict, VerdictError

ROOT = Path(__file__).resolve().parent.parent


def readme_as_home() -> str:
    text = (ROOT / "README.md").read_text()
    return re.sub(r"\]\(docs/", "](", text)


def command_line() -> str:
    command = typer.main.get_command(cli.app)
    context = typer.Context(command, info_name="veriloop")
    generated = typer.cli.get_docs_for_click(obj=command, ctx=context, name="veriloop", title="Command-line reference")
    intro = ("Generated from the command line itself (the Typer app in `veriloop.cli`), so it lists every "
             "command, argument and option with the help `veriloop COMMAND --help` prints.\n\n")
    title, _, rest = generated.strip().partition("\n")
    return f"{title}\n\n{intro}{rest.strip()}\n"


def attribute_docs(cls: type) -> dict[str, str]:
    """`Attributes:` of a class's docstring, name -> description (one line)."""
    # The class's own docstring parsed alone: loading the package with griffe (its 180
    # modules) for a few docstrings cost more than a second of every build.
    if cls.__doc__ is None:
        return {}
    docs: dict[str, str] = {}
    for section in griffe.Docstring(inspect.cleandoc(cls.__doc__)).parse("google", warnings=False):
        if section.kind.value == "attributes":
            docs.update({item.name: " ".join(item.description.split()) for item in section.value})
    return docs


def type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(type_name(arg) for arg in typing.get_args(annotation))
    if origin is typing.Literal:
        return " \\| ".join(json.dumps(arg) for arg in typing.get_args(annotation))
    if origin is not None:
        args = ", ".join(type_name(arg) for arg in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if annotation is type(None):
        return "none"
    return getattr(annotation, "__name__", str(annotation))


def default_of(field: Any) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        made = field.default_factory()
        return "`" + json.dumps(made.model_dump() if isinstance(made, BaseModel) else made) + "`"
    value = field.default
    return "" if value is PydanticUndefined else f"`{json.dumps(value)}`"


def model_table(cls: type[BaseModel], heading: str, describe: str = "") -> str:
    docs = attribute_docs(cls)
    rows = ["| key | type | default | what it is |", "|---|---|---|---|"]
    for name, field in cls.model_fields.items():
        key = field.alias or name
        rows.append(f"| `{key}` | {type_name(field.annotation)} | {default_of(field)} | {docs.get(name, '')} |")
    return f"## {heading}\n\n{describe}\n\n" + "\n".join(rows) + "\n"


def experiment_file() -> str:
    parts = [
        "# Experiment-file keys\n",
        "Generated from the pydantic models `veriloop eval` validates a file with "
        "(`veriloop.experiment.schema`); a key not listed here is refused, with the file, line and key. "
        "The guide [Experiments as files](../guides/experiments.md) shows them in use.\n",
        model_table(spec.Experiment, "The file", "The top level of an experiment file."),
        model_table(spec.ModelEntry, "`[models.NAME]`", "A model, under the name the rest of the file uses."),
        model_table(spec.Prices, "`price`", "US dollars per million tokens, for `max_usd` budgets."),
        model_table(spec.Roles, "`[roles]`", "Which model plays a role other than generating, by its name under `models`."),
        model_table(spec.DomainEntry, "`[[domains]]`", "A built-in or plugin domain."),
        model_table(spec.TaskEntry, "`[[tasks]]`", "A task of your own: a JSON-lines file, a prompt template and a check."),
        model_table(spec.StrategyEntry, "`strategies`", "A strategy spec as `-s` takes it, or a table with a label."),
        model_table(spec.Budget, "`[budget]`, `[cell_budget]`", "Caps on what the experiment, or each cell, spends."),
        model_table(spec.Rule, "`[[include]]`, `[[exclude]]`", "Cells of the matrix to drop or add."),
        model_table(spec.ToolsEntry, "`[tools]`", "The tools of the CRITIC domains."),
    ]
    schema = json.dumps(spec.Experiment.model_json_schema(), indent=2)
    parts.append(f"## JSON schema\n\n??? note \"The whole schema\"\n\n    ```json\n{indent(schema)}\n    ```\n")
    return "\n".join(parts)


def records() -> str:
    parts = [
        "# Record formats\n",
        "What a run directory's `trajectories.jsonl` holds: one `Trajectory` per line. Generated from the "
        "pydantic models in `veriloop.records`, which write and read every record.\n",
    ]
    for cls in (Trajectory, CallRecord, RoundRecord, Verdict, VerdictError, ToolRecord, Instance):
        summary = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        parts.append(model_table(cls, f"`{cls.__name__}`", summary))
    schema = json.dumps(Trajectory.model_json_schema(), indent=2)
    parts.append(f"## JSON schema of a trajectory\n\n??? note \"The whole schema\"\n\n    ```json\n{indent(schema)}\n"
                 "    ```\n")
    return "\n".join(parts)


def indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


for path, content in (("index.md", readme_as_home()), ("reference/cli.md", command_line()), ("reference/experiment-file.md", experiment_file()),
                      ("reference/records.md", records())):
    with mkdocs_gen_files.open(path, "w") as f:
        f.write(content)
mkdocs_gen_files.set_edit_path("index.md", "../README.md")
