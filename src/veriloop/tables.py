"""Tables for the terminal, with every figure in full at any width.

A table is drawn as a grid when its columns fit: no cell is cut, a cell wraps only at
its spaces, and a column is not squeezed below its longest word or 20 characters. When
even that does not fit (eight figures in 80 columns), each row becomes a block of
`header: value` lines instead. A run's paired comparisons follow its table as lines
wrapped at the width, never cut."""

from __future__ import annotations

import io
import re
import textwrap
from collections.abc import Sequence

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from .stats.metrics import StrategySummary
from .stats.paired import PairedComparison, difference_text, p_text

# Narrower than this, a column of phrases would break most of its cells into many lines.
COMFORTABLE = 20
SUMMARY_HEADERS = (
    "strategy", "accuracy", "95% CI", "mean rounds", "model calls", "cache hits", "tokens (prompt+completion)",
    "seconds",
)


def _longest_word(cell: str) -> int:
    return max((len(word) for word in cell.split()), default=0)


def _natural(cell: str) -> int:
    return max((len(line) for line in cell.splitlines()), default=0)


def column_widths(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[int] | None:
    """Content widths of a grid of these cells within `width` characters (borders and
    padding take 3 a column and 1), or None when they do not fit: no column may be
    narrower than its longest word, nor than 20 characters (or its widest cell, if
    narrower)."""
    columns = [[h, *(row[i] for row in rows)] for i, h in enumerate(headers)]
    naturals = [max(map(_natural, cells)) for cells in columns]
    space = width - 3 * len(columns) - 1
    if sum(naturals) <= space:
        return naturals
    # A header may wrap down to its longest word; cells keep COMFORTABLE characters (or
    # their whole width, if narrower), so a column of phrases does not become a ribbon.
    floors = [
        max(max(map(_longest_word, cells)), min(max(map(_natural, cells[1:]), default=0), COMFORTABLE))
        for cells in columns
    ]
    if sum(floors) > space:
        return None
    widths = list(floors)
    spare = space - sum(floors)
    # The columns nearest their whole width first: short figures then need no wrapping.
    for i in sorted(range(len(widths)), key=lambda i: naturals[i] - floors[i]):
        grow = min(spare, naturals[i] - widths[i])
        widths[i] += grow
        spare -= grow
    return widths


def _stacked(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> Text:
    """One block per row: its first cell (with its header if it is a figure), then an
    indented `header: value` line for each other non-empty cell, wrapped at `width` (a
    word longer than a line is folded)."""
    text = Text()
    numbered = _figures([row[0] for row in rows])
    for row in rows:
        # A bare figure ("1") would not say what it counts: its header goes with it.
        head = f"{headers[0]}: {row[0]}" if numbered and headers[0] else row[0] or headers[0]
        for line in textwrap.wrap(head, width) or [""]:
            text.append(line + "\n", style="bold")
        for header, value in zip(headers[1:], row[1:]):
            if value.strip():
                item = f"{header}: {value}" if header else value
                for line in textwrap.wrap(" ".join(item.split()), width, initial_indent="  ", subsequent_indent="    ",
                                          break_on_hyphens=False):
                    text.append(line + "\n")
    text.rstrip()
    return text


def render_text(renderable: RenderableType, width: int) -> str:
    """What `renderable` prints as in a terminal `width` characters wide, without styles."""
    console = Console(width=width, file=io.StringIO(), color_system=None, force_terminal=False, emoji=False,
                      highlight=False, legacy_windows=False)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def fit_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, title: str | None = None,
    right: Sequence[bool] | None = None,
) -> RenderableType:
    """The cells as a grid if it fits in `width` characters, else as stacked blocks;
    `right` says which columns are right-aligned in the grid (default: the figures)."""
    rows = [[*row[: len(headers)], *[""] * (len(headers) - len(row))] for row in rows]
    right = right if right is not None else [i > 0 and _figures([row[i] for row in rows]) for i in range(len(headers))]
    heading: list[RenderableType] = [Text(title, style="italic")] if title else []
    widths = column_widths(headers, rows, width)
    if widths is not None:
        table = Table()
        for header, w, r in zip(headers, widths, right):
            table.add_column(header, width=w, justify="right" if r else "left", overflow="fold")
        for row in rows:
            table.add_row(*row)
        grid = Group(*heading, table)
        drawn = render_text(grid, width)
        # A safety net over rich's layout: a grid that came out cut or too wide is not shown.
        if drawn.count("\u2026") == sum(c.count("\u2026") for c in [*headers, *(x for r in rows for x in r)]) and all(
            len(line) <= width for line in drawn.splitlines()
        ):
            return grid
    return Group(*heading, _stacked(headers, rows, width))


def _figures(cells: Sequence[str]) -> bool:
    """Whether a column holds figures: some digits, and no letters in any cell."""
    return any(ch.isdigit() for c in cells for ch in c) and not any(ch.isalpha() for c in cells for ch in c)


def summary_rows(summaries: Sequence[StrategySummary], labels: dict[str, str] | None = None) -> list[list[str]]:
    """The cells of the run table, one row per strategy; `labels` maps canonical names to
    what the user typed."""
    labels = labels or {}
    rows = []
    for s in summaries:
        lo, hi = s.accuracy_ci95
        rows.append([
            labels.get(s.strategy, s.strategy),
            f"{s.correct}/{s.n} = {s.accuracy:.0%}",
            f"{lo:.0%}-{hi:.0%}",
            f"{s.mean_rounds:.2f}",
            str(s.model_calls),
            str(s.cache_hits),
            f"{s.prompt_tokens + s.completion_tokens} ({s.prompt_tokens}+{s.completion_tokens})",
            f"{s.seconds:.1f}",
        ])
    return rows


def summary_table(
    summaries: Sequence[StrategySummary], title: str, labels: dict[str, str] | None = None, width: int = 160
) -> RenderableType:
    """The run table (accuracy, interval, rounds, calls, cache hits, tokens, seconds per
    strategy) laid out for a terminal `width` characters wide."""
    return fit_table(SUMMARY_HEADERS, summary_rows(summaries, labels), width, title=title, right=[False] + [True] * 7)


def summary_text(
    summaries: Sequence[StrategySummary], width: int, title: str = "", labels: dict[str, str] | None = None
) -> str:
    """The run table as plain text `width` characters wide."""
    return render_text(summary_table(summaries, title, labels, width), width)


def print_summary(
    console: Console, summaries: list[StrategySummary], title: str, labels: dict[str, str] | None = None
) -> None:
    console.print(summary_table(summaries, title, labels, console.width))


def paired_text(comparisons: Sequence[PairedComparison], width: int, labels: dict[str, str] | None = None) -> str:
    """The run's paired comparisons `width` characters wide, one pair of strategies (the
    later against the earlier) per line, or per two when a line would wrap (the pair,
    then its figures); nothing when there is no pair."""
    if not comparisons:
        return ""
    labels = labels or {}
    same = len({c.n for c in comparisons}) == 1
    on = f"the {comparisons[0].n} instances both finished" if same else "the instances both finished"
    lines = textwrap.wrap(f"Paired, on {on}: difference in accuracy with its 95% paired bootstrap interval, "
                          "instances only the first named solved (won) and only the second (lost), exact "
                          "McNemar p.", width)
    for c in comparisons:
        pair = f"{labels.get(c.b, c.b)} vs {labels.get(c.a, c.a)}" + ("" if same else f" (n = {c.n})")
        figures = f"{difference_text(c)}, won {c.b_only}, lost {c.a_only}, p = {p_text(c.p_value)}"
        if len(pair) + len(figures) + 4 <= width:
            lines.append(f"  {pair}: {figures}")
        else:
            lines += textwrap.wrap(pair, width, initial_indent="  ", subsequent_indent="      ", break_on_hyphens=False)
            lines += textwrap.wrap(figures, width, initial_indent="    ", subsequent_indent="    ")
    return "\n".join(lines) + "\n"


def print_paired(
    console: Console, comparisons: Sequence[PairedComparison], labels: dict[str, str] | None = None
) -> None:
    """Print the run's paired comparisons (see paired_text) fitted to the console's width,
    after a blank line that sets them apart from the table above."""
    text = paired_text(comparisons, console.width, labels)
    if text:
        console.print("\n" + text, end="", markup=False, highlight=False)


def _markdown_row(line: str) -> list[str]:
    """The cells of a Markdown table row, as a terminal shows them: no bold markers or escapes."""
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [re.sub(r"\\([|*_`])", r"\1", re.sub(r"\*\*(.+?)\*\*", r"\1", cell.strip())) for cell in cells]


def markdown_blocks(text: str, width: int) -> list[RenderableType]:
    """A Markdown report for a terminal `width` characters wide: its tables fitted as
    tables are (see fit_table), every other line as it is (wrapped by the console)."""
    blocks: list[RenderableType] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].lstrip().startswith("|"):
            blocks.append(Text(lines[i]))
            i += 1
            continue
        start = i
        while i < len(lines) and lines[i].lstrip().startswith("|"):
            i += 1
        table = [_markdown_row(line) for line in lines[start:i]]
        body = [row for row in table[1:] if not all(re.fullmatch(r":?-+:?", cell) for cell in row)]
        blocks.append(fit_table(table[0], body, width))
    return blocks


def print_markdown(console: Console, text: str) -> None:
    """Print a Markdown report (a reproduction's tables) fitted to the console's width."""
    for block in markdown_blocks(text, console.width):
        console.print(block, markup=False, highlight=False)
