"""Where a pytest run's time goes, test by test: wall time, CPU in the test's own process,
CPU of the processes it started and waited for, and the rest (waiting: on a timeout, a
sleep, a socket, or for a core another process held).

A pytest plugin and its report in one file. Run the tier with the plugin, then read it:

    PYTHONPATH=bench VERILOOP_TIER_CPU=/tmp/tier .venv/bin/python -m pytest -q -p tier_cpu \\
        -m "not (model or server or browser or ray)"
    .venv/bin/python bench/tier_cpu.py /tmp/tier            # by file, then the slowest tests
    .venv/bin/python bench/tier_cpu.py /tmp/tier --top 40

Each xdist worker writes its own file (`tests-PID.jsonl`, one line a test) and the CPU it
spent before its first test (`collected-PID.json`: start-up and collection). Children's CPU
is what `getrusage(RUSAGE_CHILDREN)` gains during the test: processes the test started and
waited for; a process it never waited for counts nowhere. The figures are machine-dependent
(state the machine with them); the split between the columns is what to compare.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ENV = "VERILOOP_TIER_CPU"
_out: Any = None


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _folder() -> Path:
    folder = Path(os.environ.get(ENV) or "tier-cpu")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def pytest_collection_finish(session: pytest.Session) -> None:
    (_folder() / f"collected-{os.getpid()}.json").write_text(json.dumps({"cpu": _cpu(resource.RUSAGE_SELF)}))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    global _out
    if _out is None:
        _out = (_folder() / f"tests-{os.getpid()}.jsonl").open("a")
    wall, own, children = time.monotonic(), _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    yield
    _out.write(json.dumps([item.nodeid, time.monotonic() - wall, _cpu(resource.RUSAGE_SELF) - own,
                           _cpu(resource.RUSAGE_CHILDREN) - children]) + "\n")
    _out.flush()


def report(folder: Path, top: int) -> None:
    rows = [json.loads(line) for path in sorted(folder.glob("tests-*.jsonl")) for line in path.read_text().splitlines()]
    if not rows:
        raise SystemExit(f"error: no tests-*.jsonl in {folder}: run pytest with -p tier_cpu and {ENV}={folder} first")
    collected = [json.loads(path.read_text())["cpu"] for path in sorted(folder.glob("collected-*.json"))]
    wall, own, children = (sum(row[i] for row in rows) for i in (1, 2, 3))
    print(f"{len(rows)} tests on {len(collected)} process(es); seconds summed over tests: wall {wall:.1f}, "
          f"own CPU {own:.1f}, children's CPU {children:.1f}, waiting {wall - own - children:.1f}")
    print("start-up and collection, CPU per process: " + ", ".join(f"{cpu:.1f}" for cpu in collected))
    by_file: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for nodeid, w, o, c in rows:
        sums = by_file[nodeid.partition("::")[0]]
        sums[0] += w
        sums[1] += o
        sums[2] += c
        sums[3] += 1
    print(f"\n{'wall':>7} {'own':>6} {'child':>6} {'wait':>6} {'tests':>5}  file")
    for name, (w, o, c, n) in sorted(by_file.items(), key=lambda item: -item[1][0])[:top]:
        print(f"{w:7.1f} {o:6.1f} {c:6.1f} {w - o - c:6.1f} {int(n):5d}  {name}")
    print(f"\n{'wall':>7} {'own':>6} {'child':>6}  test")
    for nodeid, w, o, c in sorted(rows, key=lambda row: -row[1])[:top]:
        print(f"{w:7.2f} {o:6.2f} {c:6.2f}  {nodeid}")


def main() -> None:
    parser = argparse.ArgumentParser(description="Where a pytest run's time went, from its tier_cpu files.")
    parser.add_argument("folder", type=Path, help=f"the folder {ENV} named during the run")
    parser.add_argument("--top", type=int, default=25, help="files and tests to list (default 25)")
    args = parser.parse_args()
    report(args.folder, args.top)


if __name__ == "__main__":
    main()
