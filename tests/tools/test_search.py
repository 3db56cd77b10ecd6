"""The search tool: BM25 over local corpora (JSONL and .txt folders, on-disk index reuse,
snippets) and the HTTP backend against a real server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veriloop.errors import DataFileError, VeriloopError
from veriloop.tools import Toolbox, ToolCache, get_tool
from veriloop.tools.search import ELLIPSIS, BM25Search, WebSearch, make_search_tool, snippet, tokenize

DOCS = [
    {"title": "Danube", "text": "The Danube is the second-longest river in Europe. It flows through Vienna."},
    {"title": "Budapest", "text": "Budapest is the capital and most populous city of Hungary.", "url": "ignored"},
    {"title": "Pedro Rodríguez", "text": "Pedro Rodríguez was a Mexican racing driver who won two Grands Prix."},
    {"title": "Vienna", "text": "Vienna is the capital of Austria, on the river Danube."},
]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VERILOOP_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("VERILOOP_SEARCH_URL", raising=False)
    return tmp_path / "home"


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "corpus.jsonl", DOCS)


# ----------------------------------------------------------------- snippets


def test_short_text_is_shown_whole() -> None:
    assert snippet("  Budapest is\nthe capital. ", {"budapest"}, 400) == "Budapest is the capital."


def test_snippet_is_centred_on_the_densest_cluster_and_cut_at_words() -> None:
    filler = " ".join(f"word{i}" for i in range(200))
    text = f"{filler} Marie Curie won the Nobel Prize in Physics and Chemistry. {filler}"
    out = snippet(text, {"curie", "nobel", "chemistry"}, 120)
    assert out.startswith(ELLIPSIS) and out.endswith(ELLIPSIS)
    assert "Curie won the Nobel Prize in Physics and Chemistry" in out
    body = out.strip(ELLIPSIS)
    assert len(body) <= 120
    # Whole words only: every piece is one of the text's words.
    assert set(body.split()) <= set(text.split())


def test_snippet_prefers_distinct_terms_over_one_repeated_term() -> None:
    pad = " ".join(["lorem"] * 80)
    text = f"Paris Paris Paris Paris {pad} Paris is the capital of France {pad}"
    out = snippet(text, {"paris", "france"}, 60)
    assert "France" in out


def test_snippet_without_hits_shows_the_beginning() -> None:
    text = "alpha " * 100
    out = snippet(text, {"zeta"}, 50)
    assert out.startswith("alpha") and out.endswith(ELLIPSIS)


@settings(max_examples=200, deadline=None)
@given(
    st.text(max_size=600),
    st.sets(st.sampled_from(["a", "the", "word", "x1", "é"]), max_size=3),
    st.integers(20, 200),
)
def test_snippet_never_crashes_and_stays_within_width(text: str, terms: set[str], width: int) -> None:
    out = snippet(text, terms, width)
    body = out.removeprefix(ELLIPSIS).removesuffix(ELLIPSIS)
    assert len(body) <= width
    assert body in " ".join(text.split())


def test_tokenize_folds_case_and_accents_and_drops_stopwords() -> None:
    assert tokenize("The Rodríguez of 1969") == ["rodriguez", "1969"]


# --------------------------------------------------------------------- BM25


def test_bm25_finds_the_right_document_with_title_and_snippet(corpus: Path) -> None:
    tool = make_search_tool(corpus)
    assert isinstance(tool, BM25Search) and tool.name == "search" and tool.deterministic
    assert "query" in tool.description
    obs = tool.run("capital of Hungary")
    assert obs.ok and obs.text.startswith("[Budapest] Budapest is the capital")
    assert [r["title"] for r in obs.data["results"]] == ["Budapest"]
    # No stemmer, but accents are folded: an ASCII query finds the accented name.
    assert tool.run("rodriguez racing").text.startswith("[Pedro Rodríguez]")


def test_top_k_gives_one_line_per_result(corpus: Path) -> None:
    obs = make_search_tool(corpus, top_k=2).run("Danube river")
    lines = obs.text.splitlines()
    assert len(lines) == 2 and {line.split("]")[0][1:] for line in lines} == {"Danube", "Vienna"}
    # Never more results than documents.
    assert len(make_search_tool(corpus, top_k=50).run("capital").text.splitlines()) == 2


def test_index_is_built_once_and_loaded_on_the_next_start(corpus: Path, home: Path) -> None:
    first = make_search_tool(corpus)
    assert first.built
    assert (home / "indexes" / first.hash / "meta.json").is_file()
    second = make_search_tool(corpus)
    assert not second.built
    assert second.run("Budapest capital").text == first.run("Budapest capital").text
    # A half-written or foreign index dir is rebuilt, not trusted.
    (home / "indexes" / first.hash / "meta.json").write_text("{}")
    assert make_search_tool(corpus).built


def test_identity_covers_corpus_content_top_k_and_snippet_size(corpus: Path, tmp_path: Path) -> None:
    base = make_search_tool(corpus)
    assert base.hash in base.identity()
    assert make_search_tool(corpus, top_k=2).identity() != base.identity()
    assert make_search_tool(corpus, snippet_chars=100).identity() != base.identity()
    changed = write_jsonl(tmp_path / "corpus.jsonl", DOCS + [{"title": "Rhine", "text": "The Rhine flows north."}])
    rebuilt = make_search_tool(changed)
    assert rebuilt.built and rebuilt.identity() != base.identity()
    assert rebuilt.run("Rhine").text.startswith("[Rhine]")


def test_folder_of_txt_files_uses_file_stems_as_titles(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "Lake Balaton.txt").write_text("Lake Balaton is the largest lake in Central Europe.", encoding="utf-8")
    (folder / "Tokaj.txt").write_text("Tokaj is a wine region in Hungary.", encoding="utf-8")
    (folder / "notes.md").write_text("largest lake ignored", encoding="utf-8")
    tool = make_search_tool(folder)
    assert len(tool.docs) == 2
    assert tool.run("largest lake").text.startswith("[Lake Balaton] Lake Balaton is")
    # Renaming a file renames a title, so it is a different corpus.
    (folder / "Tokaj.txt").rename(folder / "Tokaj region.txt")
    assert make_search_tool(folder).hash != tool.hash


def test_empty_query_fails_and_unknown_words_give_no_results(corpus: Path) -> None:
    tool = make_search_tool(corpus)
    empty = tool.run("   \n")
    assert not empty.ok and "empty" in empty.text
    none = tool.run("xylophone quasar")
    assert none.ok and none.data["results"] == [] and "No documents match" in none.text
    # Only stopwords: nothing to search for, still an answer rather than an error.
    assert tool.run("the of and").data["results"] == []


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (['{"title": "A", "text": "fine"}', '{"title": "B"}'], "line 2: needs a string \"text\""),
        (['{"title": "A", "text": "fine"}', "", "not json"], "line 3: not valid JSON"),
        (['["title", "text"]'], "line 1: needs a string \"text\""),
        (['{"text": 5}'], "line 1: needs a string \"text\""),
        ([], "the corpus is empty"),
    ],
)
def test_malformed_corpus_is_one_clear_error_naming_the_line(tmp_path: Path, lines: list[str], expected: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n" if lines else "", encoding="utf-8")
    with pytest.raises(DataFileError) as err:
        make_search_tool(path)
    message = str(err.value)
    assert expected in message and str(path) in message and "\n" not in message


def test_missing_corpus_and_empty_folder_are_errors(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="no such corpus"):
        make_search_tool(tmp_path / "nope.jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataFileError, match="no .txt files"):
        make_search_tool(tmp_path / "empty")


def test_title_is_optional_and_extra_keys_are_ignored(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [{"text": "Untitled note about comets.", "id": 7, "meta": {"a": 1}}])
    assert make_search_tool(path).run("comets").text == "[] Untitled note about comets."


def test_registry_and_toolbox_cache_bm25_results(corpus: Path, tmp_path: Path) -> None:
    tool = get_tool("search", corpus=str(corpus))
    box = Toolbox([tool], cache=ToolCache(tmp_path / "tools.sqlite"))
    first = asyncio.run(box.call("search", "capital of Austria"))
    again = asyncio.run(box.call("search", "capital of Austria"))
    assert first.text.startswith("[Vienna]") and not first.cached
    assert again.cached and again.text == first.text
    box.cache.close()


def test_factory_needs_a_source_and_takes_only_one(corpus: Path) -> None:
    with pytest.raises(VeriloopError, match="VERILOOP_SEARCH_URL"):
        make_search_tool()
    with pytest.raises(VeriloopError, match="not both"):
        make_search_tool(corpus, url="http://127.0.0.1:9")
    with pytest.raises(VeriloopError, match="http"):
        make_search_tool(url="ftp://example.org")
    with pytest.raises(VeriloopError, match="top_k"):
        make_search_tool(corpus, top_k=0)


# --------------------------------------------------------------------- HTTP


class _Engine(BaseHTTPRequestHandler):
    """A SearxNG-shaped engine: the query decides the reply ("boom" -> 500, "hang" ->
    no answer until released, "garbage" -> not JSON)."""

    release = threading.Event()
    seen: list[dict[str, list[str]]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        url = urllib.parse.urlparse(self.path)
        params = urllib.parse.parse_qs(url.query)
        type(self).seen.append({"path": [url.path], **params})
        q = params.get("q", [""])[0]
        if q == "hang":
            self.release.wait(10)
            return
        if q == "boom":
            self.send_error(500, "engine broke")
            return
        if q == "garbage":
            body = b"<html>not json</html>"
        elif q == "no list":
            body = json.dumps({"results": "none"}).encode()
        else:
            results = [
                {"title": f"{q} page {i}", "content": f"About {q}: fact number {i}.", "url": f"https://example.org/{i}"}
                for i in range(3)
            ]
            if q == "nothing":
                results = []
            body = json.dumps({"query": q, "results": [{"junk": True}, *results]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def engine():
    _Engine.release.clear()
    _Engine.seen.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Engine)
    server.daemon_threads = True
    # Polled every 10 ms, not serve_forever's 0.5 s: shutdown() waits for the next poll.
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        _Engine.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_http_backend_returns_top_results(engine: str) -> None:
    tool = make_search_tool(url=engine + "/", top_k=2)
    assert isinstance(tool, WebSearch) and tool.deterministic and "query" in tool.description
    obs = tool.run("Ed  Wood")
    assert obs.ok
    assert obs.text.splitlines() == [
        "[Ed Wood page 0] About Ed Wood: fact number 0.",
        "[Ed Wood page 1] About Ed Wood: fact number 1.",
    ]
    assert obs.data["results"][0]["url"] == "https://example.org/0"
    assert _Engine.seen[-1] == {"path": ["/search"], "q": ["Ed Wood"], "format": ["json"]}
    assert engine in tool.identity() and "k=2" in tool.identity()


def test_http_url_from_the_environment(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERILOOP_SEARCH_URL", engine)
    tool = make_search_tool()
    assert isinstance(tool, WebSearch) and tool.run("Vienna").text.startswith("[Vienna page 0]")


def test_http_failures_are_failed_observations(engine: str) -> None:
    # The short limit only where the engine never answers (it holds "hang" for 10 s): a
    # loaded machine may take longer than 0.5 s to answer the others.
    tool = make_search_tool(url=engine, timeout=30)
    error = tool.run("boom")
    assert not error.ok and "HTTP 500" in error.text and error.data["status"] == 500
    hang = make_search_tool(url=engine, timeout=0.5).run("hang")
    assert not hang.ok and "did not answer within 0.5 s" in hang.text
    for q in ("garbage", "no list"):
        bad = tool.run(q)
        assert not bad.ok and "expected JSON" in bad.text
    empty = tool.run("nothing")
    assert empty.ok and empty.data["results"] == [] and "No results" in empty.text
    assert not tool.run("").ok


def test_unreachable_engine_is_a_failed_observation() -> None:
    # Bind a port and close it again so nothing listens there.
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Engine)
    port = server.server_address[1]
    server.server_close()
    obs = make_search_tool(url=f"http://127.0.0.1:{port}", timeout=2).run("anything")
    assert not obs.ok and "cannot be reached" in obs.text


def test_toolbox_caches_http_results_but_not_failures(engine: str, tmp_path: Path) -> None:
    box = Toolbox([make_search_tool(url=engine, timeout=30)], cache=ToolCache(tmp_path / "t.sqlite"))
    asyncio.run(box.call("search", "Danube"))
    calls = len(_Engine.seen)
    again = asyncio.run(box.call("search", "Danube"))
    assert again.cached and len(_Engine.seen) == calls
    asyncio.run(box.call("search", "boom"))
    asyncio.run(box.call("search", "boom"))
    assert len(_Engine.seen) == calls + 2
    box.cache.close()
