"""The tests' own layout (issue 26): tests are laid out like the package, and no test
module imports another.

- A test file lives in the folder of the package it tests (tests/domains/planning/ for
  src/veriloop/domains/planning/), in tests/e2e/ when it runs the whole system, in
  tests/docs/ when it tests the documentation (the README, docs/, the site and the
  docstrings it is generated from), or in tests/ itself when it tests a top-level module
  (test_api.py for veriloop/api.py).
- What tests share lives in plain helper modules in tests/ (on pytest's `pythonpath`), in
  the helper folders HELPER_FOLDERS (namespace packages: tests/standins/, one stand-in
  server per provider) and in conftest.py files; a test module never imports a test
  module or a conftest.
- Test file names are unique across folders and no folder has an __init__.py: pytest's
  default (prepend) import mode imports each test file by its base name.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from helpers import ROOT

TESTS = ROOT / "tests"
PACKAGE = ROOT / "src" / "veriloop"
OUTSIDE_THE_PACKAGE = {"e2e", "docs"}  # the whole system; the documentation
# Tests of the tests themselves, or of the package as a whole (its import layers, its
# version and deprecations): no module of the package to sit beside.
ABOUT_THE_TESTS = {"test_layout.py", "test_layers.py", "test_suite_environment.py", "test_versioning.py",
                   "test_standins.py"}
# Helper folders: what tests share that is too big for one module (one stand-in server per
# provider's wire format), imported as a namespace package (no __init__.py).
HELPER_FOLDERS = {"standins"}


def python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "data" not in p.relative_to(TESTS).parts)


def all_test_files() -> list[Path]:
    return [p for p in python_files() if p.name.startswith("test_")]


def imported_names(path: Path) -> set[str]:
    """The top-level name of every module `path` imports, at any depth of its code."""
    names: set[str] = set()
    # Imports are statements, and a statement's ancestors are statements, handlers or match
    # cases: the walk skips the expressions, most of a tree.
    queue = [ast.parse(path.read_text(), str(path))]
    while queue:
        node = queue.pop()
        queue.extend(child for child in ast.iter_child_nodes(node)
                     if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)))
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_no_test_module_imports_a_test_module_or_a_conftest():
    offending = {
        str(path.relative_to(TESTS)): sorted(name for name in imported_names(path)
                                             if name.startswith("test_") or name == "conftest")
        for path in python_files()
    }
    assert {path: names for path, names in offending.items() if names} == {}


def test_every_test_file_sits_beside_what_it_tests():
    misplaced = []
    for path in all_test_files():
        folder = path.parent.relative_to(TESTS)
        if folder == Path("."):
            module = path.name.removeprefix("test_")
            placed = path.name in ABOUT_THE_TESTS or (PACKAGE / module).is_file()
        else:
            placed = str(folder) in OUTSIDE_THE_PACKAGE or (PACKAGE / folder / "__init__.py").is_file()
        if not placed:
            misplaced.append(str(path.relative_to(TESTS)))
    assert misplaced == []


def test_helpers_live_in_tests_and_folders_hold_only_tests_and_conftests():
    stray = [str(p.relative_to(TESTS)) for p in python_files()
             if p.parent != TESTS and not p.name.startswith("test_") and p.name != "conftest.py"
             and p.relative_to(TESTS).parts[0] not in HELPER_FOLDERS]
    helpers_with_tests = [str(p.relative_to(TESTS)) for p in all_test_files()
                          if p.relative_to(TESTS).parts[0] in HELPER_FOLDERS]
    assert stray == []
    assert helpers_with_tests == []


def test_test_file_names_are_unique_and_no_folder_is_a_package():
    twice = [name for name, count in Counter(p.name for p in all_test_files()).items() if count > 1]
    assert twice == []
    assert [str(p.relative_to(TESTS)) for p in TESTS.rglob("__init__.py")] == []
