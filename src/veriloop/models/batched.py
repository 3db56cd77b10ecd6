"""Continuous batching for the in-process llama.cpp model.

Concurrent calls decode together: every step is one `llama_decode` over one token of each
sequence that is generating plus chunks of the prompts that are still being read, so a
new sequence joins as soon as a slot is free and never waits for the others to finish.

The KV cache is unified (one pool of cells for all sequences), so a prompt prefix that is
already in the cache for one sequence is shared with another by `llama_memory_seq_cp`,
which only tags the same cells with a second sequence id. That is what makes batching pay
on prompt-heavy work: every Game of 24 prompt starts with the same few-shot examples, and
they are read once instead of once per sequence. A finished sequence leaves its tokens in
the cache, so the next round of a backprompt conversation (the whole history plus a new
turn) reads only its new tail, as the sequential path does.

Determinism: a batched step computes a sequence's logits in a batch of a different shape
than a sequential run would, so a fresh batched completion may differ from a sequential
one in low-order logits (and so, rarely, in a sampled token). Re-runs replay from the
call cache exactly; `concurrency = 1` keeps the sequential path.

numpy is imported when a token's logprobs are first computed, not with the module: every
`veriloop run` imports this module through llamacpp.thread_count, a server's run too.
"""

from __future__ import annotations

import ctypes
import random
import threading
import time
from collections import deque
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any

from ..errors import ContextOverflow, VeriloopError
from .base import Completion, GenParams, TokenLogprob

# Measured on 2 cores with Qwen2.5-Coder-1.5B (bench/batched_throughput.py): generation
# throughput keeps growing up to 16 sequences.
DEFAULT_SEQUENCES = 16
# Tokens per decode step: generating sequences first, prompt chunks fill the rest.
STEP_TOKENS = 512
# A prompt that shares at least this many more tokens with a prompt still being read
# waits for that prefix to be in the cache rather than reading it a second time.
SHARE_MIN_TOKENS = 32


@dataclass
class BatchStats:
    """What the engine did, for the benches and tests."""

    sequences: int = 0
    prompt_tokens_sent: int = 0
    prompt_tokens_evaluated: int = 0
    prompt_tokens_shared: int = 0  # reused from another sequence's cells
    generated_tokens: int = 0
    decode_steps: int = 0
    max_active: int = 0
    decode_seconds: float = 0.0  # in llama_decode
    sample_seconds: float = 0.0  # choosing tokens, stop strings, logprobs


@dataclass
class _Sequence:
    prompt: list[int]
    params: GenParams
    seed: int | None
    max_tokens: int
    stops: list[bytes]
    future: Future[Completion]
    started: float = field(default_factory=time.perf_counter)
    slot: int = -1
    read: int = 0  # prompt tokens in the cache for this sequence
    generated: list[int] = field(default_factory=list)
    text: bytes = b""
    logprobs: list[TokenLogprob] = field(default_factory=list)
    sampler: Any = None
    finish: str | None = None

    @property
    def reading(self) -> bool:
        return self.read < len(self.prompt)


class BatchedEngine:
    """One llama.cpp context with `sequences` parallel sequences over a loaded `Llama`'s
    weights, driven by its own thread. Thread-safe `submit`; results come as futures."""

    def __init__(self, llm: Any, n_ctx: int, threads: int, sequences: int = DEFAULT_SEQUENCES,
                 name: str = "model") -> None:
        import llama_cpp

        self._c = llama_cpp
        self.llm = llm
        self.name = name
        self.n_ctx = n_ctx  # per sequence, as for the sequential path
        self.sequences = sequences
        # Shared cells are counted once by llama.cpp but once per sequence here, so the
        # pool is sized for every sequence at full context; admission keeps within it.
        self.cells = n_ctx * sequences
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = self.cells
        params.n_batch = STEP_TOKENS
        params.n_ubatch = STEP_TOKENS
        params.n_seq_max = sequences
        params.kv_unified = True
        params.n_threads = threads
        params.n_threads_batch = threads
        params.no_perf = True
        from llama_cpp._utils import suppress_stdout_stderr

        # llama.cpp warns that the pool exceeds the training context: it is shared by
        # `sequences` sequences of at most n_ctx each, so the warning does not apply.
        with suppress_stdout_stderr(disable=False):
            self._ctx = llama_cpp.llama_init_from_model(llm._model.model, params)
        if not self._ctx:
            raise VeriloopError(f"llama.cpp could not make a {sequences}-sequence context for {name}")
        self._mem = llama_cpp.llama_get_memory(self._ctx)
        self._vocab = llama_cpp.llama_model_get_vocab(llm._model.model)
        self._n_vocab = llama_cpp.llama_vocab_n_tokens(self._vocab)
        self._batch = llama_cpp.llama_batch_init(STEP_TOKENS, 0, 1)
        self._pieces: dict[int, bytes] = {}
        self.stats = BatchStats()
        self._held: list[list[int]] = [[] for _ in range(sequences)]  # tokens in the cache per slot
        self._used_at = [0.0] * sequences
        self._active: dict[int, _Sequence] = {}
        self._waiting: deque[_Sequence] = deque()
        self._wake = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"llamacpp-batch-{name}", daemon=True)
        self._thread.start()

    # ---- the caller's side -------------------------------------------------------------
    def submit(self, prompt: list[int], params: GenParams, index: int, stops: list[str]) -> Future[Completion]:
        """Generate one sample (the index-th of `params`) continuing `prompt` (tokens)."""
        future: Future[Completion] = Future()
        if len(prompt) >= self.n_ctx:
            future.set_exception(ContextOverflow(
                f"prompt does not fit the {self.n_ctx}-token context of {self.name}"))
            return future
        seq = _Sequence(
            prompt=prompt, params=params, seed=params.sample_seed(index),
            # As the sequential path does: a reply never runs past the context.
            max_tokens=min(params.max_tokens, self.n_ctx - len(prompt)),
            stops=[s.encode("utf-8") for s in stops if s], future=future,
        )
        with self._wake:
            if self._closed:
                raise VeriloopError(f"the batched engine of {self.name} is closed")
            self._waiting.append(seq)
            self._wake.notify()
        return future

    def close(self) -> None:
        """Stop the engine: calls not finished fail, and the context is freed (once)."""
        with self._wake:
            if self._closed:
                return
            self._closed = True
            self._wake.notify()
        self._thread.join()
        self._c.llama_batch_free(self._batch)
        self._c.llama_free(self._ctx)

    # ---- the engine's thread -----------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._closed and not self._waiting and not self._active:
                    self._wake.wait()
                if self._closed:
                    failed = list(self._waiting) + list(self._active.values())
                    self._waiting.clear()
                    self._active.clear()
                    for seq in failed:
                        seq.future.set_exception(VeriloopError(f"the batched engine of {self.name} was closed"))
                    return
                # A caller that gave up (a budget stop, Ctrl-C) frees its slot at once.
                self._waiting = deque(s for s in self._waiting if not s.future.cancelled())
                for seq in [s for s in self._active.values() if s.future.cancelled()]:
                    self._end(seq, None)
                self._admit()
                if not self._active:
                    continue
            try:
                self._step()
            except BaseException as exc:  # noqa: BLE001 - every waiting caller must hear of it
                for seq in list(self._active.values()):
                    self._end(seq, exc)
                for slot in range(self.sequences):
                    self._forget(slot)

    def _admit(self) -> None:
        """Move waiting sequences onto free slots, reusing the longest cached prefix."""
        deferred: deque[_Sequence] = deque()
        while self._waiting and len(self._active) < self.sequences:
            seq = self._waiting.popleft()
            if self._should_wait_for_prefix(seq):
                deferred.append(seq)
                continue
            if not self._make_room(seq):
                deferred.append(seq)
                break
            self._place(seq)
        self._waiting.extendleft(reversed(deferred))
        self.stats.max_active = max(self.stats.max_active, len(self._active))

    def _should_wait_for_prefix(self, seq: _Sequence) -> bool:
        cached = max((_common(seq.prompt, held) for held in self._held), default=0)
        for other in self._active.values():
            if other.reading and _common(seq.prompt, other.prompt) - max(cached, other.read) >= SHARE_MIN_TOKENS:
                return True
        return False

    def _need(self, seq: _Sequence) -> int:
        return len(seq.prompt) + seq.max_tokens

    def _make_room(self, seq: _Sequence) -> bool:
        """Whether `seq` fits the cell pool, dropping the least recently used idle slots'
        cached tokens if it would not (an upper bound: shared cells are counted per slot)."""
        def used() -> int:
            busy = {s.slot for s in self._active.values()}
            return sum(self._need(s) for s in self._active.values()) + sum(
                len(h) for slot, h in enumerate(self._held) if slot not in busy)

        idle = sorted((slot for slot in range(self.sequences) if slot not in self._active),
                      key=lambda slot: self._used_at[slot])
        while used() + self._need(seq) > self.cells and idle:
            slot = idle.pop(0)
            if self._held[slot] and _common(seq.prompt, self._held[slot]) == 0:
                self._forget(slot)
        return used() + self._need(seq) <= self.cells or not self._active

    def _place(self, seq: _Sequence) -> None:
        c = self._c
        free = [slot for slot in range(self.sequences) if slot not in self._active]
        limit = len(seq.prompt) - 1  # the last prompt token is always read, for its logits
        # In place: the free slot whose cached tokens share the most with this prompt;
        # without any, the least recently used one.
        slot = max(free, key=lambda s: (min(_common(seq.prompt, self._held[s]), limit), -self._used_at[s]))
        kept = min(_common(seq.prompt, self._held[slot]), limit)
        source, shared = slot, kept
        for other in range(self.sequences):
            length = min(_common(seq.prompt, self._held[other]), limit)
            if length > shared:
                source, shared = other, length
        if source != slot:
            c.llama_memory_seq_rm(self._mem, slot, -1, -1)
            c.llama_memory_seq_cp(self._mem, source, slot, 0, shared)
            self.stats.prompt_tokens_shared += shared
            kept = shared
        else:
            c.llama_memory_seq_rm(self._mem, slot, kept, -1)
        self._held[slot] = seq.prompt[:kept]
        seq.slot, seq.read = slot, kept
        seq.sampler = self._sampler(seq)
        self._active[slot] = seq
        self.stats.sequences += 1
        self.stats.prompt_tokens_sent += len(seq.prompt)
        self.stats.prompt_tokens_evaluated += len(seq.prompt) - kept

    def _sampler(self, seq: _Sequence) -> Any:
        c = self._c
        chain = c.llama_sampler_chain_init(c.llama_sampler_chain_default_params())
        temperature = seq.params.temperature
        if temperature <= 0:
            c.llama_sampler_chain_add(chain, c.llama_sampler_init_greedy())
            return chain
        # Pure temperature / nucleus sampling, as an OpenAI-style server does.
        if seq.params.top_p < 1.0:
            c.llama_sampler_chain_add(chain, c.llama_sampler_init_top_p(seq.params.top_p, 1))
        c.llama_sampler_chain_add(chain, c.llama_sampler_init_temp(temperature))
        seed = seq.seed if seq.seed is not None else random.getrandbits(32)
        c.llama_sampler_chain_add(chain, c.llama_sampler_init_dist(seed & 0xFFFFFFFF))
        return chain

    def _step(self) -> None:
        c = self._c
        batch = self._batch
        outputs: list[tuple[int, _Sequence]] = []
        n = 0

        def add(token: int, pos: int, slot: int, logits: bool) -> None:
            nonlocal n
            batch.token[n] = token
            batch.pos[n] = pos
            batch.n_seq_id[n] = 1
            batch.seq_id[n][0] = slot
            batch.logits[n] = logits
            n += 1

        generating = [seq for seq in self._active.values() if not seq.reading]
        for seq in generating:
            pos = len(seq.prompt) + len(seq.generated) - 1
            add(seq.generated[-1], pos, seq.slot, True)
            outputs.append((n - 1, seq))
        reads: list[tuple[_Sequence, int]] = []
        for seq in self._active.values():
            if not seq.reading or n >= STEP_TOKENS:
                continue
            chunk = min(len(seq.prompt) - seq.read, STEP_TOKENS - n)
            for i in range(seq.read, seq.read + chunk):
                last = i == len(seq.prompt) - 1
                add(seq.prompt[i], i, seq.slot, last)
                if last:
                    outputs.append((n - 1, seq))
            reads.append((seq, chunk))
        batch.n_tokens = n
        started = time.perf_counter()
        status = c.llama_decode(self._ctx, batch)
        decoded = time.perf_counter()
        self.stats.decode_seconds += decoded - started
        if status != 0:
            raise VeriloopError(f"llama.cpp could not decode a batch of {n} tokens for {self.name} (status {status})")
        self.stats.decode_steps += 1
        # Only now are these tokens in the cache: a sampled token joins its slot's cached
        # tokens when it is decoded, so a sequence that ends leaves its last token out.
        for seq in generating:
            self._held[seq.slot].append(seq.generated[-1])
        for seq, chunk in reads:
            self._held[seq.slot].extend(seq.prompt[seq.read:seq.read + chunk])
            seq.read += chunk
        for index, seq in outputs:
            self._sample(seq, index)
        self.stats.sample_seconds += time.perf_counter() - decoded
        for seq in [s for s in self._active.values() if s.finish is not None]:
            self._end(seq, None)

    def _sample(self, seq: _Sequence, index: int) -> None:
        c = self._c
        token = int(c.llama_sampler_sample(seq.sampler, self._ctx, index))
        if c.llama_vocab_is_eog(self._vocab, token):
            seq.finish = "stop"
            return
        if seq.params.logprobs:
            seq.logprobs.append(self._logprob(index, token, seq.params.top_logprobs))
        seq.generated.append(token)
        self.stats.generated_tokens += 1
        seq.text += self._piece(token)
        for stop in seq.stops:
            at = seq.text.find(stop)
            if at >= 0:
                seq.text = seq.text[:at]
                seq.finish = "stop"
                return
        if len(seq.generated) >= seq.max_tokens:
            seq.finish = "length"

    def _logprob(self, index: int, token: int, top: int) -> TokenLogprob:
        import numpy as np

        row = self._c.llama_get_logits_ith(self._ctx, index)
        logits = np.ctypeslib.as_array(ctypes.cast(row, ctypes.POINTER(ctypes.c_float)), shape=(self._n_vocab,))
        logits = logits.astype(np.float64)
        peak = logits.max()
        logprobs = logits - (peak + np.log(np.exp(logits - peak).sum()))

        def text(tok: int) -> str:
            return self._piece(tok).decode("utf-8", errors="replace")

        best = {text(int(t)): float(logprobs[t]) for t in np.argsort(-logprobs)[:top]} if top > 0 else {}
        if top > 0:
            best[text(token)] = float(logprobs[token])
        return TokenLogprob(token=text(token), logprob=float(logprobs[token]), top=best)

    def _piece(self, token: int) -> bytes:
        """The bytes a generated token stands for (special tokens as nothing, as the
        sequential path renders them)."""
        piece = self._pieces.get(token)
        if piece is None:
            size = 64
            buffer = ctypes.create_string_buffer(size)
            length = self._c.llama_token_to_piece(self._vocab, token, buffer, size, 0, False)
            if length < 0:  # the buffer was too small: -length is the size needed
                buffer = ctypes.create_string_buffer(-length)
                length = self._c.llama_token_to_piece(self._vocab, token, buffer, -length, 0, False)
            piece = self._pieces[token] = buffer.raw[:length]
        return piece

    def _end(self, seq: _Sequence, error: BaseException | None) -> None:
        self._active.pop(seq.slot, None)
        self._used_at[seq.slot] = time.perf_counter()
        if seq.sampler is not None:
            self._c.llama_sampler_free(seq.sampler)
            seq.sampler = None
        if seq.future.cancelled():
            return
        try:
            if error is not None:
                seq.future.set_exception(error)
            else:
                seq.future.set_result(self._completion(seq))
        except InvalidStateError:  # the caller cancelled it meanwhile: nobody is waiting
            pass

    def _completion(self, seq: _Sequence) -> Completion:
        return Completion(
            text=seq.text.decode("utf-8", errors="replace"),
            finish_reason=seq.finish or "stop",
            prompt_tokens=len(seq.prompt),
            completion_tokens=len(seq.generated),
            logprobs=seq.logprobs if seq.params.logprobs else None,
            seconds=time.perf_counter() - seq.started,
        )

    def _forget(self, slot: int) -> None:
        self._c.llama_memory_seq_rm(self._mem, slot, -1, -1)
        self._held[slot] = []


def _common(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n
