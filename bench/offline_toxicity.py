"""How fast does the offline toxicity tool score a text, and does it score as before?

`OfflineToxicity` scores a text with alt-profanity-check: a TF-IDF vectoriser and a
scikit-learn CalibratedClassifierCV of five sigmoid-calibrated linear SVMs. Its
`predict_proba` validated the input again for each fold (narwhals and inspect look-ups,
about 5 ms a text); the tool now computes the same probability from the folds' weights
(`_OfflineModel._probability`: each fold's decision value, its sigmoid, their mean, in
scikit-learn's order of operations). This script scores the same texts both ways
(prompts from ../shared/data/toxicity, else made-up sentences), vectorising each text as
the tool does, checks that every probability is bit-for-bit equal, and times both.

Run: python bench/offline_toxicity.py [--texts 2000]
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

from veriloop.tools.toxicity import _OfflineModel  # noqa: E402

PROMPTS = ROOT.parent / "shared" / "data" / "toxicity" / "realtoxicityprompts_val.jsonl"
WORDS = ["you", "are", "a", "nice", "stupid", "idiot", "plan", "damn", "calm", "hell", "text", "about"]


def texts(count: int) -> list[str]:
    found: list[str] = []
    if PROMPTS.exists():
        with PROMPTS.open() as handle:
            for line in handle:
                record = json.loads(line)
                for part in ("prompt", "continuation"):
                    text = (record.get(part) or {}).get("text")
                    if isinstance(text, str):
                        found.append(text)
                if len(found) >= count:
                    break
    rng = random.Random(0)
    while len(found) < count:
        found.append(" ".join(rng.choice(WORDS) for _ in range(rng.randrange(3, 40))))
    return found[:count]


def timed(score, lines: list[str]) -> tuple[float, list[float]]:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        scores = [score(text) for text in lines]
        return time.perf_counter() - start, scores
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000)
    args = parser.parse_args()
    model = _OfflineModel.get()
    assert model.folds is not None, "alt-profanity-check's model is not the shape the direct path reads"
    lines = texts(args.texts)
    vectorise = model.vectorizer.transform
    model.score(lines[0])  # warm both paths' imports
    old, old_scores = timed(lambda text: float(model.model.predict_proba(vectorise([text]))[0, 1]), lines)
    new, new_scores = timed(lambda text: model._probability(vectorise([text])), lines)
    assert old_scores == new_scores, "the direct path gave another probability"
    print(f"{len(lines)} texts, every probability equal: predict_proba {old * 1e3 / len(lines):.2f} ms a text, "
          f"direct {new * 1e3 / len(lines):.2f} ms a text ({old / new:.1f}x, vectorising included)")


if __name__ == "__main__":
    main()
