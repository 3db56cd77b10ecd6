"""Engine overhead: wall time per model call through veriloop vs bare llama_cpp.

Both sides run the same Game of 24 prompts, greedy, with the same sampling settings, on
one loaded weight file each. The veriloop side goes through the whole call path a
strategy uses: Episode recording, the SQLite cache (a miss and a write per call), the
async hop onto the model's worker thread and our prefix handling. The baseline is
`Llama.create_chat_completion` as a user would call it (default n_batch). Calls
alternate between the two sides so drift in machine speed hits both alike.

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
from veriloop.experiment.records import Trajectory
from veriloop.models import CachedModel, CallCache, GenParams, load_backend
from veriloop.models.packs import verified_pack_path

MAX_TOKENS = 48


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m", help="pack name (the fastest model shows overhead most)")
    ap.add_argument("--prompts", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    domain = get_domain("game24")
    instances = domain.load_instances(None, n=args.prompts, offset=100)
    path = verified_pack_path(args.model)
    threads = os.cpu_count() or 1
    bare = Llama(model_path=str(path), n_ctx=4096, n_threads=threads, n_threads_batch=threads, verbose=False)
    backend = load_backend(args.model)

    with tempfile.TemporaryDirectory() as tmp:
        bare_times: list[float] = []
        ours_times: list[float] = []
        for repeat in range(args.repeats):
            # A fresh cache per repeat, so every veriloop call is a real miss + write.
            model = CachedModel(backend, CallCache(Path(tmp) / f"calls{repeat}.sqlite"))
            for inst in instances:
                messages = domain.prompt(inst)
                t0 = time.perf_counter()
                bare.create_chat_completion(
                    messages=messages, temperature=0.0, top_k=0, min_p=0.0, repeat_penalty=1.0,
                    max_tokens=MAX_TOKENS, seed=repeat,
                )
                bare_times.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                asyncio.run(_through_veriloop(model, domain, inst, repeat))
                ours_times.append(time.perf_counter() - t0)
            model.cache.close()

    b, o = statistics.mean(bare_times), statistics.mean(ours_times)
    print(f"model: {args.model}; {len(bare_times)} calls per side, max_tokens={MAX_TOKENS}, greedy")
    print(f"bare llama_cpp create_chat_completion : {b * 1000:8.1f} ms/call (median {statistics.median(bare_times) * 1000:.1f})")
    print(f"veriloop (episode + cache + worker)   : {o * 1000:8.1f} ms/call (median {statistics.median(ours_times) * 1000:.1f})")
    print(f"ratio veriloop / bare: {o / b:.3f}  (target < 1.05)")


async def _through_veriloop(model: CachedModel, domain, inst: Instance, seed: int) -> None:
    trajectory = Trajectory(strategy="bench", domain=domain.name, model=model.name, instance_id=inst.id, seed=seed)
    episode = Episode(model=model, domain=domain, instance=inst, seed=seed, trajectory=trajectory)
    await episode.call_one("generate", domain.prompt(inst), GenParams(seed=seed, max_tokens=MAX_TOKENS), round=1)


if __name__ == "__main__":
    main()
