"""Plain helpers and constants shared by test modules in any folder (pyproject's pytest
`pythonpath` puts tests/ on the path, so `from helpers import ...` works everywhere).

Test modules never import each other: what two of them share lives here, in scripted.py
(scripted models), in servers.py (servers on 127.0.0.1) or, for fixtures, in a conftest.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from veriloop.records import Trajectory

ROOT = Path(__file__).resolve().parents[1]
"""The project's root (README.md, run.sh, src/)."""
SHARED_DATA = ROOT.parent / "shared" / "data"
"""The papers' data files beside the project (the `shared_data` fixture skips without them)."""
TEST_DATA = Path(__file__).resolve().parent / "data"
"""tests/data: small files of our own (Logistics PDDL, a MathQA sample)."""


def veriloop(*args: str, home: Path | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m veriloop.cli ARGS` in a subprocess, its output captured."""
    env = dict(os.environ, COLUMNS="200")  # help text is wrapped to the terminal width
    if home is not None:
        env["VERILOOP_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "veriloop.cli", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    """The command exited 2 with one `error:` message (no traceback) holding every fragment."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    text = " ".join(lines)
    assert text.startswith("error:"), proc.stderr
    for fragment in fragments:
        assert fragment in text, (fragment, proc.stderr)


def the_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The one `error:` line of a command that failed mid-run (progress lines may precede it)."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


def read_trajectories(run_dir: Path) -> list[Trajectory]:
    return [Trajectory.model_validate_json(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]


# The experiment file the experiments issue gave as its example: read by the file format's
# tests and run for real by `veriloop eval`'s.
ISSUE_EXAMPLE = """\
name = "demo"
seeds = [0]
strategies = ["standard", "sampling:k=3", "backprompt:verifier=llm,feedback=llm,max_rounds=3"]

[models.small]
id = "smollm2-135m"

[models.judge]
id = "openai/judge"
base_url = "URL"

[roles]
verifier_model = "judge"   # who judges when a strategy asks the LLM to verify

[[domains]]
name = "game24"
n = 3

[[domains]]
name = "coloring"
n = 2
"""
