"""The cascade end to end on the real SmolLM2 (replies capped as in the whole suite): from
the command line, where the second stage is more samples of the same model, and from an
experiment file, where the escalation_model role names a second model entry. SmolLM2
never solves Game of 24, so every puzzle escalates: what is pinned is the plumbing (which
model answered which round, the records, the resume), not the accuracy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import veriloop

from veriloop.runs.runner import load_trajectories

pytestmark = pytest.mark.model

CASCADE = "cascade:tries=1,escalated_tries=2"


def test_from_the_command_line_the_second_stage_samples_the_generator(tmp_path: Path, smollm2_capped) -> None:
    out = tmp_path / "run"
    args = ("run", "--model", "smollm2-135m", "-n", "2", "-s", CASCADE, "--out", str(out),
            "--cache", str(tmp_path / "calls.sqlite"))
    first = veriloop(*args)
    assert first.returncode == 0, first.stderr
    trajectories = load_trajectories(out / "trajectories.jsonl")
    assert len(trajectories) == 2
    for t in trajectories:
        accepted = [r.round for r in t.rounds if r.verdict and r.verdict.ok]
        last = accepted[0] if accepted else 3
        # Round 1 is the generator's greedy answer; later rounds are escalations, each a new sample.
        assert [(c.role, c.round, c.sample_index, c.model) for c in t.calls] == [
            ("generate", 1, 0, None), *[("escalate", r, r - 1, None) for r in range(2, last + 1)]]
    again = veriloop(*args)
    assert again.returncode == 0 and "0 backend calls" in again.stdout, again.stdout


def test_in_an_experiment_the_escalation_model_answers_the_escalated_rounds(tmp_path: Path, smollm2_capped) -> None:
    spec = tmp_path / "cascade.toml"
    spec.write_text(f"""
name = "cascade-e2e"
strategies = ["standard", "{CASCADE}"]
generators = ["small"]
n = 2

[models.small]
id = "smollm2-135m"

[models.large]
id = "smollm2-135m"
price = {{ prompt = 1.0, completion = 1.0 }}

[roles]
escalation_model = "large"

[[domains]]
name = "game24"
""")
    proc = veriloop("eval", str(spec), "--out", str(tmp_path / "exp"), "--cache", str(tmp_path / "calls.sqlite"))
    assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "exp" / "results.json").read_text())
    cells = {c["strategy"]: c for c in results["cells"]}
    assert cells[CASCADE]["escalation_model"] == "large" and cells[CASCADE]["n"] == 2
    # Only the large model has a price: the cascade's cost is its escalated calls' alone.
    assert cells["standard"]["usd"] == 0 and cells[CASCADE]["usd"] > 0
    run_dir = tmp_path / "exp" / cells[CASCADE]["run_dir"]
    for t in load_trajectories(run_dir / "trajectories.jsonl"):
        roles = [(c.role, c.model) for c in t.calls]
        assert roles[0] == ("generate", None)
        # A call answered by a role's model names that model (the generator's calls name none).
        assert all(role == ("escalate", "smollm2-135m") for role in roles[1:]), roles
        assert len(roles) == (1 if t.rounds[0].verdict.ok else len(t.rounds))
