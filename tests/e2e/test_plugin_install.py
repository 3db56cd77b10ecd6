"""The example plugin (examples/veriloop-example-plugin), installed on its own as a user
would, adds a domain and a check that `veriloop run` uses."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import ROOT
from servers import ChatReplies, serving

EXAMPLE = ROOT / "examples" / "veriloop-example-plugin"
ONE_WORKER = True  # conftest.py: pip installs the example once, not once per worker
# The right pick for each problem's target; the first try of every problem is "3 + 4".
RIGHT = {"13": "9 + 4", "14": "8 + 6"}


class _Solver(ChatReplies):
    """Answers a subset-sum problem wrongly first, then rightly once the conversation
    holds feedback."""

    def reply(self, body: dict) -> str:
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        target = re.search(r"add up to (\d+)", users[0])
        return "3 + 4" if len(users) == 1 or target is None else RIGHT[target.group(1)]


@pytest.fixture
def solver() -> Iterator[str]:
    with serving(_Solver) as port:
        yield f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory) -> Path:
    """The example installed into a folder of its own (pip --target), built from a copy so
    the build leaves nothing in the repository."""
    work = tmp_path_factory.mktemp("plugin")
    source = work / "source"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    target = work / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return target


def veriloop_with(plugin_dir: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200", VERILOOP_HOME=str(home),
               PYTHONPATH=os.pathsep.join([str(plugin_dir), str(ROOT / "src")]))
    return subprocess.run([sys.executable, "-m", "veriloop.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_an_installed_plugin_adds_a_domain_and_a_check_that_run_uses(plugin_dir, solver, tmp_path):
    out = tmp_path / "run"
    proc = veriloop_with(plugin_dir, "run", "--domain", "subset-sum", "-n", "2", "--strategy",
                         "backprompt:verifier=subset-sum-check,feedback=first,max_rounds=2", "--model", "openai/x",
                         "--base-url", solver, "--no-cache", "--concurrency", "1", "--out", str(out),
                         home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    trajectories = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert sorted(t["instance_id"] for t in trajectories) == ["a", "b"]
    for t in trajectories:
        assert t["domain"] == "subset-sum"
        assert t["strategy"] == "backprompt:feedback=first,max_rounds=2,temperature=0,verifier=subset-sum-check"
        first, second = t["rounds"]
        assert first["verdict"]["verifier"] == "subset-sum-check"  # the plugin's check, by its entry point name
        assert first["verdict"]["ok"] is False
        assert [e["message"] for e in first["verdict"]["errors"]] == {
            "a": ["3 + 4 adds up to 7, not 13"],
            "b": ["4 is not one of the numbers left to use", "3 + 4 adds up to 7, not 14"],  # b has no 4
        }[t["instance_id"]]
        assert second["verdict"]["ok"] is True
        # feedback=first: the second prompt ends with the check's first error.
        assert t["calls"][1]["messages"][-1]["content"] == {
            "a": "Your answer is not correct: 3 + 4 adds up to 7, not 13.\nPlease give a corrected answer.",
            "b": "Your answer is not correct: 4 is not one of the numbers left to use.\nPlease give a corrected answer.",
        }[t["instance_id"]]
        assert t["correct"] is True
    summary = json.loads((out / "summary.json").read_text())["strategies"]
    assert [s["correct"] for s in summary.values()] == [2]

    listed = veriloop_with(plugin_dir, "plugins", home=tmp_path / "home")
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"^  subset-sum +veriloop-example-plugin$", listed.stdout, re.M)
    assert re.search(r"^  subset-sum-check +veriloop-example-plugin$", listed.stdout, re.M)
    helped = veriloop_with(plugin_dir, "run", "--help", home=tmp_path / "home")
    words = " ".join(helped.stdout.split())  # help is wrapped to 80 columns
    assert "humaneval, humaneval-impossible, subset-sum (veriloop-example-plugin)." in words
    assert "generated, subset-sum-check (veriloop-example-plugin), selfcheck@T" in words


def test_the_plugin_guide_shows_the_example_plugin_as_it_is():
    section = (ROOT / "docs" / "guides" / "plugins.md").read_text()
    shown = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert shown is not None
    code = (EXAMPLE / "src" / "veriloop_example_plugin" / "__init__.py").read_text()
    assert code.endswith(shown.group(1))
    entry_points = re.search(r"```toml\n(.*?)```", section, re.DOTALL)
    assert entry_points is not None and entry_points.group(1) in (EXAMPLE / "pyproject.toml").read_text()
