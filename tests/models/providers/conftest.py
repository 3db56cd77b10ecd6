import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st
from standins import anthropic, google, ollama, openai, vllm
from standins.base import Standin

from veriloop.models.base import Completion, GenParams

# The keys and string values the native wire formats use, so that arbitrary JSON often has
# the shape of an answer and reaches deep into the parsers, not only their first check.
WIRE_KEYS = (
    "type", "content", "text", "thinking", "stop_reason", "usage", "input_tokens", "output_tokens",
    "cache_read_input_tokens", "cache_creation_input_tokens", "error", "message", "candidates", "parts",
    "thought", "finishReason", "usageMetadata", "promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount",
    "cachedContentTokenCount", "promptFeedback", "blockReason", "logprobsResult", "chosenCandidates",
    "topCandidates", "token", "logProbability", "done", "done_reason", "prompt_eval_count", "eval_count",
    "logprobs", "top_logprobs", "logprob", "role",
)
WIRE_STRINGS = (
    "text", "thinking", "redacted_thinking", "message", "error", "end_turn", "max_tokens", "stop_sequence",
    "STOP", "MAX_TOKENS", "SAFETY", "overloaded_error", "model", "stop", "length",
)


@pytest.fixture(scope="session")
def wire_json() -> st.SearchStrategy[object]:
    """Any JSON value, its object keys and strings mostly those of the wire formats."""
    scalars = (st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=False)
               | st.sampled_from(WIRE_STRINGS) | st.text(max_size=8))
    keys = st.sampled_from(WIRE_KEYS) | st.text(max_size=5)
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=6),
        max_leaves=40,
    )


SHORT = GenParams(max_tokens=32)


@pytest.fixture(scope="session")
def calls_of() -> Callable[[Path], list[dict[str, Any]]]:
    """The call records of a run directory, in order."""
    def read(run_dir: Path) -> list[dict[str, Any]]:
        rows = [json.loads(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]
        return [call for row in rows for call in row["calls"]]

    return read


@pytest.fixture(scope="session")
def generate() -> Callable[..., list[Completion]]:
    """One call of a model (closed after it), as a strategy would make it."""
    def call(model: Any, messages: list[dict[str, str]] | None = None,
             params: GenParams = SHORT) -> list[Completion]:
        async def go() -> list[Completion]:
            try:
                return list(await model.generate(messages or [{"role": "user", "content": "What is 3 + 4?"}], params))
            finally:
                await model.aclose()

        return asyncio.run(go())

    return call


@pytest.fixture(scope="session")
def mutated(wire_json: st.SearchStrategy[object]) -> Callable[[object], st.SearchStrategy[object]]:
    """Strategies of an example answer with any of its values (at any depth) replaced by
    arbitrary JSON, or dropped: answers a parser reads deep into before anything is odd."""
    def mutate(example: object) -> st.SearchStrategy[object]:
        if isinstance(example, dict):
            kept = st.fixed_dictionaries({key: mutate(value) for key, value in example.items()})
            pruned = kept.flatmap(lambda d: st.sets(st.sampled_from(sorted(d)) if d else st.nothing(), max_size=2).map(
                lambda gone: {k: v for k, v in d.items() if k not in gone}))
            inner: st.SearchStrategy[object] = kept | pruned
        elif isinstance(example, list):
            inner = st.tuples(*(mutate(item) for item in example)).map(list) if example else st.just([])
        else:
            inner = st.just(example)
        return st.one_of(inner, inner, inner, wire_json)

    return mutate


# ------------------------------------------------------------ one case per provider

KEY_VARIABLES = ("VERILOOP_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
                 "VLLM_API_KEY")
"""Every variable a provider reads its key from: unset, so only what a test gives counts."""


def _openai_refuses(model: str, sent: dict[str, Any]) -> list[str]:
    # A reasoning model's documented refusals (what the stand-in enforces), and any field
    # the chat completions endpoint does not know.
    refused = [name for name in sent if name not in openai.CHAT_FIELDS]
    if openai.is_reasoning(model):
        refused += [name for name in ("max_tokens", "logprobs", "top_logprobs") if name in sent]
        refused += [name for name in ("temperature", "top_p") if sent.get(name, 1) != 1]
    return refused


def _anthropic_refuses(model: str, sent: dict[str, Any]) -> list[str]:
    refused = [name for name in sent if name not in anthropic.FIELDS]
    if (sent.get("thinking") or {}).get("type") == "enabled":
        refused += [name for name in ("temperature",) if sent.get(name, 1) != 1]
        refused += [name for name in ("top_k",) if name in sent]
        refused += [name for name in ("top_p",) if sent.get(name, 1) < 0.95]
    return refused


def _google_refuses(model: str, sent: dict[str, Any]) -> list[str]:
    return [name for name in sent if name not in google.FIELDS] + [
        f"generationConfig.{name}" for name in sent.get("generationConfig", {}) if name not in google.CONFIG]


def _vllm_refuses(model: str, sent: dict[str, Any]) -> list[str]:
    # vLLM ignores the fields it does not know: only values out of range are refused.
    return [name for name, low, high in (("temperature", 0, 2), ("top_p", 0, 1), ("n", 1, 128))
            if name in sent and not low <= sent[name] <= high]


def _ollama_refuses(model: str, sent: dict[str, Any]) -> list[str]:
    # Ollama ignores unknown fields too; `think` is refused by a model that cannot think.
    thinks = ollama.OllamaStandin().default_models().get(model if ":" in model else f"{model}:latest")
    return ["think"] if sent.get("think") and not thinks else []


@dataclass(frozen=True)
class ProviderCase:
    """One provider as the end-to-end tests drive it through its stand-in.

    `model` reasons at `effort`; `unknown` is a model the stand-in does not serve; `keyed`:
    whether the provider takes a key. Every call record of `model` holds `reasoning` and
    `reasoning_tokens` (OpenAI's chat completions return no reasoning text; Anthropic,
    vLLM and Ollama count no reasoning tokens apart). `messages`: the request fields that
    hold the conversation (the rest is a record's `sent`); `refused_in(model, sent)`: the
    names in `sent` the provider refuses of that model. `priced`: billed by the token;
    `greedy`: `model` at `effort` can decode greedily. `refusable`: a call a user can make
    that the provider refuses (model, reasoning effort, a strategy's temperature).
    `tiny`: the stand-in's options that leave `model` too small a context for a prompt."""

    prefix: str
    standin: type[Standin]
    model: str
    effort: str
    unknown: str
    keyed: bool
    messages: tuple[str, ...]
    refused_in: Callable[[str, dict[str, Any]], list[str]]
    reasoning: str | None
    reasoning_tokens: int
    priced: bool
    greedy: bool
    refusable: tuple[str, str | None, float | None]
    tiny: dict[str, Any]

    @property
    def model_id(self) -> str:
        return f"{self.prefix}/{self.model}"


PROVIDER_CASES = {case.prefix: case for case in (
    ProviderCase(
        prefix="openai", standin=openai.OpenAIStandin, model="o3-mini", effort="low", unknown="gpt-99", keyed=True,
        messages=("messages",), refused_in=_openai_refuses, reasoning=None,
        reasoning_tokens=openai.EFFORT_TOKENS["low"], priced=True, greedy=False,
        refusable=("gpt-4o-mini", "low", None), tiny={"models": {"o3-mini": 20}}),
    ProviderCase(
        prefix="anthropic", standin=anthropic.AnthropicStandin, model="claude-sonnet-4-5", effort="low",
        unknown="claude-9", keyed=True, messages=("messages", "system"), refused_in=_anthropic_refuses,
        reasoning=anthropic.THINKING, reasoning_tokens=0, priced=True, greedy=False,
        refusable=("claude-3-5-haiku-latest", "low", None), tiny={"models": {"claude-sonnet-4-5": (40, 64_000, True)}}),
    ProviderCase(
        prefix="google", standin=google.GoogleStandin, model="gemini-2.5-flash", effort="low", unknown="gemini-9",
        keyed=True, messages=("contents", "systemInstruction"), refused_in=_google_refuses,
        reasoning=google.THOUGHT, reasoning_tokens=google.THOUGHT_TOKENS, priced=True, greedy=True,
        refusable=("gemini-2.0-flash", "low", None), tiny={"models": {"gemini-2.5-flash": (40, 65_536)}}),
    ProviderCase(
        prefix="vllm", standin=vllm.VLLMStandin, model="Qwen/Qwen3-8B", effort="low", unknown="Qwen9", keyed=True,
        messages=("messages",), refused_in=_vllm_refuses, reasoning=vllm.REASONING, reasoning_tokens=0, priced=False,
        greedy=True, refusable=("Qwen/Qwen3-8B", None, 3.0), tiny={"models": {"Qwen/Qwen3-8B": 40}}),
    ProviderCase(
        prefix="ollama", standin=ollama.OllamaStandin, model="qwen3", effort="low", unknown="llama9", keyed=False,
        messages=("messages",), refused_in=_ollama_refuses, reasoning=ollama.THINKING, reasoning_tokens=0,
        priced=False, greedy=True, refusable=("llama3.2", "low", None), tiny={"num_ctx": 40}),
)}


@pytest.fixture(scope="session")
def provider_cases() -> dict[str, ProviderCase]:
    """The five providers' cases, by prefix."""
    return PROVIDER_CASES


@pytest.fixture(scope="session")
def sent_bodies() -> Callable[[ProviderCase, Standin], list[dict[str, Any]]]:
    """What the stand-in received on its generation path, the conversation left out: what
    a call record's `sent` must say."""
    def bodies(case: ProviderCase, server: Standin) -> list[dict[str, Any]]:
        return [{k: v for k, v in seen.body.items() if k not in case.messages} for seen in server.requests
                if seen.method == "POST" and isinstance(seen.body, dict)]

    return bodies


@pytest.fixture(scope="session")
def experiment_file() -> Callable[..., Path]:
    """Writes `folder`/exp.toml: `strategies` on Game of 24 (n=2) with one model, `m`,
    the case's reasoning model behind `server` (its key in $STANDIN_KEY where it takes one)."""
    def write(folder: Path, case: ProviderCase, server: Standin, strategies: list[str], k: int = 2,
              max_rounds: int = 2) -> Path:
        key = 'api_key_env = "STANDIN_KEY"\n' if case.keyed else ""
        path = folder / "exp.toml"
        path.write_text(
            f'name = "{case.prefix}"\nstrategies = {json.dumps(strategies)}\nseeds = [0]\nn = 2\nk = {k}\n'
            f'max_rounds = {max_rounds}\n[[domains]]\nname = "game24"\n'
            f'[models.m]\nid = "{case.model_id}"\nbase_url = "{server.base_url}"\n{key}'
            f'reasoning_effort = "{case.effort}"\n')
        return path

    return write
