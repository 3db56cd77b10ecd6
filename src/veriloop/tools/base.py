"""The tool seam: a tool is a text-to-text function with a name and a description the
model sees. `run` returns an `Observation`, never raises for the tool's own failures
(a crash, a timeout, a refused input): those become an observation with ok=False, so a
loop that calls tools never ends because of one.

An observation's text, input and data are made storable when it is built (lone
surrogates replaced, see veriloop.records): a tool may pass on whatever a program printed
or a service answered. A cached result that cannot be read back is a miss.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field, ValidationError, model_validator

from ..records import storable, storable_text


class Observation(BaseModel):
    """What one tool call gave back.

    A tool's own failures (a crash, a timeout, a refused input) are observations too, with
    `ok` False, so a loop that calls tools never ends because of one. The text fields and
    `data` are made storable when the observation is built (lone surrogates replaced by
    U+FFFD).

    Attributes:
        tool: The name of the tool called.
        input: The input it was given.
        text: What the model reads.
        ok: Whether the call succeeded.
        data: The structured result, for metrics and stop rules (e.g. {"answer": "42"} from
            python, {"toxicity": 0.8, "attribute": "insult"} from the toxicity scorer).
        seconds: How long the call took.
        cached: Whether the result was replayed from the tool cache.

    Examples:
        ```python
        from veriloop import Observation

        seen = Observation(tool="calculator", input="17 * 3", text="51", data={"value": "51"})
        assert seen.ok and not seen.cached
        print(seen.model_dump_json())
        ```
    """

    tool: str
    input: str
    text: str
    ok: bool = True
    data: dict[str, Any] = Field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False

    @model_validator(mode="after")
    def _storable(self) -> Observation:
        self.text = storable_text(self.text)[0]
        self.input = storable_text(self.input)[0]
        self.data = storable(self.data)
        return self


@runtime_checkable
class Tool(Protocol):
    """A text-to-text function the model may call (by `name`) inside a loop.

    An implementation has the three attributes below and two methods: `run(tool_input)`,
    which is blocking (called from a worker thread) and returns an `Observation` (it
    must not raise for bad input: it returns one with ok=False), and `identity()`, which
    says what besides the input decides the result (corpus hash, limits, backend) and is
    part of the cache key. A `Toolbox` holds the tools one loop may use.

    Attributes:
        name: The name the model calls the tool by.
        description: One or two sentences the model sees: what the tool does and what
            its input must be.
        deterministic: Whether equal inputs always give equal observations; then results
            are cached, which makes runs reproducible and re-runs free.

    Examples:
        ```python
        import asyncio
        from veriloop import Observation, Tool, Toolbox

        class Upper:
            name, description, deterministic = "upper", "Upper-cases its input.", True

            def run(self, tool_input):
                return Observation(tool=self.name, input=tool_input, text=tool_input.upper())

            def identity(self):
                return "upper-v1"

        assert isinstance(Upper(), Tool)
        assert asyncio.run(Toolbox([Upper()]).call("upper", "hello")).text == "HELLO"
        ```
    """

    name: str
    description: str  # one or two sentences: what it does and what its input must be
    # Whether equal inputs always give equal observations (then results are cached,
    # which makes runs reproducible and re-runs free).
    deterministic: bool

    def run(self, tool_input: str) -> Observation:
        """Blocking; called from a worker thread. Must not raise for bad input."""
        ...

    def identity(self) -> str:
        """What, besides the input, decides the result (corpus hash, limits, backend):
        part of the cache key."""
        ...


def failed(tool: str, tool_input: str, message: str, **data: Any) -> Observation:
    return Observation(tool=tool, input=tool_input, text=message, ok=False, data=data)


class ToolCache:
    """SQLite cache of deterministic tool results, keyed on tool identity and input."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=60, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS tool_results (key TEXT PRIMARY KEY, observation TEXT NOT NULL)")
        self._db.commit()

    @staticmethod
    def key(tool: Tool, tool_input: str) -> str:
        payload = json.dumps([tool.name, tool.identity(), tool_input], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()

    def get(self, key: str) -> Observation | None:
        with self._lock:
            row = self._db.execute("SELECT observation FROM tool_results WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return Observation.model_validate_json(row[0])
        except (ValidationError, ValueError, TypeError):
            return None  # a damaged row: the tool runs again and its result replaces it

    def put(self, key: str, observation: Observation) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO tool_results VALUES (?, ?)", (key, observation.model_dump_json())
            )
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()


class Toolbox:
    """The tools one loop may use, by name.

    `await call(name, tool_input)` is the single door: unknown names, exceptions and
    hangs become failed observations; successful results of deterministic tools are
    cached (failures are not, so a transient failure is retried next run). `names`
    lists the tools, `describe()` words them for a prompt, and `subset(names)` keeps
    some of them with the same cache.

    Args:
        tools: The tools; each is known by its `name`.
        cache: The cache of deterministic tools' results, or None for no cache.
        timeout: Seconds a call may take before it becomes a failed observation.

    Examples:
        ```python
        import asyncio
        from veriloop import Toolbox
        from veriloop.tools.calculator import Calculator

        box = Toolbox([Calculator()])
        print(box.names, box.describe())
        found = asyncio.run(box.call("calculator", "17 * 3"))
        missing = asyncio.run(box.call("search", "capital of France"))
        assert (found.text, found.ok, missing.ok) == ("51", True, False)
        print(missing.text)  # There is no tool called 'search'. Available tools: calculator.
        ```
    """

    def __init__(self, tools: list[Tool], cache: ToolCache | None = None, timeout: float = 120.0) -> None:
        self.tools = {t.name: t for t in tools}
        self.cache = cache
        self.timeout = timeout

    def __contains__(self, name: str) -> bool:
        return name in self.tools

    @property
    def names(self) -> list[str]:
        return list(self.tools)

    def subset(self, names: tuple[str, ...] | list[str]) -> Toolbox:
        """The same tools and cache, restricted to `names` (those this box has)."""
        return Toolbox([self.tools[n] for n in names if n in self.tools], self.cache, self.timeout)

    def describe(self) -> str:
        return "\n".join(f"- {t.name}: {t.description}" for t in self.tools.values())

    async def call(self, name: str, tool_input: str) -> Observation:
        name = name.strip()
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(self.tools) or "none"
            return failed(name, tool_input, f"There is no tool called {name!r}. Available tools: {known}.")
        key = ToolCache.key(tool, tool_input) if self.cache is not None and tool.deterministic else None
        if key is not None:
            hit = self.cache.get(key)  # type: ignore[union-attr]
            if hit is not None:
                return hit.model_copy(update={"cached": True})
        started = time.perf_counter()
        try:
            observation = await asyncio.wait_for(asyncio.to_thread(tool.run, tool_input), self.timeout)
        except TimeoutError:
            return failed(name, tool_input, f"The {name} tool did not answer within {self.timeout:g} s.")
        except Exception as exc:  # a tool bug must not end the run; the loop sees what happened
            return failed(name, tool_input, f"The {name} tool failed: {type(exc).__name__}: {exc}")
        observation.seconds = round(time.perf_counter() - started, 4)
        if key is not None and observation.ok:
            self.cache.put(key, observation)  # type: ignore[union-attr]
        return observation
