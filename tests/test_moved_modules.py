"""The old module paths of the reorganisation (issue 40, item 4) keep working for one
release: importing one warns once, with a DeprecationWarning naming the new path, and gives
the new module's own objects. Written by notes/reorg/reorg.py; rerunning it rewrites this."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

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
