"""Every Python block of the README and the documentation pages runs as written, against
the real SmolLM2 model and a real llama_cpp.server, each in a fresh interpreter (so a name
it uses without importing fails), followed by assertions that pin what it must have
produced. A block without an entry in CHECKS fails the test. (The API reference's examples
are the docstrings', run by tests/docs/test_api_docstrings.py.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from helpers import doc_pages
from servers import SECRET

from veriloop.paths import models_dir

pytestmark = [pytest.mark.model, pytest.mark.server]


def python_blocks() -> list[str]:
    """Every Python block, in reading order (the README, then the site's navigation)."""
    return [block for page in doc_pages()
            for block in re.findall(r"^```python\n(.*?)^```", page.read_text(), flags=re.MULTILINE | re.DOTALL)]


# What each block must have done, by a phrase that identifies the block.
CHECKS = {
    "class Shouting(Family)": """
import veriloop
result = veriloop.audit("game24", "sound", out="audit-shouting", n=1, families=["shouting"], progress=False)
row = result.row("sound", "shouting")
assert (row.n, row.dressed_accepts) == (3, 0)  # the domain's reader still reads the wrong expression
""",
    'veriloop.model("smollm2-135m")  # 98 MB': """
assert result.rounds >= 1 and len(result.feedback) == result.rounds - 1
assert result.ok == (len(result.answer.split()) == 3)
assert [c.role for c in result.trajectory.calls] == ["generate"] * result.rounds
assert result.trajectory.model == "smollm2-135m"
""",
    "def my_llm": """
assert result.rounds >= 1 and len(result.feedback) == result.rounds - 1
assert result.ok == (len(result.answer.split()) == 3)
assert [c.role for c in result.trajectory.calls] == ["generate"] * result.rounds
""",
    '"game24"': """
assert [(s.strategy.split(":")[0], s.n) for s in summaries] == [("standard", 3), ("backprompt", 3), ("sampling", 3)]
import json, pathlib
config = json.loads(pathlib.Path("runs/game24-server/config.json").read_text())
assert config["api"] == "veriloop.evaluate"
""",
    "arith.jsonl": """
assert [(s.strategy.split(":")[0], s.n) for s in summaries] == [("standard", 2), ("backprompt", 2), ("best-of-n", 2)]
again = veriloop.evaluate(task, ["standard", "backprompt:feedback=first,max_rounds=2", "best-of-n:n=3"],
                          model=veriloop.model("smollm2-135m"), out="runs/arith")
assert [s.model_dump() for s in again] == [s.model_dump() for s in summaries]
""",
    "check_solution": """
assert check.steps_checked == 2 and len(check.steps) == 2 and 0.0 <= check.confidence <= 1.0
""",
    "def check_sum": """
assert check_sum({"numbers": [3, 9, 4, 7], "target": 13}, "9 + 4") == []
assert check_sum({"numbers": [3, 9, 4, 7], "target": 13}, "3 + 3") == ["3 is not one of the numbers left to use",
                                                                      "3 + 3 adds up to 6, not 13"]
assert prompt({"numbers": [1, 2], "target": 3}).startswith("Pick some of the numbers 1, 2, each at most once")
""",
}


def block_of(phrase: str) -> str:
    """The one block a CHECKS phrase names."""
    [block] = [block for block in python_blocks() if phrase in block]
    return block


def test_every_python_block_has_its_checks():
    named = [[phrase for phrase in CHECKS if phrase in block] for block in python_blocks()]
    assert [len(phrases) for phrases in named] == [1] * len(named), f"blocks and their CHECKS phrases: {named}"
    assert sorted(phrase for phrases in named for phrase in phrases) == sorted(CHECKS)


@pytest.mark.parametrize("phrase", list(CHECKS), ids=["readme-local-pack", *list(CHECKS)[1:]])
def test_doc_python_block_runs(phrase, server, tmp_path):
    block = block_of(phrase)
    checks = CHECKS[phrase]
    script = tmp_path / "example.py"
    script.write_text(block + "\n# --- the test's own checks\n" + checks)
    # A fresh home (call cache, tool cache) that still finds the packs the set-up installed.
    home = tmp_path / "home"
    home.mkdir()
    (home / "models").symlink_to(models_dir())
    env = {**os.environ, "VERILOOP_BASE_URL": server, "VERILOOP_API_KEY": SECRET, "VERILOOP_HOME": str(home)}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
