"""A task from plain records: rows of fields, a prompt template and a check function.

`Task` is a full domain (a `BaseDomain`), so every strategy, feedback level, the runner, the cache and
the records work on it unchanged, with no subclass to write:

    task = Task.from_jsonl("questions.jsonl", prompt="Q: {question}\\nA:", check=is_valid,
                           reference_field="answer")

Inside a loop the built-in `sound` verifier runs the task's check. Ground truth (what
accuracy counts) is the reference field when there is one, compared after normalising
case, spaces and numbers; without a reference it is the check itself.

Rows are made storable as they are taken (lone surrogates replaced by U+FFFD, see
veriloop.records); a row that needed it is kept as a dict copy, which is what its check
receives.
"""

from __future__ import annotations

import asyncio
import json
import math
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .checks import DEFAULT_CHECK_TIMEOUT, CheckFunction, FunctionCheck, call_on_daemon_thread
from .datafiles import loads
from .domains.base import DEFAULT_REASK, DEFAULT_REJECTION, BaseDomain, rejection_feedback, shown_errors
from .errors import DataFileError, VeriloopError
from .records import Instance, Message, Verdict, storable

PromptSpec = str | Callable[[Any], str | Sequence[Message]]


def normalise(text: str) -> str:
    """Case- and space-insensitive form of an answer, as a number when it is one."""
    cleaned = " ".join(str(text).strip().strip(".").split()).casefold()
    number = _number(cleaned)
    if number is not None:
        return repr(number) if not number.is_integer() else str(int(number))
    return cleaned


def _number(text: str) -> float | None:
    try:
        value = float(text.replace(",", "").removeprefix("$"))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def same_answer(answer: str, reference: Any) -> bool:
    """The default comparison with a reference: equal numbers (to 1e-9, relatively), or
    equal text up to case and spacing."""
    a, b = _number(str(answer).strip()), _number(str(reference).strip())
    if a is not None and b is not None:
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return normalise(answer) == normalise(str(reference))


class Task(BaseDomain):
    """A domain made of records: rows of fields, a prompt template and a check function.

    Every strategy, feedback level, the runner, the cache and the records work on a Task
    as on a built-in domain. Ground truth (what accuracy counts) is the reference field
    when there is one, else the check itself. `Task.from_records(rows, prompt, check,
    ...)` and `Task.from_jsonl(path, prompt, check, ...)` take the same options as the
    constructor; the latter reads one JSON object per line and names the task after the
    file.

    Args:
        rows: The records: mappings of fields (dicts, JSON objects), one per instance.
        prompt: A template naming a row's fields ("Solve: {question}"; plain names only:
            no attribute, index, position, conversion or format spec), or a function
            from the row to the prompt text or to chat messages.
        check: A check function `check(row, answer)`, sync or async (see
            `veriloop.checks` for what it may return), or None (the default): then the
            `sound` verifier cannot judge the task, and only its reference field
            decides ground truth.
        reference_field: The field that holds each row's right answer (default None:
            no reference; the check is then the ground truth).
        id_field: The field that holds each row's id (default None: its position,
            counted from 1).
        name: The task's name in records and run directories (default "task").
        system: A system message put before every prompt (default: none).
        extract: A function `extract(reply)` that picks the answer out of a reply
            (default: the whole reply, stripped).
        compare: A function `compare(answer, reference)` that decides ground truth
            against `reference_field` (default: `same_answer`: equal numbers, or equal
            text up to case and spacing).
        answer_tokens: The most tokens one answer may take (default 512).
        rejection: The backprompt's first words (default "Your answer is not
            correct"); the backprompt reads "<rejection>: <error>." and then `reask`
            on the next line.
        reask: The backprompt's request to answer again (default "Please give a
            corrected answer.").
        description: A line describing the task, recorded with its runs (default:
            "a task of '<name>' from records").
        critic_tools: The tools CRITIC's critic may call on this task (e.g.
            ("python", "calculator"); default: none).
        max_corrections: CRITIC's correction budget on this task (default 3).
        check_timeout: The seconds the check may take on one answer before the run
            stops with a `CheckError` (default 60; None: no limit).

    Raises:
        VeriloopError: When a row is not a mapping, two rows have the same id, a row
            lacks the `id_field` or `reference_field`, or the prompt template is not
            plain field names or names a field that a row lacks.
        CheckError: When a check is given and `check_timeout` is neither a positive
            number nor None.

    Examples:
        ```python
        import veriloop

        def digits_only(row, answer):
            return "" if answer.isdigit() else "answer with digits only"

        rows = [{"q": "2+2", "a": "4"}, {"q": "3+3", "a": "6"}]
        task = veriloop.Task(rows, prompt="What is {q}?", check=digits_only, reference_field="a", name="sums")
        assert task.prompt(task.instances[1]) == [{"role": "user", "content": "What is 3+3?"}]
        replies = {"What is 2+2?": ["four", "4"], "What is 3+3?": ["6"]}
        [summary] = veriloop.evaluate(task, ["backprompt"], model=lambda m: replies[m[0]["content"]].pop(0),
                                      out="runs/sums", cache=False, progress=False)
        print(task, summary.accuracy, summary.mean_rounds)
        assert (summary.correct, summary.mean_rounds) == (2, 1.5)
        ```
    """

    def __init__(
        self,
        rows: Iterable[Mapping[str, Any]],
        prompt: PromptSpec,
        check: CheckFunction | None = None,
        *,
        reference_field: str | None = None,
        id_field: str | None = None,
        name: str = "task",
        system: str | None = None,
        extract: Callable[[str], str | None] | None = None,
        compare: Callable[[str, Any], bool] | None = None,
        answer_tokens: int = 512,
        rejection: str = DEFAULT_REJECTION,
        reask: str = DEFAULT_REASK,
        description: str | None = None,
        critic_tools: Sequence[str] = (),
        max_corrections: int = 3,
        check_timeout: float | None = DEFAULT_CHECK_TIMEOUT,
    ) -> None:
        self.name = name
        self.description = description or f"a task of {name!r} from records"
        self.answer_tokens = answer_tokens
        self.prompt_spec = prompt
        self.system = system
        self.reference_field = reference_field
        self.id_field = id_field
        self.rejection = rejection
        self.reask = reask
        self._extract = extract
        self._compare = compare or same_answer
        self.critic_tools = tuple(critic_tools)
        self.max_corrections = max_corrections
        self.check_function = check
        self.checker = FunctionCheck(check, timeout=check_timeout) if check is not None else None
        self._rows: dict[str, Any] = {}
        self._verdicts: dict[tuple[str, str], Verdict] = {}
        self.instances: list[Instance] = []
        for position, row in enumerate(rows, start=1):
            if not isinstance(row, Mapping):
                raise VeriloopError(f"{name}: record {position} is a {type(row).__name__}, not a mapping of fields")
            row = _storable_row(row)
            instance = self._instance(row, default_id=str(position))
            if instance.id in self._rows:
                raise VeriloopError(f"{name}: two records have the id {instance.id!r} (field {id_field!r})")
            self._rows[instance.id] = row
            self.instances.append(instance)
        if isinstance(prompt, str):
            self._check_template(prompt)

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_records(cls, rows: Iterable[Mapping[str, Any]], prompt: PromptSpec, check: CheckFunction | None = None,
                     **options: Any) -> Task:
        """A task from an iterable of mappings (see the class for the options)."""
        return cls(rows, prompt, check, **options)

    @classmethod
    def from_jsonl(cls, path: str | Path, prompt: PromptSpec, check: CheckFunction | None = None,
                   **options: Any) -> Task:
        """A task from a JSON-lines file, one object per line (blank lines skipped). The
        task is named after the file unless `name` is given."""
        path = Path(path)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise DataFileError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
        rows = []
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = loads(line)
            except ValueError as exc:
                raise DataFileError(f"{path}, line {lineno}: not JSON ({exc.args[0]})") from None
            if not isinstance(row, dict):
                raise DataFileError(f"{path}, line {lineno}: expected a JSON object of fields, got a {type(row).__name__}")
            rows.append(row)
        if not rows:
            raise DataFileError(f"{path} holds no records (expected one JSON object per line)")
        options.setdefault("name", path.stem)
        options.setdefault("description", f"records of {path}")
        return cls(rows, prompt, check, **options)

    @classmethod
    def single(cls, prompt: str | Sequence[Message], check: CheckFunction | None = None, *, instance: Any = None,
               reference: Any = None, **options: Any) -> Task:
        """A one-instance task: the prompt as given (text or chat messages); the check
        receives `instance` (default: the prompt itself) and the answer; `reference`, if
        given, is the ground truth."""
        fixed = prompt if isinstance(prompt, str) else [dict(m) for m in prompt]
        options.setdefault("name", "prompt")
        row = {} if reference is None else {"reference": reference}
        if reference is not None:
            options["reference_field"] = "reference"
        task = cls([row], lambda _row: fixed, check, **options)
        task._rows[task.instances[0].id] = prompt if instance is None else instance
        return task

    def _instance(self, row: Mapping[str, Any], default_id: str) -> Instance:
        ident = default_id
        if self.id_field is not None:
            if self.id_field not in row:
                raise VeriloopError(f"{self.name}: record {default_id} has no id field {self.id_field!r}")
            ident = str(row[self.id_field])
        reference = None
        if self.reference_field is not None:
            if self.reference_field not in row:
                raise VeriloopError(
                    f"{self.name}: record {ident} has no reference field {self.reference_field!r} "
                    f"(its fields: {', '.join(map(str, row)) or 'none'})"
                )
            reference = row[self.reference_field]
        return Instance(id=ident, data=_jsonable(row), reference=_jsonable(reference))

    def _check_template(self, template: str) -> None:
        """A template names plain fields only ({question}): str.format would otherwise read
        attributes and items of a row's values ({question.__class__.__mro__}), fill fields
        nested in a format spec, and take positions ({0}, {}) that no row has."""
        try:
            parts = list(string.Formatter().parse(template))
        except ValueError as exc:
            raise VeriloopError(f"{self.name}: bad prompt template {template!r}: {exc}") from None
        for _, field, spec, conversion in parts:
            if field is None:
                continue
            if not field.isidentifier() or spec or conversion:
                shown = "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
                quoted = repr(template) if len(template) <= 80 else repr(template[:77] + "...")
                raise VeriloopError(
                    f"{self.name}: the prompt template {quoted} uses {shown}; a template names fields only, as "
                    "{question} (no attribute, index, position, conversion or format spec): use a prompt function "
                    "for more"
                )
            for instance in self.instances:
                if field not in self._rows[instance.id]:
                    raise VeriloopError(
                        f"{self.name}: record {instance.id} has no field {field!r} used by the prompt template "
                        f"(its fields: {', '.join(map(str, self._rows[instance.id])) or 'none'})"
                    )

    # ------------------------------------------------------------------ the domain contract (BaseDomain)

    @property
    def can_verify(self) -> bool:
        """Whether the `sound` verifier can judge this task (it runs the check)."""
        return self.checker is not None

    @property
    def check_name(self) -> str | None:
        """The check function's name (recorded in a run's configuration), None without one."""
        return self.checker.name if self.checker is not None else None

    def user_instance(self, instance: Instance) -> Any:
        """What a check function receives as its instance: the record as the user gave it
        (a copy if its text had to be made storable)."""
        return self._rows.get(instance.id, instance.data)

    def parse_instance(self, raw: dict[str, Any]) -> Instance:
        row = _storable_row(raw)
        instance = self._instance(row, default_id=str(len(self._rows) + 1))
        self._rows.setdefault(instance.id, row)
        return instance

    def load_instances(self, source: str | None, n: int | None = None, offset: int = 0) -> list[Instance]:
        if source is not None:
            raise VeriloopError(f"{self.name} is made of its own records; it reads no data file ({source})")
        if offset < 0 or (n is not None and n < 0):
            raise VeriloopError(f"offset and n must not be negative (got offset={offset}, n={n})")
        return self.instances[offset: None if n is None else offset + n]

    def prompt(self, instance: Instance) -> list[Message]:
        row = self.user_instance(instance)
        if isinstance(self.prompt_spec, str):
            rendered: Any = self.prompt_spec.format(**row)
        else:
            rendered = self.prompt_spec(row)
        if isinstance(rendered, str):
            messages: list[Message] = [{"role": "user", "content": rendered}]
        else:
            messages = [dict(m) for m in rendered]
            if not messages or any(set(m) != {"role", "content"} for m in messages):
                raise VeriloopError(f"{self.name}: the prompt function must return text or role/content messages")
        if self.system is not None and messages[0]["role"] != "system":
            messages.insert(0, {"role": "system", "content": self.system})
        return messages

    def extract_answer(self, instance: Instance, text: str) -> str | None:
        if self._extract is not None:
            return self._extract(text)
        return text.strip() or None

    def canonical(self, instance: Instance, answer: str | None) -> str | None:
        return None if answer is None else normalise(answer)

    def matches(self, answer: str | None, reference: Any) -> bool:
        return answer is not None and bool(self._compare(answer, reference))

    async def averify(self, instance: Instance, text: str) -> Verdict:
        """The check on a reply (what the `sound` verifier calls on a task)."""
        if self.checker is None:
            raise VeriloopError(
                f"{self.name} has no check function, so the sound verifier cannot judge it; give check=... "
                "(--check on the command line) or use verifier=llm"
            )
        key = (instance.id, text)
        if key not in self._verdicts:
            answer = self.extract_answer(instance, text)
            self._verdicts[key] = await self.checker.check(
                instance, self.user_instance(instance), text if answer is None else answer
            )
        return self._verdicts[key]

    def verify(self, instance: Instance, text: str) -> Verdict:
        """The check, outside an event loop (an async check runs on a helper thread)."""
        key = (instance.id, text)
        if key in self._verdicts:
            return self._verdicts[key]
        coroutine = self.averify(instance, text)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coroutine)
        # Called from inside a loop (ground truth of a reply no verifier looked at): the
        # check gets a loop of its own on another thread. This loop waits, blocked; Ctrl-C
        # still ends the wait at once, and the check's time limit runs on that other loop.
        return call_on_daemon_thread(lambda: asyncio.run(coroutine))

    def score(self, instance: Instance, text: str | None) -> bool:
        if text is None:
            return False
        if self.reference_field is not None:
            answer = self.extract_answer(instance, text)
            return answer is not None and instance.reference is not None and self.matches(answer, instance.reference)
        if self.checker is None:
            return False
        return self.verify(instance, text).ok

    def feedback(self, instance: Instance, verdict: Verdict, level: str) -> str:
        return rejection_feedback(shown_errors(verdict, level), level, self.rejection, self.reask)

    # ------------------------------------------------------------------ CRITIC (CriticTask)
    # No tool bears on a record's answer by itself, so the model writes every critique,
    # calling the run's tools (`critic_tools`) as it sees fit.

    def evidence(self, instance: Instance, text: str) -> list[tuple[str, str]]:
        return []

    def verify_instructions(self, instance: Instance) -> str:
        return ("Check whether the proposed answer is correct and complete for the task above. "
                "Name each mistake you find, with the reason it is a mistake.")

    def tool_critique(self, instance: Instance, text: str, observations: list[Any]) -> str | None:
        return None

    def good_enough(self, instance: Instance, text: str, observations: list[Any]) -> bool | None:
        return None

    def correction_request(self, instance: Instance) -> str:
        return "Taking the check into account, give a corrected answer to the task, in the form it asks for."

    def metrics(self, instance: Instance, text: str | None) -> dict[str, float]:
        return {"accuracy": float(self.score(instance, text))}

    def sample_metric(self, instance: Instance, text: str) -> float:
        """What rejection sampling maximises: ground truth, as for the CRITIC tasks (it reads
        the reference, or runs the check)."""
        return float(self.score(instance, text))

    def __repr__(self) -> str:
        check = self.checker.name if self.checker else None
        return f"Task({self.name!r}, {len(self.instances)} records, check={check})"


def _storable_row(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The row with its text made storable (see veriloop.records): the row itself when it
    needed nothing, else a dict of its fields, so a check sees the text the model saw."""
    fields = row if isinstance(row, dict) else dict(row)
    cleaned = storable(fields)
    return row if cleaned is fields else cleaned


def _jsonable(value: Any) -> Any:
    """The value as JSON would carry it (records may hold tuples, sets, dates...)."""
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return str(value)

