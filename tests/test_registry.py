"""The one registry shape (veriloop.registry) and the plugins it finds: lazy entries, the
unknown-name error, entry points of installed distributions, broken and clashing plugins."""

from __future__ import annotations

import re
import sys

import pytest
from helpers import fake_distribution, veriloop

from veriloop.errors import VeriloopError
from veriloop.registry import BUILTIN, Registry


def test_a_lazy_entry_is_imported_on_first_use_only(installed):
    (installed / "fake_lazy.py").write_text("VALUE = object()\n")
    widgets: Registry[object] = Registry("widget")
    widgets.register("lazy", "fake_lazy:VALUE")
    assert "lazy" in widgets and list(widgets) == ["lazy"]
    assert "fake_lazy" not in sys.modules  # asking and listing import nothing
    value = widgets["lazy"]
    assert value is sys.modules["fake_lazy"].VALUE
    assert widgets["lazy"] is value
    assert widgets.source("lazy") == BUILTIN


def test_an_unknown_name_is_one_error_listing_the_known_names_in_order():
    widgets: Registry[int] = Registry("widget")
    widgets.register("b", 2)
    widgets.register("a", 1)
    with pytest.raises(VeriloopError) as caught:
        widgets.lookup("c")
    assert str(caught.value) == "unknown widget 'c'; choose one of: b, a"
    with pytest.raises(VeriloopError, match=r"^unknown widget 'c@1'; choose one of: b, a$"):
        widgets.lookup("c", shown="c@1")
    with pytest.raises(KeyError):
        widgets["c"]  # as a mapping, a missing name is a KeyError
    assert widgets.get("c") is None


def test_register_decorates_and_assignment_names_the_module():
    widgets: Registry[object] = Registry("widget")

    @widgets.register("made")
    def make() -> str:
        return "made"

    assert make() == "made" and widgets["made"] is make
    widgets["assigned"] = make
    assert widgets.source("assigned") == __name__.split(".")[0]
    del widgets["assigned"]
    assert list(widgets) == ["made"]


def test_entry_points_join_after_the_built_ins_each_with_its_distribution(installed):
    fake_distribution(installed, "fake-widgets", {"veriloop.widgets": {"shiny": "fake_widgets:SHINY"}},
                      {"fake_widgets": "SHINY = 'a shiny widget'\n"})
    widgets: Registry[str] = Registry("widget", "veriloop.widgets")
    widgets.register("plain", "x:y")
    assert list(widgets) == ["plain", "shiny"]
    assert widgets.sources() == [("plain", BUILTIN), ("shiny", "fake-widgets")]
    assert "fake_widgets" not in sys.modules  # found, not loaded
    assert widgets["shiny"] == "a shiny widget"
    assert widgets.problems == []


def test_a_broken_plugin_is_one_line_naming_it_and_breaks_no_other_name(installed):
    fake_distribution(installed, "fake-broken", {"veriloop.widgets": {"cracked": "fake_broken:THING"}},
                      {"fake_broken": "raise ImportError('fake_broken needs libfoo,\\nwhich is missing')\n"})
    fake_distribution(installed, "fake-widgets", {"veriloop.widgets": {"shiny": "fake_widgets:SHINY"}},
                      {"fake_widgets": "SHINY = 'a shiny widget'\n"})
    widgets: Registry[str] = Registry("widget", "veriloop.widgets")
    assert list(widgets) == ["cracked", "shiny"]
    with pytest.raises(VeriloopError) as caught:
        widgets["cracked"]
    assert str(caught.value) == (
        "widget 'cracked' comes from the plugin fake-broken (veriloop.widgets: cracked = fake_broken:THING), "
        "which failed to load: ImportError: fake_broken needs libfoo, which is missing; reinstall or uninstall "
        "fake-broken"
    )
    assert widgets["shiny"] == "a shiny widget"


def test_a_plugin_never_replaces_a_name_already_taken(installed):
    fake_distribution(installed, "fake-widgets", {"veriloop.widgets": {"plain": "fake_widgets:SHINY"}},
                      {"fake_widgets": "SHINY = 'a shiny widget'\n"})
    widgets: Registry[object] = Registry("widget", "veriloop.widgets")
    widgets.register("plain", 1)
    assert list(widgets) == ["plain"]
    assert widgets["plain"] == 1
    assert widgets.problems == ["widget 'plain' of the plugin fake-widgets is ignored: veriloop already gives that name"]


def test_adapt_shapes_what_a_plugin_gives_and_its_refusal_names_the_plugin(installed):
    fake_distribution(installed, "fake-widgets", {"veriloop.widgets": {"number": "fake_widgets:NUMBER",
                                                                      "word": "fake_widgets:WORD"}},
                      {"fake_widgets": "NUMBER = 7\nWORD = 'seven'\n"})

    def adapt(name: str, given: object) -> int:
        if not isinstance(given, int):
            raise TypeError(f"it gives a {type(given).__name__}; give an int")
        return given * 2

    widgets: Registry[int] = Registry("widget", "veriloop.widgets", adapt=adapt)
    assert widgets["number"] == 14
    with pytest.raises(VeriloopError, match=r"^widget 'word' from the plugin fake-widgets \(veriloop.widgets: word = "
                                            r"fake_widgets:WORD\): it gives a str; give an int$"):
        widgets["word"]


@pytest.fixture
def plugged(installed):
    """A fake plugin giving veriloop a domain (a function returning a Task), a check, a
    strategy and a tool, found by the real registries; forgotten after the test."""
    from veriloop.domains import DOMAINS
    from veriloop.strategies import STRATEGIES
    from veriloop.tools import TOOLS
    from veriloop.verifiers import VERIFIERS

    fake_distribution(installed, "fake-plugin", {
        "veriloop.domains": {"evens": "fake_plugin:evens", "nothing": "fake_plugin:nothing"},
        "veriloop.verifiers": {"is-even": "fake_plugin:is_even", "verifier-class": "fake_plugin:Checker"},
        "veriloop.strategies": {"twice": "fake_plugin:Twice", "misnamed": "fake_plugin:Twice"},
        "veriloop.tools": {"echo": "fake_plugin:Echo"},
    }, {"fake_plugin": PLUGIN})
    registries = (DOMAINS, VERIFIERS, STRATEGIES, TOOLS)
    for registry in registries:
        registry.rediscover()
    yield installed
    for registry in registries:
        registry.rediscover()


PLUGIN = '''
import veriloop
from veriloop.strategies.standard import Standard


def is_even(row, answer):
    return "" if int(answer) % 2 == 0 else f"{answer} is odd"


def evens():
    rows = [{"id": "two", "n": 2}, {"id": "four", "n": 4}]
    return veriloop.Task.from_records(rows, prompt="Name an even number near {n}.", check=is_even, id_field="id",
                                      name="evens")


def nothing():
    return 42


class Checker:
    name = "verifier-class"

    async def verify(self, episode, text, round):
        return veriloop.Verdict(ok=True, verifier=self.name)


class Twice(Standard):
    kind = "twice"
    summary = "the standard strategy, under another name"


class Echo:
    name = "echo"
    description = "says it back"

    def __init__(self, **options):
        self.options = options
'''


def test_the_real_registries_find_a_plugin_domain_check_strategy_and_tool(plugged):
    from veriloop.checks import FunctionCheck
    from veriloop.domains import DOMAINS, get_domain
    from veriloop.strategies import parse_strategy
    from veriloop.tools import get_tool
    from veriloop.verifiers import get_verifier

    assert DOMAINS.source("evens") == "fake-plugin" and DOMAINS.source("game24") == BUILTIN
    domain = get_domain("evens")
    assert domain.name == "evens"
    assert [i.id for i in domain.load_instances(None)] == ["two", "four"]
    check = get_verifier("is-even")
    assert isinstance(check, FunctionCheck) and check.name == "is-even"
    assert get_verifier("verifier-class").name == "verifier-class"
    assert parse_strategy("twice").canonical == "twice:temperature=0"
    assert get_tool("echo", colour="red").options == {"colour": "red"}


def test_a_plugin_that_gives_the_wrong_thing_is_one_error_naming_it(plugged):
    from veriloop.domains import get_domain
    from veriloop.strategies import parse_strategy

    with pytest.raises(VeriloopError) as caught:
        get_domain("nothing")
    assert str(caught.value) == (
        "domain 'nothing' from the plugin fake-plugin built an object of type int, not a domain: give a veriloop.Task, "
        "a subclass of veriloop.domains.base.BaseDomain, or one of its instances"
    )
    with pytest.raises(VeriloopError) as caught:
        parse_strategy("misnamed")
    assert str(caught.value) == (
        "strategy 'misnamed' from the plugin fake-plugin (veriloop.strategies: misnamed = fake_plugin:Twice): its "
        "class Twice has kind 'twice'; name the entry point 'twice'"
    )
    with pytest.raises(VeriloopError, match=r"^unknown domain 'chess'; choose one of: game24, .*, toxicity, humaneval, "
                                            r"humaneval-impossible, evens, nothing$"):
        get_domain("chess")


def test_plugins_lists_every_registry_with_where_each_name_comes_from(plugged):
    result = veriloop("plugins", columns="200")
    # The listing is whole, and the command fails in one error line.
    assert (result.returncode, result.stderr) == (2, "error: 1 plugin entry failed to load (listed above)\n")
    lines = result.stdout.splitlines()
    assert lines[0] == "domains (plugins: entry points in veriloop.domains)"
    # The names' column is as wide as the longest name, humaneval-impossible.
    assert "  game24                veriloop" in lines
    assert "  evens                 fake-plugin" in lines
    assert "feedback levels (built in only)" in lines
    assert "  echo        fake-plugin" in lines
    broken = [line for line in lines if "BROKEN" in line]
    assert len(broken) == 1
    assert re.match(r"  misnamed +fake-plugin  BROKEN: strategy 'misnamed' from the plugin fake-plugin ", broken[0])


# ------------------------------------------------------------------ plugins that end the process on import

# Each module is one way an import can fail without an Exception: the interpreter's exit,
# a generator's close, and an exception that cannot say what it is.
HOSTILE = {
    "fake_exits": "raise SystemExit(0)\n",
    "fake_closes": "raise GeneratorExit('closed on import')\n",
    "fake_mute": (
        "class Mute(Exception):\n"
        "    def __str__(self):\n"
        "        raise SystemExit(3)\n"
        "raise Mute()\n"
    ),
}


def test_a_plugin_whose_import_exits_or_cannot_be_described_is_one_line_naming_it(installed):
    fake_distribution(installed, "fake-hostile", {"veriloop.widgets": {
        name.removeprefix("fake_"): f"{name}:THING" for name in HOSTILE}}, HOSTILE)
    fake_distribution(installed, "fake-widgets", {"veriloop.widgets": {"shiny": "fake_widgets:SHINY"}},
                      {"fake_widgets": "SHINY = 'a shiny widget'\n"})
    widgets: Registry[str] = Registry("widget", "veriloop.widgets")
    assert list(widgets) == ["closes", "exits", "mute", "shiny"]
    messages = {}
    for name in ("exits", "closes", "mute"):
        with pytest.raises(VeriloopError) as caught:
            widgets[name]
        messages[name] = str(caught.value)
    where = "widget '{0}' comes from the plugin fake-hostile (veriloop.widgets: {0} = fake_{0}:THING), which failed to load: "
    assert messages == {
        "exits": where.format("exits") + "SystemExit: 0; reinstall or uninstall fake-hostile",
        "closes": where.format("closes") + "GeneratorExit: closed on import; reinstall or uninstall fake-hostile",
        "mute": where.format("mute") + "Mute: (its message cannot be shown: its __str__ raised SystemExit); "
                                       "reinstall or uninstall fake-hostile",
    }
    assert widgets["shiny"] == "a shiny widget"  # the others still work


def test_ctrl_c_during_a_plugins_import_still_interrupts(installed):
    """A KeyboardInterrupt while a plugin imports is the user's Ctrl-C (one the plugin raises
    itself cannot be told from it): it is not turned into the plugin's failure."""
    fake_distribution(installed, "fake-slow", {"veriloop.widgets": {"slow": "fake_slow:THING"}},
                      {"fake_slow": "raise KeyboardInterrupt\n"})
    widgets: Registry[str] = Registry("widget", "veriloop.widgets")
    with pytest.raises(KeyboardInterrupt):
        widgets["slow"]


@pytest.fixture
def hostile(installed):
    """A plugin whose domains and strategy exit or cannot be described on import, found by
    the real registries; forgotten after the test."""
    from veriloop.domains import DOMAINS
    from veriloop.strategies import STRATEGIES

    fake_distribution(installed, "fake-hostile", {
        "veriloop.domains": {name.removeprefix("fake_"): f"{name}:THING" for name in HOSTILE},
        "veriloop.strategies": {"leaving": "fake_exits:Leaving"},
    }, HOSTILE)
    for registry in (DOMAINS, STRATEGIES):
        registry.rediscover()
    yield installed
    for registry in (DOMAINS, STRATEGIES):
        registry.rediscover()


def test_plugins_lists_every_registry_past_a_plugin_that_exits_on_import(hostile):
    result = veriloop("plugins", columns="400")
    assert (result.returncode, result.stderr) == (2, "error: 4 plugin entries failed to load (listed above)\n")
    lines = result.stdout.splitlines()
    assert lines[-1].startswith("  ") and "executors (plugins: entry points in veriloop.executors)" in lines  # the listing is whole
    broken = [line for line in lines if "BROKEN" in line]
    assert [line.split()[0] for line in broken] == ["closes", "exits", "mute", "leaving"]
    assert all("from the plugin fake-hostile" in line and "reinstall or uninstall fake-hostile" in line
               for line in broken)


def test_run_on_a_plugin_domain_that_exits_on_import_is_one_error_line(hostile, tmp_path):
    result = veriloop("run", "--domain", "exits", "-n", "1", "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "error: domain 'exits' comes from the plugin fake-hostile (veriloop.domains: exits = fake_exits:THING), "
        "which failed to load: SystemExit: 0; reinstall or uninstall fake-hostile\n"
    )


def test_run_help_is_whole_when_a_plugin_strategy_exits_on_import(hostile):
    result = veriloop("run", "--help", columns="400")
    assert (result.returncode, result.stderr) == (0, "")
    # Wherever the help's lines wrap.
    assert "closes (fake-hostile), exits (fake-hostile), mute (fake-hostile)" in " ".join(result.stdout.split())
    assert "strategy 'leaving' comes from the plugin fake-hostile" in result.stdout
    assert "veriloop plugins" in result.stdout  # the help's last section
