"""The suite's own environment: what every process it starts inherits."""

from __future__ import annotations

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
    here = Path(__file__)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(here.parents[1]),
         f"{here}::test_a_process_the_suite_starts_gets_ctrl_c"],
        capture_output=True, text=True, timeout=300, cwd=here.parents[1],
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout
