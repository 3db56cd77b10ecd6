"""Verifiers that run code: the answer is a function, and tests of it run in the sandbox
(never in this process). Each works on a domain with the `CodeTask` capability
(humaneval) and refuses any other with one line.

visible    the examples the problem's docstring shows (`>>>` lines and the outputs after
           them; see domains/humaneval/problems.py): sound for what it checks, since a
           rejection is a shown example the function gets wrong, but incomplete, since a
           function may pass the examples and fail elsewhere (and a docstring without
           examples rejects only a function that is not there or does not run).
hidden     the problem's full tests, which are the ground truth itself: an ORACLE, as
           CRITIC* is; its name stays in every table so it is read as a reference, never
           as a method a deployment could use.
generated  tests the model writes for the signature (Reflexion's internal tests): one
           call (role "verify") asks for a few assert statements, and those naming the
           function run against it. Executable but UNSOUND: the tests may be wrong, and
           a wrong test rejects a right function. A reply with no readable assert is an
           unreadable verdict (a rejection, marked so studies can count it apart).
"""

from __future__ import annotations

import ast
import asyncio
import re

from ..domains.base import CodeTask, Domain
from ..episode import Episode
from ..errors import VeriloopError
from ..records import Message, Verdict, VerdictError
from .base import BaseVerifier

CODE_DOMAINS = "humaneval"
MAX_TESTS = 10
_FENCE_RE = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)

TEST_WRITER_SYSTEM = "You write unit tests for Python functions."


def as_code_task(domain: Domain, verifier: str) -> CodeTask:
    """The domain as a code task, or a VeriloopError naming the domains that are."""
    if not isinstance(domain, CodeTask):
        raise VeriloopError(
            f"verifier {verifier!r} runs tests of a function, and domain {domain.name!r} is not a code task; "
            f"use it on {CODE_DOMAINS}, or use verifier=sound or llm"
        )
    return domain


class _CodeVerifier(BaseVerifier):
    name: str

    def check_domain(self, domain: Domain) -> None:
        """Raise VeriloopError now, before a model loads, when `domain` is not a code task."""
        as_code_task(domain, self.name)


class VisibleTests(_CodeVerifier):
    """The docstring's examples, run in the sandbox: sound for what it checks, incomplete."""

    name = "visible"
    calls = 0
    sound = True

    async def verify(self, episode: Episode, text: str, round: int) -> Verdict:
        task = as_code_task(episode.domain, self.name)
        verdict = await asyncio.to_thread(task.check_examples, episode.instance, text)
        verdict.verifier = self.name
        return verdict


class HiddenTests(_CodeVerifier):
    """The problem's full tests, i.e. the ground truth: an oracle, for reference only."""

    name = "hidden"
    calls = 0
    sound = True

    async def verify(self, episode: Episode, text: str, round: int) -> Verdict:
        as_code_task(episode.domain, self.name)
        verdict = await episode.domain.averify(episode.instance, text)
        verdict.verifier = self.name
        return verdict


def ask_for_tests(stub: str, entry_point: str, count: int) -> list[Message]:
    """Ask for `count` assert-tests of a function from its signature and docstring."""
    return [
        {"role": "system", "content": TEST_WRITER_SYSTEM},
        {"role": "user", "content": (
            f"Here is the signature and docstring of a Python function:\n\n```python\n{stub}\n```\n\n"
            f"Write {count} different tests of it as Python assert statements, one a line, each calling "
            f"{entry_point} with concrete arguments and comparing the result with what the docstring says it "
            f"should be, like `assert {entry_point}(...) == ...`. Cover ordinary cases and edge cases. "
            "Reply with the assert statements only, in one ```python block."
        )},
    ]


def parse_asserts(reply: str, entry_point: str, limit: int = MAX_TESTS) -> list[str]:
    """The assert statements in `reply` that call or name `entry_point`, as `ast` prints
    them (messages dropped), in order, without repeats, at most `limit`: from its fenced
    blocks when it has any, else from the whole reply; from a chunk that does not parse,
    its lines that parse alone."""
    chunks = _FENCE_RE.findall(reply) or [reply]
    found: list[str] = []
    for chunk in chunks:
        for node in _asserts_in(chunk):
            if any(isinstance(n, ast.Name) and n.id == entry_point for n in ast.walk(node.test)):
                text = ast.unparse(ast.Assert(test=node.test, msg=None))
                if text not in found:
                    found.append(text)
    return found[:limit]


def _asserts_in(chunk: str) -> list[ast.Assert]:
    try:
        return [n for n in ast.walk(ast.parse(chunk)) if isinstance(n, ast.Assert)]
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        pass
    out: list[ast.Assert] = []
    for line in chunk.splitlines():
        if line.strip().startswith("assert"):
            try:
                tree = ast.parse(line.strip())
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                continue
            out += [n for n in tree.body if isinstance(n, ast.Assert)]
    return out


class GeneratedTests(_CodeVerifier):
    """Tests the model writes for the signature, run in the sandbox: executable, unsound."""

    name = "generated"
    calls = 1

    def __init__(self, tests: int = 5, max_tokens: int = 400) -> None:
        self.tests = tests
        self.max_tokens = max_tokens

    async def verify(self, episode: Episode, text: str, round: int) -> Verdict:
        task = as_code_task(episode.domain, self.name)
        instance = episode.instance
        if episode.domain.extract_answer(instance, text) is None:
            # No function to test: the malformed verdict, without asking for tests.
            verdict = task.check_asserts(instance, text, [])
            verdict.verifier = self.name
            return verdict
        entry = task.entry_point(instance)
        messages = ask_for_tests(task.function_stub(instance), entry, self.tests)
        # Greedy, so every round of a loop is judged by the same tests (a cached call).
        params = episode.params(temperature=0.0, max_tokens=self.max_tokens)
        reply = await episode.call_one("verify", messages, params, round)
        tests = parse_asserts(reply, entry)
        if not tests:
            return Verdict(ok=False, unreadable=True, verifier=self.name, errors=[VerdictError(
                kind="unreadable", message=f"the test writer's reply held no assert statement on {entry}")])
        verdict = await asyncio.to_thread(task.check_asserts, instance, text, tests)
        verdict.verifier = self.name
        return verdict
