"""How a run's slots take turns (issue 30, item 4): the first requests go out as their
slots start, a slot with others beside it starts its next trajectory while its record goes
to disk (one slot alone waits for it), a record that cannot be written or a cancellation
still stops the run at once with every finished trajectory on disk, and the objects alive
before a run are left out of the garbage collector's passes while it runs."""

from __future__ import annotations

import asyncio
import gc
import os
import threading
from pathlib import Path

import pytest

import veriloop
from veriloop.domains import get_domain
from veriloop.errors import VeriloopError
from veriloop.runs.runner import TRAJECTORIES, load_trajectories, run_experiment
from veriloop.strategies import parse_strategy

STANDARD = [parse_strategy("standard")]


def on_disk(out: Path) -> list[str]:
    path = out / TRAJECTORIES
    return [t.instance_id for t in load_trajectories(path)] if path.exists() else []


def run(model, out: Path, n: int, concurrency: int):
    domain = get_domain("game24")
    return run_experiment(model, domain, STANDARD, domain.load_instances(None, n=n), out, concurrency=concurrency)


def test_the_first_requests_go_out_as_their_slots_start_not_once_every_slot_has_started(tmp_path: Path) -> None:
    events: list[str] = []
    sent = 0
    everyone_sent = asyncio.Event()

    async def answer(messages):
        nonlocal sent
        i = len([e for e in events if e.startswith("start")])
        events.append(f"start {i}")
        await asyncio.sleep(0)  # a turn of the loop, as setting up a connection takes
        events.append(f"sent {i}")
        sent += 1
        if sent == 4:
            everyone_sent.set()
        await everyone_sent.wait()
        return "Answer: 24"

    model = veriloop.model(answer, name="m", identity="m", cache=False, concurrency=4)
    result = asyncio.run(run(model, tmp_path / "run", n=4, concurrency=4))
    assert result.new_trajectories == 4
    # Each slot's request is out before the slot after next has even started (all four
    # starts first, then all four requests, was the first wave sent in one burst).
    for k in (0, 1):
        assert events.index(f"sent {k}") < events.index(f"start {k + 2}"), events


def test_with_one_slot_each_record_is_on_disk_before_the_next_trajectory_starts(tmp_path: Path) -> None:
    out = tmp_path / "run"
    seen: list[int] = []

    async def answer(messages):
        seen.append(len(on_disk(out)))
        return "Answer: 24"

    model = veriloop.model(answer, name="m", identity="m", cache=False)
    asyncio.run(run(model, out, n=5, concurrency=1))
    assert seen == [0, 1, 2, 3, 4]


def test_with_more_slots_a_slot_starts_its_next_trajectory_while_its_record_goes_to_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    real_fsync = os.fsync
    disk = threading.Event()  # the disk answers once the fourth call has been made
    synced = 0  # fsyncs the disk has answered
    seen: list[int] = []
    progress: list[int] = []

    def fsync(fd: int) -> None:
        nonlocal synced
        disk.wait(30)  # only a wrong scheduler waits this long: it held the slots until the disk answered
        real_fsync(fd)
        synced += 1

    async def answer(messages):
        # Counted by fsyncs answered, not lines in the file: the writer's thread may have
        # written a record's bytes (not yet fsynced, so not yet on disk) by the fourth call.
        seen.append(synced)
        if len(seen) == 4:
            disk.set()
        return "Answer: 24"

    monkeypatch.setattr(os, "fsync", fsync)
    model = veriloop.model(answer, name="m", identity="m", cache=False, concurrency=2)
    domain = get_domain("game24")
    result = asyncio.run(run_experiment(model, domain, STANDARD, domain.load_instances(None, n=4), out, concurrency=2,
                                        on_progress=lambda done, total: progress.append(done)))
    assert seen == [0, 0, 0, 0]  # the third and fourth began before any record was on disk
    assert result.new_trajectories == 4 and len(on_disk(out)) == 4
    assert progress == [0, 1, 2, 3, 4]  # a trajectory counts once its record is on disk


def test_a_record_that_cannot_be_written_stops_a_slot_waiting_on_the_model(tmp_path: Path, monkeypatch) -> None:
    import errno

    calls = 0

    def fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    async def answer(messages):
        nonlocal calls
        calls += 1
        if calls > 2:
            await asyncio.Event().wait()  # a model that never answers: only the failed write can end the run
        return "Answer: 24"

    monkeypatch.setattr(os, "fsync", fsync)
    model = veriloop.model(answer, name="m", identity="m", cache=False, concurrency=2)
    with pytest.raises(VeriloopError, match=rf"^cannot write {tmp_path / 'run' / TRAJECTORIES}: Input/output error;"):
        asyncio.run(asyncio.wait_for(run(model, tmp_path / "run", n=6, concurrency=2), 30))


def test_a_cancelled_run_still_writes_every_trajectory_finished_before(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "run"
    real_fsync = os.fsync
    disk = threading.Event()  # the disk answers once the run has been cancelled

    def fsync(fd: int) -> None:
        disk.wait(30)
        real_fsync(fd)

    async def go() -> None:
        calls = 0
        both_asked, both_waiting = asyncio.Event(), asyncio.Event()

        async def answer(messages):
            nonlocal calls
            calls += 1
            if calls <= 2:  # the first two answer together (one to each slot), the next two never
                if calls == 2:
                    both_asked.set()
                await both_asked.wait()
                return "Answer: 24"
            if calls == 4:
                both_waiting.set()
            await asyncio.Event().wait()

        model = veriloop.model(answer, name="m", identity="m", cache=False, concurrency=2)
        running = asyncio.create_task(run(model, out, n=6, concurrency=2))
        await asyncio.wait_for(both_waiting.wait(), 30)  # two finished, their records not on disk yet
        running.cancel()
        disk.set()
        with pytest.raises(asyncio.CancelledError):
            await running

    monkeypatch.setattr(os, "fsync", fsync)
    asyncio.run(go())
    assert len(on_disk(out)) == 2


def test_objects_alive_before_a_run_are_left_out_of_collections_while_it_runs(tmp_path: Path) -> None:
    if gc.get_freeze_count():
        pytest.skip("something in this process froze objects before the test")
    during: list[int] = []

    async def answer(messages):
        during.append(gc.get_freeze_count())
        return "Answer: 24"

    model = veriloop.model(answer, name="m", identity="m", cache=False, concurrency=2)
    asyncio.run(run(model, tmp_path / "run", n=3, concurrency=2))
    assert len(during) == 3 and all(count > 0 for count in during)
    assert gc.get_freeze_count() == 0  # handed back


def test_a_freeze_of_the_callers_own_is_left_as_it_is(tmp_path: Path) -> None:
    if gc.get_freeze_count():
        pytest.skip("something in this process froze objects before the test")
    during: list[int] = []

    async def answer(messages):
        during.append(gc.get_freeze_count())
        return "Answer: 24"

    model = veriloop.model(answer, name="m", identity="m", cache=False, concurrency=2)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        asyncio.run(run(model, tmp_path / "run", n=2, concurrency=2))
        # A frozen object that dies leaves the permanent generation (the count went down by
        # 2 in one clean-clone run); an unfreeze would have emptied it.
        assert gc.get_freeze_count() > frozen // 2  # not unfrozen by the run
    finally:
        gc.unfreeze()
    assert during and all(count > frozen // 2 for count in during)
