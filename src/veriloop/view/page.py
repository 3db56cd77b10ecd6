"""One self-contained HTML file: the viewer's CSS and JavaScript (package data under
assets/) and the JSON payload, all inline, nothing fetched, so it opens from disk.

Model output is untrusted text. It reaches the page only inside the JSON data block,
where every `<` is written `\\u003c`, so no text can close the block or open a tag; the
script renders it with text nodes only. A Content-Security-Policy allows the one inline
script by its hash and no other, and no connection but to the page's own origin (the
live-reload poll of `veriloop view --serve`).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from importlib import resources
from typing import Any

ASSETS = ("view.css", "view.js")


def asset(name: str) -> str:
    return resources.files("veriloop.view").joinpath("assets", name).read_text(encoding="utf-8")


def json_for_script(payload: Any) -> str:
    """The payload as JSON safe inside a <script> element: `<`, `>` and `&` escaped as
    JSON \\u escapes (JSON.parse restores them), and the line separators that some
    parsers treat as line ends."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                         ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    return text


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def render(payload: dict[str, Any]) -> str:
    """The whole page for `payload` (data.build_payload)."""
    css, js = asset("view.css"), asset("view.js")
    if "</script" in js.lower() or "</style" in css.lower():
        raise RuntimeError("an asset would close its own element")
    policy = "; ".join([
        "default-src 'none'", f"script-src '{_sha256(js)}'", "style-src 'unsafe-inline'", "img-src data:",
        "connect-src 'self'", "base-uri 'none'", "form-action 'none'",
    ])
    title = html.escape(str(payload.get("title", "veriloop report")))
    return "".join([
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">\n",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
        f"<title>{title}</title>\n<style>\n{css}</style>\n</head>\n<body>\n",
        "<noscript>This report draws itself with JavaScript; enable it to see the runs.</noscript>\n",
        "<div id=\"app\"></div>\n",
        f"<script type=\"application/json\" id=\"veriloop-data\">{json_for_script(payload)}</script>\n",
        f"<script>{js}</script>\n</body>\n</html>\n",
    ])
