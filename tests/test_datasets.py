"""Data sets that travel (issue 38): installed into the veriloop home from a folder or the
package index, each file checked against datasets.json; looked up as installed, else
../shared/data beside a checkout, else one line naming the install command."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from helpers import the_error, veriloop

from veriloop import datasets
from veriloop.datasets import SETS, DataSetMissing, locate, lookup, pinned
from veriloop.experiment.overrides import find_experiment, load_experiment

MISSING_COLORING = ("error: the data set 'graph-coloring' is not installed: "
                    "veriloop data install graph-coloring --from FOLDER")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VERILOOP_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def source(tmp_path: Path, shared_data: Path) -> Path:
    """A data root holding copies of graph_coloring/ and game24/ (and nothing else)."""
    root = tmp_path / "source"
    for folder in ("graph_coloring", "game24"):
        shutil.copytree(shared_data / folder, root / folder)
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working directory with no ../shared/data beside it."""
    cwd = tmp_path / "elsewhere" / "cwd"
    cwd.mkdir(parents=True)
    assert not (cwd / datasets.SHARED).exists()
    return cwd


def installed_files(home: Path) -> list[str]:
    """The files of the installed sets (the stamps and lock beside them left out)."""
    data = home / "data"
    found = [p.relative_to(data) for p in data.rglob("*") if p.is_file()] if data.is_dir() else []
    return sorted(str(p) for p in found if len(p.parts) > 1)


def test_the_manifest_pins_the_shared_data_exactly(shared_data):
    # Every folder of ../shared/data is a set of the catalogue, and every file in it is
    # pinned with its size and sha256 (README.md is the data root's own description).
    assert sorted(p.name for p in shared_data.iterdir() if p.is_dir()) == sorted(s.folder for s in SETS.values())
    for data_set in SETS.values():
        folder = shared_data / data_set.folder
        found = sorted(
            (p.relative_to(folder).as_posix(), p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in folder.rglob("*") if p.is_file()
        )
        assert [(f.path, f.size, f.sha256) for f in pinned(data_set)] == found, data_set.name
    assert sum(len(pinned(s)) for s in SETS.values()) == 1380
    game24 = pinned(lookup("game24"))
    assert [(f.path, f.sha256) for f in game24] == [
        ("24.csv", "b9f12b3e36d987a3c714c4cef17d89a137d7c59da26532fcfb93b4821d8111b5")]


def test_install_from_a_folder_copies_the_pinned_files_and_again_is_a_no_op(home, source, shared_data):
    proc = veriloop("data", "install", "graph-coloring", "--from", str(source), home=home)
    assert proc.returncode == 0, proc.stderr
    target = home / "data" / "graph_coloring"
    assert proc.stdout == f"graph-coloring installed and verified: {target}\n"
    assert f"installing graph-coloring from {source / 'graph_coloring'} (320 files, 47 kB)" in proc.stderr
    assert installed_files(home) == sorted(f"graph_coloring/{f.path}" for f in pinned(lookup("graph-coloring")))
    for f in pinned(lookup("graph-coloring")):
        assert (target / f.path).read_bytes() == (shared_data / "graph_coloring" / f.path).read_bytes()
    # Nothing is read again: the source may be gone.
    shutil.rmtree(source)
    again = veriloop("data", "install", "graph-coloring", "--from", str(source), home=home)
    assert (again.returncode, again.stdout, again.stderr) == (0, f"graph-coloring is installed: {target}\n", "")
    assert veriloop("data", "path", "graph-coloring", home=home).stdout == f"{target}\n"
    # The stamp sits beside the set, not in it: a folder's contents are part of a run's identity.
    assert sorted(p.name for p in (home / "data").iterdir()) == [".graph_coloring.verified.json", ".lock",
                                                                 "graph_coloring"]


def test_a_corrupted_file_is_refused_in_one_line_and_nothing_is_installed(home, source):
    bad = source / "graph_coloring" / "instance-7.col"
    text = bad.read_bytes()
    bad.write_bytes(text[:-1] + bytes([text[-1] ^ 1]))  # same size, one bit
    proc = veriloop("data", "install", "graph-coloring", "--from", str(source), home=home)
    assert the_error(proc) == (f"error: {bad}: its sha256 differs from the pinned one; it is not the released file, "
                               "so nothing was installed")
    assert installed_files(home) == []
    assert [p.name for p in (home / "data").iterdir()] == [".lock"]  # no staging folder left
    bad.write_bytes(text + b"\n")  # one byte longer: refused by its size, reading at most one byte past it
    proc = veriloop("data", "install", "graph-coloring", "--from", str(source), home=home)
    assert the_error(proc) == (f"error: {bad}: more than bytes where {len(text)} are pinned; it is not the released "
                               "file, so nothing was installed")
    assert installed_files(home) == []


def test_a_symbolic_link_in_the_source_is_refused_and_nothing_is_installed(home, source, tmp_path):
    # The link points at the right bytes: a link is refused for what it is, never followed.
    link = source / "graph_coloring" / "instance-3.col"
    kept = tmp_path / "instance-3.col"
    shutil.move(link, kept)
    link.symlink_to(kept)
    proc = veriloop("data", "install", "graph-coloring", "--from", str(source), home=home)
    assert the_error(proc) == (f"error: {link}: a symbolic link or not a plain file in the source folder; give a "
                               "folder holding the files themselves")
    assert installed_files(home) == []
    # A linked folder below the source is refused the same way.
    (source / "planbench").mkdir()
    (source / "planbench" / "blocksworld").symlink_to(tmp_path)
    proc = veriloop("data", "install", "planbench", "--from", str(source), home=home)
    assert the_error(proc).startswith(f"error: {source / 'planbench' / 'blocksworld' / 'domain.pddl'}: a symbolic link")
    assert installed_files(home) == []


def test_an_install_cut_short_leaves_no_part_of_the_set_and_the_next_one_clears_its_leftovers(
        home, source, monkeypatch):
    calls = []
    copy = datasets._copy_verified

    def dies_on_the_tenth(*args, **kwargs):
        calls.append(1)
        if len(calls) == 10:
            raise KeyboardInterrupt
        return copy(*args, **kwargs)

    monkeypatch.setattr(datasets, "_copy_verified", dies_on_the_tenth)
    with pytest.raises(KeyboardInterrupt):
        datasets.install("graph-coloring", source)
    assert installed_files(home) == []
    # A killed process leaves its staging folder; it never has the set's name, and goes next time.
    (home / "data" / ".graph_coloring.staging-x1").mkdir()
    (home / "data" / ".graph_coloring.staging-x1" / "instance-1.col").write_text("half")
    monkeypatch.setattr(datasets, "_copy_verified", copy)
    datasets.install("graph-coloring", source)
    assert sorted(p.name for p in (home / "data").iterdir()) == [".graph_coloring.verified.json", ".lock",
                                                                 "graph_coloring"]


def test_an_installed_set_changed_since_is_an_error_naming_force_and_force_repairs_it(home, source, outside):
    datasets.install("graph-coloring", source)
    target = home / "data" / "graph_coloring" / "instance-2.col"
    target.write_text(target.read_text().replace("e ", "e  ", 1))
    proc = veriloop("data", "path", "graph-coloring", home=home, cwd=outside)
    assert the_error(proc) == (f"error: the data set 'graph-coloring' in {home / 'data' / 'graph_coloring'} differs "
                               "from its pinned files: veriloop data install graph-coloring --from FOLDER --force")
    proc = veriloop("data", "install", "graph-coloring", "--from", str(source), "--force", home=home)
    assert proc.returncode == 0, proc.stderr
    assert veriloop("data", "path", "graph-coloring", home=home, cwd=outside).stdout == (
        f"{home / 'data' / 'graph_coloring'}\n")


def test_lookup_is_installed_then_beside_a_checkout_then_one_line(home, source, tmp_path, outside, monkeypatch):
    # Nowhere: one line naming the command.
    assert the_error(veriloop("data", "path", "graph-coloring", home=home, cwd=outside)) == MISSING_COLORING
    with monkeypatch.context() as patch, pytest.raises(DataSetMissing):
        patch.chdir(outside)
        locate("graph_coloring")  # the folder's name finds the set too
    # Beside a checkout: ../shared/data/FOLDER, as a relative path (the one runs recorded before).
    checkout = tmp_path / "project" / "checkout"
    checkout.mkdir(parents=True)
    shutil.copytree(source / "graph_coloring", tmp_path / "project" / "shared" / "data" / "graph_coloring")
    assert veriloop("data", "path", "graph-coloring", home=home, cwd=checkout).stdout == (
        "../shared/data/graph_coloring\n")
    # Installed: the data home wins over ../shared/data.
    datasets.install("graph-coloring", source)
    installed = home / "data" / "graph_coloring"
    assert veriloop("data", "path", "graph-coloring", home=home, cwd=checkout).stdout == f"{installed}\n"
    assert veriloop("data", "path", "graph-coloring", home=home, cwd=outside).stdout == f"{installed}\n"


def test_the_shipped_files_read_each_set_where_it_is_found_and_an_explicit_root_wins(home, source, outside,
                                                                                     monkeypatch, shared_data):
    spec = load_experiment(find_experiment("self-verification"))
    assert spec.data_root == "@datasets"
    # In the checkout: the same paths as before data sets were installable, so runs resume.
    assert spec.resolve("graph_coloring") == "../shared/data/graph_coloring"
    assert spec.resolve("game24/24.csv") == "../shared/data/game24/24.csv"
    monkeypatch.chdir(outside)
    with pytest.raises(DataSetMissing, match="^" + MISSING_COLORING.removeprefix("error: ") + "$"):
        spec.resolve("graph_coloring")
    # A domain that generates its instances when its data is missing still does.
    assert spec.resolve("graph_coloring", missing_ok=True) == "../shared/data/graph_coloring"
    datasets.install("game24", source)
    assert spec.resolve("game24/24.csv") == str(home / "data" / "game24" / "24.csv")
    explicit = load_experiment(find_experiment("self-verification"), [f"data_root={json.dumps(str(shared_data))}"])
    assert explicit.resolve("game24/24.csv") == str(shared_data / "game24" / "24.csv")
    assert spec.resolve(str(shared_data / "gsm8k")) == str(shared_data / "gsm8k")  # an absolute path stays


def test_the_recorded_reproduction_runs_outside_a_checkout_from_the_data_home(home, shared_data, outside, tmp_path):
    before = veriloop("reproduce", "self-verification", "--recorded", "recorded", "--out", "out",
                      home=home, cwd=outside)
    assert the_error(before) == MISSING_COLORING
    for name in ("graph-coloring", "self-verification-outputs"):
        proc = veriloop("data", "install", name, "--from", str(shared_data), home=home)
        assert proc.returncode == 0, proc.stderr
    recorded = veriloop("data", "path", "self-verification-outputs", home=home, cwd=outside).stdout.strip()
    assert recorded == str(home / "data" / "self_verification_outputs")
    proc = veriloop("reproduce", "self-verification", "--recorded", recorded, "--out", "out", home=home, cwd=outside)
    assert proc.returncode == 0, proc.stderr
    # The same tables as from the checkout's copy: the same files are read.
    checkout = veriloop("reproduce", "self-verification", "--recorded", str(shared_data / "self_verification_outputs"),
                        "--data-root", str(shared_data), "--out", str(tmp_path / "checkout"))
    assert checkout.returncode == 0, checkout.stderr
    for table in ("table1.md", "table2.md", "critique.md"):
        assert (outside / "out" / table).read_text() == (tmp_path / "checkout" / table).read_text(), table


def test_a_set_off_the_index_needs_a_folder_and_an_unknown_set_is_named(home, outside):
    proc = veriloop("data", "install", "hotpotqa", home=home, cwd=outside)
    assert the_error(proc) == ("error: hotpotqa is not on the package index: veriloop data install hotpotqa --from "
                               "FOLDER (a folder holding a copy of it)")
    proc = veriloop("data", "install", "squad", home=home, cwd=outside)
    assert the_error(proc) == ("error: unknown data set 'squad'; choose from: game24, graph-coloring, planbench, "
                               "gsm8k, math500, hotpotqa, toxicity, self-verification-outputs")
    assert installed_files(home) == []


def test_without_from_a_set_is_read_from_the_checkouts_shared_data_and_the_folder_is_named(home, source, tmp_path):
    checkout = tmp_path / "project" / "checkout"
    checkout.mkdir(parents=True)
    (tmp_path / "project" / "shared").mkdir()
    (tmp_path / "project" / "shared" / "data").symlink_to(source)  # the data root itself may be a link
    proc = veriloop("data", "install", "graph-coloring", home=home, cwd=checkout)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "graph-coloring: reading ../shared/data (no --from given)"
    assert len(installed_files(home)) == 320


def test_list_shows_each_set_installed_or_not_with_size_licence_and_source(home, source, outside):
    datasets.install("graph-coloring", source)
    proc = veriloop("data", "list", home=home, cwd=outside)
    assert proc.returncode == 0, proc.stderr
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
            for line in proc.stdout.splitlines() if line.startswith("│")}
    assert rows["graph-coloring"] == ["yes", "47 kB", "MIT", "self-verification authors' repository", "--from FOLDER"]
    assert rows["hotpotqa"] == ["no", "725 kB", "CC BY-SA 4.0", "HotpotQA", "--from FOLDER"]
    assert rows["game24"] == ["no", "48 kB", "MIT", "Tree of Thoughts repository", "package index"]
    assert list(rows) == list(SETS)


def test_game24_installs_from_the_package_index(home, outside):
    # Needs the package index (PyPI), as the model packs' install test does.
    proc = veriloop("data", "install", "game24", home=home, cwd=outside)
    assert proc.returncode == 0, proc.stderr
    path = home / "data" / "game24" / "24.csv"
    assert proc.stdout == f"game24 installed and verified: {path.parent}\n"
    assert "downloading tree-of-thoughts-llm==0.1.0 for game24 from the package index" in proc.stderr
    assert hashlib.sha256(path.read_bytes()).hexdigest() == pinned(lookup("game24"))[0].sha256
    assert installed_files(home) == ["game24/24.csv"]  # the wheel is not kept
