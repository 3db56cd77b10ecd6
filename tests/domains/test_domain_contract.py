"""The domain contract (veriloop.domains.base): a new domain is written against that
module alone, its hooks are the ones named here, and no part of veriloop asks a domain
for a hook by probing it with getattr or hasattr."""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
from pathlib import Path

import pytest
from scripted import play

from veriloop.domains.base import (
    BaseDomain,
    CriticSampling,
    CriticTask,
    Domain,
    FunctionChecked,
    Instance,
    Message,
    PlainDomain,
    Verdict,
    VerdictError,
    as_base_domain,
    capabilities,
)
from veriloop.tools.config import SearchTask, ToolUser

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "veriloop"

# Every hook of the contract. A new one is added to BaseDomain with a docstring and a
# default, and here; a caller never probes a domain for a name missing from this list.
# A hook that serves one feature belongs to that feature's capability instead (below).
HOOKS = {
    "answer_tokens", "averify", "canonical", "description", "extract_answer", "feedback", "instance_fields",
    "judge_fields", "judge_task", "load_instances", "matches", "parse_instance", "prompt", "question_text", "score",
    "verify",
}
# What a domain must write; every other hook has a default.
MUST = {"load_instances", "prompt", "verify"}
# The optional capabilities, each asked about with isinstance, and their members.
CAPABILITY_MEMBERS = {
    "SupportsStudies": {"candidates", "critique_report"},
    "CriticTask": {"critic_tools", "max_corrections", "evidence", "verify_instructions", "tool_critique",
                   "good_enough", "correction_request", "metrics", "sample_metric"},
    "CriticSampling": {"critic_sampling"},
    "CodeTask": {"entry_point", "function_stub", "check_examples", "check_asserts"},
    "FunctionChecked": {"can_verify", "check_name", "user_instance"},
    "SearchTask": {"search_corpus"},
    "ToolUser": {"use_tools"},
}
# What a plain object must have to be a domain (the Domain protocol); the rest have defaults.
PROTOCOL = {
    "name", "description", "answer_tokens", "parse_instance", "load_instances", "prompt", "extract_answer",
    "canonical", "verify", "score", "feedback", "judge_task",
}


class EvenAbove(BaseDomain):
    """A new domain written with veriloop.domains.base alone: name an even number above
    the instance's bound. It writes only what it must (instances, prompt, checker)."""

    name = "even-above"

    def load_instances(self, source: str | None, n: int | None = None, offset: int = 0) -> list[Instance]:
        bounds = [10, 20, 30]
        return [Instance(id=f"b{b}", data={"bound": b}) for b in bounds][offset: None if n is None else offset + n]

    def prompt(self, instance: Instance) -> list[Message]:
        return [{"role": "user", "content": f"Name an even number above {instance.data['bound']}."}]

    def verify(self, instance: Instance, text: str) -> Verdict:
        answer = self.extract_answer(instance, text)
        if answer is None or not answer.isdigit():
            return Verdict(ok=False, malformed=True, errors=[VerdictError(kind="malformed", message="no number")])
        errors = []
        if int(answer) % 2:
            errors.append(VerdictError(kind="odd", message=f"{answer} is odd"))
        if int(answer) <= instance.data["bound"]:
            errors.append(VerdictError(kind="too_small", message=f"{answer} is not above {instance.data['bound']}"))
        return Verdict(ok=not errors, errors=errors)


def public_members(cls: type) -> set[str]:
    return {name for klass in cls.__mro__ if klass is not object for name in vars(klass) if not name.startswith("_")}


def test_the_contract_names_exactly_these_hooks():
    assert public_members(BaseDomain) | {"name"} == HOOKS | {"name"}
    assert PROTOCOL <= HOOKS | {"name"}
    assert {name for name in vars(BaseDomain) if getattr(vars(BaseDomain)[name], "__isabstractmethod__", False)} == MUST


def test_the_capabilities_and_their_members_are_exactly_these():
    assert {c.__name__: capability_members(c) for c in capabilities()} == CAPABILITY_MEMBERS
    # No capability member is also a hook: a feature's hook lives in one place.
    assert not set().union(*CAPABILITY_MEMBERS.values()) & HOOKS


def capability_members(protocol: type) -> set[str]:
    own = vars(protocol)
    return {name for name in (*own.get("__annotations__", {}), *own) if not name.startswith("_")}


def test_every_hook_of_the_contract_is_documented_with_its_arguments_or_result():
    for name in sorted(set(vars(BaseDomain)) & HOOKS - {"description", "answer_tokens"}):
        member = vars(BaseDomain)[name]
        doc = inspect.getdoc(member.fget if isinstance(member, property) else member) or ""
        assert "Returns:" in doc or "Args:" in doc, name


def test_a_domain_must_write_its_instances_prompt_and_checker():
    class Unfinished(BaseDomain):
        name = "unfinished"

    with pytest.raises(TypeError, match="load_instances, prompt, verify"):
        Unfinished()


def test_a_new_domain_runs_through_a_strategy_loop_with_every_other_hook_defaulted():
    domain = EvenAbove()
    (instance,) = domain.load_instances(None, n=1)
    t, model = play("backprompt:feedback=first,max_rounds=3", domain, instance, ["  7 ", "12"])
    assert [(r.round, r.answer, r.verdict.ok) for r in t.rounds] == [(1, "7", False), (2, "12", True)]
    assert t.final_answer == "12" and t.correct is True and t.stop_reason == "verifier_accepted"
    # The default backprompt: the first error, then the request to answer again.
    assert model.asked[1][0][-1]["content"] == "Your answer is not correct: 7 is odd.\nPlease give a corrected answer."
    assert model.asked[0][1].max_tokens == 512  # answer_tokens' default


def test_the_defaults_of_a_new_domain():
    domain = EvenAbove()
    instance = domain.parse_instance({"id": "mine", "bound": 4})
    assert instance == Instance(id="mine", data={"id": "mine", "bound": 4})
    assert domain.extract_answer(instance, "  6\n") == "6" and domain.extract_answer(instance, " \n") is None
    assert domain.canonical(instance, " 6 ") == "6" and domain.canonical(instance, None) is None
    assert domain.matches("6", "6") is False  # only canonical keys decide
    assert domain.score(instance, "6") is True and domain.score(instance, "5") is False and not domain.score(instance, None)
    assert asyncio.run(domain.averify(instance, "5")) == domain.verify(instance, "5")
    assert domain.judge_task(instance) == "Name an even number above 4."
    assert domain.question_text(instance) == "Name an even number above 4."
    assert domain.question_text(Instance(id="q", data={"question": "Which?"})) == "Which?"
    assert domain.feedback(instance, domain.verify(instance, "3"), "all") == (
        "Your answer is not correct:\n- 3 is odd\n- 3 is not above 4\nPlease give a corrected answer."
    )
    assert domain.instance_fields == {} and domain.judge_fields == {}
    assert domain.description == ""
    # It has no capability: nothing asks it about CRITIC's sampling, a check function or tools.
    assert [c.__name__ for c in capabilities() if isinstance(domain, c)] == []


class Plain:
    """A domain that does not subclass: the Domain protocol's members only."""

    name = "plain"
    description = "a plain object"
    answer_tokens = 32

    def parse_instance(self, raw):
        return Instance(id="p", data=raw)

    def load_instances(self, source, n=None, offset=0):
        return [Instance(id="p", data={"question": "Two?"})]

    def prompt(self, instance):
        return [{"role": "user", "content": "Say two."}]

    def extract_answer(self, instance, text):
        return text.strip().lower() or None

    def canonical(self, instance, answer):
        return answer

    def verify(self, instance, text):
        return Verdict(ok=self.extract_answer(instance, text) == "two")

    def score(self, instance, text):
        return text is not None and self.verify(instance, text).ok

    def feedback(self, instance, verdict, level):
        return "No."

    def judge_task(self, instance):
        return "Say two."


def test_a_plain_object_is_given_the_contract_with_its_own_members():
    plain = Plain()
    assert isinstance(plain, Domain) and not isinstance(plain, BaseDomain)
    full = as_base_domain(plain)
    assert isinstance(full, PlainDomain) and full.domain is plain
    assert (full.name, full.description, full.answer_tokens) == ("plain", "a plain object", 32)
    (instance,) = full.load_instances(None)
    assert full.extract_answer(instance, " TWO ") == "two" and full.feedback(instance, Verdict(ok=False), "first") == "No."
    assert asyncio.run(full.averify(instance, "two")).ok and full.question_text(instance) == "Two?"
    assert full.instance_fields == {} and not isinstance(full, FunctionChecked)
    domain = EvenAbove()
    assert as_base_domain(domain) is domain
    t, _ = play("backprompt:max_rounds=2", plain, instance, ["three", "Two"])
    assert [r.verdict.ok for r in t.rounds] == [False, True] and t.correct is True
    # The backprompt is the object's own.
    t, model = play("backprompt:max_rounds=2", plain, instance, ["three", "two"])
    assert model.asked[1][0][-1]["content"] == "No."



class PlainCritic(Plain):
    """A plain object with the CriticTask capability and CRITIC sampling of its own."""

    critic_tools = ()
    max_corrections = 1
    critic_sampling = {"temperature": 0.7}

    def evidence(self, instance, text):
        return []

    def verify_instructions(self, instance):
        return "Check that it says two."

    def tool_critique(self, instance, text, observations):
        return None

    def good_enough(self, instance, text, observations):
        return None

    def correction_request(self, instance):
        return "Say it again."

    def metrics(self, instance, text):
        return {}

    def sample_metric(self, instance, text):
        return 0.0


def test_a_plain_domain_keeps_its_capabilities_when_given_the_contract():
    plain = PlainCritic()
    full = as_base_domain(plain)
    assert isinstance(full, CriticTask) and isinstance(full, CriticSampling)
    assert not isinstance(full, (FunctionChecked, SearchTask, ToolUser))
    assert full.critic_sampling == {"temperature": 0.7} and full.correction_request(None) == "Say it again."
    (instance,) = plain.load_instances(None)
    t, model = play("critic:tools=false", plain, instance, ["two", "It says two.\nVerdict: correct"])
    assert t.stop_reason == "critic_accepted" and model.asked[0][1].temperature == 0.7


class OldCriticDomain(EvenAbove):
    """A domain written against the wide contract: a BaseDomain subclass that overrode
    `critic_sampling` (now the CriticSampling capability) and is a CRITIC task."""

    critic_sampling = {"temperature": 0.3, "correction_temperature": 0.9}
    critic_tools = ()
    max_corrections = 1
    evidence = PlainCritic.evidence
    verify_instructions = PlainCritic.verify_instructions
    tool_critique = PlainCritic.tool_critique
    good_enough = PlainCritic.good_enough
    correction_request = PlainCritic.correction_request
    metrics = PlainCritic.metrics
    sample_metric = PlainCritic.sample_metric


def test_an_old_domain_that_overrode_a_moved_hook_is_read_through_its_capability():
    domain = OldCriticDomain()
    assert isinstance(domain, CriticSampling) and isinstance(domain, CriticTask)
    (instance,) = domain.load_instances(None, n=1)
    t, model = play("critic:tools=false", domain, instance, ["7", "Odd.\nVerdict: incorrect", "12", "Verdict: correct"])
    assert [r.answer for r in t.rounds] == ["7", "12"] and t.stop_reason == "critic_accepted"
    assert [params.temperature for _, params in model.asked] == [0.3, 0.0, 0.9, 0.0]


# ------------------------------------------------------------------ no probing

# A probe's first argument names a domain, or it asks for a hook only BaseDomain declares.
_DOMAIN_NAME = re.compile(r"(?:^|\W)(?:dom|\w*domain\w*)(?:\W|$)")
_EXTRA_HOOKS = HOOKS - PROTOCOL


def domain_probes(source: str) -> list[str]:
    """The getattr/hasattr calls in `source` that ask a domain for a hook."""
    found: list[str] = []
    # A call of getattr or hasattr spells its name in the text (non-ASCII identifiers aside,
    # which Python folds to ASCII): most modules need no tree.
    if source.isascii() and "getattr" not in source and "hasattr" not in source:
        return found
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")):
            continue
        if len(node.args) < 2:
            continue
        target, attribute = ast.unparse(node.args[0]), node.args[1]
        hook = attribute.value if isinstance(attribute, ast.Constant) else None
        if _DOMAIN_NAME.search(target) or hook in _EXTRA_HOOKS:
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_probe_finder_finds_probes():
    assert domain_probes("getattr(episode.domain, 'critic_sampling', {})\nhasattr(dom, 'x')\ngetattr(thing, 'averify')\n"
                         "getattr(exc, 'line', None)") == [
        "line 1: getattr(episode.domain, 'critic_sampling', {})",
        "line 2: hasattr(dom, 'x')",
        "line 3: getattr(thing, 'averify')",
    ]


def test_no_module_probes_a_domain_for_a_hook():
    probes = {
        str(path.relative_to(PACKAGE)): domain_probes(path.read_text(encoding="utf-8"))
        for path in sorted(PACKAGE.rglob("*.py"))
    }
    assert {path: found for path, found in probes.items() if found} == {}
