"""The documentation site: `mkdocs build --strict` succeeds (any warning, broken link,
missing anchor or unresolvable API name fails it), the built pages fetch nothing from the
network, the references are generated, and in headless Chromium the pages open from disk
and the search box finds `correct` and `backprompt` with every non-file request refused.
Screenshots land in the browser test's temporary directory."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import ROOT

BANNERS = {"DISABLE_MKDOCS_2_WARNING": "true", "NO_MKDOCS_2_WARNING": "1"}  # plugins' notices about MkDocs 2
# Where a page would fetch something: a tag's src/href (not an <a>'s), a CSS url() or @import.
FETCHES = re.compile(r"<(?:script|link|img|iframe|source|video|audio)\b[^>]*\b(?:src|href)=\"(https?:)?//[^\"]+\"|"
                     r"url\(['\"]?(?:https?:)?//|@import\s+['\"]?(?:url\()?['\"]?(?:https?:)?//")


ONE_WORKER = True  # conftest.py: the site is built once, not once per worker


def build_site(out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          env={**os.environ, **BANNERS}, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    proc = build_site(out)
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert "WARNING" not in proc.stderr, proc.stderr[-5000:]
    return out


def nav_pages(entries: list[object]) -> list[str]:
    found: list[str] = []
    for entry in entries:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            found += nav_pages(value) if isinstance(value, list) else [str(value)]
    return found


def test_the_site_builds_strictly_with_every_page(site: Path) -> None:
    pages = {str(p.relative_to(site)) for p in site.rglob("*.html") if p.name != "404.html"}
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    assert pages == {name.removesuffix(".md") + ".html" for name in nav_pages(nav)}
    assert {"index.html", "getting-started.html", "concepts.html", "reference/cli.html", "reference/api.html",
            "reference/experiment-file.html", "reference/records.html", "results/humaneval.html"} <= pages


def test_no_page_fetches_anything_from_the_network(site: Path) -> None:
    fetching = {str(path.relative_to(site)): FETCHES.findall(path.read_text(encoding="utf-8"))
                for path in [*site.rglob("*.html"), *site.rglob("*.css")]}
    assert {page: found for page, found in fetching.items() if found} == {}


def test_the_references_are_generated(site: Path) -> None:
    cli = (site / "reference" / "cli.html").read_text()
    # Every command of the app, from the app itself.
    for command in ("veriloop run", "veriloop eval", "veriloop rescore", "veriloop models install",
                    "veriloop reproduce self-verification", "veriloop view", "veriloop tools run"):
        assert re.search(rf'<h\d id="{command.replace(" ", "-")}"><code>{command}</code>', cli), command
    assert "<code>--max-rounds &lt;int range&gt;</code>" in cli and "<code>-s, --strategy SPEC</code>" in cli
    api = (site / "reference" / "api.html").read_text()
    for name in ("veriloop.api.correct", "veriloop.task.Task", "veriloop.records.Verdict", "veriloop.api.model"):
        assert f'id="{name}"' in api, name
    assert "Raises:" in api or ">Raises<" in api
    keys = (site / "reference" / "experiment-file.html").read_text()
    for key in ("max_rounds", "cell_budget", "verifier_model", "check_timeout", "max_usd"):
        assert f"<code>{key}</code>" in keys, key
    records = (site / "reference" / "records.html").read_text()
    for key in ("instance_id", "stop_reason", "finish_reason", "prompt_tokens"):
        assert f"<code>{key}</code>" in records, key


def test_the_home_page_is_the_readme_with_its_links_into_the_site(site: Path) -> None:
    home = (site / "index.html").read_text()
    assert "./run.sh" in home and "The main job" in home
    assert 'href="getting-started.html"' in home and 'href="docs/' not in home


@pytest.mark.browser
def test_the_site_opens_from_disk_and_search_works_offline(site: Path, chromium: Path, tmp_path: Path) -> None:
    from playwright import sync_api

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium))
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        outside: list[str] = []
        errors: list[str] = []

        def route(r: sync_api.Route) -> None:
            if r.request.url.startswith("file:"):
                r.continue_()
            else:
                outside.append(r.request.url)
                r.abort()

        page.route("**/*", route)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((site / "index.html").as_uri())
        assert page.locator("h1").first.inner_text().rstrip("¶") == "veriloop"
        page.screenshot(path=str(tmp_path / "home.png"))
        page.goto((site / "guides" / "experiments.html").as_uri())
        assert page.locator("h1").first.inner_text().rstrip("¶") == "Experiments as files"
        page.screenshot(path=str(tmp_path / "guide.png"))
        page.goto((site / "reference" / "api.html").as_uri())
        assert page.locator('[id="veriloop.api.correct"]').count() == 1
        page.screenshot(path=str(tmp_path / "api.png"))
        for query, expected in (("correct", "reference/api.html"), ("backprompt", "")):
            box = page.locator("input.md-search__input")
            box.click()
            box.fill("")
            box.press_sequentially(query, delay=20)  # the search reacts to key presses, as a user types
            page.locator(".md-search-result__item").first.wait_for(timeout=60_000)
            links = [a.get_attribute("href") or "" for a in page.locator(".md-search-result__link").all()]
            assert links, query
            assert any(expected in link for link in links), (query, links)
            page.screenshot(path=str(tmp_path / f"search-{query}.png"))
            page.keyboard.press("Escape")
        browser.close()
    assert outside == [] and errors == []
