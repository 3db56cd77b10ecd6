"""SelfCheck as a verifier: check the reply step by step (or with one global call) and
accept it when its confidence is above a threshold. A rejection lists the steps whose
independent regeneration contradicted them, first one first, so a backprompt can ask
the model to redo the solution from the first contradicted step."""

from __future__ import annotations

from ..domains.base import BaseDomain
from ..episode import Episode
from ..records import Instance, Verdict, VerdictError
from ..selfcheck.checker import Ask, CheckSettings, StepChecker
from ..selfcheck.records import SolutionCheck
from .base import BaseVerifier

# Rejects any solution with a contradicted step (w = 0.54 for one) or with three or more
# steps the check could not relate (w = 0.58 for three), and accepts the rest.
DEFAULT_THRESHOLD = 0.6
SHOWN_CHARS = 300


def question_text(domain: BaseDomain, instance: Instance) -> str:
    """The question a checker sees: the domain's `question_text` (by default the
    instance's question, else the judge's task text; MathQA adds its options)."""
    return str(domain.question_text(instance))


def episode_ask(episode: Episode) -> Ask:
    """An Ask that records every check call in the episode's trajectory, under the round
    of the solution it checks."""

    async def ask(messages, params, stage, round, step):  # type: ignore[no-untyped-def]
        return await episode.call_one("check", messages, params.with_(seed=episode.seed), round, stage, step)

    return ask


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def verdict_from_check(check: SolutionCheck, threshold: float, name: str) -> Verdict:
    errors = []
    for step in (s for s in check.steps if s.result == -1):
        errors.append(VerdictError(
            kind="contradicted_step", where=f"step {step.index}",
            message=f'step {step.index} ("{_short(step.text)}") is contradicted by an independent attempt at its goal, '
                    f'which found: "{_short(step.regenerated)}"',
        ))
    ok = check.confidence > threshold
    if check.checker == "global" and not ok:
        errors.append(VerdictError(kind="judge", message="the checker judged the solution incorrect"))
    elif not ok and not errors:
        errors.append(VerdictError(
            kind="low_confidence",
            message=f"{check.unrelated} of the {check.steps_checked} checked steps could not be confirmed "
                    f"by an independent attempt (confidence {check.confidence:.2f})",
        ))
    return Verdict(ok=ok, errors=[] if ok else errors, score=check.confidence, verifier=name)


class SelfCheckVerifier(BaseVerifier):
    """`checker` is "steps" (the four-stage SelfCheck) or "global" (one call per
    solution, the paper's ablation). Every check is also kept on the trajectory."""

    takes_threshold = True

    def __init__(self, threshold: float = DEFAULT_THRESHOLD, checker: str = "steps", settings: CheckSettings | None = None) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"the SelfCheck threshold is a confidence in [0, 1], not {threshold}")
        if checker not in ("steps", "global"):
            raise ValueError(f"checker is 'steps' or 'global', not {checker!r}")
        self.threshold = threshold
        self.checker = checker
        self.settings = settings or CheckSettings()
        self.name = "selfcheck" if checker == "steps" else "global-check"

    async def verify(self, episode: Episode, text: str, round: int) -> Verdict:
        checker = StepChecker(episode_ask(episode), self.settings, seed=episode.seed,
                              concurrency=episode.model_for("check").preferred_concurrency)
        question = question_text(episode.domain, episode.instance)
        if self.checker == "global":
            check = await checker.check_global(question, text, round)
        else:
            check = await checker.check(question, text, round)
        episode.trajectory.step_checks.append(check)
        return verdict_from_check(check, self.threshold, self.name)
