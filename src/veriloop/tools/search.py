"""The search tool: one interface, two backends.

- BM25 over a local collection (a JSONL file of {"title", "text"} records, or a folder of
  .txt files). The index is built once per corpus content and kept under
  paths.home()/indexes/<sha256 of the corpus>, so later starts only load it.
- An HTTP search engine the user runs (a SearxNG instance or anything answering
  `GET {url}/search?q=...&format=json` with `results[].title/.content/.url`). It is used
  only when a url is given, or, when neither a corpus nor a url is given, when the
  VERILOOP_SEARCH_URL environment variable names one.

Both are marked deterministic so the Toolbox caches their results: for BM25 that is
simply true; for the web engine it freezes the first answer to each query, which is what
makes a run repeatable (the live engine may answer differently tomorrow).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
import unicodedata
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import paths
from ..datafiles import json_objects
from ..errors import DataFileError, VeriloopError
from ..extras import require
from .base import Observation, failed

NAME = "search"
URL_ENV = "VERILOOP_SEARCH_URL"
# Bumped whenever tokenisation or the on-disk layout changes, so stale indexes rebuild.
INDEX_FORMAT = 1
ELLIPSIS = "…"

_TOKEN_RE = re.compile(r"\w+")


def _fold(text: str) -> str:
    """Lowercase without accents, so "Rodriguez" finds "Rodríguez"."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def tokenize(text: str, stopwords: frozenset[str] | None = None) -> list[str]:
    """Search terms of a text. No stemmer: entity names and dates, which carry most QA
    queries, match exactly, and PyStemmer would be one more compiled dependency."""
    stop = _stopwords() if stopwords is None else stopwords
    return [t for t in _TOKEN_RE.findall(_fold(text)) if t not in stop]


# ------------------------------------------------------------------------- snippets


def snippet(text: str, query_terms: set[str], width: int = 400) -> str:
    """About `width` characters of `text` around its densest cluster of query terms,
    cut at word boundaries, with "…" where text was left out."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    # Folding can change string length (NFKD), so find terms token by token in the
    # original text and fold each token on its own.
    hits = [
        (m.start(), m.end(), _fold(m.group()))
        for m in _TOKEN_RE.finditer(text)
        if _fold(m.group()) in query_terms
    ]
    if hits:
        best: tuple[int, int] = (-1, -1)
        best_span = (hits[0][0], hits[0][1])
        j = 0
        for i, (start, _, _) in enumerate(hits):
            # Hits that fit in a window starting at this hit; distinct terms rank first so
            # that a passage naming two query entities beats one repeating a single one.
            j = max(j, i)
            while j + 1 < len(hits) and hits[j + 1][1] - start <= width:
                j += 1
            inside = hits[i : j + 1]
            rank = (len({t for _, _, t in inside}), len(inside))
            if rank > best:
                best, best_span = rank, (start, inside[-1][1])
        centre = (best_span[0] + best_span[1]) // 2
        start = max(0, min(len(text) - width, centre - width // 2))
    else:
        start = 0
    end = start + width
    if start > 0:
        # Move forward to the start of a word so none is shown cut in half.
        space = text.find(" ", start - 1)
        start = space + 1 if 0 <= space < end else start
    if end < len(text):
        space = text.rfind(" ", start, end + 1)
        end = space if space > start else end
    piece = text[start:end].strip()
    return (ELLIPSIS if start > 0 else "") + piece + (ELLIPSIS if end < len(text) else "")


# ------------------------------------------------------------------------ BM25


@dataclass(frozen=True)
class Document:
    title: str
    text: str


def _read_jsonl(path: Path) -> list[Document]:
    needs_text = 'needs a string "text" field, like {"title": "Ed Wood", "text": "Edward Davis Wood Jr. was ..."}'
    docs: list[Document] = []
    for line_no, record in json_objects(
        path, 'each line must be one {"title": ..., "text": ...} object', not_object=needs_text
    ):
        if not isinstance(record.get("text"), str):
            raise DataFileError(f"{path}, line {line_no}: {needs_text}")
        title = record.get("title")
        docs.append(Document(title="" if title is None else str(title), text=record["text"]))
    return docs


def _read_folder(path: Path) -> list[Document]:
    docs: list[Document] = []
    for file in sorted(path.glob("*.txt")):
        try:
            docs.append(Document(title=file.stem, text=file.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            raise DataFileError(f"{file}: not UTF-8 text; save the corpus files as UTF-8") from None
        except OSError as exc:
            raise DataFileError(f"{file}: cannot read it ({exc.strerror or exc})") from None
    return docs


def corpus_hash(path: Path) -> str:
    """sha256 of the corpus content: the file's bytes, or every .txt file's name and bytes
    in a folder (renaming a file renames a title, so names count)."""
    digest = hashlib.sha256()
    try:
        if path.is_dir():
            for file in sorted(path.glob("*.txt")):
                digest.update(file.name.encode() + b"\0")
                digest.update(hashlib.sha256(file.read_bytes()).digest())
        else:
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read the corpus ({exc.strerror or exc})") from None
    return digest.hexdigest()


def load_documents(path: Path) -> list[Document]:
    if path.is_dir():
        docs = _read_folder(path)
        if not docs:
            raise DataFileError(
                f"{path}: no .txt files in this folder; a corpus folder holds one document per .txt file"
            )
    elif path.is_file():
        docs = _read_jsonl(path)
        if not docs:
            raise DataFileError(f'{path}: the corpus is empty; write one {{"title": ..., "text": ...}} object per line')
    else:
        raise DataFileError(f"{path}: no such corpus file or folder")
    return docs


class BM25Search:
    """BM25 (bm25s, Lucene variant) over a local collection."""

    name = NAME
    deterministic = True

    def __init__(self, corpus: str | Path, top_k: int = 1, snippet_chars: int = 400) -> None:
        require("critic", "the search tool's local corpus")
        import bm25s  # imported here: only runs that search pay for it

        if top_k < 1 or snippet_chars < 20:
            raise VeriloopError(f"search needs top_k >= 1 and snippet_chars >= 20 (got {top_k}, {snippet_chars})")
        self.path = Path(corpus).expanduser()
        if not self.path.exists():
            raise DataFileError(f"{self.path}: no such corpus file or folder")
        self.top_k = top_k
        self.snippet_chars = snippet_chars
        self.hash = corpus_hash(self.path)
        self.index_dir = paths.home() / "indexes" / self.hash
        self._stop = _stopwords()
        self.built = False  # whether this start had to build the index (vs load it)
        if not self._load(bm25s):
            self._build(bm25s)
            self.built = True
        self.description = (
            f"Searches a local collection of {len(self.docs)} documents (BM25). Input: a short search "
            "query, e.g. a name or a few keywords. Returns the best-matching passage"
            + ("s" if top_k > 1 else "")
            + " as [Title] text."
        )

    def identity(self) -> str:
        return f"bm25:v{INDEX_FORMAT}:{self.hash}:k={self.top_k}:chars={self.snippet_chars}"

    def _load(self, bm25s: Any) -> bool:
        meta = self.index_dir / "meta.json"
        try:
            if json.loads(meta.read_text())["format"] != INDEX_FORMAT:
                return False
            docs = json.loads((self.index_dir / "docs.json").read_text(encoding="utf-8"))
            self.retriever = bm25s.BM25.load(str(self.index_dir / "bm25"), show_progress=False, verbosity=0)
        except (OSError, ValueError, KeyError, TypeError):
            # Missing, partial or from another version: building again is always safe.
            return False
        self.docs = [Document(title=d[0], text=d[1]) for d in docs]
        return True

    def _build(self, bm25s: Any) -> None:
        self.docs = load_documents(self.path)
        tokens = [tokenize(f"{d.title} {d.text}", self._stop) for d in self.docs]
        retriever = bm25s.BM25()
        retriever.index(tokens, show_progress=False)
        self.retriever = retriever
        # Built beside the final place and renamed into it, so a crash or a second process
        # never leaves a half-written index that a later start would load.
        parent = self.index_dir.parent
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{self.hash[:12]}-", dir=parent))
        try:
            retriever.save(str(tmp / "bm25"), show_progress=False)
            (tmp / "docs.json").write_text(
                json.dumps([[d.title, d.text] for d in self.docs], ensure_ascii=False), encoding="utf-8"
            )
            (tmp / "meta.json").write_text(
                json.dumps({"format": INDEX_FORMAT, "source": str(self.path), "documents": len(self.docs)})
            )
            if self.index_dir.exists():
                shutil.rmtree(self.index_dir, ignore_errors=True)
            try:
                os.replace(tmp, self.index_dir)
            except OSError:
                pass  # another process put its copy in place first; ours is identical
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def search(self, query: str) -> list[tuple[Document, float]]:
        terms = tokenize(query, self._stop)
        known = [t for t in terms if t in self.retriever.vocab_dict]
        if not known:
            return []
        k = min(self.top_k, len(self.docs))
        ids, scores = self.retriever.retrieve([known], k=k, show_progress=False, n_threads=1)
        return [(self.docs[int(i)], float(s)) for i, s in zip(ids[0], scores[0]) if s > 0]

    def run(self, tool_input: str) -> Observation:
        query = " ".join(tool_input.split())
        if not query:
            return failed(NAME, tool_input, "The search query is empty. Give a few keywords, e.g. a name or a title.")
        found = self.search(query)
        if not found:
            return Observation(
                tool=NAME, input=tool_input, data={"results": []},
                text=f"No documents match {query!r}. Try other keywords, e.g. the full name of the entity.",
            )
        terms = set(tokenize(query, self._stop))
        lines = [f"[{doc.title}] {snippet(doc.text, terms, self.snippet_chars)}" for doc, _ in found]
        data = {"results": [{"title": doc.title, "score": round(score, 4)} for doc, score in found]}
        return Observation(tool=NAME, input=tool_input, text="\n".join(lines), data=data)


# ------------------------------------------------------------------------ HTTP


class WebSearch:
    """A search engine behind an HTTP JSON API (SearxNG's shape). Every failure (HTTP
    error, timeout, unreachable host, unexpected reply) is a failed observation."""

    name = NAME
    deterministic = True  # cached: the first answer to a query is what every re-run sees

    def __init__(self, url: str, top_k: int = 1, snippet_chars: int = 400, timeout: float = 10.0) -> None:
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise VeriloopError(f"search url {url!r} is not an http(s) address, e.g. http://127.0.0.1:8888")
        if top_k < 1 or snippet_chars < 20 or timeout <= 0:
            raise VeriloopError(
                "search needs top_k >= 1, snippet_chars >= 20 and a positive timeout "
                f"(got {top_k}, {snippet_chars}, {timeout})"
            )
        self.url = url.rstrip("/")
        self.top_k = top_k
        self.snippet_chars = snippet_chars
        self.timeout = timeout
        self.description = (
            "Searches the web. Input: a short search query, e.g. a name or a few keywords. Returns the "
            "top result" + ("s" if top_k > 1 else "") + " as [Title] text."
        )

    def identity(self) -> str:
        return f"http:{self.url}:k={self.top_k}:chars={self.snippet_chars}"

    def run(self, tool_input: str) -> Observation:
        query = " ".join(tool_input.split())
        if not query:
            return failed(NAME, tool_input, "The search query is empty. Give a few keywords, e.g. a name or a title.")
        address = f"{self.url}/search?" + urllib.parse.urlencode({"q": query, "format": "json"})
        request = urllib.request.Request(address, headers={"Accept": "application/json", "User-Agent": "veriloop"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            hint = " (is the json format enabled in the engine's settings?)" if exc.code == 403 else ""
            return failed(NAME, tool_input, f"The search engine answered HTTP {exc.code}{hint}.", status=exc.code)
        except TimeoutError:
            return failed(NAME, tool_input, f"The search engine did not answer within {self.timeout:g} s.")
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                return failed(NAME, tool_input, f"The search engine did not answer within {self.timeout:g} s.")
            return failed(NAME, tool_input, f"The search engine at {self.url} cannot be reached ({exc.reason}).")
        except OSError as exc:
            return failed(NAME, tool_input, f"The search engine at {self.url} cannot be reached ({exc}).")
        try:
            reply = json.loads(body)
            results = reply["results"]
            if not isinstance(results, list):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            return failed(NAME, tool_input, "The search engine's reply was not the expected JSON with a results list.")
        terms = set(tokenize(query))
        lines: list[str] = []
        kept: list[dict[str, str]] = []
        for item in results:
            if not isinstance(item, dict):
                continue
            title = str(item.get("title") or "").strip()
            content = str(item.get("content") or "").strip()
            if not (title or content):
                continue
            lines.append(f"[{title}] {snippet(content, terms, self.snippet_chars)}".rstrip())
            kept.append({"title": title, "url": str(item.get("url") or "")})
            if len(kept) == self.top_k:
                break
        if not kept:
            return Observation(
                tool=NAME, input=tool_input, data={"results": []},
                text=f"No results for {query!r}. Try other keywords.",
            )
        return Observation(tool=NAME, input=tool_input, text="\n".join(lines), data={"results": kept})


def make_search_tool(
    corpus: str | Path | None = None,
    url: str | None = None,
    top_k: int = 1,
    snippet_chars: int = 400,
    timeout: float = 10.0,
) -> BM25Search | WebSearch:
    """A search tool over `corpus` (BM25) or the engine at `url`. With neither, the
    engine named by VERILOOP_SEARCH_URL; with none of the three, an error saying so."""
    if corpus is not None and url is not None:
        raise VeriloopError("search takes a corpus or a url, not both")
    if corpus is not None:
        return BM25Search(corpus, top_k=top_k, snippet_chars=snippet_chars)
    url = url or os.environ.get(URL_ENV) or None
    if url is None:
        raise VeriloopError(
            f"search needs a corpus (a JSONL file or a folder of .txt files) or the url of a search engine "
            f"(option url, or the {URL_ENV} environment variable)"
        )
    return WebSearch(url, top_k=top_k, snippet_chars=snippet_chars, timeout=timeout)
