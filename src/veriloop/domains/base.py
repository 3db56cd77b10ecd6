"""What a domain is (the `Domain` protocol and the optional `SupportsStudies` and
`CriticTask` capabilities), with mixins and helpers domains share. The records they speak
(Instance, Verdict, ...) live in veriloop.records and are re-exported here for domain
authors."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..records import Candidate, Instance, Message, Verdict, VerdictError

__all__ = ["Candidate", "CriticTask", "Domain", "Instance", "Message", "SupportsStudies", "Verdict", "VerdictError"]


@runtime_checkable
class Domain(Protocol):
    """What a strategy needs to know about a task.

    Ground truth (`score`) is kept apart from checking inside the loop (`verify`): in
    Game of 24 they coincide, in QA they do not.
    """

    name: str
    description: str
    answer_tokens: int  # max_tokens of a generation call

    def parse_instance(self, raw: dict[str, Any]) -> Instance:
        """An instance from user input: a batch line minus its "answer" (e.g.
        {"instance": "1 1 4 6"} or {"graph": "<.col text>"}), or the CLI's options as a
        dict. VeriloopError with one clear line if bad."""
        ...

    def load_instances(self, source: str | None, n: int | None = None, offset: int = 0) -> list[Instance]: ...

    def prompt(self, instance: Instance) -> list[Message]:
        """The base prompt: the fixed natural-language rendering of the instance."""
        ...

    def extract_answer(self, instance: Instance, text: str) -> str | None:
        """The answer part of a model reply, or None when there is none."""
        ...

    def canonical(self, instance: Instance, answer: str | None) -> str | None:
        """A key under which equivalent answers vote together (self-consistency)."""
        ...

    def verify(self, instance: Instance, text: str) -> Verdict:
        """The domain's sound checker on a whole model reply."""
        ...

    def score(self, instance: Instance, text: str | None) -> bool:
        """Ground-truth correctness of a final reply."""
        ...

    def feedback(self, instance: Instance, verdict: Verdict, level: str) -> str:
        """A backprompt for a rejected answer at level binary, first or all."""
        ...

    def judge_task(self, instance: Instance) -> str:
        """The problem statement shown to an LLM judge or critic."""
        ...


# The levels a domain renders itself; `none` and `llm` are handled by veriloop.feedback.
DOMAIN_FEEDBACK_LEVELS = ("binary", "first", "all")


def shown_errors(verdict: Verdict, level: str) -> list[VerdictError]:
    """The errors a backprompt at `level` reports: none for binary (or when the verdict
    lists none), the first for first, every one for all."""
    if level not in DOMAIN_FEEDBACK_LEVELS:
        raise ValueError(f"unknown feedback level {level!r}; use one of {', '.join(DOMAIN_FEEDBACK_LEVELS)}")
    if level == "binary":
        return []
    return verdict.errors[:1] if level == "first" else list(verdict.errors)


def rejection_feedback(shown: list[VerdictError], level: str, rejection: str, reask: str) -> str:
    """The usual backprompt: "<rejection>." alone (binary, or nothing listed), with the
    first error, or with every error as a list; then the request to answer again."""
    if not shown:
        return f"{rejection}. {reask}"
    if level == "first":
        message = shown[0].message.rstrip()
        stop = "" if message.endswith((".", "!", "?")) else "."
        return f"{rejection}: {message}{stop}\n{reask}"
    problems = "\n".join(f"- {e.message}" for e in shown)
    return f"{rejection}:\n{problems}\n{reask}"


class MatchesReference:
    """Ground truth for domains with a reference answer: the extracted answer matches it."""

    def score(self, instance: Instance, text: str | None) -> bool:
        if text is None or instance.reference is None:
            return False
        return self.matches(self.extract_answer(instance, text), instance.reference)  # type: ignore[attr-defined]


class SoundlyScored:
    """For domains whose ground truth is their own sound checker (Game of 24, colouring,
    planning): a final reply is right exactly when `verify` accepts it."""

    def score(self, instance: Instance, text: str | None) -> bool:
        return text is not None and self.verify(instance, text).ok  # type: ignore[attr-defined]


class ReadsDataFile:
    """For domains whose instances come only from a data file (no generator): `_read`
    turns the whole file into instances, and `load_instances` slices them."""

    name: str
    file_format: str  # shown when the file is missing or malformed

    def load_instances(self, source: str | None, n: int | None = None, offset: int = 0) -> list[Instance]:
        from ..errors import VeriloopError

        if offset < 0 or (n is not None and n < 0):
            raise VeriloopError(f"offset and n must not be negative (got offset={offset}, n={n})")
        if source is None:
            raise VeriloopError(f"{self.name} needs a data file (--data PATH): {self.file_format}")
        instances = self._read(Path(source))
        end = None if n is None else offset + n
        return instances[offset:end]

    def _read(self, path: Path) -> list[Instance]:
        raise NotImplementedError


class ModelCritiqued:
    """For CRITIC tasks whose tools only gather evidence (math's interpreter, QA's
    search): the model writes every critique, since no tool result is a critique by
    itself, and no threshold stops the loop, since no tool gives a score to hold one
    against (the critic's verdict, an unchanged answer or the correction limit do)."""

    def tool_critique(self, instance: Instance, text: str, observations: list[Any]) -> str | None:
        return None

    def good_enough(self, instance: Instance, text: str, observations: list[Any]) -> bool | None:
        return None


@runtime_checkable
class SupportsStudies(Protocol):
    """What the verification and critique studies (self-verification paper, Tables 2,
    A2-A6) need from a domain on top of `Domain`."""

    def candidates(self, instance: Instance, rng: Any) -> list[Candidate]:
        """Answers of known correctness: "correct", "ablated" (one error), "random", and
        "non_optimal" where the domain has a notion of it. `rng` is a random.Random."""
        ...

    def critique_report(self, instance: Instance, answer_text: str, critique: str) -> dict[str, float]:
        """How a free-text critique of `answer_text` matches reality: numbers only, e.g.
        real errors named, hallucinated errors. Keys are the domain's own."""
        ...


@runtime_checkable
class CriticTask(Protocol):
    """What CRITIC (verify with tools, critique, correct) needs from a domain on top of
    `Domain`. The loop itself lives in strategies/critic.py; a domain only says which
    tools bear on its answers and how its answers are judged and rewritten.
    """

    # Tools the model may call on its own while verifying (ReAct-style Action / Action
    # Input / Observation), e.g. ("search",) for QA; () when evidence() is all there is.
    critic_tools: tuple[str, ...]
    # The paper's number of corrections: QA 3, math 4, toxicity 4.
    max_corrections: int

    def evidence(self, instance: Instance, text: str) -> list[tuple[str, str]]:
        """Tool calls made on the answer itself before the model critiques it, as
        (tool name, tool input): [("python", program)] for math, [("toxicity",
        continuation)] for toxicity, [] for QA."""
        ...

    def verify_instructions(self, instance: Instance) -> str:
        """What the critic must check and how it should end its critique (in our own
        words; the loop appends the tool protocol and the verdict line)."""
        ...

    def tool_critique(self, instance: Instance, text: str, observations: list[Any]) -> str | None:
        """A critique made from tool results alone (toxicity: "The text has 39% toxicity
        of insult."), or None when the model writes the critique."""
        ...

    def good_enough(self, instance: Instance, text: str, observations: list[Any]) -> bool | None:
        """The task threshold stop rule from tool results (toxicity below 0.1): True to
        stop, False to go on, None when the domain has no threshold."""
        ...

    def correction_request(self, instance: Instance) -> str:
        """The last line of the correction prompt: ask for a whole new answer in the
        format of prompt() (a program that sets `answer`, a reasoning ending in the
        answer line, a new continuation)."""
        ...

    def metrics(self, instance: Instance, text: str | None) -> dict[str, float]:
        """Task metrics of one reply, e.g. {"em": 1.0, "f1": 1.0} for QA,
        {"accuracy": 1.0} for math, {"toxicity": 0.03} for toxicity."""
        ...

    def sample_metric(self, instance: Instance, text: str) -> float:
        """The number rejection sampling maximises (best of n by the task metric): F1 for
        QA, correctness for math, minus toxicity for toxicity."""
        ...
