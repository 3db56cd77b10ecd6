"""Reading the texts SelfCheck works on: a solution into steps, a question into numbered
facts, and the checker's own replies (which facts and steps a step uses; whether a
regenerated result supports, contradicts or does not bear on the step).

Every reader here is total: it returns something for any text, and says when it could
not read a reply, so a small model's stray output costs a step its vote, never the run.
"""

from __future__ import annotations

import re

from ..verdict_text import parse_verdict

# --------------------------------------------------------------------------- solutions

# "Step 3:", "**Step 3.**", "### Step 3 -", "Step 3)" at the start of a line.
_STEP_MARKER = re.compile(r"^[ \t>#*_-]*step[ \t]*(\d{1,4})[ \t]*[*_]*[ \t]*[:.)\-–][ \t*_]*", re.IGNORECASE | re.MULTILINE)
# "1." or "1)" at the start of a line, for solutions written as a numbered list.
_LIST_MARKER = re.compile(r"^[ \t]*(\d{1,4})[.)][ \t]+", re.MULTILINE)
# A line that gives the final answer ("Answer: 18", "**Final answer:** 18", full-width
# colon too), matched one line at a time; group 1 is what it states. It is the
# solution's result, not a step of it.
ANSWER_LINE = re.compile(r"^[\s#*>_-]*(?:final\s+)?answer\s*(?:\*\*|__)?\s*[:：](.*)$", re.IGNORECASE)


def _without_answer_lines(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not ANSWER_LINE.match(line))


def _split_at(text: str, marker: re.Pattern[str]) -> list[str]:
    matches = list(marker.finditer(text))
    pieces = []
    for m, nxt in zip(matches, [*matches[1:], None]):
        body = text[m.end() : nxt.start() if nxt else len(text)]
        pieces.append(_without_answer_lines(body).strip())
    return [p for p in pieces if p]


def split_steps(solution: str) -> list[str]:
    """The steps of a solution, in order, without their "Step k:" labels and without the
    final answer line. Marked steps are used when there are any; otherwise a numbered
    list, then paragraphs, then lines. Text before the first marked step (a preamble
    like "Let's solve this") is not a step."""
    text = solution.replace("\r\n", "\n")
    for marker in (_STEP_MARKER, _LIST_MARKER):
        if marker.search(text):
            return _split_at(text, marker)
    body = _without_answer_lines(text).strip()
    if not body:
        return []
    paragraphs = [p.strip() for p in re.split(r"\n[ \t]*\n", body) if p.strip()]
    if len(paragraphs) > 1:
        return paragraphs
    return [line.strip() for line in body.splitlines() if line.strip()]


# --------------------------------------------------------------------------- questions

# Math spans are kept whole: a full stop inside $...$ does not end a sentence.
_MATH_SPAN = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|\\\[.*?\\\]|\\\(.*?\\\)", re.DOTALL)
_ABBREVIATIONS = ("mr", "mrs", "ms", "dr", "st", "vs", "etc", "e.g", "i.e", "approx", "no", "rs", "ft", "in", "oz", "lb", "lbs", "min", "hr", "hrs", "p.m", "a.m", "km", "cm", "mm", "kg")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


def _ends_with_abbreviation(sentence: str) -> bool:
    words = sentence.rstrip().rstrip(".").split()  # none in a sentence that is only its full stop
    last = words[-1].lower() if words else ""
    return last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha())


def split_facts(question: str) -> list[str]:
    """The question as a list of facts: its sentences (and separate lines, such as a
    line of answer options), with math spans and common abbreviations kept intact."""
    spans: list[str] = []

    def hide(m: re.Match[str]) -> str:
        spans.append(m.group(0))
        return f"\x00{len(spans) - 1}\x00"

    masked = _MATH_SPAN.sub(hide, question.replace("\r\n", "\n"))
    facts: list[str] = []
    for line in masked.split("\n"):
        pending = ""
        start = 0
        for m in _SENTENCE_END.finditer(line):
            piece = pending + line[start : m.end()]
            start = m.end()
            if _ends_with_abbreviation(line[: m.start()]):
                pending = piece
                continue
            facts.append(piece)
            pending = ""
        facts.append(pending + line[start:])
    restored = [re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], f).strip() for f in facts]
    return [f for f in restored if f]


# --------------------------------------------------------------------------- replies

_LABEL = re.compile(r"\b(information|info|facts?|steps?)\b", re.IGNORECASE)
_NUMBER_OR_RANGE = re.compile(r"(\d{1,4})(?:\s*(?:-|–|to)\s*(\d{1,4}))?")
_MAX_RANGE = 200
_NONE = re.compile(r"\W*(?:none|nothing|no\b|n/a|-\s*$)", re.IGNORECASE)


def parse_used(reply: str, n_facts: int, step: int) -> tuple[list[int], list[int], bool]:
    """The facts (1..n_facts) and earlier steps (1..step-1) a collection reply names, as
    sorted lists, and whether the reply named anything readable at all ("Information:
    none; Steps: none" is readable and uses nothing). Numbers out of range, and the step
    itself or later ones, are dropped."""
    facts: set[int] = set()
    steps: set[int] = set()
    readable = False
    labels = list(_LABEL.finditer(reply))
    for m, nxt in zip(labels, [*labels[1:], None]):
        segment = reply[m.end() : nxt.start() if nxt else len(reply)]
        segment = re.split(r"[;\n]|\.\s", segment, maxsplit=1)[0]
        target = steps if m.group(1).lower().startswith("step") else facts
        numbers = _NUMBER_OR_RANGE.findall(segment)
        # A label counts only with numbers or an explicit "none" after it: "the first
        # two facts" names nothing we can use.
        readable = readable or bool(numbers) or bool(_NONE.match(segment))
        for a, b in numbers:
            lo, hi = int(a), int(b or a)
            if hi < lo or hi - lo > _MAX_RANGE:
                hi = lo
            target.update(range(lo, hi + 1))
    return (
        sorted(i for i in facts if 1 <= i <= n_facts),
        sorted(i for i in steps if 1 <= i < step),
        readable,
    )


_VERDICT_WORDS = [
    (0, re.compile(r"\bnot\s+(?:directly\s+)?related\b|\bunrelated\b|\birrelevant\b|\bnot\s+relevant\b", re.IGNORECASE)),
    (-1, re.compile(r"\bcontradict\w*|\binconsistent\b|\bdisagree\w*|\bconflicts?\b", re.IGNORECASE)),
    (1, re.compile(r"\bsupport\w*|\bconsistent\b|\bagree\w*|\bconfirm\w*|\bmatch(?:es|ed)?\b", re.IGNORECASE)),
]
_NEGATED = re.compile(r"\b(?:not|no|never|n't|doesn't|does\s+not|do\s+not|did\s+not)\s*(?:\w+\s+)?$", re.IGNORECASE)
_CONCLUSION = re.compile(r"conclusion\s*[:：\-]?", re.IGNORECASE)


def _verdict_in(text: str, last: bool) -> int | None:
    zero_spans = [(m.start(), m.end()) for m in _VERDICT_WORDS[0][1].finditer(text)]
    found: list[tuple[int, int]] = []
    for value, pattern in _VERDICT_WORDS:
        for m in pattern.finditer(text):
            if value != 0:
                # "not related" is the neutral option, not a negated "related".
                if any(s <= m.start() < e for s, e in zero_spans):
                    continue
                if _NEGATED.search(text[max(0, m.start() - 16) : m.start()]):
                    found.append((m.start(), -value))
                    continue
            found.append((m.start(), value))
    if not found:
        return None
    found.sort()
    return found[-1][1] if last else found[0][1]


def parse_comparison(reply: str) -> tuple[int, bool]:
    """r for a comparison reply, and whether it could be read: the verdict after the last
    "Conclusion:" when there is one (its first verdict word), otherwise the last verdict
    word of the reply. "does not support" reads as a contradiction and "does not
    contradict" as support; a reply with no verdict word is unreadable and counts 0."""
    conclusions = list(_CONCLUSION.finditer(reply))
    if conclusions:
        value = _verdict_in(reply[conclusions[-1].end() :], last=False)
        if value is not None:
            return value, True
    value = _verdict_in(reply, last=True)
    return (0, False) if value is None else (value, True)


def parse_global(reply: str) -> tuple[int, bool]:
    """+1 (correct) or -1 (incorrect) from the single-call checker's last "Verdict:" line
    (read as CRITIC's critiques are); (0, False) when there is none."""
    ok = parse_verdict(reply)
    return (0, False) if ok is None else (1 if ok else -1, True)
