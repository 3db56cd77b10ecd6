"""`PlanningDomain`: a STRIPS domain from a template and PDDL files, as a veriloop domain.
It turns the task into prompts (with a worked example), reads plans back in the
template's words or in PDDL, checks them by simulation (`pddl_model`, `compiled`), words
feedback like VAL's report, and gives the studies their candidates and critique report.
Blocksworld and Mystery Blocksworld are two of its templates.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from ...errors import DataFileError, VeriloopError
from ..base import Candidate, Instance, Message, SoundlyScored, Verdict, VerdictError, shown_errors
from .language import (
    Language,
    Step,
    Template,
    check_template,
    competing_plan,
    join_words,
    load_template,
    normalise,
    parse_plan,
    read_plan,
)
from .pddl_model import GroundAction, Literal, Task, load_task, parse_pddl_step, read_text
from .planner import (
    DEFAULT_BLOCKS,
    DEFAULT_TIME_LIMIT,
    TOWER_FACTS,
    PlannerError,
    PlanTooLargeError,
    generate_problems,
    optimal_plan,
)

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
DEFAULT_COUNT = 100  # generated problems when no n is given, as many as the paper used
DEFAULT_SEED = 0
EXAMPLE_SEED = 9_999  # the prompt's worked example comes from a stream no instance uses

_REASK = "Please write a corrected plan for the same problem: one action per line, then [PLAN END]."
_INVALID = "The plan above is not valid."

_STEP_REF_RE = re.compile(r"\b(?:step|action)s?\s+(?:number\s+|no\s+)?(\d{1,4})\b")
_CUE_RE = re.compile(
    r"\b(?:cannot|can not|could not|unable|not possible|impossible|inexecutable|unexecutable|not executable|"
    r"not applicable|inapplicable|not allowed|not valid|invalid|fail\w*|violat\w*|unmet|not met|not satisfied|"
    r"unsatisfied|illegal|not (?:be )?(?:performed|done|executed|carried out)|error)\b"
)
_CLAUSE_SPLIT_RE = re.compile(r"[.!?;\n]+|\bbut\b", re.IGNORECASE)
_NEGATION_RE = re.compile(r"\b(?:not|no longer|never)\b")


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _natural_key(path: Path) -> tuple[int, int, str]:
    numbers = re.findall(r"\d+", path.stem)
    return (0, int(numbers[-1]), path.name) if numbers else (1, 0, path.name)


def _atom_list(atoms: Any) -> list[list[str]]:
    return [list(a) for a in atoms]


@lru_cache(maxsize=2048)
def _language(template: Template | None, task: Task) -> Language:
    if template is not None:
        check_template(template, task)
    return Language(template, task)


class PlanningDomain(SoundlyScored):
    """A STRIPS domain given by a template (or none: PDDL in and out) and PDDL files."""

    name: str = "planning"
    description: str = "STRIPS planning from PDDL files: write a plan, checked by simulation."
    # A 12-step Blocksworld plan in words is about 150 tokens; the cap stops rambling.
    answer_tokens: int = 300
    # The paper's critique format: the first failing action and its unmet preconditions.
    judge_fields = {
        "failing_step": "the number of the first step that cannot be carried out, or null",
        "unmet_preconditions": "what that step needs that does not hold, in words",
    }

    def __init__(self, template: str | Path | None = None, name: str | None = None) -> None:
        self.template: Template | None = None
        if template is not None:
            self._take_template(Path(template))
        if name:
            self.name = name

    def _take_template(self, path: Path) -> None:
        """Word this domain by the template at `path`, under the template's name."""
        self.template = load_template(path)
        self.name = self.template.name
        self.description = self.template.description or self.description

    # -------------------------------------------------------------- instances

    @property
    def instance_fields(self) -> dict[str, str]:
        """The fields of a batch line (`veriloop verify --batch`) besides "answer", with an
        example; a domain with its own PDDL domain file needs only the problem."""
        problem = {"problem": "<PDDL problem text>"}
        if self.template is not None and self.template.domain_file is not None:
            return problem
        return {"domain": "<PDDL domain text>", **problem}

    def _default_domain(self) -> tuple[str, str]:
        if self.template is None or self.template.domain_file is None:
            raise VeriloopError(f"domain {self.name} has no PDDL domain file of its own; give one with the problem")
        path = self.template.domain_file
        return read_text(path, "PDDL domain"), str(path)

    def _task(self, instance: Instance) -> Task:
        data = instance.data
        try:
            return load_task(
                data["domain_pddl"],
                data["problem_pddl"],
                data.get("domain_source", "<domain>"),
                data.get("problem_source", instance.id),
            )
        except KeyError as exc:
            raise VeriloopError(f"instance {instance.id} is not a planning instance (no {exc.args[0]})") from None

    def _language(self, task: Task) -> Language:
        return _language(self.template, task)

    def _make(
        self, id: str, domain: tuple[str, str], problem: tuple[str, str], plan: list[GroundAction] | None = None
    ) -> Instance:
        """An instance; `plan` is an optimal plan when one is at hand (generated problems).
        Without one nothing is solved here: checking needs no plan, and solving can take
        minutes (`reference_plan` solves on demand)."""
        task = load_task(domain[0], problem[0], domain[1], problem[1])
        self._language(task)  # the template must fit the domain before anything is shown
        data: dict[str, Any] = {
            "domain_name": task.domain.name,
            "problem_name": task.problem.name,
            "domain_pddl": domain[0],
            "domain_source": domain[1],
            "problem_pddl": problem[0],
            "problem_source": problem[1],
            "objects": list(task.problem.objects),
            "init": _atom_list(sorted(task.problem.init)),
            "goal": [list(a) if positive else ["not", *a] for a, positive in task.problem.goal],
        }
        if plan is None:
            return Instance(id=id, data=data)
        data["optimal_length"] = len(plan)
        return Instance(id=id, data=data, reference="\n".join(a.pddl() for a in plan))

    def parse_instance(self, raw: dict[str, Any]) -> Instance:
        """{"domain_file": path, "problem": path}, {"domain": "<pddl>", "problem": "<pddl>"},
        or {"problem": ...} alone for this domain's own PDDL domain."""
        if not isinstance(raw, dict) or not ("problem" in raw or "problem_file" in raw):
            raise VeriloopError(
                'a planning instance is {"domain_file": <path>, "problem": <path>} or '
                '{"domain": "<PDDL text>", "problem": "<PDDL text>"}; got ' + repr(raw)[:100]
            )

        def text_or_file(value: Any, what: str) -> tuple[str, str]:
            if not isinstance(value, str) or not value.strip():
                raise VeriloopError(f"the {what} must be PDDL text or a file path; got {value!r}"[:200])
            if "(define" in value.lower():
                return value, f"<{what} text>"
            return read_text(Path(value).expanduser(), f"PDDL {what}"), value

        domain_value = raw.get("domain_file", raw.get("domain"))
        domain = self._default_domain() if domain_value is None else text_or_file(domain_value, "domain")
        problem = text_or_file(raw.get("problem_file", raw.get("problem")), "problem")
        stem = Path(problem[1]).stem if not problem[1].startswith("<") else None
        instance = self._make(f"{self.name}-tmp", domain, problem)
        label = stem or instance.data["problem_name"]
        return instance.model_copy(update={"id": f"{self.name}-{label}"})

    def load_instances(self, source: str | None, n: int | None = None, offset: int = 0) -> list[Instance]:
        """A folder with domain.pddl and instances/*.pddl (by number), or None for
        generated problems of 3-5 blocks (needs a template with a [generator] table)."""
        if offset < 0 or (n is not None and n < 0):
            raise VeriloopError(f"offset and n must not be negative (got offset={offset}, n={n})")
        if source is None:
            return self._generated(offset, DEFAULT_COUNT if n is None else n)
        return self._from_folder(Path(source).expanduser(), offset, n)

    def _generator_mapping(self) -> dict[str, str]:
        generator = None if self.template is None else self.template.generator
        if generator is None:
            raise VeriloopError(f"domain {self.name} cannot generate problems; give a folder of PDDL problems")
        missing = [f for f in TOWER_FACTS if f not in generator]
        if missing:
            assert self.template is not None
            raise DataFileError(f"{self.template.path}: [generator] needs {', '.join(missing)}")
        return {k: v for k, v in generator.items() if k in TOWER_FACTS}

    def _generated(self, offset: int, n: int) -> list[Instance]:
        mapping = self._generator_mapping()
        domain = self._default_domain()
        problems = generate_problems(offset + n, DEFAULT_BLOCKS, DEFAULT_SEED, domain[0], mapping, prefix=self.name)
        out: list[Instance] = []
        for p in problems[offset:]:
            plan = [a for a in (parse_pddl_step(s) for s in p.plan) if a is not None]
            out.append(self._make(p.name, domain, (p.problem_pddl, p.name), plan))
        return out

    def _from_folder(self, folder: Path, offset: int, n: int | None) -> list[Instance]:
        hint = "expected a folder holding domain.pddl and instances/*.pddl"
        if not folder.is_dir():
            raise DataFileError(f"{folder}: not a folder; {hint}")
        domain_path = folder / "domain.pddl"
        if not domain_path.is_file():
            raise DataFileError(f"{domain_path}: file not found; {hint}")
        problem_dir = folder / "instances"
        if problem_dir.is_dir():
            files = list(problem_dir.glob("*.pddl"))
        else:
            files = [p for p in folder.glob("*.pddl") if p.name != "domain.pddl"]
        if not files:
            raise DataFileError(f"{folder}: no problem files; {hint}")
        # A new STRIPS domain is only data: a template.toml beside domain.pddl gives the
        # generic planning domain its words, with no Python and no registry line.
        if self.template is None and (folder / "template.toml").is_file():
            self._take_template(folder / "template.toml")
        files.sort(key=_natural_key)
        end = None if n is None else offset + n
        domain = (read_text(domain_path, "PDDL domain"), str(domain_path))
        return [
            self._make(f"{self.name}-{path.stem}", domain, (read_text(path, "PDDL problem"), str(path)))
            for path in files[offset:end]
        ]

    # -------------------------------------------------------------- prompts

    def _state(self, lang: Language, atoms: list[Literal]) -> str:
        order = {p: i for i, p in enumerate(lang.template.predicates if lang.template else lang.task.domain.predicates)}
        ordered = sorted(atoms, key=lambda lit: (order.get(lit[0][0], len(order)), not lit[1], lit[0]))
        return join_words([lang.literal(lit) for lit in ordered])

    def _statement(self, lang: Language, task: Task) -> str:
        start = self._state(lang, [(a, True) for a in task.problem.init])
        goal = self._state(lang, list(task.problem.goal))
        return f"[STATEMENT]\nStarting state: {start}.\nGoal: {goal}."

    def _domain_text(self, lang: Language) -> str:
        if lang.is_pddl:
            return (
                "Here is a planning domain in PDDL:\n\n" + lang.task.domain.text.strip() + "\n\n"
                "And a problem of that domain:\n\n" + lang.task.problem.text.strip()
            )
        assert self.template is not None
        forms = "\n".join(f[:1].upper() + f[1:] for f in lang.action_forms())
        return f"{self.template.intro}\n\n{forms}\n\nThe rules:\n{lang.rules()}"

    def _example(self, task: Task) -> tuple[Task, list[GroundAction]] | None:
        if self.template is None or self.template.generator is None:
            return None
        try:
            worked = _worked_examples(task.domain.text, tuple(sorted(self._generator_mapping().items())))
        except VeriloopError:
            return None
        for text, plan in worked:
            example = load_task(task.domain.text, text, task.domain.source, "<example>")
            same = example.problem.init == task.problem.init and example.problem.goal == task.problem.goal
            if not same:
                return example, plan
        return None

    def prompt(self, instance: Instance) -> list[Message]:
        task = self._task(instance)
        lang = self._language(task)
        parts = [self._domain_text(lang)]
        if not lang.is_pddl:
            example = self._example(task)
            if example is not None:
                ex_task, plan = example
                ex_lang = self._language(ex_task)
                lines = "\n".join(ex_lang.action(a) for a in plan)
                parts.append(f"{self._statement(ex_lang, ex_task)}\n\nPlan:\n[PLAN]\n{lines}\n[PLAN END]")
            parts.append(self._statement(lang, task))
            sample = self._sample_action(lang)
            parts.append(
                "Write a plan that reaches this goal: one action per line, worded exactly like the actions "
                f"above (for example `{sample}`), nothing else, and finish with [PLAN END]."
            )
        else:
            parts.append(
                "Write a plan that solves the problem: one PDDL action per line, like `(action object ...)`, "
                "nothing else, and finish with [PLAN END]."
            )
        system = (self.template.system if self.template else "") or (
            "You are a careful planner. You answer with a plan only: one action per line, then [PLAN END]."
        )
        return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]

    @staticmethod
    def _sample_action(lang: Language) -> str:
        schemas = sorted(lang.task.domain.actions.values(), key=lambda s: -s.arity)
        objects = lang.task.objects
        for schema in schemas:
            if len(objects) >= schema.arity:
                return lang.action(GroundAction(schema.name, tuple(objects[: schema.arity])))
        return lang.action(GroundAction(schemas[-1].name, tuple(objects[:1] * schemas[-1].arity)))

    def judge_task(self, instance: Instance) -> str:
        task = self._task(instance)
        lang = self._language(task)
        statement = self._statement(lang, task).removeprefix("[STATEMENT]\n")
        return (
            f"{self._domain_text(lang)}\n\n{statement}\n\n"
            "A plan is correct when, starting from the starting state, every action in turn is allowed "
            "by the rules in the state the earlier actions produce, and every goal condition holds after the last one."
        )

    # -------------------------------------------------------------- answers

    def _steps(self, instance: Instance, text: str) -> tuple[Task, Language, list[Step]]:
        task = self._task(instance)
        lang = self._language(task)
        return task, lang, parse_plan(lang, text)

    def parse_plan(self, instance: Instance, text: str) -> list[Step]:
        """Each action line of the plan in `text`, read into an action or marked unreadable."""
        return self._steps(instance, text)[2]

    def extract_answer(self, instance: Instance, text: str) -> str | None:
        """The plan, one action per line, in the domain's own wording (PDDL without a
        template); unreadable lines are kept as written so they are still reported. None
        for a reply `verify` rejects as offering several plans, so the answer a run records
        is the one its verdict judged."""
        _, lang, steps = self._steps(instance, text)
        # A reply with a plan is malformed only when it offers another: checked first, as
        # it is cheap and nearly always false.
        if not steps or (competing_plan(lang, text) and self.verify(instance, text).malformed):
            return None
        return "\n".join(lang.action(s.action) if s.action else s.text for s in steps)

    def canonical(self, instance: Instance, answer: str | None) -> str | None:
        """The plan in PDDL syntax, `(stack a b)` per line: equal plans vote together."""
        if answer is None:
            return None
        steps = self.parse_plan(instance, answer)
        if not steps:
            return None
        return "\n".join(s.action.pddl() if s.action else normalise(s.text) for s in steps)

    def verify(self, instance: Instance, text: str) -> Verdict:
        task = self._task(instance)
        lang = self._language(task)
        reads = read_plan(lang, text)  # what `parse_plan` gives, without a Step per line
        if not reads:
            sample = self._sample_action(lang)
            return Verdict(
                ok=False,
                malformed=True,
                errors=[
                    VerdictError(
                        kind="malformed",
                        message=f"No plan was found. Write one action per line, like `{sample}`, then [PLAN END].",
                    )
                ],
            )
        # Errors as plain dicts, validated into VerdictErrors in one go with the verdict:
        # a failing plan has several, and one validation costs less than one per error.
        errors: list[dict[str, str]] = []
        actions = [read[1] for read in reads]
        if None in actions:  # only an unreadable line has no action: most plans skip this loop
            for number, (line, _, error, detail) in enumerate(reads, 1):
                if error:
                    errors.append(
                        {
                            "kind": error,
                            "message": f"Step {number} cannot be read as an action ({_short(detail)}):\n{_short(line)}",
                            "where": f"step {number}",
                        }
                    )
        sim = task.simulate(actions)
        for index, action, unmet in sim.failures:
            needs = "\n".join([lang.literal(lit) for lit in unmet])
            which = "this, which does not hold" if len(unmet) == 1 else "these, which do not hold"
            errors.append(
                {
                    "kind": "inexecutable",
                    "message": f"Step {index + 1} cannot be carried out:\n{lang.action(action)}\n"
                    f"It needs {which} at that point:\n{needs}",
                    "where": f"step {index + 1}",
                }
            )
        for lit in sim.unmet_goals:
            errors.append(
                {
                    "kind": "unmet_goal",
                    "message": f"After the last step this goal condition does not hold:\n{lang.literal(lit)}",
                    "where": "goal",
                }
            )
        if not errors and competing_plan(lang, text):
            # Checked only for a plan that would pass: a reply that fails fails either way.
            message = (
                "The reply gives more than one plan and does not say which is final. "
                "Write one plan only: one action per line, then [PLAN END]."
            )
            return Verdict(ok=False, malformed=True, errors=[VerdictError(kind="malformed", message=message)])
        return Verdict.model_validate({"ok": not errors, "errors": errors})

    def feedback(self, instance: Instance, verdict: Verdict, level: str) -> str:
        shown = shown_errors(verdict, level)
        if not shown:
            return f"{_INVALID} {_REASK}"
        lines = [_INVALID, *(e.message for e in shown)]
        if any(e.kind in ("unknown_action", "unknown_object", "malformed") for e in shown):
            # Said once, not per step: how actions must be worded.
            forms = "; ".join(self._language(self._task(instance)).action_forms())
            lines.append(f"Actions are written like: {forms}.")
        return "\n".join([*lines, _REASK])

    # -------------------------------------------------------------- studies

    def reference_plan(self, instance: Instance, time_limit: float = DEFAULT_TIME_LIMIT) -> list[GroundAction] | None:
        """An optimal plan: the instance's own (generated problems carry one), else the
        planner's, solved on first use and kept for the process. None when the problem
        has no plan or the planner cannot read it (e.g. negative preconditions);
        PlanTooLargeError when it takes longer than `time_limit` seconds."""
        if instance.reference:
            plan = [parse_pddl_step(line) for line in str(instance.reference).splitlines() if line.strip()]
            if all(a is not None for a in plan):
                return [a for a in plan if a is not None]
        try:
            return optimal_plan(self._task(instance), time_limit)
        except PlanTooLargeError:
            raise
        except PlannerError:
            return None

    def optimal_length(self, instance: Instance, time_limit: float = DEFAULT_TIME_LIMIT) -> int | None:
        """The number of steps of a shortest plan, None when unknown (see `reference_plan`)."""
        known = instance.data.get("optimal_length")
        if isinstance(known, int):
            return known
        plan = self.reference_plan(instance, time_limit)
        return None if plan is None else len(plan)

    def _plan_text(self, lang: Language, plan: list[GroundAction]) -> str:
        return "\n".join(lang.action(a) for a in plan) + "\n[PLAN END]"

    def _candidate(
        self, instance: Instance, lang: Language, kind: str, plan: list[GroundAction], note: str = ""
    ) -> Candidate:
        text = self._plan_text(lang, plan)
        return Candidate(kind=kind, text=text, correct=self.score(instance, text), note=note)

    def candidates(self, instance: Instance, rng: Any) -> list[Candidate]:
        """correct (the planner's optimal plan), ablated (one step replaced by another
        action or one argument changed, so the plan fails) and random (random actions,
        the optimal plan's length)."""
        task = self._task(instance)
        lang = self._language(task)
        plan = self.reference_plan(instance)
        every = task.ground_actions()
        # Plans a model would write name different objects in one action.
        distinct = [a for a in every if len(set(a.args)) == len(a.args)] or every
        out: list[Candidate] = []
        if plan:
            out.append(self._candidate(instance, lang, "correct", plan))
            ablated = self._ablate(instance, task, lang, plan, distinct, rng)
            if ablated is not None:
                out.append(ablated)
        length = len(plan) if plan else max(2, len(task.problem.goal) * 2)
        random_plan = [rng.choice(distinct) for _ in range(length)]
        out.append(self._candidate(instance, lang, "random", random_plan))
        return out

    def _ablate(
        self,
        instance: Instance,
        task: Task,
        lang: Language,
        plan: list[GroundAction],
        distinct: list[GroundAction],
        rng: Any,
    ) -> Candidate | None:
        positions = list(range(len(plan)))
        rng.shuffle(positions)
        objects = task.objects
        for i in positions:
            old = plan[i]
            changes: list[tuple[GroundAction, str]] = []
            for j, arg in enumerate(old.args):
                for other in objects:
                    if other != arg:
                        new = GroundAction(old.name, old.args[:j] + (other,) + old.args[j + 1 :])
                        if task.check_arguments(new) is None and len(set(new.args)) == len(new.args):
                            changes.append((new, f"step {i + 1}: argument {j + 1} {arg} -> {other}"))
            changes += [(a, f"step {i + 1}: {old.pddl()} -> {a.pddl()}") for a in distinct if a.name != old.name]
            rng.shuffle(changes)
            # Alternate the two kinds of change so neither dominates the study.
            if rng.random() < 0.5:
                changes.sort(key=lambda c: "argument" not in c[1])
            else:
                changes.sort(key=lambda c: "argument" in c[1])
            for new, note in changes:
                broken = plan[:i] + [new] + plan[i + 1 :]
                cand = self._candidate(instance, lang, "ablated", broken, note=note)
                if not cand.correct:
                    return cand
        return None

    def critique_report(self, instance: Instance, answer_text: str, critique: str) -> dict[str, float]:
        """How a critique of a plan matches the simulation (the paper's Tables A5-A6):

        names_failing_action      1 if it names the first failing step (by number or by its action)
        names_unmet_precondition  1 if it names an unmet precondition of that step
        names_unmet_goal          1 if the plan runs but misses goals and it names one of them
        false_failure_claims      steps it says fail that actually run (before the first failure)
        """
        task, lang, steps = self._steps(instance, answer_text)
        sim = task.simulate([s.action for s in steps])
        first_unknown = next((s for s in steps if s.error), None)
        first_failure = sim.failures[0] if sim.failures else None
        # Where VAL would stop: an unreadable step or the first action whose preconditions fail.
        fail_index: int | None = None
        if first_unknown is not None:
            fail_index = first_unknown.number - 1
        if first_failure is not None and (fail_index is None or first_failure[0] < fail_index):
            fail_index = first_failure[0]
        executed = {i for i in sim.executed if fail_index is None or i < fail_index}

        text = lang.words_for_pddl(critique[:20_000])
        whole = normalise(text)
        unnegated = _NEGATION_RE.sub(" ", whole)
        unnegated = " ".join(unnegated.split())

        def says(phrase: str) -> bool:
            key = normalise(phrase)
            return bool(key) and re.search(rf"(?<!\w){re.escape(key)}(?!\w)", unnegated) is not None

        claimed_steps: set[int] = set()
        claimed_actions: list[GroundAction] = []
        for clause in _CLAUSE_SPLIT_RE.split(text):
            norm = normalise(clause)
            cue = _CUE_RE.search(norm)
            if cue is None:
                continue
            refs = [int(m.group(1)) for m in _STEP_REF_RE.finditer(norm)]
            if refs:
                claimed_steps.update(r - 1 for r in refs)
                continue
            mentions = lang.mentioned_actions(norm)
            after = [a for pos, a in mentions if pos >= cue.start()]
            before = [a for pos, a in mentions if pos < cue.start()]
            if after:
                claimed_actions.append(after[0])
            elif before:
                claimed_actions.append(before[-1])

        names_failing = 0.0
        names_pre = 0.0
        names_goal = 0.0
        if fail_index is not None:
            failing = steps[fail_index]
            by_action = failing.action is not None and failing.action in claimed_actions
            by_text = failing.action is None and normalise(failing.text) in whole
            names_failing = float(fail_index in claimed_steps or by_action or by_text)
            if first_failure is not None and first_failure[0] == fail_index:
                names_pre = float(any(says(lang.atom(atom)) for atom, _ in first_failure[2]))
        elif sim.unmet_goals:
            names_goal = float(any(says(lang.atom(atom)) for atom, _ in sim.unmet_goals))

        false_steps = {i for i in claimed_steps if i in executed}
        for action in claimed_actions:
            where = [i for i, s in enumerate(steps) if s.action == action]
            if fail_index is not None and fail_index in where:
                continue
            ran = [i for i in where if i in executed]
            if ran:
                false_steps.add(ran[0])
        return {
            "names_failing_action": names_failing,
            "names_unmet_precondition": names_pre,
            "names_unmet_goal": names_goal,
            "false_failure_claims": float(len(false_steps)),
        }


@lru_cache(maxsize=16)
def _worked_examples(domain_text: str, mapping: tuple[tuple[str, str], ...]) -> list[tuple[str, list[GroundAction]]]:
    """A few small solved problems for the prompt's example, longest-enough first."""
    problems = generate_problems(8, 3, EXAMPLE_SEED, domain_text, dict(mapping), prefix="example")
    chosen = sorted((p for p in problems if p.optimal_length >= 4), key=lambda p: -p.optimal_length)
    out: list[tuple[str, list[GroundAction]]] = []
    for p in chosen or problems:
        out.append((p.problem_pddl, [a for a in (parse_pddl_step(s) for s in p.plan) if a is not None]))
    return out


class Blocksworld(PlanningDomain):
    """PlanBench's Blocksworld: stacks of coloured blocks and one hand."""

    def __init__(self) -> None:
        super().__init__(TEMPLATES / "blocksworld.toml")


class MysteryBlocksworld(PlanningDomain):
    """Blocksworld under meaningless names (PlanBench's Mystery Blocksworld)."""

    def __init__(self) -> None:
        super().__init__(TEMPLATES / "mystery_blocksworld.toml")

