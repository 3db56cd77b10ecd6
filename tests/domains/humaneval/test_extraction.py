"""The function a reply gives: a whole function from a fenced block or bare code, or a
body put under the prompt's own signature; None when there is none (parsing only)."""

from __future__ import annotations

import pytest

from veriloop.domains.humaneval import function_from_reply

PROMPT = 'from typing import List\n\n\ndef add(x: int, y: int):\n    """Add x and y.\n    >>> add(2, 3)\n    5\n    """\n'
SIGNATURE = 'def add(x: int, y: int):\n    """Add x and y.\n    >>> add(2, 3)\n    5\n    """'


def extract(text: str) -> str | None:
    return function_from_reply(text, "add", PROMPT)


def test_the_last_fenced_block_that_defines_the_function_is_taken_whole():
    reply = ("First try:\n```python\ndef add(x, y):\n    return 0\n```\nBetter, with a helper:\n"
             "```python\nimport math\n\ndef add(x, y):\n    return plus(x, y)\n\ndef plus(a, b):\n    return a + b\n```\n"
             "Usage:\n```python\nprint(add(1, 2))\n```\nDone.")
    assert extract(reply) == "import math\n\ndef add(x, y):\n    return plus(x, y)\n\ndef plus(a, b):\n    return a + b"


def test_an_unterminated_or_unparsable_block_is_still_the_answer():
    # Cut off by the token limit: running it reports the syntax error, which is what to say.
    assert extract("```python\ndef add(x, y):\n    return (x +") == "def add(x, y):\n    return (x +"
    assert extract("```\n    def add(x, y):\n        return x + y\n```") == "def add(x, y):\n    return x + y"


def test_bare_code_is_taken_from_its_imports_to_where_it_stops_parsing():
    reply = ("Sure! Here is the function.\n\nfrom math import fsum\n\ndef add(x, y):\n    return fsum([x, y])\n\n"
             "This adds the two numbers and returns their sum.")
    assert extract(reply) == "from math import fsum\n\ndef add(x, y):\n    return fsum([x, y])"


def test_a_body_alone_goes_under_the_prompts_signature():
    assert extract("```python\n    return x + y\n```") == SIGNATURE + "\n    return x + y"
    assert extract("result = x + y\nreturn result") == SIGNATURE + "\n    result = x + y\n    return result"


@pytest.mark.parametrize("reply", [
    "I am not sure how to do this.",
    "```python\nprint(add(2, 3))\n```",  # usage, no return: not a body
    "```python\ndef plus(x, y):\n    return x + y\n```",  # another name
    "```python\nclass A:\n    def add(self, x, y):\n        return x + y\n```",  # a method, not the function
    "",
])
def test_a_reply_without_the_function_gives_none(reply):
    assert extract(reply) is None
