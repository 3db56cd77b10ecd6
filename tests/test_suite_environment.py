"""The suite's own environment: what every process it starts inherits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


def test_a_process_the_suite_starts_gets_ctrl_c():
    code = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert child.stdout.strip() == "True", child.stderr


def test_a_suite_started_with_ctrl_c_ignored_still_gives_it_to_its_children():
    # As `bash .ci/run &` starts it from a shell without job control.
    # In pytest's own process (-n 0), which puts Ctrl-C back before anything starts: under
    # xdist the same hook runs first in the controller, whose workers then inherit it, so
    # two workers more (3 s on a loaded 2-core machine) would show nothing more.
    here = Path(__file__)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "--rootdir", str(here.parents[1]),
         f"{here}::test_a_process_the_suite_starts_gets_ctrl_c"],
        capture_output=True, text=True, timeout=300, cwd=here.parents[1],
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


def test_tests_of_one_xdist_group_run_on_one_worker(tmp_path: Path):
    # The model tests and the ONE_WORKER modules rely on it; pytest 9.2 with pytest-xdist
    # 3.8 silently spread a group over every worker.
    (tmp_path / "test_grouped.py").write_text(
        "import os, pathlib, pytest\n"
        "pytestmark = pytest.mark.xdist_group('together')\n"
        "@pytest.mark.parametrize('i', range(8))\n"
        "def test_worker(i):\n"
        "    (pathlib.Path(__file__).parent / f'ran-{i}').write_text(os.environ['PYTEST_XDIST_WORKER'])\n"
    )
    # xdist alone of the installed plugins (the others, Hypothesis's first, cost each of the
    # three interpreters about a second to import and take no part in scheduling).
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "xdist.plugin", "-n", "2",
         "--dist", "loadgroup", "--rootdir", str(tmp_path), "-c", "/dev/null", str(tmp_path / "test_grouped.py")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    workers = {(tmp_path / f"ran-{i}").read_text() for i in range(8)}
    assert len(workers) == 1, workers


def test_the_groups_conftest_gives_run_on_one_worker(tmp_path: Path):
    # tests/conftest.py puts model (server, browser, Ray) tests in one xdist group and each
    # ONE_WORKER module in its own: xdist reads the groups in its own collection hook, which
    # ran first, so both were spread over every worker.
    (tmp_path / "test_heavy.py").write_text(
        "import os, pathlib, pytest\n"
        "@pytest.mark.model\n"
        "@pytest.mark.parametrize('i', range(6))\n"
        "def test_worker(i):\n"
        "    (pathlib.Path(__file__).parent / f'heavy-{i}').write_text(os.environ['PYTEST_XDIST_WORKER'])\n"
    )
    (tmp_path / "test_shared.py").write_text(
        "import os, pathlib, pytest\n"
        "ONE_WORKER = True\n"
        "@pytest.mark.parametrize('i', range(6))\n"
        "def test_worker(i):\n"
        "    (pathlib.Path(__file__).parent / f'shared-{i}').write_text(os.environ['PYTEST_XDIST_WORKER'])\n"
    )
    here = Path(__file__).parent
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "xdist.plugin", "-p", "conftest",
         "-n", "2", "--dist", "loadgroup", "--rootdir", str(tmp_path), "-c", "/dev/null", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
             "PYTHONPATH": os.pathsep.join([str(here), str(here.parent / "src"), os.environ.get("PYTHONPATH", "")])},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    for kind in ("heavy", "shared"):
        workers = {(tmp_path / f"{kind}-{i}").read_text() for i in range(6)}
        assert len(workers) == 1, (kind, workers)


def test_hypothesis_sets_no_deadline_on_an_example():
    # A deadline makes an outcome depend on the machine's speed: CI failed on a first
    # example that took 267 ms (it started the math worker process) against 200 ms.
    from hypothesis import settings

    assert settings().deadline is None
