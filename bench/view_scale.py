"""How big is a `veriloop view` report of a large run, and how fast does it open?

Writes a synthetic run of N trajectories (default 10,000) shaped like the main job's:
four Game of 24 strategies sharing one few-shot prompt, backprompting with the whole
history (the conversation grows two messages a round), LLM-judge calls, a fraction of
wrong verdicts so every filter has something to show. It then builds the report and
prints its size in bytes and per trajectory, with what the same records take as
trajectories.jsonl for comparison.

With Playwright and the system Chromium (/usr/bin/chromium) present it also opens the
file headless and prints the time until the first list row is drawn and the time to
apply a filter (strategy) until the count is updated. The issue's target: under 2 s each.

Run: python bench/view_scale.py [-n 10000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from veriloop.records import CallRecord, RoundRecord, Trajectory, Verdict, VerdictError  # noqa: E402
from veriloop.view.report import build  # noqa: E402

SYSTEM = "You solve Game of 24 puzzles. Keep your reply short and finish with the requested answer line."
FEW_SHOT = (
    "Combine the four given numbers into one arithmetic expression equal to 24. Each number must appear exactly "
    "once; you may use +, -, *, / and parentheses, and no other numbers.\n\nExamples:\n\nNumbers: 2 6 9 12\n"
    "Answer: 12 + 2 * 9 - 6\n\nNumbers: 4 4 6 8\nAnswer: (4 + 8) * (6 - 4)\n\nNumbers: 1 5 5 5\n"
    "Answer: 5 * (5 - 1 / 5)\n\n"
)
STRATEGIES = ("standard", "backprompt:verifier=sound,feedback=first", "backprompt:verifier=llm,feedback=llm",
              "sampling:k=5")


def call(role: str, rnd: int, messages: list[dict[str, str]], response: str, rng: random.Random) -> CallRecord:
    return CallRecord(role=role, round=rnd, messages=messages, response=response,  # type: ignore[arg-type]
                      finish_reason="stop",
                      prompt_tokens=40 * len(messages) + rng.randint(100, 200), completion_tokens=rng.randint(8, 60),
                      seconds=round(rng.uniform(0.2, 3.0), 3), cached=rng.random() < 0.1)


def synthetic(i: int, strategy: str, rng: random.Random) -> Trajectory:
    numbers = " ".join(str(rng.randint(1, 13)) for _ in range(4))
    base = [{"role": "system", "content": SYSTEM},
            {"role": "user",
             "content": FEW_SHOT + f"Numbers: {numbers}\nReply with a single line: Answer: <expression>"}]
    t = Trajectory(strategy=strategy, domain="game24", model="synthetic-135m", instance_id=f"game24-{i}", seed=0)
    rounds = 1 if strategy == "standard" else rng.randint(1, 5)
    messages = list(base)
    for r in range(1, rounds + 1):
        a, b, c, d = numbers.split()
        answer = f"({a} {rng.choice('+-*/')} {b}) * ({c} {rng.choice('+-*/')} {d})"
        text = f"Answer: {answer}"
        correct = rng.random() < 0.15
        t.calls.append(call("generate" if r == 1 else "correct", r, messages, text, rng))
        verdict = None
        if strategy != "standard":
            ok = correct if rng.random() < 0.8 else not correct
            verdict = Verdict(ok=ok, verifier="sound" if "sound" in strategy else "llm", errors=[] if ok else [
                VerdictError(kind="wrong_value", message=f"the expression evaluates to {rng.randint(0, 99)}, not 24")])
            if "llm" in strategy:
                judge = [*messages, {"role": "assistant", "content": text},
                         {"role": "user", "content": "Is that answer right? Reply with JSON."}]
                t.calls.append(call("verify", r, judge, '{"value": 20, "correct": false}', rng))
        t.rounds.append(RoundRecord(round=r, text=text, answer=answer, verdict=verdict, correct=correct))
        if correct or (verdict is not None and verdict.ok):
            break
        if strategy.startswith("backprompt"):
            feedback = "That answer is not correct: " + (
                verdict.errors[0].message if verdict and verdict.errors else "")
            messages = [*messages, {"role": "assistant", "content": text}, {"role": "user", "content": feedback}]
    last = t.rounds[-1]
    t.final_text, t.final_answer, t.correct = last.text, last.answer, last.correct
    t.stop_reason = "single_answer" if strategy == "standard" else "verified" if last.verdict and last.verdict.ok \
        else "max_rounds"
    t.seconds = round(sum(c.seconds for c in t.calls), 3)
    return t


def write_run(folder: Path, n: int) -> Path:
    rng = random.Random(0)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "trajectories.jsonl", "w") as f:
        for k in range(n):
            f.write(synthetic(k // len(STRATEGIES), STRATEGIES[k % len(STRATEGIES)], rng).model_dump_json() + "\n")
    return folder


def browser_times(report: Path) -> tuple[float, float] | None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not Path("/usr/bin/chromium").exists():
        return None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium")
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        started = time.perf_counter()
        page.goto(report.as_uri())
        page.wait_for_selector(".row:not(.head)")
        opened = time.perf_counter() - started
        select = page.locator(".filters select").first
        value = select.locator("option").nth(1).get_attribute("value")
        before = page.locator(".count b").inner_text()
        started = time.perf_counter()
        select.select_option(value)
        page.wait_for_function("b => document.querySelector('.count b').textContent !== b", arg=before)
        filtered = time.perf_counter() - started
        browser.close()
    return opened, filtered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10_000, help="trajectories in the synthetic run")
    parser.add_argument("--keep", type=Path, help="write the run and report here and keep them")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="view-scale-"))
    try:
        run = write_run(folder / "run", args.n)
        jsonl = (run / "trajectories.jsonl").stat().st_size
        started = time.perf_counter()
        built = build([run], "view scale", references=False)
        seconds = time.perf_counter() - started
        report = folder / "report.html"
        report.write_text(built.html, encoding="utf-8")
        print(f"{built.trajectories} trajectories: report {built.size} bytes, {built.bytes_per_trajectory:.0f} bytes "
              f"per trajectory (trajectories.jsonl: {jsonl} bytes, {jsonl / built.trajectories:.0f} per trajectory; "
              f"report/jsonl {built.size / jsonl:.2f}); built in {seconds:.1f} s")
        times = browser_times(report)
        if times is None:
            print("browser: playwright or /usr/bin/chromium not available; open and filter not timed")
        else:
            print(f"chromium: opened (first row drawn) in {times[0]:.2f} s, filter applied in {times[1]:.2f} s")
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
