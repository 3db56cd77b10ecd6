"""The SelfCheck reproduction's analysis on hand-made solutions: voting curves,
verification rates, step agreement, the budget rule, the arithmetic step labels, and plots
with nothing to label that raise no warning."""

from __future__ import annotations

import json
import warnings

import pytest
from helpers import assert_one_line_error, veriloop

from veriloop.domains import Instance
from veriloop.reproduce.selfcheck import (
    Question,
    Solution,
    analyse,
    majority_samples,
    step_agreement,
    verification,
    vote_curve,
    write_outputs,
)
from veriloop.selfcheck.arithmetic import arithmetic_label, calculations
from veriloop.selfcheck.records import SolutionCheck, StepCheck

# ------------------------------------------------------------------ arithmetic labels


@pytest.mark.parametrize(
    ("step", "label"),
    [
        ("16 eggs - 3 eggs = 13 eggs", True),
        ("3 eggs (breakfast) + 4 muffins = 7 eggs", True),
        ("She earns 9 * $2 = $18 a day.", True),
        ("3 * 4 = 13", False),
        ("(4 + 5) × 2 = 18", True),
        ("1,200 + 300 = 1,500", True),
        ("10 / 3 = 3.33", True),  # rounding is not an error
        ("2 + 2 = 5 and 3 + 3 = 6", False),
        ("x = 5", None),
        ("Janet has 16 eggs.", None),
        ("sqrt(16) = 4", None),
        ("Week 1 has 7 days 7 * 2 = 14", True),
        ("In 2 weeks 3 + 4 = 8", False),
        ("1 / 0 = 5", None),
    ],
)
def test_arithmetic_labels(step: str, label: bool | None) -> None:
    assert arithmetic_label(step) is label


def test_chained_equalities_check_each_link() -> None:
    found = calculations("3 * 4 = 12 * 2 = 25")
    assert [(c.left, c.right, c.holds) for c in found] == [("3 * 4", "12", True), ("12 * 2", "25", False)]


# ------------------------------------------------------------------ hand-made questions


def _check(round: int, results: list[int], confidence: float, texts: list[str] | None = None) -> SolutionCheck:
    steps = [StepCheck(index=i, text=(texts or [f"step {i}"] * len(results))[i - 1], result=r)
             for i, r in enumerate(results, start=1)]
    return SolutionCheck(round=round, checker="steps", steps_total=len(steps), steps_checked=len(steps), steps=steps,
                         contradicted=[s.index for s in steps if s.result == -1],
                         unrelated=sum(s.result == 0 for s in steps), confidence=confidence)


def _solution(cluster: int | None, correct: bool, w: float, results: list[int], texts: list[str] | None = None) -> Solution:
    return Solution(text="", answer=None if cluster is None else str(cluster), correct=correct, cluster=cluster,
                    generation_tokens=100, check=_check(1, results, w, texts), check_tokens=300)


def _question(*sols: Solution, extra: list[Solution] | None = None) -> Question:
    return Question(Instance(id="q", data={"question": "?"}), list(sols), extra or [])


def test_vote_curves_from_the_same_solutions() -> None:
    # Two wrong answers agree (low confidence), the right one stands alone (full confidence).
    q = _question(_solution(0, False, 0.2, [-1]), _solution(0, False, 0.2, [-1]), _solution(1, True, 1.0, [1]))
    weighted = vote_curve([q], lambda s: s.check.confidence)
    majority = vote_curve([q], lambda s: 1.0)
    assert weighted[-1] == (1.0, 0.0) and majority[-1] == (0.0, 0.0)
    assert weighted[0][0] == pytest.approx(1 / 3, abs=0.08)  # one random solution: right a third of the time
    # Two solutions: majority is a coin flip between a wrong pair's tie and a mixed pair.
    assert 0.2 < majority[1][0] < 0.45


def test_standard_error_is_over_questions() -> None:
    right = _question(_solution(0, True, 1.0, [1]))
    wrong = _question(_solution(0, False, 1.0, [1]))
    (mean, se), = vote_curve([right, wrong], lambda s: 1.0)
    assert mean == 0.5 and se == pytest.approx(0.5)


def test_majority_pool_with_extra_samples() -> None:
    q = _question(_solution(0, False, 1.0, [1]), extra=[_solution(1, True, 1.0, [1]), _solution(1, True, 1.0, [1])])
    assert len(vote_curve([q], lambda s: 1.0)) == 1
    curve = vote_curve([q], lambda s: 1.0, pool="all")
    assert len(curve) == 3 and curve[-1][0] == 1.0


def test_verification_rates_use_strictly_above() -> None:
    v = verification([1.0, 0.5, 1.0, 0.2], [True, True, False, False])
    rows = {r["threshold"]: r for r in v["thresholds"]}
    assert (rows[0.0]["tpr"], rows[0.0]["fpr"]) == (1.0, 1.0)
    assert (rows[0.5]["tpr"], rows[0.5]["fpr"]) == (0.5, 0.5)
    assert (rows[1.0]["tpr"], rows[1.0]["fpr"]) == (0.0, 0.0)
    assert v["auroc"] == pytest.approx(0.625)
    assert v["best_balanced_accuracy"]["balanced_accuracy"] >= 0.5


def test_verification_with_one_class_has_no_auroc() -> None:
    v = verification([0.3, 0.9], [False, False])
    assert v["auroc"] is None and v["thresholds"][0]["tpr"] is None


def test_step_agreement_counts() -> None:
    q = _question(
        _solution(0, False, 0.5, [-1, 1], ["3 * 4 = 13", "so 13"]),
        _solution(1, True, 1.0, [1, 0], ["3 * 4 = 12", "12 + 1 = 13"]),
    )
    a = step_agreement([q])
    assert a["steps"]["false"] == {"1": 0, "0": 0, "-1": 1}
    assert a["steps"]["holds"] == {"1": 1, "0": 1, "-1": 0}
    assert a["steps"]["none"] == {"1": 1, "0": 0, "-1": 0}
    assert a["contradicted_rate_false_arithmetic"] == 1.0 and a["contradicted_rate_true_arithmetic"] == 0.0
    assert a["wrong_solutions_flagged"] == 1.0 and a["right_solutions_flagged"] == 0.0


@pytest.mark.parametrize(("ratio", "cap", "expected"), [(0.0, 16, 4), (1.0, 16, 8), (9.0, 16, 16), (2.5, 100, 14)])
def test_majority_samples_match_the_budget(ratio: float, cap: int, expected: int) -> None:
    assert majority_samples(4, {"check_to_generation": ratio}, cap) == expected


def test_analysis_and_outputs(tmp_path) -> None:
    qs = [
        _question(_solution(0, False, 0.2, [-1, 1], ["3 * 4 = 13", "x"]), _solution(1, True, 1.0, [1]),
                  extra=[_solution(1, True, 1.0, [1])]),
        _question(_solution(0, True, 0.9, [1, 0]), _solution(1, False, 0.5, [-1])),
    ]
    payload = analyse(qs, [], "gsm8k", "test-model", solutions=2, m=3, seed=0)
    payload["settings"] = {"temperature": 0.7, "max_steps": 8, "lambda_contradict": 1.0, "lambda_unrelated": 0.3}
    assert payload["solutions_total"] == 4 and payload["solutions_correct"] == 2
    assert payload["tokens_per_question"]["selfcheck"] == [400.0, 800.0]
    assert payload["tokens_per_question"]["majority"][:2] == [100.0, 200.0]
    assert payload["budget_matched"]["majority_samples"] is None or payload["budget_matched"]["majority_samples"] <= 3
    assert payload["verification"]["auroc"] == 1.0
    write_outputs(tmp_path, payload, "gsm8k", "test-model")
    md = (tmp_path / "selfcheck.md").read_text()
    assert "| 1 |" in md and "paper FPR" in md and "0.98" in md
    assert json.loads((tmp_path / "reproduction.json").read_text())["questions"] == 2
    assert all((tmp_path / f).stat().st_size > 0 for f in ("accuracy_vs_solutions.png", "accuracy_vs_tokens.png", "roc.png"))


def test_reproduce_selfcheck_bad_input(tmp_path) -> None:
    assert_one_line_error(veriloop("reproduce", "selfcheck", "--dataset", "nope"), "unknown dataset")
    assert_one_line_error(veriloop("reproduce", "selfcheck", "--dataset", "mathqa"), "--data")
    assert_one_line_error(veriloop("reproduce", "selfcheck", "--data", str(tmp_path / "missing.jsonl")), "no such file")


def test_selfcheck_command_bad_input(tmp_path) -> None:
    assert_one_line_error(veriloop("selfcheck", "--solution", "Step 1: 2"), "question")
    assert_one_line_error(veriloop("selfcheck", "--question", "q", "--solution", "s", "--solution-file", "x"), "solution")
    assert_one_line_error(veriloop("selfcheck", "--question", "q", "--solution-file", str(tmp_path / "none.txt")), "cannot read")
    assert_one_line_error(veriloop("selfcheck", "--question", " ", "--solution", "s"), "empty")


def test_selfcheck_plots_with_nothing_to_label_raise_no_warning(tmp_path):
    from veriloop.reproduce.selfcheck import plot

    payload = {
        "accuracy": {"selfcheck": [], "majority": [], "majority_all": [], "global": []},
        "tokens_per_question": {"selfcheck": [], "majority": [], "global": []},
        "verification": {"roc": [], "auroc": None},
        "global_verification": None,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot(tmp_path, payload, "gsm8k", "smollm2-135m")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["accuracy_vs_solutions.png", "accuracy_vs_tokens.png",
                                                          "roc.png"]
