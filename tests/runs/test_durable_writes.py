"""Record and cache writes go through a writer thread (group commit): acknowledged means on
disk, the event loop's thread never writes, failures reach the caller, and a run killed
mid-way loses no acknowledged trajectory and resumes without duplicating one."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import veriloop
from veriloop.domains import get_domain
from veriloop.errors import VeriloopError
from veriloop.models.base import Completion
from veriloop.models.cache import CallCache
from veriloop.records import Trajectory
from veriloop.runs.jsonl import RecordWriter, load_records
from veriloop.runs.runner import TRAJECTORIES, load_trajectories, run_experiment
from veriloop.strategies import parse_strategy


def traj(instance_id: str) -> Trajectory:
    return Trajectory(strategy="standard", domain="game24", model="m", instance_id=instance_id, seed=0)


def completion(text: str) -> Completion:
    return Completion(text=text, finish_reason="stop", prompt_tokens=3, completion_tokens=2)


# ------------------------------------------------------------------ record files


def test_an_acknowledged_record_is_read_back_by_a_fresh_reader(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    writer = RecordWriter(path)

    async def go() -> list[str]:
        seen = []
        for name in ("a", "b", "c"):
            await writer.append(traj(name))
            # A reader of its own, after each acknowledgement: the record is already in the file.
            seen.append(",".join(t.instance_id for t in load_records(path, Trajectory)))
        await writer.aclose()
        return seen

    assert asyncio.run(go()) == ["a", "a,b", "a,b,c"]


def test_records_are_written_and_fsynced_off_the_event_loop_thread(tmp_path: Path, monkeypatch) -> None:
    real_fsync = os.fsync
    fsync_threads: list[int] = []

    def fsync(fd: int) -> None:
        fsync_threads.append(threading.get_ident())
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    writer = RecordWriter(tmp_path / "records.jsonl")

    async def go() -> int:
        await asyncio.gather(*(writer.append(traj(str(i))) for i in range(20)))
        await writer.aclose()
        return threading.get_ident()

    loop_thread = asyncio.run(go())
    assert fsync_threads and loop_thread not in fsync_threads


def test_records_handed_over_during_a_sync_go_out_together_in_the_next_batch(tmp_path: Path, monkeypatch) -> None:
    """Group commit: while the first record's fsync is held, ten more are handed over;
    they are written with one write and one fsync, and none is acknowledged before its
    own fsync returned."""
    path = tmp_path / "records.jsonl"
    real_fsync = os.fsync
    release = threading.Event()
    syncs: list[int] = []  # lines in the file at each fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):  # the new file's directory entry, synced once
            real_fsync(fd)
            return
        syncs.append(path.read_bytes().count(b"\n"))
        if len(syncs) == 1:
            release.wait(timeout=30)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    writer = RecordWriter(path)

    async def go() -> list[str]:
        acknowledged: list[str] = []

        async def one(name: str) -> None:
            await writer.append(traj(name))
            acknowledged.append(name)

        first = asyncio.create_task(one("first"))
        while not syncs:  # the writer thread is inside the first fsync
            await asyncio.sleep(0.001)
        rest = [asyncio.create_task(one(str(i))) for i in range(10)]
        await asyncio.sleep(0.05)
        assert acknowledged == []  # nothing acknowledged while its fsync is held
        release.set()
        await asyncio.gather(first, *rest)
        await writer.aclose()
        return acknowledged

    assert sorted(asyncio.run(go())) == sorted(["first", *map(str, range(10))])
    assert syncs == [1, 11]
    assert [t.instance_id for t in load_records(path, Trajectory)] == ["first", *map(str, range(10))]


def test_a_failed_write_reaches_every_waiting_caller_and_stops_the_writer(tmp_path: Path) -> None:
    # /dev/full accepts the open and fails the write with ENOSPC, as a full disk does.
    writer = RecordWriter(Path("/dev/full"))

    async def go() -> list[BaseException | None]:
        first = await asyncio.gather(*(writer.append(traj(str(i))) for i in range(3)), return_exceptions=True)
        later = await asyncio.gather(writer.append(traj("later")), return_exceptions=True)
        await writer.aclose()
        return [*first, *later]

    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this platform")
    results = asyncio.run(go())
    assert [str(r) for r in results] == ["cannot write /dev/full: No space left on device; what was written before is "
                                         "kept, and running again once it can be written resumes from it"] * 4
    assert all(isinstance(r, VeriloopError) for r in results)


def test_a_write_failure_in_a_run_stops_the_run_with_that_error(tmp_path: Path, monkeypatch) -> None:
    def fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", fsync)
    model = veriloop.model(lambda messages: "Answer: 24", name="m", identity="m", cache=False)
    domain = get_domain("game24")
    with pytest.raises(VeriloopError, match=rf"^cannot write {tmp_path / 'run' / TRAJECTORIES}: Input/output error;"):
        asyncio.run(run_experiment(model, domain, [parse_strategy("standard")], domain.load_instances(None, n=4),
                                   tmp_path / "run", concurrency=2))


class FillingFile:
    """A file on a disk that fills up: after `room` bytes, a write stores what fits and
    fails with ENOSPC, as write(2) on a full disk does."""

    room = 0

    def __init__(self, file) -> None:
        self.file = file

    def __enter__(self) -> FillingFile:
        return self

    def __exit__(self, *exc) -> None:
        self.file.close()

    def write(self, data: bytes) -> int:
        fits = data[: max(FillingFile.room, 0)]
        self.file.write(fits)
        self.file.flush()
        FillingFile.room -= len(data)
        if len(fits) < len(data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return len(data)

    def __getattr__(self, name: str):
        return getattr(self.file, name)


def test_a_full_disk_stops_the_run_in_one_line_and_the_torn_record_is_cut_off_on_resume(tmp_path, monkeypatch):
    import veriloop.runs.jsonl as jsonl

    out = tmp_path / "run"
    model = veriloop.model(lambda messages: "Answer: 24", name="m", identity="m", cache=False)
    domain = get_domain("game24")
    instances = domain.load_instances(None, n=6)
    FillingFile.room = 2500  # two or three records, then half of one
    monkeypatch.setattr(jsonl, "open", lambda path, mode: FillingFile(open(path, mode)), raising=False)
    with pytest.raises(VeriloopError) as full:
        asyncio.run(run_experiment(model, domain, [parse_strategy("standard")], instances, out, concurrency=1))
    assert str(full.value) == (f"cannot write {out / TRAJECTORIES}: No space left on device; what was written before "
                               "is kept, and running again once it can be written resumes from it")
    kept = (out / TRAJECTORIES).read_bytes()
    assert kept.count(b"\n") == 2 and not kept.endswith(b"\n")  # two records (about 1150 bytes each), one torn
    monkeypatch.undo()
    result = asyncio.run(run_experiment(model, domain, [parse_strategy("standard")], instances, out, concurrency=1))
    assert (result.reused_trajectories, result.new_trajectories) == (2, 4)
    assert sorted(t.instance_id for t in load_trajectories(out / TRAJECTORIES)) == sorted(i.id for i in instances)


def test_a_small_file_that_cannot_be_written_is_one_line_and_the_old_one_stays(tmp_path, monkeypatch) -> None:
    from veriloop.runs.jsonl import write_file

    path = tmp_path / "summary.json"
    write_file(path, "old\n")

    def full(self: Path, *args, **kwargs) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(VeriloopError) as failed:
        write_file(path, "new\n")
    assert str(failed.value) == (f"cannot write {path}: No space left on device; what was written before is kept, and "
                                 "running again once it can be written resumes from it")
    monkeypatch.undo()
    assert path.read_text() == "old\n"


def test_a_study_or_reproduction_table_on_a_full_disk_is_one_line(tmp_path, monkeypatch) -> None:
    from veriloop.studies.verification import write_json

    def full(self: Path, *args, **kwargs) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_text", full)
    path = tmp_path / "table2.json"
    with pytest.raises(VeriloopError, match=f"^cannot write {path}: No space left on device; "):
        write_json(path, {"rows": []})


# ------------------------------------------------------------------ the call cache


def test_the_cache_get_sees_every_acknowledged_put(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "calls.sqlite")

    async def go() -> tuple[dict[int, Completion], dict[int, Completion]]:
        await cache.aput("k", 0, [completion("zero"), completion("one")])
        after_first = cache.get("k", range(0, 3))
        await cache.aput("k", 2, [completion("two")])
        return after_first, cache.get("k", range(0, 3))

    after_first, after_second = asyncio.run(go())
    assert {i: c.text for i, c in after_first.items()} == {0: "zero", 1: "one"}
    assert {i: c.text for i, c in after_second.items()} == {0: "zero", 1: "one", 2: "two"}
    cache.put("other", 0, [completion("sync")])  # the blocking form, for code without a loop
    assert cache.get("other", range(1))[0].text == "sync"
    fresh = CallCache(tmp_path / "calls.sqlite")  # another connection, as another run would open
    assert sorted(fresh.get("k", range(3))) == [0, 1, 2]
    fresh.close()
    cache.close()


def test_cache_commits_happen_off_the_event_loop_thread(tmp_path: Path, monkeypatch) -> None:
    commit_threads: list[int] = []
    real_write = CallCache._write

    def write(self: CallCache, batch: list[list[tuple[str, int, str]]]) -> None:
        commit_threads.append(threading.get_ident())
        real_write(self, batch)

    monkeypatch.setattr(CallCache, "_write", write)
    cache = CallCache(tmp_path / "calls.sqlite")

    async def go() -> int:
        await asyncio.gather(*(cache.aput(f"k{i}", 0, [completion(str(i))]) for i in range(20)))
        await cache.aclose()
        return threading.get_ident()

    loop_thread = asyncio.run(go())
    assert commit_threads and loop_thread not in commit_threads


def test_a_failed_cache_commit_reaches_its_caller_and_stores_nothing_of_its_batch(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    cache = CallCache(path)
    # A trigger that refuses inserts stands in for a full disk: the commit fails in SQLite.
    with cache._db:
        cache._db.execute("CREATE TRIGGER refuse BEFORE INSERT ON samples BEGIN SELECT RAISE(ABORT, 'disk full'); END")

    async def failing() -> None:
        await cache.aput("k", 0, [completion("lost")])

    with pytest.raises(VeriloopError, match=r"cannot write the call cache .*calls\.sqlite: disk full"):
        asyncio.run(failing())
    assert cache.get("k", range(1)) == {}
    with cache._db:
        cache._db.execute("DROP TRIGGER refuse")
    cache.put("k", 0, [completion("kept")])  # the cache goes on after a failed batch
    assert cache.get("k", range(1))[0].text == "kept"
    cache.close()
    with pytest.raises(VeriloopError, match="is closed"):
        cache.put("k", 1, [completion("late")])


# ------------------------------------------------------------------ kill -9 and resume

CHILD = textwrap.dedent("""
    import asyncio, sys, time
    from pathlib import Path
    from veriloop.domains import get_domain
    from veriloop.models.function import FunctionModel
    from veriloop.runs import runner
    from veriloop.strategies import parse_strategy

    class Reporting(runner.RecordWriter):
        # Says which record was acknowledged, only once the real writer acknowledged it.
        async def append(self, record):
            await super().append(record)
            print(record.instance_id, flush=True)

    runner.RecordWriter = Reporting
    calls = 0

    def answer(messages):
        global calls
        calls += 1
        time.sleep(0.002 if calls <= 40 else 600)  # then hangs: the kill comes mid-run
        return "Answer: 24"

    # The bare function model: veriloop.model() would import openai (half a second) to
    # tell a client from a function.
    model = FunctionModel(answer, name="m", identity="m", concurrency=4)
    domain = get_domain("game24")
    asyncio.run(runner.run_experiment(model, domain, [parse_strategy("standard")],
                                      domain.load_instances(None, n=int(sys.argv[2])), Path(sys.argv[1]),
                                      concurrency=8))
""")


def test_kill_9_mid_run_loses_no_acknowledged_trajectory_and_resuming_duplicates_none(tmp_path: Path) -> None:
    out = tmp_path / "run"
    total = 60
    env = {**os.environ, "PYTHONPATH": str(Path(veriloop.__file__).parents[1])}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(out), str(total)], stdout=subprocess.PIPE, text=True,
                             env=env)
    acknowledged: list[str] = []
    assert child.stdout is not None
    while len(acknowledged) < 20:
        line = child.stdout.readline()
        assert line, f"the child ended early (exit {child.poll()})"
        acknowledged.append(line.strip())
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()  # else its pipe is closed by whichever later test the garbage collector runs in
    assert child.returncode == -signal.SIGKILL

    on_disk = [t.instance_id for t in load_trajectories(out / TRAJECTORIES)]
    assert set(acknowledged) <= set(on_disk)
    assert len(on_disk) == len(set(on_disk)) < total

    model = veriloop.model(lambda messages: "Answer: 24", name="m", identity="m", cache=False)
    domain = get_domain("game24")
    instances = domain.load_instances(None, n=total)
    result = asyncio.run(run_experiment(model, domain, [parse_strategy("standard")], instances, out, concurrency=8))
    assert (result.reused_trajectories, result.new_trajectories) == (len(on_disk), total - len(on_disk))
    lines = (out / TRAJECTORIES).read_text().splitlines()
    assert sorted(json.loads(line)["instance_id"] for line in lines) == sorted(i.id for i in instances)


def test_a_line_that_is_no_record_is_named_with_what_to_do(tmp_path: Path) -> None:
    from veriloop.errors import VeriloopError
    from veriloop.records import Verdict
    from veriloop.runs.jsonl import load_records

    path = tmp_path / "records.jsonl"
    path.write_text('{"ok": true}\n\n{"ok": "perhaps"}\n')
    with pytest.raises(VeriloopError) as caught:
        load_records(path, Verdict)
    assert str(caught.value) == f"{path}, line 3: not a Verdict record; use a fresh --out"
    path.write_text('{"ok": true}\n\n{"ok": false}\n')
    assert [v.ok for v in load_records(path, Verdict)] == [True, False]
