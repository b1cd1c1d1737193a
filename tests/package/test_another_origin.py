"""What the front page and the init README tell a user about a page of their own on another origin, and that it is
what Chromium does: without `--cors-origins` the library's import itself fails, with the words the docs quote."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from fixtures.isolated_files import isolated_files
from onnxport.harness.process import free_port
from onnxport.init_project import readme
from onnxport.install_source import installed_from

PROJECT = Path(__file__).resolve().parents[2]
README = PROJECT / "README.md"
# Every page a user reads before or while installing; none may send them to a package index onnxport is not on.
PAGES = [README, *sorted((PROJECT / "docs").rglob("*.md")), PROJECT / "web" / "lib" / "README.md"]
# The library's import needs no model: an empty repository's server is live, not ready.
LIVE = "/v2/health/live"
CHROMIUM_SAYS = "Failed to fetch dynamically imported module"
DYNAMIC = """<!doctype html><meta charset="utf-8"><title>dynamic</title><body><script type="module">
  try {
    const { connect } = await import("%(server)s/web/lib/index.js");
    window.result = { connect: typeof connect };
  } catch (error) {
    window.result = { error: String(error) };
  }
  document.body.dataset.done = "true";
</script>"""
# The README's own form: a static import, which stops the module before any of its code runs.
STATIC = """<!doctype html><meta charset="utf-8"><title>static</title><body><script type="module">
  import { connect } from "%(server)s/web/lib/index.js";
  window.result = { connect: typeof connect };
  document.body.dataset.done = "true";
</script>"""


def _library_paragraphs(text: str) -> str:
    """README.md from its "in any page" code to the next section: where the library's use is described."""
    start = text.index("And in any page")
    return text[start : text.index("\n## ", start)]


def test_the_readme_says_what_another_origin_needs_where_the_library_is_shown():
    prose = " ".join(_library_paragraphs(README.read_text()).split())
    assert "`onnxport serve --cors-origins http://localhost:5173`" in prose, prose
    assert f"`{CHROMIUM_SAYS}`" in prose and "static `import` only logs a CORS error" in prose, prose
    init = " ".join(readme("mine", installed_from()).split())
    assert "--cors-origins" in init and CHROMIUM_SAYS in init, init


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(PROJECT)))
def test_no_page_sends_a_user_to_a_package_index_onnxport_is_not_on(page):
    wrong = re.findall(r"pip install (?:-e )?['\"]?onnxport(?:\[[^\]]*\])?['\"]?(?=[\s`)]|$)", page.read_text())
    assert not wrong, f"{page.name}: {wrong} (onnxport is on no package index: install from the wheel)"


def test_chromium_refuses_the_library_to_another_origin_until_the_server_allows_it(spawn_server, chromium, tmp_path):
    folder = tmp_path / "my-app"
    folder.mkdir()
    port, app_port = free_port(), free_port()
    server = f"http://127.0.0.1:{port}"
    for name, page in (("dynamic.html", DYNAMIC), ("static.html", STATIC)):
        (folder / name).write_text(page % {"server": server}, encoding="utf-8")
    with isolated_files(folder, app_port) as app:
        spawn_server(["serve", "--repository", str(tmp_path / "repository"), "--port", str(port)], port, probe=LIVE)
        context = chromium.new_context()
        try:
            page = context.new_page()
            page.goto(f"{app}dynamic.html")
            expect(page.locator("body[data-done=true]")).to_have_count(1)
            error = page.evaluate("() => window.result.error")
            print(f"\ndynamic import, not allowed: {error}")
            assert error == f"TypeError: {CHROMIUM_SAYS}: {server}/web/lib/index.js", error

            with page.expect_console_message(lambda message: "CORS policy" in message.text) as logged:
                page.goto(f"{app}static.html")
            print(f"static import, not allowed: {logged.value.text}")
            assert page.evaluate("() => window.result") is None, "the module ran"
        finally:
            context.close()

    # The fix the docs give: the page's origin in --cors-origins. Both forms import the library.
    allowed_port = free_port()
    allowed = f"http://127.0.0.1:{allowed_port}"
    for name, page in (("dynamic.html", DYNAMIC), ("static.html", STATIC)):
        (folder / name).write_text(page % {"server": allowed}, encoding="utf-8")
    with isolated_files(folder, app_port) as app:
        spawn_server(
            [
                "serve",
                "--repository",
                str(tmp_path / "repository"),
                "--port",
                str(allowed_port),
                "--cors-origins",
                app.rstrip("/"),
            ],
            allowed_port,
            probe=LIVE,
        )
        context = chromium.new_context()
        try:
            page = context.new_page()
            for name in ("dynamic.html", "static.html"):
                page.goto(f"{app}{name}")
                expect(page.locator("body[data-done=true]")).to_have_count(1)
                assert page.evaluate("() => window.result") == {"connect": "function"}, name
        finally:
            context.close()
