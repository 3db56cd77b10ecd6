"""Engine overhead: wall time per model call through veriloop vs bare llama_cpp.

All sides run the same Game of 24 prompts, sampled (temperature 1) with a seed, with the
same sampler settings, each on its own loaded copy of the weights; calls alternate
between the sides so drift in machine speed hits them alike. The veriloop side goes
through the whole path a strategy uses: Episode recording, the SQLite cache (a miss and a
write per call), the async hop onto the model's worker thread and our prefix handling.

Baselines, all `Llama.create_chat_completion` called directly:
- same-llama: veriloop's own Llama subclass (batch-aligned prefix reuse) with nothing
  around it. Same model work as the veriloop side, so this ratio is the pure cost of the
  engine: recording, cache, async hop (target < 1.05).
- reset: `reset()` before every seeded call, the way to make seeds reproduce in
  llama-cpp-python. It produces the same outputs as veriloop (checked); veriloop is
  faster because it keeps whole aligned chunks of the shared prompt prefix.
- default: llama-cpp-python's own unrestricted prefix reuse. Faster by the tokens of the
  last partial n_batch chunk, but its seeded samples depend on what ran before. Reported
  so the price of exact seeds is visible.

    python bench/engine_overhead.py [--model smollm2-135m] [--prompts 10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from llama_cpp import Llama

from veriloop.domains import Instance, get_domain
from veriloop.episode import Episode
from veriloop.models import CachedModel, CallCache, GenParams, load_backend
from veriloop.models.amx import without_amx
from veriloop.models.llamacpp import DEFAULT_N_BATCH, DEFAULT_N_CTX, _aligned_llama_class
from veriloop.models.packs import verified_pack_path
from veriloop.records import Trajectory

MAX_TOKENS = 48
SAMPLER = dict(temperature=1.0, top_p=1.0, top_k=0, min_p=0.0, repeat_penalty=1.0, max_tokens=MAX_TOKENS)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m", help="pack name (the fastest model shows overhead most)")
    ap.add_argument("--prompts", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    domain = get_domain("game24")
    instances = domain.load_instances(None, n=args.prompts, offset=100)
    path = str(verified_pack_path(args.model))
    threads = os.cpu_count() or 1

    def bare_llama() -> Llama:
        with without_amx():  # loaded as veriloop loads it (llama.cpp's AMX kernels crash)
            return Llama(model_path=path, n_ctx=DEFAULT_N_CTX, n_threads=threads, n_threads_batch=threads,
                         verbose=False)

    bare_reset, bare_default = bare_llama(), bare_llama()
    same_llama = _aligned_llama_class()(
        model_path=path, n_ctx=DEFAULT_N_CTX, n_batch=DEFAULT_N_BATCH, n_threads=threads, n_threads_batch=threads, verbose=False
    )
    backend = load_backend(args.model)

    times: dict[str, list[float]] = {"same": [], "reset": [], "default": [], "veriloop": []}
    mismatches = 0
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            # A fresh cache per repeat, so every veriloop call is a real miss + write.
            model = CachedModel(backend, CallCache(Path(tmp) / f"calls{repeat}.sqlite"))
            for inst in instances:
                messages = domain.prompt(inst)
                t0 = time.perf_counter()
                same_llama.create_chat_completion(messages=messages, seed=repeat, **SAMPLER)
                times["same"].append(time.perf_counter() - t0)

                t0 = time.perf_counter()
                bare_reset.reset()
                expected = bare_reset.create_chat_completion(messages=messages, seed=repeat, **SAMPLER)
                times["reset"].append(time.perf_counter() - t0)

                t0 = time.perf_counter()
                bare_default.create_chat_completion(messages=messages, seed=repeat, **SAMPLER)
                times["default"].append(time.perf_counter() - t0)

                t0 = time.perf_counter()
                text = asyncio.run(_through_veriloop(model, domain, inst, repeat))
                times["veriloop"].append(time.perf_counter() - t0)
                mismatches += text != expected["choices"][0]["message"]["content"]
            model.cache.close()

    mean = {k: statistics.mean(v) for k, v in times.items()}
    print(f"model: {args.model}; {len(times['veriloop'])} calls per side, temperature 1, seeded, max_tokens={MAX_TOKENS}")
    for side, label in (("same", "bare llama_cpp, veriloop's aligned-prefix Llama"),
                        ("reset", "bare llama_cpp, reset() before each seeded call"),
                        ("default", "bare llama_cpp, unrestricted prefix reuse"),
                        ("veriloop", "veriloop (episode + cache + worker + aligned reuse)")):
        print(f"{label:55s}: {mean[side] * 1000:7.1f} ms/call (median {statistics.median(times[side]) * 1000:.1f})")
    print(f"veriloop outputs identical to the reset baseline: {len(times['veriloop']) - mismatches}/{len(times['veriloop'])}")
    print(f"ratio veriloop / same Llama called bare (engine overhead): {mean['veriloop'] / mean['same']:.3f}  (target < 1.05)")
    print(f"ratio veriloop / bare-with-reset (same outputs): {mean['veriloop'] / mean['reset']:.3f}")
    print(f"ratio veriloop / bare-default (not reproducible): {mean['veriloop'] / mean['default']:.3f}")
    if mismatches:
        raise SystemExit("veriloop's seeded outputs differ from llama_cpp's after reset()")


async def _through_veriloop(model: CachedModel, domain, inst: Instance, seed: int) -> str:
    trajectory = Trajectory(strategy="bench", domain=domain.name, model=model.name, instance_id=inst.id, seed=seed)
    episode = Episode(model=model, domain=domain, instance=inst, seed=seed, trajectory=trajectory)
    params = GenParams(seed=seed, temperature=1.0, max_tokens=MAX_TOKENS)
    return await episode.call_one("generate", domain.prompt(inst), params, round=1)


if __name__ == "__main__":
    main()
