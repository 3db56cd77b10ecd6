"""The suite's own environment: what every process it starts inherits.

One nested pytest run (module fixture `nested_run`: -n 2, --dist loadgroup, tests/conftest.py
as its only plugin beside xdist, started with Ctrl-C ignored) gives what three tests check:
xdist keeps a group on one worker, the conftest's groups (heavy tests, ONE_WORKER modules)
take effect, and a process the suite starts gets Ctrl-C. Each nested test leaves its worker's
name (or what it saw) in a file of its own, so a test here reads exactly the property it pins.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ONE_WORKER = True  # conftest.py: the nested run is made once, not once per worker

CTRL_C_PROBE = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"


def test_a_process_the_suite_starts_gets_ctrl_c():
    child = subprocess.run([sys.executable, "-c", CTRL_C_PROBE], capture_output=True, text=True, timeout=60)
    assert child.stdout.strip() == "True", child.stderr


@pytest.fixture(scope="module")
def nested_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The folder of the nested run's tests (each leaves a file there) and its outcome."""
    folder = tmp_path_factory.mktemp("nested")
    # xdist's own group mark, which nothing in the conftest touches.
    (folder / "test_grouped.py").write_text(
        "import os, pathlib, pytest\n"
        "pytestmark = pytest.mark.xdist_group('together')\n"
        "@pytest.mark.parametrize('i', range(8))\n"
        "def test_worker(i):\n"
        "    (pathlib.Path(__file__).parent / f'ran-{i}').write_text(os.environ['PYTEST_XDIST_WORKER'])\n"
    )
    # The groups tests/conftest.py gives: model (server, browser, Ray) tests and each ONE_WORKER module.
    (folder / "test_heavy.py").write_text(
        "import os, pathlib, pytest\n"
        "@pytest.mark.model\n"
        "@pytest.mark.parametrize('i', range(6))\n"
        "def test_worker(i):\n"
        "    (pathlib.Path(__file__).parent / f'heavy-{i}').write_text(os.environ['PYTEST_XDIST_WORKER'])\n"
    )
    (folder / "test_shared.py").write_text(
        "import os, pathlib, pytest\n"
        "ONE_WORKER = True\n"
        "@pytest.mark.parametrize('i', range(6))\n"
        "def test_worker(i):\n"
        "    (pathlib.Path(__file__).parent / f'shared-{i}').write_text(os.environ['PYTEST_XDIST_WORKER'])\n"
    )
    # What a process a test starts sees of Ctrl-C, in a suite started with it ignored.
    (folder / "test_ctrl_c.py").write_text(
        "import pathlib, subprocess, sys\n"
        "def test_probe():\n"
        f"    child = subprocess.run([sys.executable, '-c', {CTRL_C_PROBE!r}], capture_output=True, text=True)\n"
        "    (pathlib.Path(__file__).parent / 'ctrl-c').write_text(child.stdout.strip() + child.stderr)\n"
    )
    here = Path(__file__).parent
    # xdist and the conftest alone of the installed plugins (the others, Hypothesis's first,
    # cost each of the three interpreters about a second to import and take no part in
    # scheduling). Started with Ctrl-C ignored, as `bash .ci/run &` starts the suite from a
    # shell without job control: the conftest puts it back in the controller and in each worker.
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "xdist.plugin", "-p", "conftest",
         "-n", "2", "--dist", "loadgroup", "--rootdir", str(folder), "-c", "/dev/null", str(folder)],
        capture_output=True, text=True, timeout=300, cwd=folder,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
             "PYTHONPATH": os.pathsep.join([str(here), str(here.parent / "src"), os.environ.get("PYTHONPATH", "")])},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "21 passed" in run.stdout, run.stdout
    return folder, run


def test_a_suite_started_with_ctrl_c_ignored_still_gives_it_to_its_children(nested_run):
    folder, _ = nested_run
    assert (folder / "ctrl-c").read_text() == "True"


def test_tests_of_one_xdist_group_run_on_one_worker(nested_run):
    # The model tests and the ONE_WORKER modules rely on it; pytest 9.2 with pytest-xdist
    # 3.8 silently spread a group over every worker.
    folder, _ = nested_run
    workers = {(folder / f"ran-{i}").read_text() for i in range(8)}
    assert len(workers) == 1, workers


def test_the_groups_conftest_gives_run_on_one_worker(nested_run):
    # tests/conftest.py puts model (server, browser, Ray) tests in one xdist group and each
    # ONE_WORKER module in its own: xdist reads the groups in its own collection hook, which
    # ran first, so both were spread over every worker.
    folder, _ = nested_run
    for kind in ("heavy", "shared"):
        workers = {(folder / f"{kind}-{i}").read_text() for i in range(6)}
        assert len(workers) == 1, (kind, workers)


def test_hypothesis_sets_no_deadline_on_an_example():
    # A deadline makes an outcome depend on the machine's speed: CI failed on a first
    # example that took 267 ms (it started the math worker process) against 200 ms.
    from hypothesis import settings

    assert settings().deadline is None
