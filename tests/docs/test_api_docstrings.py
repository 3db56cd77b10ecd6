"""Every name `veriloop` exports documents itself in Google style, the form IDEs and the
generated API reference (mkdocstrings) read, and its example runs.

What each kind of name must have:
- a function: `Args:` (and `Keyword Args:` for keyword-only ones) naming every parameter of
  its signature and nothing else,
  `Returns:` unless it returns None, `Raises:`, and `Examples:`;
- a class: every constructor parameter under `Args:` or `Attributes:` (a pydantic model's
  fields, a dataclass's fields), and `Examples:`;
- a registry or other value: `Examples:`.

Each example is a fenced Python block that runs as written in a fresh namespace, in a
temporary working directory with a fresh `VERILOOP_HOME`; it uses no model pack and no
server (a function as the model), so the whole set runs in seconds.
"""

from __future__ import annotations

import functools
import inspect
import re
import runpy
from pathlib import Path

import griffe
import pytest
from helpers import ROOT

import veriloop

NAMES = [name for name in veriloop.__all__ if name != "__version__"]
FENCED = re.compile(r"```python\n(.*?)```", re.DOTALL)


ONE_WORKER = True  # conftest.py: griffe reads the package once, not once per worker


@functools.cache
def package() -> griffe.Module:
    """The package as griffe reads it: when a test first asks, not while collecting (every
    xdist worker collects every module, and reading it took 1-3 s)."""
    return griffe.load("veriloop", search_paths=[str(ROOT / "src")], docstring_parser="google")


def documented(name: str) -> griffe.Object:
    """The griffe object behind an exported name, followed through re-exports."""
    module, attr = veriloop._RENAMED.get(name) or (veriloop._EXPORTS[name], name)
    found = package()[f"{module}.{attr}"]
    return found.final_target if found.is_alias else found


def sections(name: str) -> dict[str, list[griffe.DocstringSection]]:
    obj = documented(name)
    assert obj.docstring is not None, f"veriloop.{name} has no docstring"
    by_kind: dict[str, list[griffe.DocstringSection]] = {}
    for section in obj.docstring.parse("google", warnings=False):
        by_kind.setdefault(section.kind.value, []).append(section)
    return by_kind


def named_in(found: dict[str, list[griffe.DocstringSection]], *kinds: str) -> set[str]:
    return {item.name for kind in kinds for section in found.get(kind, []) for item in section.value}


def signature_parameters(value: object) -> set[str]:
    try:
        signature = inspect.signature(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return set()
    return {p.name for p in signature.parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in ("self", "cls")}


def examples(name: str) -> list[str]:
    blocks = []
    for section in sections(name).get("examples", []):
        text = "\n".join(part if isinstance(part, str) else "" for _, part in section.value)
        blocks += FENCED.findall(text)
    # Examples written as plain text (no fence) are not found by the regex above: read the raw docstring too.
    raw = documented(name).docstring
    return blocks or FENCED.findall(raw.value if raw else "")


def kind_of(value: object) -> str:
    if inspect.isclass(value):
        return "class"
    if inspect.isfunction(value) or inspect.ismethod(value):
        return "function"
    return "value"


@pytest.mark.parametrize("name", NAMES)
def test_a_public_name_documents_what_it_takes_gives_and_raises(name: str) -> None:
    value = getattr(veriloop, name)
    found = sections(name)
    assert found.get("text"), f"veriloop.{name}: no summary line"
    assert found.get("examples") or examples(name), f"veriloop.{name}: no Examples section"
    kind = kind_of(value)
    if kind == "function":
        params = signature_parameters(value)
        named = named_in(found, "parameters", "other_parameters")  # Args: and Keyword Args:
        assert named == params, f"veriloop.{name}: Args must name exactly {sorted(params)}"
        returns = inspect.signature(value).return_annotation
        if returns not in (None, "None"):
            assert found.get("returns"), f"veriloop.{name}: no Returns section"
        assert found.get("raises"), f"veriloop.{name}: no Raises section"
    elif kind == "class" and not issubclass(value, BaseException):
        params = signature_parameters(value)
        missing = params - named_in(found, "parameters", "attributes")
        assert not missing, f"veriloop.{name}: constructor parameters not under Args or Attributes: {sorted(missing)}"


@pytest.mark.parametrize("name", NAMES)
def test_a_public_names_example_runs(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = examples(name)
    assert blocks, f"veriloop.{name}: no fenced Python example"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VERILOOP_HOME", str(tmp_path / "home"))
    for number, block in enumerate(blocks, 1):
        script = tmp_path / f"example_{number}.py"
        script.write_text(block)
        runpy.run_path(str(script), run_name="__main__")
