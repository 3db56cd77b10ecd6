"""CPU of setting up what an experiment builds once per cell or model: a server model
(`ServerModel`, which keeps an openai SDK client for its settings; that client's HTTP
client never sends, so it loads no certificates) and the toxicity
domain's instances from a RealToxicityPrompts file.

Run from a tree's root: python bench/model_setup.py [--models 20] [--loads 5] [--data FILE]
Each figure is process CPU (time.process_time) of the whole loop, in a fresh process;
compare two trees by running the script from each (it imports the tree's own src).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from veriloop.domains.toxicity import Toxicity  # noqa: E402
from veriloop.models.openai_compat import ServerModel  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--data", type=Path,
                        default=ROOT.parent / "shared" / "data" / "toxicity" / "realtoxicityprompts_val.jsonl")
    args = parser.parse_args()
    ServerModel("warm-up", base_url="http://127.0.0.1:9/v1")  # imports the SDK outside the timing
    start = time.process_time()
    models = [ServerModel(f"m{i}", base_url="http://127.0.0.1:9/v1") for i in range(args.models)]
    made = time.process_time() - start

    async def close() -> None:
        for m in models:
            await m.aclose()

    asyncio.run(close())
    print(f"ServerModel: {1000 * made / args.models:.1f} ms CPU each ({args.models} models)")
    if args.data.exists():
        domain = Toxicity()
        start = time.process_time()
        counts = {len(domain.load_instances(str(args.data))) for _ in range(args.loads)}
        loaded = time.process_time() - start
        print(f"toxicity load_instances: {1000 * loaded / args.loads:.0f} ms CPU each "
              f"({args.loads} loads of {args.data.name}, {' / '.join(map(str, sorted(counts)))} instances each time)")


if __name__ == "__main__":
    main()
