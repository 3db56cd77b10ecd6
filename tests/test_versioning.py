"""A project others can depend on (issue 38, item 5): one version, stated once and matched
by the changelog's newest section; a name of the public API that is renamed or removed
keeps working for one release with a DeprecationWarning naming what replaces it; so does a
module path the reorganisation of issue 40 moved (importing one warns once, naming the new
path, and gives the new module's own objects)."""

from __future__ import annotations

import importlib
import re
import sys
import tomllib
import warnings

import pytest
from helpers import ROOT

import veriloop


def test_the_version_is_stated_once_and_the_changelog_opens_with_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "veriloop.__version__"}
    sections = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), flags=re.M)
    assert sections[0] == veriloop.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", veriloop.__version__)


def test_a_deprecated_name_works_for_one_release_and_says_what_replaces_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(veriloop._DEPRECATED, "run_correction", ("api", "correct", "veriloop.correct"))
    with pytest.warns(DeprecationWarning) as caught:
        old = veriloop.run_correction  # type: ignore[attr-defined]
    assert old is veriloop.correct
    assert [str(w.message) for w in caught] == [
        "veriloop.run_correction is deprecated and goes in the next release; use veriloop.correct"]
    assert caught[0].filename == __file__  # the warning points at the user's line, not at veriloop's
    assert "run_correction" not in veriloop.__all__ and "run_correction" not in dir(veriloop)


def test_names_of_the_public_api_load_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in veriloop.__all__:
            getattr(veriloop, name)


def test_the_package_says_it_is_typed() -> None:
    assert (ROOT / "src" / "veriloop" / "py.typed").is_file()
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["veriloop"]


def test_the_package_declares_bounds_and_constraints_pin_every_dependency() -> None:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [Requirement(r) for r in project["dependencies"]]
    declared += [Requirement(r) for extra in project["optional-dependencies"].values() for r in extra]
    own = [r for r in declared if r.name == "veriloop"]
    assert {extra for r in own for extra in r.extras} == {"local", "planning", "critic", "plots", "ray", "inspect",
                                                           "all", "docs"}
    others = [r for r in declared if r.name != "veriloop"]
    assert [str(r) for r in others if any(s.operator == "==" for s in r.specifier)] == []  # bounds, never pins
    pinned = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines()
                  if line and not line.startswith("#"))
    pinned = {canonicalize_name(name): version for name, version in pinned.items()}
    # ./run.sh, ./test.sh and CI install exactly these: every dependency has its pin, inside its bounds.
    assert [r.name for r in others if canonicalize_name(r.name) not in pinned] == []
    assert [str(r) for r in others
            if not r.specifier.contains(pinned[canonicalize_name(r.name)], prereleases=True)] == []


MOVED = {
    "veriloop.experiment.dirlock": "veriloop.runs.dirlock",
    "veriloop.experiment.frontier": "veriloop.stats.frontier",
    "veriloop.experiment.identity": "veriloop.runs.identity",
    "veriloop.experiment.jsonl": "veriloop.runs.jsonl",
    "veriloop.experiment.metrics": "veriloop.stats.metrics",
    "veriloop.experiment.paired": "veriloop.stats.paired",
    "veriloop.experiment.pools": "veriloop.stats.pools",
    "veriloop.experiment.runner": "veriloop.runs.runner",
    "veriloop.report": "veriloop.tables",
}
SPLIT = "veriloop.experiment.spec"
SPLIT_INTO = ('veriloop.experiment.schema', 'veriloop.experiment.matrix', 'veriloop.experiment.overrides')


def fresh_import(name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[object, list[str]]:
    """Import `name` as a first import would (twice), and the deprecation messages it gave."""
    parent, _, leaf = name.rpartition(".")
    monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.delattr(importlib.import_module(parent), leaf, raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(name)
        assert importlib.import_module(name) is module
    return module, [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_warns_once_and_is_the_new_module(old: str, monkeypatch: pytest.MonkeyPatch) -> None:
    new = importlib.import_module(MOVED[old])
    module, messages = fresh_import(old, monkeypatch)
    assert module is new
    assert messages == [f"{old} is deprecated: it moved to {MOVED[old]}; import {MOVED[old]} (the old path "
                        "goes in the next release)"]


def test_the_split_spec_warns_once_and_gives_the_new_modules_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    module, messages = fresh_import(SPLIT, monkeypatch)
    assert messages == [f"{SPLIT} is deprecated: it is split into {', '.join(SPLIT_INTO)}; import a name from "
                        "the module that defines it (the old path goes in the next release)"]
    checked = 0
    for name in SPLIT_INTO:
        new = importlib.import_module(name)
        for attribute, value in vars(new).items():
            if getattr(value, "__module__", None) == name:
                assert getattr(module, attribute) is value, (name, attribute)
                checked += 1
    assert checked > 20
