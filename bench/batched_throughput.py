"""Batched in-process decoding against one sequence at a time, on a real local model.

(a) Generation: 16 long generations submitted together to the batched engine, against
    the sequential path generating the same kind of text one call at a time. Prints
    generated tokens per second of each and the ratio (goal >= 2.5x on Qwen2.5-Coder-1.5B,
    2 threads; llama.cpp's own llama-batched-bench measures the machine's limit at 3.0x).
(b) The main job's workload (`veriloop run`'s four strategies on its 10 Game of 24
    puzzles, cold: no call cache) at --concurrency 1 (the sequential path, the baseline)
    and at the default concurrency (batched). Prints trajectories per hour of each, the
    ratio (goal >= 1.8x), each strategy's accuracy with its 95% interval, and how many
    prompt tokens the batched engine read against how many were sent (the few-shot prefix
    every puzzle shares is read once and shared across sequences).

    python bench/batched_throughput.py [--model qwen2.5-coder-1.5b] [--threads 2] [--part a|b|both]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from veriloop.models import GenParams, load_backend  # noqa: E402
from veriloop.models.batched import DEFAULT_SEQUENCES  # noqa: E402

TOPICS = ["a lighthouse keeper", "a lost dragon", "a clockmaker", "a desert city", "a comet", "an old library",
          "a river pilot", "a chess prodigy", "a mountain village", "a robot gardener", "a pirate cook",
          "a winter market", "a deep-sea diver", "a tea merchant", "a glass bridge", "a forgotten song"]


def story(topic: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Write a long, detailed story about {topic}."}]


async def generation(model_id: str, threads: int, tokens: int) -> None:
    model = load_backend(model_id, threads=threads)
    params = GenParams(temperature=0.8, top_p=0.95, max_tokens=tokens, seed=1)
    model.preferred_concurrency = 1
    await model.generate(story("a warm-up"), params.with_(max_tokens=4))
    started = time.perf_counter()
    alone = [(await model.generate(story(topic), params))[0] for topic in TOPICS[:2]]
    alone_seconds = time.perf_counter() - started
    alone_rate = sum(c.completion_tokens for c in alone) / alone_seconds

    model.preferred_concurrency = DEFAULT_SEQUENCES
    await model.generate(story("a warm-up"), params.with_(max_tokens=4))
    started = time.perf_counter()
    together = await asyncio.gather(*(model.generate(story(topic), params) for topic in TOPICS[:DEFAULT_SEQUENCES]))
    together_seconds = time.perf_counter() - started
    generated = sum(c[0].completion_tokens for c in together)
    together_rate = generated / together_seconds
    print(f"(a) generation, {model_id}, {threads} threads, up to {tokens} tokens per sequence")
    print(f"    1 at a time (sequential path):  {alone_rate:6.1f} generated tok/s "
          f"({sum(c.completion_tokens for c in alone)} tokens, {alone_seconds:.1f} s)")
    print(f"    {DEFAULT_SEQUENCES} together (batched engine):   {together_rate:6.1f} generated tok/s "
          f"({generated} tokens, {together_seconds:.1f} s)")
    print(f"    ratio: {together_rate / alone_rate:.2f}x  (goal >= 2.5x)")
    single, batched = decode_ceiling(model._main.llm, threads, DEFAULT_SEQUENCES)
    print(f"    the machine's limit, bare llama_decode (no sampling, no engine): 1 token {single:.1f} tok/s, "
          f"{DEFAULT_SEQUENCES} sequences {batched:.1f} tok/s: {batched / single:.2f}x")


def decode_ceiling(llm: object, threads: int, sequences: int, steps: int = 16) -> tuple[float, float]:
    """Tokens per second of bare `llama_decode` steps of one token per sequence, for 1 and
    for `sequences` sequences at a short context (what llama.cpp's llama-batched-bench
    measures): how far batching can go on this machine, whatever the engine does."""
    return _decode_rate(llm, threads, 1, steps), _decode_rate(llm, threads, sequences, steps)


def _decode_rate(llm: object, threads: int, count: int, steps: int) -> float:
    import llama_cpp as c

    params = c.llama_context_default_params()
    params.n_ctx, params.n_batch, params.n_ubatch = 4096, 512, 512
    params.n_seq_max, params.kv_unified = count, True
    params.n_threads = params.n_threads_batch = threads
    ctx = c.llama_init_from_model(llm._model.model, params)  # type: ignore[attr-defined]
    batch = c.llama_batch_init(512, 0, 1)
    try:
        _decode_step(c, ctx, batch, count, 0, 24)  # a short prompt per sequence
        started = time.perf_counter()
        for i in range(steps):
            _decode_step(c, ctx, batch, count, 24 + i, 1)
        return count * steps / (time.perf_counter() - started)
    finally:
        c.llama_batch_free(batch)
        c.llama_free(ctx)


def _decode_step(c: Any, ctx: Any, batch: Any, count: int, first: int, length: int) -> None:
    n = 0
    for seq in range(count):
        for j in range(length):
            batch.token[n], batch.pos[n], batch.n_seq_id[n] = 100 + j, first + j, 1
            batch.seq_id[n][0], batch.logits[n] = seq, j == length - 1
            n += 1
    batch.n_tokens = n
    if c.llama_decode(ctx, batch) != 0:
        raise RuntimeError("llama_decode failed")


async def main_job(model_id: str, threads: int, concurrency: int, out: Path) -> tuple[float, list[str], object]:
    from veriloop.cli.run import DEFAULT_STRATEGIES, run_spec
    from veriloop.experiment.engine import build_domain
    from veriloop.runs.runner import run_experiment
    from veriloop.strategies import parse_strategy

    spec = run_spec(
        model=model_id, base_url=None, threads=str(threads), domain="game24", task=None, prompt=None, check=None,
        reference_field=None, id_field=None, data=None, offset=0, n=10, options={}, strategies=DEFAULT_STRATEGIES,
        seed=0, max_rounds=5, k=5, concurrency=concurrency, search_corpus=None, search_url=None,
        toxicity_backend="offline", allow_unisolated=False,
    )
    planned = build_domain(spec, spec.domain_entry(spec.domain_keys()[0]))
    strategies = [parse_strategy(s, {"max_rounds": 5, "k": 5}) for s in DEFAULT_STRATEGIES]
    model = load_backend(model_id, threads=threads, concurrency=concurrency)
    engine_before = _engine_stats(model)
    started = time.perf_counter()
    result = await run_experiment(model, planned.domain, strategies, planned.instances, out, seed=0,
                                  concurrency=concurrency)
    seconds = time.perf_counter() - started
    lines = [f"      {s.strategy:44s} {s.correct}/{s.n}  [{s.accuracy_ci95[0]:.2f}, {s.accuracy_ci95[1]:.2f}]"
             for s in result.summaries]
    trajectories = sum(s.n for s in result.summaries)
    return trajectories / seconds * 3600, lines, (engine_before, _engine_stats(model), seconds, trajectories)


def _engine_stats(model: object) -> tuple[int, int, int] | None:
    loaded = getattr(model, "_main", None)
    engine = getattr(loaded, "_engine", None)
    if engine is None:
        return None
    s = engine.stats
    return s.prompt_tokens_sent, s.prompt_tokens_evaluated, s.generated_tokens


async def workload(model_id: str, threads: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rate_1, lines_1, info_1 = await main_job(model_id, threads, 1, Path(tmp) / "c1")
        rate_n, lines_n, info_n = await main_job(model_id, threads, DEFAULT_SEQUENCES, Path(tmp) / "cn")
    print(f"(b) the main job's Game of 24 workload, {model_id}, {threads} threads, cold (no call cache)")
    for label, rate, lines, info in (("--concurrency 1 (sequential)", rate_1, lines_1, info_1),
                                     (f"--concurrency {DEFAULT_SEQUENCES} (batched)", rate_n, lines_n, info_n)):
        before, after, seconds, trajectories = info  # type: ignore[misc]
        print(f"    {label}: {rate:7.0f} trajectories/hour ({trajectories} in {seconds:.1f} s)")
        print("\n".join(lines))
        if after is not None:
            sent, evaluated, generated = (a - b for a, b in zip(after, before or (0, 0, 0)))
            print(f"      prompt tokens read {evaluated} of {sent} sent; {generated} generated")
    print(f"    ratio: {rate_n / rate_1:.2f}x  (goal >= 1.8x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=128, help="generated tokens per sequence in (a)")
    ap.add_argument("--part", choices=["a", "b", "both"], default="both")
    args = ap.parse_args()
    if args.part in ("a", "both"):
        asyncio.run(generation(args.model, args.threads, args.tokens))
    if args.part in ("b", "both"):
        asyncio.run(workload(args.model, args.threads))


if __name__ == "__main__":
    main()
