"""veriloop's optional extras (issue 38): the core install works alone, and each feature
whose extra is missing is one line naming the extra, never an ImportError.

A core-only install is simulated in a subprocess (helpers.core_only_process): a meta path
finder first on sys.meta_path finds none of the extras' modules, though they stay
installed for the rest of the suite. One such interpreter (the `core_only` fixture) runs
every core-only command and snippet; what `import veriloop` imports is read in it first.
"""

from __future__ import annotations

import json
import pickle
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from helpers import ROOT, assert_one_line_error, core_only_process, veriloop

from veriloop.errors import MissingExtra, VeriloopError
from veriloop.extras import EXTRAS, can_draw, install_command, marked, missing, require
from veriloop.registry import Registry

ONE_WORKER = True  # conftest.py: one core-only interpreter runs the core-only tests, not one per worker
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
# One core-only interpreter (the module fixture `core_only`) runs every command and Python
# snippet below, each in a folder of its own as its working directory: sixteen commands and
# ten snippets, each in an interpreter of its own, cost 10-40 s. No extra's module can be
# imported by any of them, so none can change what a later one finds missing. What
# `import veriloop` imports is read first, before anything else is (as in a fresh
# interpreter); the snippets that end in an uncaught error come last.

SNIPPETS: dict[str, str] = {}
"""Python run in the core-only interpreter, by name: what a `python -c` of it would give
(its exit status, stdout and stderr; an uncaught error's traceback, status 1)."""

SNIPPETS["import"] = (
    "import veriloop\n"
    "from veriloop import DOMAINS\n"
    "list(DOMAINS)\n"
    f"print(sorted(m for m in sys.modules if m.partition('.')[0] in {set(EXTRA_MODULES)!r}))\n"
)


def test_import_veriloop_imports_no_extra(core_only) -> None:
    assert core_only["import"] == (0, "[]\n", "")


SNIPPETS["help walk"] = """\
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
# What core_only_process("--help") runs: `python -m veriloop --help`.
SNIPPETS["python -m veriloop --help"] = (
    "import runpy\nsys.argv = ['veriloop', '--help']\nrunpy.run_module('veriloop', run_name='__main__', alter_sys=True)\n"
)


def test_every_help_works_with_the_core_alone(core_only) -> None:
    status, stdout, stderr = core_only["help walk"]
    assert status == 0 and "Traceback" not in stderr, stderr
    codes = json.loads(stdout)
    assert {"", "run", "verify", "import", "models list", "reproduce critic", "tools run"} <= set(codes)
    assert {path: result for path, result in codes.items() if result != [0, True]} == {}
    status, stdout, stderr = core_only["python -m veriloop --help"]
    assert status == 0 and stdout.startswith("Usage: python -m veriloop ") and stderr == ""


LISTINGS = [("plugins",), ("tools", "list"), ("run", "--help"), ("verify", "nope"),
            ("run", "--model", "no-such-model", "-n", "1")]
"""Commands run with the core alone in the core-only interpreter."""


def test_listings_mark_what_needs_an_extra(core_only) -> None:
    plugins = core_only[("plugins",)]
    assert plugins.returncode == 0, plugins.stderr
    assert re.search(r"^  blocksworld \(needs veriloop\[planning\]\) +veriloop$", plugins.stdout, re.M)
    assert re.search(r"^  toxicity \(needs veriloop\[critic\]\) +veriloop$", plugins.stdout, re.M)
    assert re.search(r"^  ray \(needs veriloop\[ray\]\) +veriloop$", plugins.stdout, re.M)
    assert re.search(r"^  smollm2-135m \(needs veriloop\[local\]\) +veriloop$", plugins.stdout, re.M)
    assert re.search(r"^  game24 +veriloop$", plugins.stdout, re.M)
    tools = core_only[("tools", "list")]
    assert tools.returncode == 0, tools.stderr
    assert tools.stdout.splitlines()[-2:] == [
        "toxicity (needs veriloop[critic]): pip install 'veriloop[critic]'",
        "search (needs veriloop[critic]): needs --search-corpus FILE|FOLDER or --search-url URL "
        "(see `veriloop tools run --help`)",
    ]
    assert tools.stdout.startswith("python: ")
    help_text = " ".join(core_only[("run", "--help")].stdout.split())
    assert ("game24, blocksworld (needs veriloop[planning]), mystery_blocksworld (needs veriloop[planning]), "
            "coloring (needs veriloop[planning]), planning (needs veriloop[planning]), gsm8k") in help_text
    assert_one_line_error(core_only[("verify", "nope")], "choose one of: game24, blocksworld (needs "
                          "veriloop[planning]),", "toxicity (needs veriloop[critic]), humaneval")


def test_listings_mark_nothing_with_every_extra() -> None:
    # Every extra is installed here: this process is what a full install gives.
    proc = veriloop("plugins")
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


@pytest.mark.parametrize(("args", "line"), WITHOUT_EXTRAS)
def test_a_feature_without_its_extra_is_one_line(core_only, args, line) -> None:
    proc = core_only[args]
    assert_one_line_error(proc)
    assert proc.stderr.strip() == line


def test_an_unknown_model_is_still_unknown_without_llama_cpp(core_only) -> None:
    assert_one_line_error(core_only[("run", "--model", "no-such-model", "-n", "1")], "unknown model 'no-such-model'")


SNIPPETS["api"] = (  # in its folder, beside x.gguf
    "import veriloop\n"
    "for make in (lambda: veriloop.domain('coloring'), lambda: veriloop.model('llamacpp/x.gguf')):\n"
    "    try:\n"
    "        make()\n"
    "    except veriloop.VeriloopError as exc:\n"
    "        print(type(exc).__name__, exc)\n"
)


def test_the_api_says_the_same(core_only) -> None:
    status, stdout, stderr = core_only["api"]
    assert status == 0, stderr
    assert stdout.splitlines() == [
        "MissingExtra " + the_line("planning", "the domain 'coloring'", PLANNING).removeprefix("error: "),
        "MissingExtra " + the_line("local", "the local model 'llamacpp/x.gguf'", "llama_cpp").removeprefix("error: "),
    ]


# A template dropped into planning/templates/ is a domain of its name (here: its folder,
# holding mine.toml; the package's own folder is put back after).
SNIPPETS["template"] = (
    "import veriloop, veriloop.domains.planning as planning\n"
    "from pathlib import Path\n"
    "templates, planning.TEMPLATES = planning.TEMPLATES, Path.cwd()\n"
    "try:\n"
    "    veriloop.domain('mine')\n"
    "except veriloop.VeriloopError as exc:\n"
    "    print(exc)\n"
    "finally:\n"
    "    planning.TEMPLATES = templates\n"
)


def test_a_planning_template_name_needs_the_extra(core_only) -> None:
    status, stdout, stderr = core_only["template"]
    assert status == 0, stderr
    assert stdout == the_line("planning", "the domain 'mine'", PLANNING).removeprefix("error: ") + "\n"


FIGURES = ("accuracy_vs_solutions.png", "accuracy_vs_tokens.png", "roc.png")
SKIPPED = ("note: accuracy_vs_solutions.png, accuracy_vs_tokens.png and roc.png not drawn: figures need veriloop's "
           "extra 'plots' (missing: matplotlib); pip install 'veriloop[plots]' and run the command again to draw them")
SNIPPETS["reproduction"] = (  # in its folder, beside payload.json
    "import json\nfrom pathlib import Path\nfrom veriloop.reproduce.selfcheck import write_outputs\n"
    "out = Path('out')\nout.mkdir()\n"
    "write_outputs(out, json.loads(Path('payload.json').read_text()), 'gsm8k', 'm')\n"
)


def test_a_reproduction_writes_its_tables_without_figures(core_only) -> None:
    assert (core_only["reproduction"][0], core_only["reproduction"][2]) == (0, SKIPPED + "\n")
    assert sorted(p.name for p in (core_only.folder("reproduction") / "out").iterdir()) == [
        "reproduction.json", "selfcheck.csv", "selfcheck.md"]


SNIPPETS["figure"] = (
    "from pathlib import Path\nfrom veriloop.stats.frontier import FrontierPanel, FrontierPoint, plot_frontier\n"
    "from veriloop.errors import VeriloopError\n"
    "try:\n"
    "    plot_frontier(Path('f.png'), [FrontierPanel('t', [FrontierPoint('a', 10.0, 0.5, 0.4, 0.6)])])\n"
    "except VeriloopError as exc:\n"
    "    print(exc)\n"
)


def test_a_function_whose_job_is_a_figure_is_one_line(core_only) -> None:
    assert core_only["figure"] == (0, the_line("plots", "drawing f.png", "matplotlib").removeprefix("error: ") + "\n",
                                   "")
    assert not (core_only.folder("figure") / "f.png").exists()


# These two end in an uncaught error (a process would exit with it): last.
SNIPPETS["amx"] = "from veriloop.models.amx import main\nmain()\n"


def test_the_amx_server_says_which_extra(core_only) -> None:
    status, _, stderr = core_only["amx"]
    assert status == 1 and stderr == the_line(
        "local", "python -m veriloop.models.amx (llama.cpp's server)", "llama_cpp") + "\n"


SNIPPETS["coloring"] = "import veriloop.domains.coloring\n"


def test_importing_the_coloring_package_is_one_line(core_only) -> None:
    status, _, stderr = core_only["coloring"]
    assert status == 1 and stderr.strip().splitlines()[-1] == "veriloop.errors.MissingExtra: " + (
        the_line("planning", "the domain 'coloring'", PLANNING).removeprefix("error: "))


# Run in the core-only interpreter: "import" first, then every command through the CLI's
# main() (helpers.veriloop), then the other snippets in SNIPPETS' order. A snippet runs as
# `python -c` would run it (sys in its globals, as core_only_process's prelude leaves it),
# its streams, working directory and argv its own and put back after.
_EVERYTHING = """
import contextlib, io, json, os, traceback
from pathlib import Path

def snippet(code, folder):
    out, err, here, argv = io.StringIO(), io.StringIO(), os.getcwd(), sys.argv
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                exec(compile(code, "<string>", "exec"), {{"__name__": "__main__", "sys": sys}})
                status = 0
            except SystemExit as exc:  # as the interpreter ends on it
                status = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
                if not isinstance(exc.code, int | None):
                    print(exc.code, file=sys.stderr)
            except BaseException:
                traceback.print_exc()
                status = 1
    finally:
        os.chdir(here)
        sys.argv = argv
    return [status, out.getvalue(), err.getvalue()]

snippets = {snippets!r}
done = {{"import": snippet(*snippets.pop("import"))}}
sys.path.insert(0, {tests!r})
from helpers import veriloop
commands = []
for args, folder in {cases!r}:
    proc = veriloop(*args, home=Path(folder) / "home", cwd=Path(folder), stdin="hello")
    commands.append([proc.returncode, proc.stdout, proc.stderr])
done.update((name, snippet(code, folder)) for name, (code, folder) in snippets.items())
print(json.dumps([commands, done]))
"""


class CoreOnly(dict):  # type: ignore[type-arg]
    """What each command (by its arguments: a CompletedProcess) and each snippet (by its
    name: exit status, stdout, stderr) gave with the core alone; `folder(name)`: a
    snippet's working directory."""

    def __init__(self, results: dict[object, object], folders: dict[str, Path]) -> None:
        super().__init__(results)
        self._folders = folders

    def folder(self, name: str) -> Path:
        return self._folders[name]


@pytest.fixture(scope="module")
def core_only(tmp_path_factory: pytest.TempPathFactory) -> CoreOnly:
    from veriloop.reproduce.selfcheck import analyse

    commands = [args for args, _ in WITHOUT_EXTRAS] + LISTINGS
    cases = []
    for i, args in enumerate(commands):
        folder = tmp_path_factory.mktemp(f"core-only-{i}")
        (folder / "model.gguf").write_bytes(b"GGUF")
        (folder / "answers.jsonl").write_text(GAME24_LINE)
        cases.append((list(args), str(folder)))
    folders = {name: tmp_path_factory.mktemp(f"snippet-{i}") for i, name in enumerate(SNIPPETS)}
    (folders["api"] / "x.gguf").write_bytes(b"GGUF")
    (folders["template"] / "mine.toml").write_text("")
    payload = analyse([], [], "gsm8k", "test-model", solutions=2, m=3, seed=0)
    payload["settings"] = {"temperature": 0.7, "max_steps": 8, "lambda_contradict": 1.0, "lambda_unrelated": 0.3}
    (folders["reproduction"] / "payload.json").write_text(json.dumps(payload))
    snippets = {name: (code, str(folders[name])) for name, code in SNIPPETS.items()}
    proc = core_only_process(code=_EVERYTHING.format(tests=str(ROOT / "tests"), cases=cases, snippets=snippets))
    assert proc.returncode == 0, proc.stderr
    done, ran = json.loads(proc.stdout.splitlines()[-1])
    results: dict[object, object] = {
        args: subprocess.CompletedProcess(args, *result) for args, result in zip(commands, done, strict=True)}
    results.update((name, tuple(result)) for name, result in ran.items())
    return CoreOnly(results, folders)
