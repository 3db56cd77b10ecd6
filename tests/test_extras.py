"""veriloop's optional extras (issue 38): the core install works alone, and each feature
whose extra is missing is one line naming the extra, never an ImportError.

A core-only install is simulated in a subprocess (helpers.core_only_process): a meta path
finder first on sys.meta_path finds none of the extras' modules, though they stay
installed for the rest of the suite.
"""

from __future__ import annotations

import json
import pickle
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions

import pytest
from helpers import ROOT, assert_one_line_error, core_only_process

from veriloop.errors import MissingExtra, VeriloopError
from veriloop.extras import EXTRAS, can_draw, install_command, marked, missing, require
from veriloop.registry import Registry

ONE_WORKER = True  # conftest.py: one core-only interpreter runs WITHOUT_EXTRAS, not one per worker
EXTRA_MODULES = sorted(module for modules, _ in EXTRAS.values() for module in modules)


def the_line(extra: str, feature: str, absent: str) -> str:
    return (f"error: {feature} needs veriloop's extra '{extra}', which is not installed (missing: {absent}); "
            f"install it with: pip install 'veriloop[{extra}]'")


PLANNING = "pysat, pddl, pyperplan, up_fast_downward, networkx"
CRITIC = "bm25s, profanity_check"


# ------------------------------------------------------------------ the table and require


def test_missing_finds_without_importing(monkeypatch) -> None:
    for module in ("networkx", "pysat"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    assert missing("planning") == ()
    assert "networkx" not in sys.modules and "pysat" not in sys.modules


def test_a_finder_that_raises_counts_as_missing(monkeypatch) -> None:
    class Refuses:
        def find_spec(self, name, path=None, target=None):
            if name == "bm25s":
                raise ModuleNotFoundError(name)
            if name == "profanity_check":
                raise ValueError("profanity_check.__spec__ is None")
            return None

    monkeypatch.delitem(sys.modules, "bm25s", raising=False)
    monkeypatch.delitem(sys.modules, "profanity_check", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Refuses(), *sys.meta_path])
    assert missing("critic") == ("bm25s", "profanity_check")
    with pytest.raises(MissingExtra) as caught:
        require("critic", "the tool 'search'")
    assert str(caught.value) == the_line("critic", "the tool 'search'", CRITIC).removeprefix("error: ")
    assert (caught.value.extra, caught.value.missing) == ("critic", ("bm25s", "profanity_check"))
    assert isinstance(caught.value, VeriloopError)
    again = pickle.loads(pickle.dumps(caught.value))  # as a Ray worker's error reaches the driver
    assert (str(again), again.extra, again.missing) == (str(caught.value), "critic", ("bm25s", "profanity_check"))


def test_an_unknown_extra_is_the_callers_mistake() -> None:
    with pytest.raises(ValueError, match="unknown extra 'plot'; veriloop's extras are local, planning"):
        missing("plot")
    with pytest.raises(ValueError, match="unknown extra"):
        Registry("thing").register("x", "veriloop.errors:VeriloopError", extra="plot")


def test_words() -> None:
    assert install_command("plots") == "pip install 'veriloop[plots]'"
    assert marked("blocksworld", "planning") == "blocksworld (needs veriloop[planning])"
    assert marked("game24", None) == "game24"
    assert can_draw("x.png") is True


def test_a_registry_entry_with_a_missing_extra_is_marked_and_not_imported(monkeypatch) -> None:
    registry: Registry[object] = Registry("domain")
    registry.register("light", "veriloop.errors:VeriloopError")
    registry.register("heavy", "veriloop.never_imported:Thing", extra="plots")
    monkeypatch.setattr("veriloop.extras._found", lambda module: module != "matplotlib")
    assert registry.needs("heavy") == "plots" and registry.needs("light") is None
    assert registry.listed() == ["light", "heavy (needs veriloop[plots])"]
    assert registry.shown("heavy") == "heavy (needs veriloop[plots])"
    assert registry.unknown("x") == "unknown domain 'x'; choose one of: light, heavy (needs veriloop[plots])"
    with pytest.raises(MissingExtra, match=r"^the domain 'heavy' needs veriloop's extra 'plots'"):
        registry["heavy"]
    assert "veriloop.never_imported" not in sys.modules
    monkeypatch.setattr("veriloop.extras._found", lambda module: True)
    assert registry.needs("heavy") is None and registry.shown("heavy") == "heavy"


def test_the_built_ins_name_their_extras() -> None:
    from veriloop.domains import DOMAINS
    from veriloop.experiment.executor import EXECUTORS
    from veriloop.models.packs import PACKS
    from veriloop.tools import TOOLS

    extras = {(kind, name): entry.extra for kind, registry in
              (("domain", DOMAINS), ("tool", TOOLS), ("executor", EXECUTORS), ("pack", PACKS))
              for name, entry in registry._entries.items() if entry.extra}
    assert extras == {
        ("domain", "blocksworld"): "planning", ("domain", "mystery_blocksworld"): "planning",
        ("domain", "coloring"): "planning", ("domain", "planning"): "planning", ("domain", "toxicity"): "critic",
        ("tool", "search"): "critic", ("tool", "toxicity"): "critic", ("executor", "ray"): "ray",
        **{("pack", name): "local" for name in PACKS},
    }


# ------------------------------------------------------------------ pyproject
# NOTE for the lead: this test reads pyproject.toml's [project.optional-dependencies] as
# issue 38 lays them out (local, planning, critic, plots, ray, inspect, plus docs, dev,
# all). It fails until pyproject.toml has those extras; it should pass once it does.


def _normalised(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def test_the_table_names_the_modules_of_pyprojects_extras() -> None:
    assert_table_matches(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def assert_table_matches(extras: dict[str, list[str]]) -> None:
    """EXTRAS names the extras of `extras` (pyproject's optional-dependencies) but docs, dev
    and all, each with the top-level modules of its distributions (those installed here)."""
    assert set(extras) - {"docs", "dev", "all"} == set(EXTRAS)
    installed = {module: {_normalised(d) for d in dists} for module, dists in packages_distributions().items()}
    for extra, (modules, _) in EXTRAS.items():
        declared = {_normalised(re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0]) for requirement in extras[extra]}
        # Each module comes from a distribution of its extra, and each distribution gives a module of the table.
        given = {module: installed[module] & declared for module in modules if module in installed}
        assert all(given.values()), (extra, given, declared)
        assert {d for found in given.values() for d in found} == {
            d for d in declared if any(d in dists for dists in installed.values())}, (extra, declared)
    # "all" is every extra, by name (veriloop[a,b]) or by their distributions.
    named, distributions = set(), set()
    for requirement in extras["all"]:
        spelled = requirement.replace(" ", "")
        if found := re.fullmatch(r"veriloop\[([^\]]+)\]", spelled):
            named |= set(found.group(1).split(","))
        else:
            distributions.add(_normalised(re.split(r"[\[<>=!~;]", spelled, maxsplit=1)[0]))
    for extra in EXTRAS:
        declared = {_normalised(re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0]) for r in extras[extra]}
        assert extra in named or declared <= distributions, extra


# ------------------------------------------------------------------ a core-only install


def test_import_veriloop_imports_no_extra() -> None:
    proc = core_only_process(code=(
        "import veriloop\n"
        "from veriloop import DOMAINS\n"
        "list(DOMAINS)\n"
        f"print(sorted(m for m in sys.modules if m.partition('.')[0] in {set(EXTRA_MODULES)!r}))\n"
    ))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "[]\n", "")


HELP_WALK = """\
import contextlib, io, json
import typer.main
from veriloop.cli import app

def walk(command, path):
    yield path
    if hasattr(command, "list_commands"):  # a group (typer's own click: not click.Group)
        ctx = type(command).context_class(command)
        for name in command.list_commands(ctx):
            yield from walk(command.get_command(ctx, name), [*path, name])

codes = {}
for path in walk(typer.main.get_command(app), []):
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            app(args=[*path, "--help"], prog_name="veriloop")
        code = 0
    except SystemExit as exc:
        code = exc.code
    except BaseException as exc:
        code = repr(exc)
    codes[" ".join(path)] = [code, "Usage: veriloop" in out.getvalue()]
print(json.dumps(codes))
"""


def test_every_help_works_with_the_core_alone() -> None:
    proc = core_only_process(code=HELP_WALK)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    codes = json.loads(proc.stdout)
    assert {"", "run", "verify", "import", "models list", "reproduce critic", "tools run"} <= set(codes)
    assert {path: result for path, result in codes.items() if result != [0, True]} == {}
    real = core_only_process("--help")
    assert real.returncode == 0 and real.stdout.startswith("Usage: python -m veriloop ") and real.stderr == ""


LISTINGS = [("plugins",), ("tools", "list"), ("run", "--help"), ("verify", "nope"),
            ("run", "--model", "no-such-model", "-n", "1")]
"""Commands run with the core alone in the interpreter of WITHOUT_EXTRAS (see _ONE_BY_ONE)."""


def test_listings_mark_what_needs_an_extra(without_extras) -> None:
    plugins = without_extras[("plugins",)]
    assert plugins.returncode == 0, plugins.stderr
    assert re.search(r"^  blocksworld \(needs veriloop\[planning\]\) +veriloop$", plugins.stdout, re.M)
    assert re.search(r"^  toxicity \(needs veriloop\[critic\]\) +veriloop$", plugins.stdout, re.M)
    assert re.search(r"^  ray \(needs veriloop\[ray\]\) +veriloop$", plugins.stdout, re.M)
    assert re.search(r"^  smollm2-135m \(needs veriloop\[local\]\) +veriloop$", plugins.stdout, re.M)
    assert re.search(r"^  game24 +veriloop$", plugins.stdout, re.M)
    tools = without_extras[("tools", "list")]
    assert tools.returncode == 0, tools.stderr
    assert tools.stdout.splitlines()[-2:] == [
        "toxicity (needs veriloop[critic]): pip install 'veriloop[critic]'",
        "search (needs veriloop[critic]): needs --search-corpus FILE|FOLDER or --search-url URL "
        "(see `veriloop tools run --help`)",
    ]
    assert tools.stdout.startswith("python: ")
    help_text = " ".join(without_extras[("run", "--help")].stdout.split())
    assert ("game24, blocksworld (needs veriloop[planning]), mystery_blocksworld (needs veriloop[planning]), "
            "coloring (needs veriloop[planning]), planning (needs veriloop[planning]), gsm8k") in help_text
    assert_one_line_error(without_extras[("verify", "nope")], "choose one of: game24, blocksworld (needs "
                          "veriloop[planning]),", "toxicity (needs veriloop[critic]), humaneval")


def test_listings_mark_nothing_with_every_extra() -> None:
    proc = core_only_process("plugins", blocked=())
    assert proc.returncode == 0 and "needs veriloop" not in proc.stdout


GAME24_LINE = '{"instance": "1 1 4 6", "answer": "6 / (1 - 1/4)"}\n'


WITHOUT_EXTRAS = [
    (("verify", "blocksworld", "--domain-file", "d.pddl", "--problem", "p.pddl", "--answer", "x"),
     the_line("planning", "the domain 'blocksworld'", PLANNING)),
    (("verify", "mystery_blocksworld", "--domain-file", "d.pddl", "--problem", "p.pddl", "--answer", "x"),
     the_line("planning", "the domain 'mystery_blocksworld'", PLANNING)),
    (("verify", "planning", "--domain-file", "d.pddl", "--problem", "p.pddl", "--answer", "x"),
     the_line("planning", "the domain 'planning'", PLANNING)),
    (("verify", "coloring", "--graph", "g.col", "--answer", "0: 1"),
     the_line("planning", "the domain 'coloring'", PLANNING)),
    (("run", "--domain", "toxicity", "--model", "openai/m", "--base-url", "http://127.0.0.1:9", "-n", "1"),
     the_line("critic", "the domain 'toxicity'", CRITIC)),
    (("tools", "run", "search", "--search-corpus", "corpus.jsonl"), the_line("critic", "the tool 'search'", CRITIC)),
    (("tools", "run", "toxicity"), the_line("critic", "the tool 'toxicity'", CRITIC)),
    (("run", "--model", "llamacpp/model.gguf", "-n", "1"),
     the_line("local", "the local model 'llamacpp/model.gguf'", "llama_cpp")),
    (("run", "--model", "smollm2-135m", "-n", "1"), the_line("local", "the local model 'smollm2-135m'", "llama_cpp")),
    (("run", "--executor", "ray", "-n", "1"), the_line("ray", "--executor ray", "ray")),
    (("import", "answers.jsonl", "--domain", "game24", "--format", "inspect"),
     the_line("inspect", "veriloop import --format inspect", "inspect_ai")),
]

# Every command of WITHOUT_EXTRAS and LISTINGS in one core-only interpreter, each through
# the CLI's main() in its own folder and VERILOOP_HOME (helpers.veriloop): sixteen
# interpreters importing veriloop cost 10-40 s. No extra's module can be imported by any
# of them, so none can change what a later one finds missing.
_ONE_BY_ONE = """
import json
sys.path.insert(0, {tests!r})
from helpers import veriloop
done = []
for args, folder in {cases!r}:
    proc = veriloop(*args, home=Path(folder) / "home", cwd=Path(folder), stdin="hello")
    done.append([proc.returncode, proc.stdout, proc.stderr])
print(json.dumps(done))
"""


@pytest.fixture(scope="module")
def without_extras(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, ...], subprocess.CompletedProcess[str]]:
    """What each command of WITHOUT_EXTRAS and LISTINGS gave with the core alone, by its arguments."""
    commands = [args for args, _ in WITHOUT_EXTRAS] + LISTINGS
    cases = []
    for i, args in enumerate(commands):
        folder = tmp_path_factory.mktemp(f"core-only-{i}")
        (folder / "model.gguf").write_bytes(b"GGUF")
        (folder / "answers.jsonl").write_text(GAME24_LINE)
        cases.append((list(args), str(folder)))
    code = "from pathlib import Path\n" + _ONE_BY_ONE.format(tests=str(ROOT / "tests"), cases=cases)
    proc = core_only_process(code=code)
    assert proc.returncode == 0, proc.stderr
    done = json.loads(proc.stdout.splitlines()[-1])
    return {args: subprocess.CompletedProcess(args, *result) for args, result in zip(commands, done, strict=True)}


@pytest.mark.parametrize(("args", "line"), WITHOUT_EXTRAS)
def test_a_feature_without_its_extra_is_one_line(without_extras, args, line) -> None:
    proc = without_extras[args]
    assert_one_line_error(proc)
    assert proc.stderr.strip() == line


def test_an_unknown_model_is_still_unknown_without_llama_cpp(without_extras) -> None:
    assert_one_line_error(without_extras[("run", "--model", "no-such-model", "-n", "1")], "unknown model 'no-such-model'")


def test_the_api_says_the_same(tmp_path) -> None:
    (tmp_path / "x.gguf").write_bytes(b"GGUF")
    proc = core_only_process(code=(
        "import veriloop\n"
        "for make in (lambda: veriloop.domain('coloring'), lambda: veriloop.model('llamacpp/x.gguf')):\n"
        "    try:\n"
        "        make()\n"
        "    except veriloop.VeriloopError as exc:\n"
        "        print(type(exc).__name__, exc)\n"
    ), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "MissingExtra " + the_line("planning", "the domain 'coloring'", PLANNING).removeprefix("error: "),
        "MissingExtra " + the_line("local", "the local model 'llamacpp/x.gguf'", "llama_cpp").removeprefix("error: "),
    ]


def test_importing_the_coloring_package_is_one_line() -> None:
    proc = core_only_process(code="import veriloop.domains.coloring\n")
    assert proc.returncode == 1 and proc.stderr.strip().splitlines()[-1] == "veriloop.errors.MissingExtra: " + (
        the_line("planning", "the domain 'coloring'", PLANNING).removeprefix("error: "))


def test_a_planning_template_name_needs_the_extra(tmp_path) -> None:
    # A template dropped into planning/templates/ is a domain of its name.
    (tmp_path / "mine.toml").write_text("")
    proc = core_only_process(code=(
        "import veriloop, veriloop.domains.planning as planning\n"
        "from pathlib import Path\n"
        f"planning.TEMPLATES = Path({str(tmp_path)!r})\n"
        "try:\n"
        "    veriloop.domain('mine')\n"
        "except veriloop.VeriloopError as exc:\n"
        "    print(exc)\n"
    ))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == the_line("planning", "the domain 'mine'", PLANNING).removeprefix("error: ") + "\n"


def test_the_amx_server_says_which_extra() -> None:
    proc = core_only_process(code="from veriloop.models.amx import main\nmain()\n")
    assert proc.returncode == 1 and proc.stderr == the_line(
        "local", "python -m veriloop.models.amx (llama.cpp's server)", "llama_cpp") + "\n"


FIGURES = ("accuracy_vs_solutions.png", "accuracy_vs_tokens.png", "roc.png")
SKIPPED = ("note: accuracy_vs_solutions.png, accuracy_vs_tokens.png and roc.png not drawn: figures need veriloop's "
           "extra 'plots' (missing: matplotlib); pip install 'veriloop[plots]' and run the command again to draw them")


def test_a_reproduction_writes_its_tables_without_figures(tmp_path) -> None:
    from veriloop.reproduce.selfcheck import analyse

    payload = analyse([], [], "gsm8k", "test-model", solutions=2, m=3, seed=0)
    payload["settings"] = {"temperature": 0.7, "max_steps": 8, "lambda_contradict": 1.0, "lambda_unrelated": 0.3}
    (tmp_path / "payload.json").write_text(json.dumps(payload))
    proc = core_only_process(code=(
        "import json\nfrom pathlib import Path\nfrom veriloop.reproduce.selfcheck import write_outputs\n"
        f"out = Path({str(tmp_path / 'out')!r})\nout.mkdir()\n"
        f"write_outputs(out, json.loads(Path({str(tmp_path / 'payload.json')!r}).read_text()), 'gsm8k', 'm')\n"
    ))
    assert (proc.returncode, proc.stderr) == (0, SKIPPED + "\n")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["reproduction.json", "selfcheck.csv",
                                                                     "selfcheck.md"]


def test_a_function_whose_job_is_a_figure_is_one_line(tmp_path) -> None:
    proc = core_only_process(code=(
        "from pathlib import Path\nfrom veriloop.stats.frontier import FrontierPanel, FrontierPoint, plot_frontier\n"
        "from veriloop.errors import VeriloopError\n"
        "try:\n"
        f"    plot_frontier(Path({str(tmp_path / 'f.png')!r}), [FrontierPanel('t', [FrontierPoint('a', 10.0, 0.5, 0.4, 0.6)])])\n"
        "except VeriloopError as exc:\n"
        "    print(exc)\n"
    ))
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0, the_line("plots", "drawing f.png", "matplotlib").removeprefix("error: ") + "\n", "")
    assert not (tmp_path / "f.png").exists()
