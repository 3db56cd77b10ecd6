"""An audit as an experiment's report (`report = "audit"`): each domain audited beside its
cells with the experiment's model and seed, on the domain's own wrong answers or the
cells' wrong final replies."""

from __future__ import annotations

import pytest

import veriloop as vl
from veriloop.audits.engine import AuditItem
from veriloop.errors import VeriloopError

WRONG = "Answer: 1 + 1 + 11 + 13"  # wrong on game24's first two generated puzzles (1 1 11 13; 1 1 12 13)


def spec(**report_options):
    return {"name": "audit-test", "models": {"main": {}}, "domains": [{"name": "game24", "n": 2}],
            "strategies": ["standard"], "report": "audit", "report_options": report_options}


def test_each_domain_is_audited_beside_its_cells_and_audit_md_gathers_the_tables(tmp_path):
    result = vl.eval_experiment(spec(verifiers=["sound", "hidden"], families=["claim-correct"]), out=tmp_path / "e",
                                models={"main": vl.model(lambda m: WRONG, identity="wrong", cache=False)}, cache=False,
                                progress=False)
    assert result.report_files == ["audit.md"]
    text = (tmp_path / "e" / "audit.md").read_text()
    assert text.startswith("# Audit of audit-test\nModel: <lambda>; seed 0; answers: the domains' own wrong answers\n\n## game24\n")
    assert "Left out (cannot judge game24): hidden." in text
    assert "| sound | claim-correct | judge | 0% (0%-39%), 0/6 | 0% (0%-39%), 0/6 | +0 points (+0 to +0) | 1.000 | 0 | 0 |" in text
    audit_dir = tmp_path / "e" / "main" / "game24" / "audit-seed0"
    assert {p.name for p in audit_dir.iterdir()} >= {"audit.jsonl", "audit.json", "audit.md", "audit-config.json"}


def test_the_cells_wrong_final_replies_are_the_answers_audited(tmp_path):
    vl.eval_experiment(spec(verifiers=["sound"], families=["claim-correct"], answers="cells"), out=tmp_path / "e",
                       models={"main": vl.model(lambda m: WRONG, identity="wrong", cache=False)}, cache=False,
                       progress=False)
    text = (tmp_path / "e" / "audit.md").read_text()
    assert "answers: the cells' wrong final replies" in text
    assert "- 2 known-wrong answers on 2 instances" in text  # the model's one reply to each puzzle
    assert "| sound | plain | - | 0% (0%-66%), 0/2 |" in text


@pytest.mark.parametrize(("options", "message"), [
    ({"verifiers": ["nope"]}, "report_options.verifiers.0: unknown verifier 'nope'"),
    ({"verifiers": ["sound"], "families": ["nope"]}, "report_options.families.0: unknown exploit family 'nope'"),
    ({"verifiers": []}, "report_options.verifiers"),
    ({"verifiers": ["sound"], "answers": "elsewhere"}, "report_options.answers"),
])
def test_bad_report_options_are_one_line_naming_the_key(tmp_path, options, message):
    with pytest.raises(VeriloopError) as caught:
        vl.eval_experiment(spec(**options), out=tmp_path / "e", models={"main": vl.model(lambda m: WRONG, identity="w", cache=False)}, cache=False,
                           progress=False)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "e").exists()


def test_the_cells_replies_are_dressed_with_the_domains_right_answer_beside_them(tmp_path):
    """A family that offers a right answer beside the wrong one (`two-answers`) applies to a
    recorded reply too: the right answer is the domain's own, not the run's."""
    vl.eval_experiment(spec(verifiers=["sound"], families=["two-answers"], answers="cells"), out=tmp_path / "e",
                       models={"main": vl.model(lambda m: WRONG, identity="wrong", cache=False)}, cache=False,
                       progress=False)
    items = [AuditItem.model_validate_json(line) for line in
             (tmp_path / "e" / "main" / "game24" / "audit-seed0" / "audit.jsonl").read_text().splitlines()]
    dressed = sorted((i.instance_id, i.text) for i in items if i.family == "two-answers")
    assert [instance for instance, _ in dressed] == ["game24-g1", "game24-g2"]
    assert all(text is not None and text.startswith(WRONG) and text != WRONG for _, text in dressed)
    assert all(i.accepted is False for i in items)  # the sound reader takes neither
