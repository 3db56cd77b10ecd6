"""Prefix reuse in long backprompt loops: prompt tokens evaluated / prompt tokens sent.

A backprompt conversation resends its whole history each round. Runs 15-round
sound-verifier backprompts (first-error feedback) on hard Game of 24 puzzles (4nums
ranks 901+, from ../shared/data when present; otherwise the hardest generated ones) with
the cache off, twice: with our batch-aligned prefix reuse, and with reuse off (every
prompt evaluated from scratch) as the baseline. Prints the evaluated/sent ratio (target
< 0.3), the time ratio, and checks that both runs produced the same answers (reuse must
not change any output).

    python bench/prefix_reuse.py [--model qwen2.5-coder-0.5b] [--puzzles 2] [--rounds 15]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from veriloop.domains import get_domain
from veriloop.episode import Episode
from veriloop.models import load_backend
from veriloop.records import Trajectory
from veriloop.strategies import parse_strategy

CSV = Path(__file__).resolve().parents[2] / "shared" / "data" / "game24" / "24.csv"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--puzzles", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()

    domain = get_domain("game24")
    if CSV.exists():
        instances, source = domain.load_instances(str(CSV), n=args.puzzles, offset=900), "4nums ranks 901+"
    else:
        instances, source = domain.load_instances(None)[-args.puzzles :], "hardest generated"
    model = load_backend(args.model)
    strategy = parse_strategy(f"backprompt:verifier=sound,feedback=first,max_rounds={args.rounds}")
    llm = model._main.llm

    def measure(reuse: bool) -> tuple[int, int, float, list[list[str]], int]:
        llm.prefix_reuse = reuse
        model.reset()
        stats = model.prompt_stats
        sent0, eval0 = stats.prompt_tokens_sent, stats.prompt_tokens_evaluated
        outputs, rounds = [], 0
        t0 = time.perf_counter()
        for inst in instances:
            t = Trajectory(strategy=strategy.canonical, domain="game24", model=model.name, instance_id=inst.id, seed=0)
            asyncio.run(strategy.run(Episode(model=model, domain=domain, instance=inst, seed=0, trajectory=t)))
            outputs.append([c.response for c in t.calls])
            rounds += len(t.rounds)
        return stats.prompt_tokens_sent - sent0, stats.prompt_tokens_evaluated - eval0, time.perf_counter() - t0, outputs, rounds

    sent, evaluated, reuse_s, reuse_out, rounds = measure(True)
    sent_b, evaluated_b, scratch_s, scratch_out, _ = measure(False)
    print(f"model: {args.model}; {len(instances)} puzzles ({source}), {rounds} rounds in all, cache off")
    print(f"with prefix reuse : {evaluated}/{sent} prompt tokens evaluated = {evaluated / sent:.3f}  (target < 0.3), {reuse_s:.1f} s")
    print(f"from scratch      : {evaluated_b}/{sent_b} prompt tokens evaluated = {evaluated_b / sent_b:.3f}, {scratch_s:.1f} s")
    print(f"time ratio reuse / scratch: {reuse_s / scratch_s:.3f}")
    same = reuse_out == scratch_out
    print(f"identical outputs with and without reuse: {same}")
    if not same:
        raise SystemExit("prefix reuse changed an output")


if __name__ == "__main__":
    main()
