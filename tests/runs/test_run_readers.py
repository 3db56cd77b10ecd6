"""What a run directory holds for its readers, and how they read it: a run records its
instances (with their references) when it starts, so no reader rebuilds its domain; a
reader's loader never writes (a torn last line is left as it is, unread); and a run's
file that is a symbolic link or resolves outside the directory is refused."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

import veriloop
from veriloop.domains import get_domain
from veriloop.errors import VeriloopError
from veriloop.records import Instance, Trajectory
from veriloop.runs.jsonl import read_records, run_file
from veriloop.runs.runner import INSTANCES, TRAJECTORIES, run_experiment
from veriloop.strategies import parse_strategy


def traj(instance_id: str) -> Trajectory:
    return Trajectory(strategy="standard", domain="game24", model="m", instance_id=instance_id, seed=0)


def test_a_run_records_its_instances_and_their_references_when_it_starts(tmp_path: Path) -> None:
    domain = get_domain("game24")
    instances = domain.load_instances(None, n=2)
    model = veriloop.model(lambda messages: "Answer: 24", name="m", identity="m", cache=False)
    asyncio.run(run_experiment(model, domain, [parse_strategy("standard")], instances, tmp_path / "run"))
    recorded = read_records(tmp_path / "run" / INSTANCES, Instance)
    assert recorded == instances
    assert [i.reference for i in recorded] == [i.reference for i in instances] and recorded[0].reference is not None


def test_reading_records_leaves_a_torn_last_line_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / TRAJECTORIES
    whole = traj("a").model_dump_json().encode() + b"\n"
    torn = traj("b").model_dump_json().encode()[:30]
    path.write_bytes(whole + torn)
    assert [t.instance_id for t in read_records(path, Trajectory)] == ["a"]
    assert path.read_bytes() == whole + torn


def test_reading_a_missing_file_finds_no_record_and_creates_nothing(tmp_path: Path) -> None:
    assert read_records(tmp_path / TRAJECTORIES, Trajectory) == []
    assert list(tmp_path.iterdir()) == []


def test_a_run_file_that_is_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("x" * 30)
    os.symlink(outside, run / TRAJECTORIES)
    with pytest.raises(VeriloopError) as error:
        run_file(run, TRAJECTORIES)
    assert str(error.value) == (f"{run / TRAJECTORIES} is a symbolic link; a run directory's {TRAJECTORIES} must be "
                                "a file in it (copy the file in, or name the directory it points into)")
    # A link to a file inside the run too: following it is what a link is for, and refused all the same.
    os.symlink(run / TRAJECTORIES, run / INSTANCES)
    with pytest.raises(VeriloopError, match="is a symbolic link"):
        run_file(run, INSTANCES)
    assert outside.read_text() == "x" * 30


def test_a_run_file_reached_through_a_linked_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / TRAJECTORIES).write_text("")
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(outside, run / "cell")
    with pytest.raises(VeriloopError) as error:
        run_file(run, f"cell/{TRAJECTORIES}")
    assert str(error.value) == (f"{run / 'cell' / TRAJECTORIES} resolves outside {run}; a run directory's "
                                f"cell/{TRAJECTORIES} must be a file in it")


def test_a_plain_run_file_is_named_whether_or_not_it_exists(tmp_path: Path) -> None:
    assert run_file(tmp_path, TRAJECTORIES) == tmp_path / TRAJECTORIES
    (tmp_path / TRAJECTORIES).write_text("")
    assert run_file(tmp_path, TRAJECTORIES) == tmp_path / TRAJECTORIES


def test_planning_an_experiment_leaves_a_cells_torn_last_line_as_it_is(tmp_path: Path) -> None:
    from veriloop.experiment.executor import recorded_in

    standard = parse_strategy("standard")
    cell = tmp_path / "cell"
    cell.mkdir()
    whole = traj("a").model_copy(update={"strategy": standard.canonical}).model_dump_json().encode() + b"\n"
    torn = traj("b").model_dump_json().encode()[:30]
    (cell / TRAJECTORIES).write_bytes(whole + torn)
    assert [t.instance_id for t in recorded_in(cell, standard, 0)] == ["a"]
    assert (cell / TRAJECTORIES).read_bytes() == whole + torn


@pytest.mark.parametrize("kind", ["dev-zero", "dangling-link", "deep-nesting", "too-large"])
def test_a_hostile_config_in_the_run_directory_is_one_line_before_anything_is_read(tmp_path: Path, kind: str) -> None:
    from veriloop.runs.runner import check_run_dir

    out = tmp_path / "out"
    out.mkdir()
    config = out / "config.json"
    if kind == "dev-zero":
        config.symlink_to("/dev/zero")
    elif kind == "dangling-link":
        config.symlink_to(tmp_path / "gone.json")
    elif kind == "deep-nesting":
        config.write_text("[" * 100_000 + "]" * 100_000)
    else:
        config.write_text('{"pad": "' + "x" * (1 << 20) + '"}')
    expected = {
        "dev-zero": f"{config}: a device, pipe or socket, not a file; it is not a run's config: choose another --out",
        "dangling-link": f"{config} is a link to nothing; it is not a run's config: choose another --out",
        "deep-nesting": f"{config} is not valid JSON; restore it or choose another --out",
        "too-large": f"{config}: more than 1 MiB; it is not a run's config: choose another --out",
    }[kind]
    with pytest.raises(VeriloopError) as caught:
        check_run_dir(out, {"model": "m"})
    assert str(caught.value) == expected
