from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import Field

from ..domains.base import BaseDomain
from ..episode import Episode
from ..records import Instance, Verdict
from ..selfcheck.checker import CheckSettings, StepChecker
from ..selfcheck.scoring import LAMBDA_CONTRADICT, LAMBDA_UNRELATED, answer_clusters, vote
from ..verifiers import get_verifier
from ..verifiers.selfcheck import DEFAULT_THRESHOLD, episode_ask, question_text, verdict_from_check
from .base import OptionalVerifierSpec, Strategy


def same_answer(domain: BaseDomain, instance: Instance) -> Callable[[str, str], bool]:
    """Whether two extracted answers say the same thing: the same canonical key, or the
    domain's own equivalence (numbers within rounding, math-verify for LaTeX)."""

    def same(a: str, b: str) -> bool:
        ka, kb = domain.canonical(instance, a), domain.canonical(instance, b)
        if ka is not None and ka == kb:
            return True
        return bool(domain.matches(a, b))

    return same


class SelfCheck(Strategy):
    kind = "selfcheck"
    summary = (
        "n sampled step-by-step solutions, each checked step by step (target, information, regeneration, "
        "comparison) into a confidence; output the answer with the largest summed confidence "
        "(vote=majority: equal weights; checker=global: one checking call per solution; gate=VERIFIER: only "
        "solutions it accepts vote)"
    )

    n: int = Field(5, ge=1)
    temperature: float = 0.7
    checker: Literal["steps", "global"] = "steps"
    vote: Literal["weighted", "majority"] = "weighted"
    lambda_contradict: float = Field(LAMBDA_CONTRADICT, ge=0)
    lambda_unrelated: float = Field(LAMBDA_UNRELATED, ge=0)
    max_steps: int = Field(20, ge=1)
    gate: OptionalVerifierSpec = None

    async def run(self, episode: Episode) -> None:
        domain, instance = episode.domain, episode.instance
        # The same parameters as self-consistency's samples, so both draw (and cache) the
        # very same solutions.
        params = episode.params(temperature=self.temperature, n=self.n)
        texts = [c.text for c in await episode.call("generate", domain.prompt(instance), params, round=1)]
        weights = [1.0] * len(texts)
        verdicts: list[Verdict | None] = [None] * len(texts)
        if self.vote == "weighted":
            settings = CheckSettings(lambda_contradict=self.lambda_contradict, lambda_unrelated=self.lambda_unrelated,
                                     max_steps=self.max_steps)
            checker = StepChecker(episode_ask(episode), settings, seed=episode.seed,
                                  concurrency=episode.model_for("check").preferred_concurrency)
            question = question_text(domain, instance)
            solutions = list(enumerate(texts, start=1))
            if self.checker == "global":
                checks = await checker.check_global_many(question, solutions)
            else:
                checks = await checker.check_many(question, solutions)
            episode.trajectory.step_checks.extend(checks)
            weights = [c.confidence for c in checks]
            # Each round carries what the verifier would say of it at its default threshold.
            name = "selfcheck" if self.checker == "steps" else "global-check"
            verdicts = [verdict_from_check(c, DEFAULT_THRESHOLD, name) for c in checks]
        admitted = [True] * len(texts)
        if self.gate is not None:
            # The gate runs after the checks so its calls follow theirs in the records;
            # a solution it rejects carries the gate's verdict and does not vote.
            gate = get_verifier(self.gate)
            for i, text in enumerate(texts):
                gate_verdict = await gate.verify(episode, text, i + 1)
                if not gate_verdict.ok:
                    admitted[i], verdicts[i] = False, gate_verdict
        for r, (text, verdict) in enumerate(zip(texts, verdicts), start=1):
            episode.add_round(r, text, verdict)
        answers = [domain.extract_answer(instance, t) for t in texts]
        clusters = answer_clusters(answers, same_answer(domain, instance))
        result = vote([c if ok else None for c, ok in zip(clusters, admitted)], weights)
        if result.winner is None:
            gated_out = any(c is not None for c in clusters)
            episode.finish(texts[0], "gate_rejected_all" if gated_out else "no_answer")
            return
        episode.finish(texts[result.winner], f"{self.vote}_vote")
