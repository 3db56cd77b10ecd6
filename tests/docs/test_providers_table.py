"""The provider table of "Your model" (docs/guides/own-model.md) says what the providers'
code says: one row per built-in provider of the registry, its base URL default and
variables, its key variables and each `Supports` flag, so a provider that changes what it
takes fails here until the page says so too.

A provider whose module is not in this checkout yet (a registry entry ahead of its code)
is skipped by name, never passed."""

from __future__ import annotations

import re

import pytest
from helpers import DOCS

from veriloop.models.providers import PROVIDERS, Provider
from veriloop.registry import BUILTIN

PAGE = DOCS / "guides" / "own-model.md"
FLAGS = ("temperature", "seed", "n", "logprobs", "reasoning", "batch")
COLUMNS = ("id", "what it reaches", "base URL", "key variable", *FLAGS)


def table_rows() -> dict[str, list[str]]:
    """The table's rows by provider prefix, each a list of its cells."""
    text = PAGE.read_text()
    header = next(line for line in text.splitlines() if line.startswith("| id | what it reaches |"))
    assert [cell.split(":")[0].strip() for cell in header.strip("|").split("|")] == list(COLUMNS), header
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        found = re.match(r"\| `(\w+)/` \|", line)
        if found:
            cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
            assert len(cells) == len(COLUMNS), line
            rows[found.group(1)] = cells
    return rows


def built_in() -> list[str]:
    return [name for name in PROVIDERS if PROVIDERS.source(name) == BUILTIN]


def loaded(prefix: str) -> type[Provider]:
    try:
        return PROVIDERS[prefix]
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("veriloop.models.providers."):
            pytest.skip(f"{exc.name} is not in this checkout yet")
        raise


def quoted(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_one_row_per_built_in_provider_in_the_registrys_order():
    assert list(table_rows()) == built_in()


@pytest.mark.parametrize("prefix", built_in())
def test_the_row_says_what_the_provider_says(prefix: str) -> None:
    provider = loaded(prefix)
    cells = dict(zip(COLUMNS, table_rows()[prefix], strict=True))
    assert cells["what it reaches"].startswith(provider.title), cells["what it reaches"]
    # The base URL: the default in backticks (none: said in words), then the provider's variables.
    urls = [word for word in quoted(cells["base URL"]) if "://" in word]
    assert urls == ([provider.default_base_url] if provider.default_base_url else []), cells["base URL"]
    variables = [word for word in quoted(cells["base URL"]) if re.fullmatch(r"[A-Z][A-Z0-9_]+", word)]
    assert variables == list(provider.base_url_variables), cells["base URL"]
    keys = [word for word in quoted(cells["key variable"]) if re.fullmatch(r"[A-Z][A-Z0-9_]+", word)]
    assert keys == list(provider.key_variables), cells["key variable"]
    assert provider.key_variables or cells["key variable"] == "none"
    for flag in FLAGS:
        said = cells[flag].split()[0]
        assert said == ("yes" if getattr(provider.supports, flag) else "no"), (flag, cells[flag])
    if provider.supports.n and provider.max_n != Provider.max_n:  # a ceiling of its own is said
        assert f"at most {provider.max_n}" in cells["n"], cells["n"]

