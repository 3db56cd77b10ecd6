"""One registry shape for every kind of named part: domains, verifiers, strategies, feedback
levels, tools, reports and model packs.

A `Registry[T]` maps names to entries of one kind. It is a mutable mapping (`in`, `[name]`,
iteration, `len`, assignment), plus `register` for built-ins, `lookup` for users' names,
`source` for where a name comes from and `problems` for plugins that could not be added.

Invariants:
- A name means one thing. Built-ins are registered by their package's `__init__` (a new
  built-in is one module plus one `register` line there). Installed plugins, the entry
  points of the registry's group (`veriloop.domains`, `veriloop.verifiers`,
  `veriloop.strategies`, `veriloop.tools`), are added after them, once: the first time the
  names are listed or a name that is not built in is asked for. A plugin never replaces a
  name already taken (a built-in, or a plugin earlier by distribution name); the clash is
  kept in `problems` and the first holder stays.
- Entries are lazy. A `"module:attr"` string or an entry point is imported the first time
  its name is used and kept; no other name imports it. So a plugin that fails to import
  breaks only its own names, and using one is one `VeriloopError` line naming the
  distribution and the entry point, never a traceback nor an exit: whatever the import
  raises (SystemExit and GeneratorExit too, and an exception whose message cannot be
  shown) but KeyboardInterrupt, which is the user's Ctrl-C and still interrupts. A string entry is always such an
  import path: no registry holds strings as values.
- What a plugin gives passes through the registry's `adapt` (e.g. a plain check function
  becomes a verifier factory) when it is loaded; built-ins are registered in their final shape.
- An unknown name is one `VeriloopError` line: "unknown <kind> 'x'; choose one of: a, b",
  the names in order: built-ins as registered, then plugins by distribution and name.
- A built-in may name the optional extra it needs (`register(..., extra="planning")`):
  `needs` says whether that extra is missing without importing anything, listings
  (`shown`, `listed`, the unknown-name line) mark such names "x (needs veriloop[extra])",
  and using a lazy one without its extra is one `MissingExtra` line, before its module is
  imported (an object entry with an extra, a model pack, is checked by what uses it).
- Each name knows its source: `BUILTIN` ("veriloop") for built-ins, the distribution's name
  for a plugin, the top-level module of an object assigned in code (`REGISTRY[name] = obj`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import threading
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from .errors import VeriloopError
from .extras import marked, require
from .extras import missing as missing_modules

T = TypeVar("T")
F = TypeVar("F")

BUILTIN = "veriloop"
# The entry point groups a plugin package declares (pyproject's [project.entry-points."veriloop.domains"]).
PLUGIN_GROUPS = ("veriloop.domains", "veriloop.verifiers", "veriloop.strategies", "veriloop.tools",
                 "veriloop.providers", "veriloop.executors", "veriloop.families")


@dataclass
class _Entry:
    source: str
    # What to load: "module:attr" or an entry point; None once `value` holds the object.
    target: str | importlib.metadata.EntryPoint | None
    value: Any = None
    plugin: bool = False
    extra: str | None = None  # the optional extra a built-in needs (veriloop.extras)


def one_line(text: object) -> str:
    """Text of an exception as one line (a plugin's error may span several). A plugin's
    exception whose `__str__` itself fails still gives a line: saying that it failed
    must not become a second error."""
    try:
        return " ".join(str(text).split())
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001  # whatever its __str__ raises, even SystemExit
        return f"(its message cannot be shown: its __str__ raised {type(exc).__name__})"


class Registry(MutableMapping[str, T]):
    """Named entries of one kind. `kind` words the errors ("domain"); `group` is the entry
    point group whose plugins join it (None: built-ins only); `adapt(name, obj)` turns what
    a plugin's entry point gives into an entry (raise VeriloopError or TypeError to refuse it)."""

    def __init__(self, kind: str, group: str | None = None,
                 adapt: Callable[[str, Any], T] | None = None) -> None:
        self.kind = kind
        self.group = group
        self._adapt = adapt
        self._entries: dict[str, _Entry] = {}
        self._discovered = group is None
        self._lock = threading.RLock()  # discovery and loading happen once even if threads ask at once
        self.problems: list[str] = []

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self._entries)})"

    # ------------------------------------------------------------------ registering

    @overload
    def register(self, name: str) -> Callable[[F], F]: ...
    @overload
    def register(self, name: str, entry: T | str, *, source: str = BUILTIN, extra: str | None = None) -> None: ...

    def register(self, name: str, entry: Any = None, *, source: str = BUILTIN, extra: str | None = None) -> Any:
        """Add `name`: `entry` is the object or a "module:attr" path imported on first use.
        Without `entry`, a decorator that registers what it decorates and returns it.
        `extra`: the optional extra (veriloop.extras) the entry needs. Listings mark the
        name while it is missing; a "module:attr" entry is then not loaded: using it is one
        MissingExtra line. (An object entry, e.g. a model pack, is there already: what
        uses it checks the extra.)"""
        if entry is None:
            def decorate(obj: F) -> F:
                with self._lock:
                    self._entries[name] = _Entry(source, None, obj)
                return obj
            return decorate
        if extra is not None:
            missing_modules(extra)  # an unknown extra is the caller's mistake: said at once
        with self._lock:
            if isinstance(entry, str):
                if entry.count(":") != 1:
                    raise ValueError(f"a lazy {self.kind} entry is 'module:attr', not {entry!r}")
                self._entries[name] = _Entry(source, entry, extra=extra)
            else:
                self._entries[name] = _Entry(source, None, entry, extra=extra)
        return None

    def __setitem__(self, name: str, value: T) -> None:
        module = getattr(value, "__module__", None) or BUILTIN
        self.register(name, value, source=module.split(".")[0])

    def __delitem__(self, name: str) -> None:
        with self._lock:
            del self._entries[name]

    # ------------------------------------------------------------------ reading

    def __contains__(self, name: object) -> bool:
        # Never loads an entry: asking whether a name exists imports nothing but the plugin list.
        if name not in self._entries:
            self._discover()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        self._discover()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self._discover()
        return len(self._entries)

    def __getitem__(self, name: str) -> T:
        if name not in self:
            raise KeyError(name)
        entry = self._entries[name]
        with self._lock:
            if entry.target is not None:
                entry.value = self._load(name, entry)
                entry.target = None
        value: T = entry.value
        return value

    def lookup(self, name: str, shown: str | None = None) -> T:
        """The entry called `name`; for an unknown name, VeriloopError listing the known ones
        (`shown`: the name as the user wrote it, e.g. with a threshold)."""
        if name not in self:
            raise VeriloopError(self.unknown(shown or name))
        return self[name]

    def unknown(self, name: str) -> str:
        """The one-line message for an unknown name."""
        return f"unknown {self.kind} {name!r}; choose one of: {', '.join(self.listed())}"

    def source(self, name: str) -> str:
        """Where `name` comes from: "veriloop", or the plugin's distribution name."""
        if name not in self:
            raise VeriloopError(self.unknown(name))
        return self._entries[name].source

    def sources(self) -> list[tuple[str, str]]:
        """Every name with its source, in order."""
        return [(name, self._entries[name].source) for name in self]

    def needs(self, name: str) -> str | None:
        """The optional extra `name` needs and that is not (wholly) installed, else None.
        Imports nothing: the extra's modules are looked for, not loaded."""
        if name not in self:
            raise VeriloopError(self.unknown(name))
        extra = self._entries[name].extra
        return extra if extra is not None and missing_modules(extra) else None

    def shown(self, name: str) -> str:
        """`name` as a listing shows it: "blocksworld (needs veriloop[planning])" when the
        extra it needs is missing."""
        return marked(name, self.needs(name))

    def listed(self) -> list[str]:
        """Every name as a listing shows it, in order."""
        return [self.shown(name) for name in self]

    # ------------------------------------------------------------------ plugins

    def rediscover(self) -> None:
        """Forget the plugins found so far and look again on the next use (after installing
        one in a running process, or in tests)."""
        with self._lock:
            for name in [n for n, e in self._entries.items() if e.plugin]:
                del self._entries[name]
            self.problems.clear()
            self._discovered = self.group is None

    def _discover(self) -> None:
        if self._discovered:
            return
        with self._lock:
            if self._discovered:
                return
            self._discovered = True
            assert self.group is not None
            try:
                found = list(importlib.metadata.entry_points(group=self.group))
            except Exception as exc:  # a malformed installed distribution: the built-ins still work
                self.problems.append(f"could not read the installed plugins of {self.group}: {one_line(exc)}")
                return
            for point in sorted(found, key=lambda p: (_distribution(p), p.name)):
                holder = self._entries.get(point.name)
                if holder is not None:
                    self.problems.append(
                        f"{self.kind} {point.name!r} of the plugin {_distribution(point)} is ignored: "
                        f"{holder.source} already gives that name"
                    )
                    continue
                self._entries[point.name] = _Entry(_distribution(point), point, plugin=True)

    def _load(self, name: str, entry: _Entry) -> T:
        target = entry.target
        if isinstance(target, str):
            if entry.extra is not None:
                require(entry.extra, f"the {self.kind} {name!r}")
            module, attr = target.split(":")
            value: T = getattr(importlib.import_module(module), attr)
            return value
        assert target is not None
        where = f"the plugin {entry.source} ({self.group}: {target.name} = {target.value})"
        try:
            loaded = target.load()
        except KeyboardInterrupt:
            raise  # the user's Ctrl-C (one raised by the plugin itself cannot be told from it)
        except BaseException as exc:  # noqa: BLE001  # a plugin's SystemExit or GeneratorExit must not end veriloop
            raise VeriloopError(
                f"{self.kind} {name!r} comes from {where}, which failed to load: {type(exc).__name__}: "
                f"{one_line(exc)}; reinstall or uninstall {entry.source}"
            ) from None
        if self._adapt is None:
            result: T = loaded
            return result
        try:
            return self._adapt(name, loaded)
        except (VeriloopError, TypeError) as exc:
            raise VeriloopError(f"{self.kind} {name!r} from {where}: {one_line(exc)}") from None


def _distribution(point: importlib.metadata.EntryPoint) -> str:
    dist = getattr(point, "dist", None)
    return dist.name if dist is not None else "an unnamed distribution"
