"""How much does `datafiles.loads` save by not walking a value that cannot hold a surrogate?

Every line of a data file, a recorded release or an imported answer file is parsed with
`veriloop.datafiles.loads`: `json.loads`, then `records.storable`, a walk over the whole
value that replaces lone surrogates. A surrogate can only come from a surrogate in the
text or from a `\\uD800`-`\\uDFFF` escape, so a text with neither now skips the walk. This
script times the old path (`storable(json.loads(text))`) against `loads` on the same
lines (records shaped like a run's trajectories: nested messages and calls), checks that
both give equal values on every line, and times lines holding an escaped surrogate too
(they take the walk, as before). Timed with the garbage collector off, as `timeit` times.

Run: python bench/json_loads.py [--lines 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from veriloop.datafiles import loads  # noqa: E402
from veriloop.records import storable  # noqa: E402


def line(rng: random.Random, escaped: bool) -> str:
    words = ["the", "plan", "is", "wrong", "at", "step", "3", "Answer:", "(4 + 4) * 3"]
    text = " ".join(rng.choice(words) for _ in range(40))
    calls = [{"role": rng.choice(["generate", "verify"]), "round": r,
              "messages": [{"role": "user", "content": text}, {"role": "assistant", "content": text[::-1]}],
              "response": text + ("\\ud800" if escaped and r == 0 else ""), "prompt_tokens": 50,
              "completion_tokens": 40, "logprobs": None} for r in range(4)]
    value = {"instance_id": f"x-{rng.randrange(10**6)}", "rounds": calls, "correct": rng.random() < 0.5}
    return json.dumps(value).replace("\\\\ud800", "\\ud800")


def timed(function, lines: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            for text in lines:
                function(text)
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(0)
    for escaped in (False, True):
        lines = [line(rng, escaped) for _ in range(args.lines)]
        assert all(loads(text) == storable(json.loads(text)) for text in lines)
        assert escaped == any("\ufffd" in json.dumps(loads(text), ensure_ascii=False) for text in lines)
        old = timed(lambda text: storable(json.loads(text)), lines, args.repeat)
        new = timed(loads, lines, args.repeat)
        kind = "with an escaped surrogate" if escaped else "without a surrogate"
        print(f"{args.lines} lines {kind}: walk after parse {old * 1e3:.1f} ms, loads {new * 1e3:.1f} ms, "
              f"{old / new:.2f}x")


if __name__ == "__main__":
    main()
