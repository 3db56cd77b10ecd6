"""In-process llama.cpp backend (llama-cpp-python).

One `Llama` per weight file per process, shared by every caller; calls are serialised
onto it through a single worker thread so the event loop never blocks and the context is
never used by two calls at once.

Prefix reuse and exact seeds: a backprompt conversation resends the whole history each
round, so most of every prompt was evaluated by the previous call. Keeping that prefix in
the KV cache is what makes long loops affordable, but a prefix evaluated in different
batch shapes can give slightly different logits than a from-scratch evaluation, and a
seeded sample could then differ from the same call after `reset()`. We keep exactly the
whole `n_batch`-sized chunks, aligned at position 0, of the previously *prompt-evaluated*
tokens: those KV entries are bit-identical to what a reset-and-evaluate would compute,
so every call returns the same completion as it would after a reset, while only the new
tail (plus at most one chunk) is evaluated.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ContextOverflow, VeriloopError
from ..records import Message
from .amx import without_amx
from .base import Completion, GenParams, TokenLogprob
from .batched import DEFAULT_SEQUENCES

DEFAULT_N_CTX = 4096
DEFAULT_N_BATCH = 64
THREADS_ENV = "VERILOOP_THREADS"


def thread_count(value: object, source: str) -> int:
    """A number of threads given as `value` by `source` (an option, a variable), checked."""
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or int(text) < 1:
        raise VeriloopError(
            f"{source}: the number of llama.cpp threads must be a whole number, 1 or more, not {text!r}"
        )
    return int(text)


def llama_threads(threads: int | None = None) -> int:
    """The threads llama.cpp computes with: `threads` if given, else $VERILOOP_THREADS, else
    the CPU count. On a shared machine fewer threads than cores can be faster."""
    if threads is not None:
        return thread_count(threads, "threads")
    if os.environ.get(THREADS_ENV, "").strip():
        return thread_count(os.environ[THREADS_ENV], THREADS_ENV)
    return max(1, os.cpu_count() or 1)


@dataclass
class PromptStats:
    calls: int = 0
    prompt_tokens_sent: int = 0
    prompt_tokens_evaluated: int = 0


def _aligned_llama_class() -> type:
    from llama_cpp import Llama

    class AlignedPrefixLlama(Llama):  # type: ignore[misc]
        """Llama whose prompt-prefix reuse keeps only batch-aligned prompt chunks."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.prompt_stats = PromptStats()
            # Off only for measuring what reuse saves (bench/prefix_reuse.py).
            self.prefix_reuse = True
            # Tokens of the last prompt evaluation: only these (not generated tokens,
            # which were evaluated one at a time) are safe to keep.
            self._last_prompt: list[int] = []

        def reset_prefix(self) -> None:
            self.reset()
            self._last_prompt = []

        def generate(self, tokens: Any, *args: Any, **kwargs: Any) -> Any:
            tokens = list(tokens)
            common = 0
            for a, b in zip(self._last_prompt, tokens):
                if a != b:
                    break
                common += 1
            keep = (min(common, self.n_tokens) // self.n_batch) * self.n_batch if self.prefix_reuse else 0
            if keep >= len(tokens):  # the last token must be evaluated to get fresh logits
                keep = ((len(tokens) - 1) // self.n_batch) * self.n_batch
            self.n_tokens = keep
            if keep == 0:
                self.reset()
            self._last_prompt = tokens
            self.prompt_stats.calls += 1
            self.prompt_stats.prompt_tokens_sent += len(tokens)
            self.prompt_stats.prompt_tokens_evaluated += len(tokens) - keep
            return super().generate(tokens, *args, **kwargs)

    return AlignedPrefixLlama


class _Loaded:
    """One weight file loaded once per process, with its own worker thread."""

    _registry: dict[tuple[str, bool, int, int, int], _Loaded] = {}
    _registry_lock = threading.Lock()

    def __init__(self, path: Path, logits_all: bool, n_ctx: int, n_batch: int, threads: int) -> None:
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llamacpp")
        self._formatter: Any = None
        self._engine: Any = None
        self._engine_lock = threading.Lock()
        self.n_ctx, self.threads, self.name = n_ctx, threads, path.name
        cls = _aligned_llama_class()
        try:
            with without_amx():
                self.llm = cls(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_batch=n_batch,
                    n_threads=threads,
                    n_threads_batch=threads,
                    logits_all=logits_all,
                    verbose=False,
                )
        except ValueError as exc:  # llama-cpp reports unreadable weights as ValueError
            raise VeriloopError(f"llama.cpp could not load {path}: {exc}") from None

    def chat_prompt(self, messages: list[Message]) -> str:
        """The prompt text the model's own chat template makes of `messages`, ending
        where the assistant's reply starts (as create_chat_completion formats it)."""
        return self._format(messages).prompt  # type: ignore[no-any-return]

    def chat_tokens(self, messages: list[Message]) -> tuple[list[int], list[str]]:
        """The prompt tokens and the template's own stop strings, as create_chat_completion
        makes them (the template adds the special tokens itself)."""
        result = self._format(messages)
        tokens = self.llm.tokenize(result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True)
        stops = result.stop if isinstance(result.stop, list) else [result.stop] if result.stop else []
        return list(tokens), [s for s in stops if s]

    def _format(self, messages: list[Message]) -> Any:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        if self._formatter is None:
            template = self.llm.metadata.get("tokenizer.chat_template")
            if not template:
                raise VeriloopError("this GGUF file has no chat template, so replies cannot be scored")
            model = self.llm._model
            eos, bos = self.llm.token_eos(), self.llm.token_bos()
            self._formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=model.token_get_text(eos) if eos != -1 else "",
                bos_token=model.token_get_text(bos) if bos != -1 else "",
            )
        return self._formatter(messages=messages)

    def engine(self) -> Any:
        """The continuous-batching engine over these weights, made on first use."""
        from .batched import BatchedEngine

        with self._engine_lock:
            if self._engine is None:
                self._engine = BatchedEngine(self.llm, n_ctx=self.n_ctx, threads=self.threads, name=self.name)
            return self._engine

    @classmethod
    def get(cls, path: Path, logits_all: bool, n_ctx: int, n_batch: int, threads: int) -> _Loaded:
        # The thread count is part of the key: a model asked for with other threads is
        # loaded again rather than changing the threads under another user of the same one.
        key = (str(path.resolve()), logits_all, n_ctx, n_batch, threads)
        with cls._registry_lock:
            if key not in cls._registry:
                cls._registry[key] = cls(path, logits_all, n_ctx, n_batch, threads)
            return cls._registry[key]


class LlamaCppModel:
    """A local GGUF model. With `preferred_concurrency` above 1 (the default) concurrent
    calls decode together in one batched context (see batched.py); at 1 every call runs
    alone, in order, on the sequential path."""

    backend = "llamacpp"
    preferred_concurrency = DEFAULT_SEQUENCES

    def __init__(
        self,
        path: Path,
        identity: str,
        name: str | None = None,
        n_ctx: int = DEFAULT_N_CTX,
        n_batch: int = DEFAULT_N_BATCH,
        threads: int | None = None,
    ) -> None:
        self.path = path
        self.identity = identity
        self.name = name or path.name
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self.threads = llama_threads(threads)
        self._main = _Loaded.get(path, False, n_ctx, n_batch, self.threads)

    @property
    def prompt_stats(self) -> PromptStats:
        return self._main.llm.prompt_stats

    def reset(self) -> None:
        """Forget every cached prefix: the next call evaluates its prompt from scratch.

        Never needed for correct seeds (see the module docstring); used to show that."""
        scoring = _Loaded._registry.get((str(self.path.resolve()), True, self.n_ctx, self.n_batch, self.threads))
        for loaded in (self._main, scoring):
            if loaded is not None:
                loaded.executor.submit(loaded.llm.reset_prefix).result()

    def _loaded_for(self, params: GenParams) -> _Loaded:
        # Token logprobs need logits for every position (n_ctx x vocab floats), so that
        # costly variant is loaded only when a call asks for logprobs.
        return _Loaded.get(self.path, True, self.n_ctx, self.n_batch, self.threads) if params.logprobs else self._main

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]:
        if self.preferred_concurrency > 1:
            return await self._batched(messages, params)
        loaded = self._loaded_for(params)
        loop = asyncio.get_running_loop()
        results = []
        for i in range(params.n):
            results.append(await loop.run_in_executor(loaded.executor, self._one, loaded, messages, params, i))
        return results

    async def _batched(self, messages: list[Message], params: GenParams) -> list[Completion]:
        engine = self._main.engine()
        prompt, template_stops = self._main.chat_tokens(messages)
        stops = list(params.stop) + template_stops
        futures = [asyncio.wrap_future(engine.submit(prompt, params, i, stops)) for i in range(params.n)]
        return list(await asyncio.gather(*futures))

    def _one(self, loaded: _Loaded, messages: list[Message], params: GenParams, index: int) -> Completion:
        started = time.perf_counter()
        kwargs: dict[str, Any] = dict(
            messages=messages,
            temperature=params.temperature,
            top_p=params.top_p,
            # Pure temperature / nucleus sampling, as an OpenAI-style server does.
            top_k=0,
            min_p=0.0,
            repeat_penalty=1.0,
            max_tokens=params.max_tokens,
            stop=list(params.stop) or None,
            seed=params.sample_seed(index),
        )
        if params.logprobs:
            kwargs.update(logprobs=True, top_logprobs=params.top_logprobs)
        try:
            out = loaded.llm.create_chat_completion(**kwargs)
        except ValueError as exc:
            if "context window" in str(exc) or "exceed" in str(exc):
                raise ContextOverflow(f"prompt does not fit the {self.n_ctx}-token context of {self.name}") from None
            raise
        choice = out["choices"][0]
        usage = out["usage"]
        return Completion(
            text=choice["message"]["content"] or "",
            finish_reason=choice.get("finish_reason") or "stop",
            prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"],
            logprobs=_logprobs(choice) if params.logprobs else None,
            seconds=time.perf_counter() - started,
        )

    async def score(self, messages: list[Message], continuation: str) -> list[TokenLogprob]:
        """Log-probability of each token of `continuation` as the assistant's reply to
        `messages` (for perplexity, P(True) and answer-likelihood baselines).

        llama-cpp-python 0.3.36 returns wrong prompt-token logprobs with echo=True, so
        the tokens are evaluated here and the log-softmax is taken of the raw logits."""
        loaded = _Loaded.get(self.path, True, self.n_ctx, self.n_batch, self.threads)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(loaded.executor, self._score, loaded, messages, continuation)

    def _score(self, loaded: _Loaded, messages: list[Message], continuation: str) -> list[TokenLogprob]:
        import numpy as np

        llm = loaded.llm
        prompt = loaded.chat_prompt(messages)
        prompt_tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        reply_tokens = llm.tokenize(continuation.encode("utf-8"), add_bos=False, special=False)
        tokens = prompt_tokens + reply_tokens
        if len(tokens) > self.n_ctx:
            raise ContextOverflow(f"text to score does not fit the {self.n_ctx}-token context of {self.name}")
        if not reply_tokens:
            return []
        llm.reset_prefix()
        llm.eval(tokens)
        # Row i of the scores predicts token i + 1.
        logits = np.asarray(llm.scores[len(prompt_tokens) - 1 : len(tokens) - 1], dtype=np.float64)
        peak = logits.max(axis=1, keepdims=True)
        log_norm = peak[:, 0] + np.log(np.exp(logits - peak).sum(axis=1))
        llm.reset_prefix()  # the KV now holds a scored text, not a prompt evaluation
        return [
            TokenLogprob(
                token=llm.detokenize([tok]).decode("utf-8", errors="replace"),
                logprob=float(logits[i, tok] - log_norm[i]),
            )
            for i, tok in enumerate(reply_tokens)
        ]

    async def aclose(self) -> None:
        return None


def _logprobs(choice: dict[str, Any]) -> list[TokenLogprob] | None:
    content = (choice.get("logprobs") or {}).get("content")
    if content is None:
        return None
    return [
        TokenLogprob(
            token=t["token"],
            logprob=float(t["logprob"]),
            top={alt["token"]: float(alt["logprob"]) for alt in t.get("top_logprobs") or []},
        )
        for t in content
    ]
