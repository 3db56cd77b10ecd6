"""Where standard prompting's HumanEval pass@1 loses points, from recorded runs.

    .venv/bin/python scripts/humaneval_gap.py RUN [--against RUN2] [--published 70.7]

RUN is a run directory (`veriloop run` or an eval cell) of `standard` on humaneval. The
script judges each recorded answer again with the problem's hidden tests (in the
sandbox, no model) and sorts the failures by cause: no function in the reply, code that
does not parse, a reply cut off by its token limit, a wrong value, an exception, a
time-out. With --against (the same problems under another prompt or setting), it pairs
the two runs problem by problem (exact McNemar p, paired bootstrap interval). Nothing is
generated: every figure comes from the runs' records.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from veriloop.domains import get_domain
from veriloop.records import Trajectory
from veriloop.runs.runner import load_trajectories
from veriloop.stats.metrics import wilson_interval
from veriloop.stats.paired import paired_comparison

CAUSES = ("no function in the reply", "code that does not parse", "cut off by the token limit", "wrong value",
          "exception", "time-out")


def failure_cause(domain, instance, t: Trajectory) -> str | None:
    """Why a recorded standard answer fails the hidden tests (None when it passes)."""
    text = t.final_text or ""
    truncated = any(c.finish_reason == "length" for c in t.calls if c.role == "generate")
    verdict = domain.verify(instance, text)
    if verdict.ok:
        return None
    if truncated:
        return "cut off by the token limit"
    kinds = [e.kind for e in verdict.errors]
    if verdict.malformed:
        return "code that does not parse" if "syntax_error" in kinds else "no function in the reply"
    # The first failing test decides: the later ones often fail for the same reason.
    return {"timeout": "time-out", "exception": "exception"}.get(kinds[0], "wrong value") if kinds else "wrong value"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="a run directory of standard prompting on humaneval")
    parser.add_argument("--against", type=Path, help="a second run on the same problems, paired with the first")
    parser.add_argument("--published", type=float, default=70.7,
                        help="the published pass@1 in percent (default: Qwen2.5-Coder-1.5B-Instruct, arXiv 2409.12186)")
    args = parser.parse_args(argv)

    domain = get_domain("humaneval")
    instances = {i.id: i for i in domain.load_instances(None)}

    def standard_of(run: Path) -> dict[str, Trajectory]:
        path = run / "trajectories.jsonl"
        if not path.exists():
            sys.exit(f"{run} holds no trajectories.jsonl; give a run directory of standard on humaneval")
        found = {t.instance_id: t for t in load_trajectories(path) if t.strategy.split(":")[0] == "standard"}
        if not found:
            sys.exit(f"{run} holds no trajectory of the standard strategy")
        return found

    first = standard_of(args.run)
    causes = Counter(failure_cause(domain, instances[i], t) for i, t in first.items())
    n, solved = len(first), sum(t.correct for t in first.values())
    low, high = wilson_interval(solved, n)
    print(f"standard pass@1: {solved}/{n} = {solved / n:.1%} (95% CI {low:.1%}-{high:.1%}); "
          f"published {args.published:.1f}%, so {100 * solved / n - args.published:+.1f} points against it")
    rechecked = n - sum(c is not None for c in causes.elements())
    if rechecked != solved:
        print(f"note: the hidden tests now pass {rechecked}, the run recorded {solved}")
    print("failures by cause:")
    for cause in CAUSES:
        print(f"  {cause}: {causes.get(cause, 0)}")
    tokens = sorted(c.completion_tokens for t in first.values() for c in t.calls if c.role == "generate")
    print(f"reply length: median {tokens[len(tokens) // 2]} tokens, longest {tokens[-1]}")

    if args.against is not None:
        second = standard_of(args.against)
        common = sorted(set(first) & set(second))
        c = paired_comparison([first[i].correct for i in common], [second[i].correct for i in common],
                              names=(str(args.run), str(args.against)))
        low, high = c.difference_ci95 or (0.0, 0.0)
        print(f"paired on {c.n} problems: {c.a_correct} vs {c.b_correct}, difference {100 * c.difference:+.1f} points "
              f"(95% CI {100 * low:+.1f} to {100 * high:+.1f}), only the first solved {c.a_only}, only the second "
              f"{c.b_only}, exact McNemar p = {c.p_value:.3f}")
        causes2 = Counter(failure_cause(domain, instances[i], second[i]) for i in common)
        print("the second run's failures by cause: "
              + ", ".join(f"{cause} {causes2.get(cause, 0)}" for cause in CAUSES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
