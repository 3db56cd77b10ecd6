"""Self-verification as hallucination detection (CRITIC, Table 5).

For each question the model answers greedily with chain of thought; the answer counts as
correct when its F1 against the reference exceeds 0.6. Every method then gives a
confidence that the answer is right, and we ask how well each confidence separates right
from wrong answers (AUROC), and, for methods that make a yes/no call, how often that call
is right (accuracy):

- lm-prob:       sum of the answer's token log-probabilities (log p(y|x))
- norm-entropy:  their mean (the length-normalised version)
- max-entropy:   their minimum (the least certain token)
- self-consistency: share of `samples` answers at temperature 0.5 equal to the greedy one
- p-true:        probability of "A" when asked whether the answer is (A) true or (B) false
- critic:        the tool-using CRITIC verification ends with four options, (A) absolutely
                 correct .. (D) absolutely wrong; confidence = the option probabilities
                 weighted 4..1, rescaled so that all mass on A is 1 and on D is 0
- critic-notool: the same without tools (the model writes its own evidence)
- always-true:   says every answer is right (accuracy only; no ranking)

Option probabilities come from the first generated token's top log-probabilities,
renormalised over the options found. Zero-shot throughout (the paper's P(True) is 10-shot).
Every question is one JSON line, appended as it is finished: the study resumes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ..domains.base import Domain, Instance
from ..episode import Episode
from ..errors import VeriloopError
from ..models.base import Model, TokenLogprob
from ..records import Trajectory
from ..runs.jsonl import RecordWriter, load_records
from ..stats.metrics import wilson_interval
from ..tools.base import Toolbox
from ..verifiers.critic import CriticVerifier, as_critic_task

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

RECORDS = "hallucination.jsonl"
CORRECT_F1 = 0.6
INTRINSIC = ("lm-prob", "norm-entropy", "max-entropy", "self-consistency")
DECIDING = ("p-true", "critic", "critic-notool")  # methods that also say yes or no
METHODS = (*INTRINSIC, *DECIDING, "always-true")
FOUR_OPTIONS = (
    "In summary, the proposed answer is:\n(A) absolutely correct\n(B) probably correct\n(C) probably wrong\n"
    "(D) absolutely wrong\nReply with the letter of one option only."
)
OPTION_WEIGHTS = {"A": 4, "B": 3, "C": 2, "D": 1}


class DetectionRecord(BaseModel):
    instance_id: str
    answer: str | None
    reference: str | None
    f1: float
    correct: bool
    confidence: dict[str, float | None] = Field(default_factory=dict)
    options: dict[str, dict[str, float]] = Field(default_factory=dict)  # method -> letter -> probability
    trajectory: Trajectory


def option_probabilities(logprobs: list[TokenLogprob] | None, letters: tuple[str, ...]) -> dict[str, float]:
    """Probabilities of the option letters at the first generated token that names one,
    renormalised over the letters found (tokens like " A", "(A" and "A)" count as A)."""
    for tok in logprobs or []:
        candidates = {**tok.top, tok.token: tok.logprob}
        found: dict[str, float] = {}
        for text, lp in candidates.items():
            letter = text.strip().strip("()*:.").upper()
            if letter in letters:
                found[letter] = found.get(letter, 0.0) + math.exp(lp)
        if found:
            total = sum(found.values())
            return {k: v / total for k, v in found.items()}
    return {}


def four_option_confidence(probs: dict[str, float]) -> float | None:
    if not probs:
        return None
    weighted = sum(OPTION_WEIGHTS[k] * p for k, p in probs.items())
    return (weighted - 1.0) / 3.0


def auroc(scores: list[float], labels: list[bool]) -> float | None:
    """Area under the ROC curve (the figure of scikit-learn's roc_auc_score, to 2.2e-16):
    the probability that a random right answer scores above a random wrong one, ties
    counting half. None with one class only, where it is undefined (scikit-learn warns and
    gives nan). A confidence that is not a finite number is refused in one line."""
    if all(labels) or not any(labels):
        return None
    bad = next((x for x in scores if not math.isfinite(x)), None)
    if bad is not None:
        raise VeriloopError(f"AUROC needs finite confidences, got {bad}: the record holding it is damaged; "
                            "remove that record and run again")
    import numpy as np

    right = np.asarray(labels, dtype=bool)
    return float(_mann_whitney(np.asarray(scores, dtype=float), right, right.sum()))


def _mann_whitney(scores: NDArray[np.float64], right: NDArray[np.bool_], positives: Any) -> Any:
    """The AUROC of each row of scores (the last axis) whose right answers are where
    `right` is true, `positives` of them, both classes present: the Mann-Whitney U of the
    right answers over positives x negatives, from scipy's average ranks (so a tie counts
    half). U / (pos * neg) is rounded once, where roc_auc_score's trapezoids round at each
    step: the two differ by at most one unit in the last place (2.2e-16)."""
    from scipy.stats import rankdata

    rank_sum = (rankdata(scores, axis=-1) * right).sum(axis=-1)
    return (rank_sum - positives * (positives + 1) / 2) / (positives * (scores.shape[-1] - positives))


def _answer_logprobs(completion_logprobs: list[TokenLogprob] | None) -> list[float]:
    return [t.logprob for t in completion_logprobs or [] if math.isfinite(t.logprob)]


async def detect_one(
    model: Model, domain: Domain, instance: Instance, tools: Toolbox | None, seed: int, samples: int
) -> DetectionRecord:
    task = as_critic_task(domain)
    trajectory = Trajectory(strategy="study:hallucination", domain=domain.name, model=model.name, instance_id=instance.id, seed=seed)
    episode = Episode(model=model, domain=domain, instance=instance, seed=seed, trajectory=trajectory, tools=tools)
    prompt = domain.prompt(instance)
    greedy = (await episode.call("generate", prompt, episode.params(temperature=0.0, logprobs=True), round=1))[0]
    text = greedy.text
    answer = domain.extract_answer(instance, text)
    f1 = task.metrics(instance, text).get("f1", float(domain.score(instance, text)))
    conf: dict[str, float | None] = {}
    lps = _answer_logprobs(greedy.logprobs)
    conf["lm-prob"] = sum(lps) if lps else None
    conf["norm-entropy"] = sum(lps) / len(lps) if lps else None
    conf["max-entropy"] = min(lps) if lps else None

    sampled = await episode.call("generate", prompt, episode.params(temperature=0.5, n=samples), round=1)
    key = domain.canonical(instance, answer)
    same = [domain.canonical(instance, domain.extract_answer(instance, c.text)) == key for c in sampled]
    conf["self-consistency"] = sum(same) / len(same) if key is not None else 0.0

    options: dict[str, dict[str, float]] = {}
    shown = answer if answer is not None else text
    ptrue_messages = [
        {
            "role": "user",
            "content": f"{domain.judge_task(instance)}\nPossible answer: {shown}\n"
            "Is the possible answer:\n(A) True\n(B) False\nReply with the letter only.",
        }
    ]
    reply = await episode.call("verify", ptrue_messages, _letter_params(episode), round=1)
    options["p-true"] = option_probabilities(reply[0].logprobs, ("A", "B"))
    conf["p-true"] = options["p-true"].get("A") if options["p-true"] else None

    for method, use_tools in (("critic", True), ("critic-notool", False)):
        crit = await CriticVerifier(use_tools=use_tools).critique(episode, text, round=1)
        follow_up = [*crit.messages]
        if follow_up[-1]["role"] == "user":
            follow_up[-1] = {"role": "user", "content": f"{follow_up[-1]['content']}\n\n{FOUR_OPTIONS}"}
        else:
            follow_up.append({"role": "user", "content": FOUR_OPTIONS})
        reply = await episode.call("verify", follow_up, _letter_params(episode), round=1)
        options[method] = option_probabilities(reply[0].logprobs, tuple(OPTION_WEIGHTS))
        conf[method] = four_option_confidence(options[method])
    conf["always-true"] = 1.0
    return DetectionRecord(
        instance_id=instance.id,
        answer=answer,
        reference=None if instance.reference is None else str(instance.reference),
        f1=f1,
        correct=f1 > CORRECT_F1,
        confidence=conf,
        options=options,
        trajectory=trajectory,
    )


def _letter_params(episode: Episode):
    return episode.params(temperature=0.0, max_tokens=3, logprobs=True, top_logprobs=20)


async def run_hallucination_study(
    model: Model,
    domain: Domain,
    instances: list[Instance],
    out_dir: Path,
    tools: Toolbox | None,
    seed: int = 0,
    samples: int = 20,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[DetectionRecord]:
    if tools is None or "search" not in tools:
        raise VeriloopError("the hallucination study needs the search tool (a corpus or a search URL)")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / RECORDS
    done = {r.instance_id: r for r in load_records(path, DetectionRecord)}
    if on_progress:
        on_progress(sum(i.id in done for i in instances), len(instances))
    writer = RecordWriter(path)
    try:
        for inst in instances:
            if inst.id in done:
                continue
            record = await detect_one(model, domain, inst, tools, seed, samples)
            await writer.append(record)
            done[inst.id] = record
            if on_progress:
                on_progress(sum(i.id in done for i in instances), len(instances))
    finally:
        await writer.aclose()
    return [done[i.id] for i in instances]


class MethodResult(BaseModel):
    method: str
    auroc: float | None
    auroc_ci95: tuple[float, float] | None = None  # percentile bootstrap over questions
    accuracy: float | None
    accuracy_ci95: tuple[float, float] | None = None  # Wilson
    n: int
    missing: int  # questions where the method gave no confidence (e.g. no option letter)


def bootstrap_auroc_ci(scores: list[float], labels: list[bool], resamples: int = 1000, seed: int = 0) -> tuple[float, float] | None:
    """95% percentile interval of the AUROC, resampling questions with replacement
    (numpy's default_rng(seed), so tables are reproducible; numpy's linear percentiles).
    Resamples with a single class have no AUROC and are skipped; None when fewer than a
    tenth of them are left. Each resample's AUROC is `auroc`'s (the Mann-Whitney count),
    computed for all resamples at once: calling scikit-learn's roc_auc_score once per
    resample took about 1.2 ms, over a second per interval."""
    if not scores:
        return None
    import numpy as np

    n = len(scores)
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    drawn, right = np.asarray(scores, dtype=float)[idx], np.asarray(labels, dtype=bool)[idx]
    pos = right.sum(axis=1)
    both = (pos > 0) & (pos < n)
    if both.sum() < resamples // 10:
        return None
    values = _mann_whitney(drawn[both], right[both], pos[both])
    low, high = np.percentile(values, [2.5, 97.5])
    return (float(low), float(high))


def summarise_detection(records: list[DetectionRecord]) -> list[MethodResult]:
    labels_all = [r.correct for r in records]
    results = []
    for method in METHODS:
        pairs = [(r.confidence.get(method), r.correct) for r in records]
        have = [(c, y) for c, y in pairs if c is not None]
        scores, labels = [c for c, _ in have], [y for _, y in have]
        hits: tuple[int, int] | None = None
        if method in DECIDING:
            # A confidence above one half is a call that the answer is right.
            hits = (sum((c > 0.5) == y for c, y in have), len(have))
        elif method == "always-true":
            hits = (sum(labels_all), len(labels_all))
        ranked = method != "always-true"  # always-true has no ranking to judge
        results.append(
            MethodResult(
                method=method,
                auroc=auroc(scores, labels) if ranked else None,
                auroc_ci95=bootstrap_auroc_ci(scores, labels) if ranked and scores else None,
                accuracy=hits[0] / hits[1] if hits and hits[1] else None,
                accuracy_ci95=wilson_interval(*hits) if hits and hits[1] else None,
                n=len(have),
                missing=len(pairs) - len(have),
            )
        )
    return results
