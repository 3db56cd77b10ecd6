"""Text from a user's file, made safe to print on a terminal.

A name read from a file (a condition, a model, an instance id, a path) can hold bytes a
terminal obeys: ESC and CSI (0x9b) start sequences that set the window title, clear the
screen or recolour what follows, and bidirectional overrides make a line read otherwise
than it is stored. `printable` shows each such character as its escape instead.

Invariants:
- Escaped: C0 controls (U+0000-U+001F, tab and newline too unless kept), DEL, C1 controls
  (U+0080-U+009F, CSI among them), the bidirectional marks, embeddings, overrides and
  isolates (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) and the line and
  paragraph separators (U+2028, U+2029), each as Python writes it in a string literal
  (`\\x1b`, `\\u202e`). Every other character, backslash included, prints as it is.
- The module imports nothing beyond `re`, so any command may use it at no start-up cost.
"""

from __future__ import annotations

import re

UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: object, keep: str = "") -> str:
    """`text` (str() of it) with every character a terminal would obey escaped (see the
    module docstring); the characters of `keep` (e.g. "\\n" for a multi-line report) stay."""

    def escape(found: re.Match[str]) -> str:
        char = found.group()
        if char in keep:
            return char
        return f"\\x{ord(char):02x}" if ord(char) <= 0xFF else f"\\u{ord(char):04x}"

    return UNSAFE.sub(escape, str(text))
