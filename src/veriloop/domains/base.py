"""What a domain is, in one file: a new domain is written against this module alone.

`BaseDomain` is the contract: every hook every domain is asked, each with a docstring
and, where one makes sense, a default. Subclass it and write `prompt`, `verify` and
`load_instances`; override any other hook the domain has something to say about. A hook
that serves one feature is not on `BaseDomain` but on that feature's capability, a
protocol asked about with `isinstance` (`capabilities()` lists them): `SupportsStudies`
(the verification and critique studies), `CriticTask` (CRITIC, with `CriticDomain`
naming a domain that has it), `CriticSampling` (CRITIC's sampling), `CodeTask` (the code
verifiers), `FunctionChecked` (a check that is a user's function: a `Task`), and the
tools' `SearchTask` and `ToolUser` (declared in tools/config.py, below the domains).

`Domain` is the smaller protocol a plain object must meet to be used as a domain (user
classes that do not subclass, in tests and the README). The domain is given the whole
contract once, where an episode starts (`Episode` calls `as_base_domain`): a plain
object gets the default of every other hook and keeps each capability it has. Below
that, callers never wrap a domain again nor probe it for a hook by name: they call the
hook, or ask `isinstance` about a capability. A test pins the contract's names and the
capabilities' members, so a new hook is added here, with its docstring and default, or
not at all.

The records domains speak (Instance, Verdict, ...) live in veriloop.records and are
re-exported here for domain authors.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import VeriloopError
from ..records import Candidate, Instance, Message, Verdict, VerdictError

__all__ = [
    "BaseDomain", "Candidate", "CodeTask", "CriticDomain", "CriticSampling", "CriticTask", "Domain", "FunctionChecked",
    "Instance", "Message", "PlainDomain", "SupportsStudies", "Verdict", "VerdictError", "as_base_domain",
    "capabilities",
]

# The backprompt a domain gives when it words none of its own.
DEFAULT_REJECTION = "Your answer is not correct"
DEFAULT_REASK = "Please give a corrected answer."


@runtime_checkable
class Domain(Protocol):
    """The least an object must have to be used as a domain (what `isinstance(x, Domain)`
    checks).

    An implementation has the three attributes below and these methods:
    `parse_instance(raw)` (an instance from user input), `load_instances(source, n,
    offset)`, `prompt(instance)` (the base prompt's messages), `extract_answer(instance,
    text)`, `canonical(instance, answer)` (a key under which equal answers vote together),
    `verify(instance, text)` (the sound checker, a Verdict), `score(instance, text)`
    (ground truth), `feedback(instance, verdict, level)` (a backprompt) and
    `judge_task(instance)` (the problem as an LLM judge sees it). Ground truth (`score`)
    is kept apart from checking inside the loop (`verify`): in Game of 24 they coincide,
    in QA they do not. `BaseDomain` implements the protocol and adds every optional hook
    with its default; subclassing it is the easy way to write a domain. A `veriloop.Task`
    is a domain too.

    Attributes:
        name: The domain's name, as records and tables show it.
        description: One line saying what the task is.
        answer_tokens: The max_tokens of a generation call.

    Examples:
        ```python
        import veriloop
        from veriloop import Domain

        game24 = veriloop.domain("game24")
        assert isinstance(game24, Domain)
        instance = game24.parse_instance({"instance": "1 1 4 6"})
        assert game24.verify(instance, "Answer: 6 * 4 * 1 * 1").ok
        print(game24.verify(instance, "Answer: (1 + 1) * (4 + 6)").errors[-1].message)  # ... evaluates to 20, not 24.
        assert isinstance(veriloop.Task.from_records([{"q": "2+2"}], prompt="Compute {q}."), Domain)
        ```
    """

    name: str
    description: str
    answer_tokens: int  # max_tokens of a generation call

    def parse_instance(self, raw: dict[str, Any]) -> Instance:
        """An instance from user input: a batch line minus its "answer" (e.g.
        {"instance": "1 1 4 6"} or {"graph": "<.col text>"}), or the CLI's options as a
        dict. VeriloopError with one clear line if bad."""
        ...

    def load_instances(self, source: str | None, n: int | None = None, offset: int = 0) -> list[Instance]:
        """Instances from a data file or folder (`source`), or generated when it is None."""
        ...

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


class BaseDomain(Domain):
    """The domain contract: every hook veriloop calls on a domain, as an abstract base class.

    A subclass sets `name` (and usually `description` and `answer_tokens`) and writes
    `load_instances`, `prompt` and `verify`; every other hook (`parse_instance`,
    `extract_answer`, `canonical`, `score`, `feedback`, `judge_task`, ...) has a default
    that suits a domain with nothing special to say about it, and may be overridden.

    Attributes:
        name: The domain's name, as records and tables show it.
        description: One line saying what the task is (default: empty).
        answer_tokens: The max_tokens of a generation call (default: 512).

    Examples:
        ```python
        from veriloop import BaseDomain, Instance, Verdict, VerdictError

        class Even(BaseDomain):
            name = "even"

            def load_instances(self, source, n=None, offset=0):
                return [Instance(id=str(i), data={"below": 5 * i}) for i in range(1, 4)][offset:][:n]

            def prompt(self, instance):
                return [{"role": "user", "content": f"Name an even number below {instance.data['below']}."}]

            def verify(self, instance, text):
                ok = int(text) % 2 == 0 and int(text) < instance.data["below"]
                return Verdict(ok=ok, errors=[] if ok else [VerdictError(kind="range", message=f"{text} is too big")])

        domain = Even()
        first, second = domain.load_instances(None, n=2)
        assert domain.score(second, " 8 ") and not domain.score(first, "8")  # the default score: verify accepts it
        print(domain.feedback(first, domain.verify(first, "8"), "first"))  # the default backprompt
        ```
    """

    description: str = ""
    answer_tokens: int = 512

    # ------------------------------------------------------------------ instances

    def parse_instance(self, raw: dict[str, Any]) -> Instance:
        """An instance from user input (a batch line without its "answer", or the command
        line's options). Default: the fields as the instance's data, its id the "id"
        field or "input".

        Args:
            raw: The fields the user gave.

        Returns:
            The instance; a domain that cannot read `raw` raises VeriloopError with one
            line saying what it expected.
        """
        return Instance(id=str(raw.get("id", "input")), data=dict(raw))

    @abstractmethod
    def load_instances(self, source: str | None, n: int | None = None, offset: int = 0) -> list[Instance]:
        """The instances of a run.

        Args:
            source: A data file or folder, or None for the domain's own (generated or
                built-in) instances.
            n: How many to take (None: all).
            offset: How many to skip first.

        Returns:
            Instances `offset` to `offset + n` of the source, in its order.
        """

    @property
    def instance_fields(self) -> dict[str, str]:
        """The fields of a batch line (`veriloop verify --batch`) besides "answer".

        Returns:
            Field name to an example value, as error messages show them; empty (the
            default) when the domain names none.
        """
        return {}

    # ------------------------------------------------------------------ prompting and reading replies

    @abstractmethod
    def prompt(self, instance: Instance) -> list[Message]:
        """The base prompt: the fixed natural-language rendering of the instance.

        Args:
            instance: The problem to pose.

        Returns:
            Chat messages, the last one the user's.
        """

    def extract_answer(self, instance: Instance, text: str) -> str | None:
        """The answer part of a model reply. Default: the whole reply, stripped.

        Args:
            instance: The problem the reply answers.
            text: The model's reply.

        Returns:
            The answer, or None when the reply holds none.
        """
        return text.strip() or None

    def canonical(self, instance: Instance, answer: str | None) -> str | None:
        """A key under which equivalent answers vote together (self-consistency).
        Default: the answer with its spacing normalised.

        Args:
            instance: The problem answered.
            answer: An extracted answer, or None.

        Returns:
            The key, or None for an answer that cannot vote.
        """
        return None if answer is None else " ".join(answer.split()) or None

    def matches(self, answer: str | None, reference: Any) -> bool:
        """Whether two answers say the same beyond equal `canonical` keys (numbers within
        rounding, equivalent LaTeX); SelfCheck's clusters and reference-scored domains
        ask it. Default: False (the keys alone decide).

        Args:
            answer: An extracted answer, or None.
            reference: The reference answer, or another extracted answer.

        Returns:
            True when they are equivalent.
        """
        return False

    def question_text(self, instance: Instance) -> str:
        """The question a step-by-step checker (SelfCheck) sees. Default: the instance's
        "question" field, else `judge_task`.

        Args:
            instance: The problem.

        Returns:
            The question as text.
        """
        question = instance.data.get("question")
        return str(question) if question else self.judge_task(instance)

    # ------------------------------------------------------------------ checking and ground truth

    @abstractmethod
    def verify(self, instance: Instance, text: str) -> Verdict:
        """The domain's sound checker on a whole model reply.

        Args:
            instance: The problem answered.
            text: The model's whole reply.

        Returns:
            The verdict, its errors in the order a backprompt should report them.
        """

    async def averify(self, instance: Instance, text: str) -> Verdict:
        """`verify` for the `sound` verifier inside the event loop; a domain whose check
        waits on I/O (a `Task` with an async check) overrides it. Default: `verify`.

        Args:
            instance: The problem answered.
            text: The model's whole reply.

        Returns:
            The verdict.
        """
        return self.verify(instance, text)

    def score(self, instance: Instance, text: str | None) -> bool:
        """Ground-truth correctness of a final reply. Default: the sound checker accepts
        it (domains with a reference answer use `MatchesReference`).

        Args:
            instance: The problem answered.
            text: The final reply, or None when the loop produced none.

        Returns:
            True when the reply is right.
        """
        return text is not None and self.verify(instance, text).ok

    # ------------------------------------------------------------------ feedback and judges

    def feedback(self, instance: Instance, verdict: Verdict, level: str) -> str:
        """A backprompt for a rejected answer. Default: "Your answer is not correct",
        with the first or every error the verdict lists, then a request to answer again.

        Args:
            instance: The problem answered.
            verdict: The rejection.
            level: "binary", "first" or "all" (see `shown_errors`).

        Returns:
            The backprompt text.
        """
        return rejection_feedback(shown_errors(verdict, level), level, DEFAULT_REJECTION, DEFAULT_REASK)

    def judge_task(self, instance: Instance) -> str:
        """The problem statement shown to an LLM judge or critic. Default: the user
        messages of `prompt`.

        Args:
            instance: The problem.

        Returns:
            The statement as text.
        """
        return "\n\n".join(m["content"] for m in self.prompt(instance) if m["role"] == "user")

    @property
    def judge_fields(self) -> dict[str, str]:
        """Fields an LLM judge fills in beside its verdict (planning asks for the first
        failing step).

        Returns:
            Field name to what it holds; empty by default.
        """
        return {}

class PlainDomain(BaseDomain):
    """A domain object that does not subclass `BaseDomain`, given the contract: the
    `Domain` protocol's members are the object's own, every other hook is the default,
    and each capability the object has (`capabilities()`) it keeps, its members its own."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain
        self.name = domain.name
        self.description = domain.description
        self.answer_tokens = domain.answer_tokens
        _keep_capabilities(self, domain)

    def parse_instance(self, raw: dict[str, Any]) -> Instance:
        return self.domain.parse_instance(raw)

    def load_instances(self, source: str | None, n: int | None = None, offset: int = 0) -> list[Instance]:
        return self.domain.load_instances(source, n, offset)

    def prompt(self, instance: Instance) -> list[Message]:
        return self.domain.prompt(instance)

    def extract_answer(self, instance: Instance, text: str) -> str | None:
        return self.domain.extract_answer(instance, text)

    def canonical(self, instance: Instance, answer: str | None) -> str | None:
        return self.domain.canonical(instance, answer)

    def verify(self, instance: Instance, text: str) -> Verdict:
        return self.domain.verify(instance, text)

    def score(self, instance: Instance, text: str | None) -> bool:
        return self.domain.score(instance, text)

    def feedback(self, instance: Instance, verdict: Verdict, level: str) -> str:
        return self.domain.feedback(instance, verdict, level)

    def judge_task(self, instance: Instance) -> str:
        return self.domain.judge_task(instance)


def _capability_members(capability: type) -> list[str]:
    own = vars(capability)
    return sorted({name for name in (*own.get("__annotations__", {}), *own) if not name.startswith("_")})


def _keep_capabilities(wrapper: PlainDomain, given: object) -> None:
    # Forwarding, not probing: `isinstance` has just found every member of the capability
    # on the object, so the wrapper answers `isinstance` the same and calls the object's own.
    for capability in capabilities():
        if isinstance(given, capability):
            for member in _capability_members(capability):
                wrapper.__dict__[member] = getattr(given, member)


def as_base_domain(domain: Domain) -> BaseDomain:
    """The domain with the whole contract: itself when it subclasses `BaseDomain`, else a
    `PlainDomain` over it (its own members and capabilities, every other hook's default).
    An `Episode` calls it once, on the domain it is given; everything below an episode
    sees a `BaseDomain`.

    Args:
        domain: Any domain object.

    Returns:
        A `BaseDomain` to ask any hook of.
    """
    return domain if isinstance(domain, BaseDomain) else PlainDomain(domain)


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


# Words by which a reply's later answer replaces an earlier one ("Wait, that fails.
# Corrected plan:"); without one, two different answers are alternatives.
_CORRECTION_RE = re.compile(
    r"\b(?:wait|correct\w*|revis\w*|fix\w*|mistake\w*|wrong|error\w*|actually|better|final|updated?|"
    r"sorry|oops|redo|retry|invalid|fails?|failed|instead|new)\b",
    re.IGNORECASE,
)


def introduces_a_correction(between: str) -> bool:
    """Whether `between` (what a reply says between two different answers) makes the
    later one a correction of the earlier. A careful grader takes a corrected answer;
    two answers with nothing choosing between them are a hedge, and neither is the answer."""
    return _CORRECTION_RE.search(between) is not None


class MatchesReference(BaseDomain):
    """Ground truth for domains with a reference answer: the extracted answer matches it."""

    @abstractmethod
    def matches(self, answer: str | None, reference: Any) -> bool:
        """Whether `answer` is equivalent to `reference` (see `BaseDomain.matches`)."""

    def score(self, instance: Instance, text: str | None) -> bool:
        if text is None or instance.reference is None:
            return False
        return self.matches(self.extract_answer(instance, text), instance.reference)


class SoundlyScored(BaseDomain):
    """For domains whose ground truth is their own sound checker (Game of 24, colouring,
    planning): a final reply is right exactly when `verify` accepts it (the default,
    named for the reader)."""

    def score(self, instance: Instance, text: str | None) -> bool:
        return text is not None and self.verify(instance, text).ok


class ReadsDataFile(BaseDomain):
    """For domains whose instances come only from a data file (no generator): `_read`
    turns the whole file into instances, and `load_instances` slices them."""

    file_format: str  # shown when the file is missing or malformed

    def load_instances(self, source: str | None, n: int | None = None, offset: int = 0) -> list[Instance]:
        if offset < 0 or (n is not None and n < 0):
            raise VeriloopError(f"offset and n must not be negative (got offset={offset}, n={n})")
        if source is None:
            raise VeriloopError(f"{self.name} needs a data file (--data PATH): {self.file_format}")
        instances = self._read(Path(source))
        end = None if n is None else offset + n
        return instances[offset:end]

    def _read(self, path: Path) -> list[Instance]:
        raise NotImplementedError


class ModelCritiqued(BaseDomain):
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


@runtime_checkable
class CriticDomain(Domain, CriticTask, Protocol):
    """A domain CRITIC can run on: the `Domain` members and the `CriticTask` ones."""


@runtime_checkable
class CodeTask(Protocol):
    """What the code verifiers (`visible`, `hidden`, `generated`) need from a domain on
    top of `Domain`: the answer is a function, and tests of it run in the sandbox. The
    domain's `verify` runs the problem's full tests (the `hidden` verifier's oracle)."""

    def entry_point(self, instance: Instance) -> str:
        """The name of the function the answer must define."""
        ...

    def function_stub(self, instance: Instance) -> str:
        """The function to write as the problem gives it (signature and docstring), which
        a model writing tests for it is shown."""
        ...

    def check_examples(self, instance: Instance, text: str) -> Verdict:
        """The examples the problem itself shows (a docstring's), run against the reply's
        function: sound for what they check, incomplete."""
        ...

    def check_asserts(self, instance: Instance, text: str, tests: list[str]) -> Verdict:
        """Assert statements naming the function, run against the reply's function."""
        ...


@runtime_checkable
class CriticSampling(Protocol):
    """A CRITIC task that sets its own sampling (math: top-p 0.5 for corrections;
    toxicity: top-p 0.9 throughout). A CRITIC task without it decodes greedily."""

    @property
    def critic_sampling(self) -> dict[str, float]:
        """CRITIC's sampling defaults: the keys temperature, top_p, correction_temperature
        and correction_top_p the domain sets, over greedy decoding."""
        ...


@runtime_checkable
class FunctionChecked(Protocol):
    """A domain whose check is a user's function (a `veriloop.Task`): what the function
    receives as its instance, whether there is one at all, and its name for the run's
    configuration."""

    @property
    def can_verify(self) -> bool:
        """Whether there is a check to run (a Task made without a check function has
        none, so the `sound` verifier refuses it)."""
        ...

    @property
    def check_name(self) -> str | None:
        """The check function's name, recorded in a run's configuration, or None."""
        ...

    def user_instance(self, instance: Instance) -> Any:
        """What the check function receives as its instance (the record as the user
        wrote it)."""
        ...


def capabilities() -> tuple[type, ...]:
    """Every optional capability, beyond the `BaseDomain` hooks, that a part of veriloop
    asks a domain about with `isinstance`; a plain domain wrapped by `as_base_domain` keeps
    them. The two a run's tools ask about (`SearchTask`: the search corpus that goes with
    a data file; `ToolUser`: take the run's tools) are declared in tools/config.py, below
    the domains, and imported here only when asked for, so checking an answer loads no tool."""
    from ..tools.config import SearchTask, ToolUser

    return SupportsStudies, CriticTask, CriticSampling, CodeTask, FunctionChecked, SearchTask, ToolUser
