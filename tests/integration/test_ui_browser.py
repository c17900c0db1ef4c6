"""`cems ui` in a real browser: headless Chromium from the system packages (never `playwright install`),
driven by Playwright's Python API. It signs in with the printed URL's token, searches, forgets and
restores a memory, sees a memory stored by another process appear live, reads without JavaScript, and
saves screenshots (the memories page, the next-session preview) to $CEMS_UI_SCREENSHOTS when set."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.viewer import running_viewer

pytest.importorskip("starlette", reason="the web extra is not installed (pip install 'cems[ui]')")
playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"), "/usr/bin/chromium")
                 if p and os.path.exists(p)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (apt-get install chromium)")

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TOKEN = "browser-test-" + uuid.uuid4().hex
# Read now: the fixtures clear every CEMS_* variable for the store they set up.
SCREENSHOTS = os.environ.get("CEMS_UI_SCREENSHOTS")


@pytest.fixture(scope="module")
def served(cems_home: Path) -> Iterator[dict[str, Any]]:
    """The viewer on a free port (uvicorn in a thread, live updates on) for a fresh user of the test store."""
    with running_viewer(cems_home, TOKEN, project="project:acme/api") as served:
        yield {**served, "url": f"http://127.0.0.1:{served['port']}/?token={TOKEN}"}


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    with playwright_api.sync_playwright() as started:
        yield started


@pytest.fixture(scope="module")
def browser(driver: Any) -> Iterator[Any]:
    launched = driver.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
    try:
        yield launched
    finally:
        launched.close()


def _screenshots(tmp_path: Path) -> Path:
    folder = Path(SCREENSHOTS or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_signing_in_leaves_the_token_in_no_address_the_browser_keeps(served, driver, tmp_path):
    """The launch page `cems ui` opens POSTs the token; neither the addresses the tab went through nor
    Chromium's own history database (a real profile) hold it, and the page that opens is signed in."""
    import sqlite3

    from cems_cli.ui.server import launch_file

    launch = launch_file(tmp_path, served["port"], TOKEN)
    profile = tmp_path / "profile"
    context = driver.chromium.launch_persistent_context(str(profile), executable_path=CHROMIUM, args=ARGS,
                                                        headless=True)
    try:
        page = context.new_page()
        visited: list[str] = []
        page.on("framenavigated",
                lambda frame: visited.append(frame.url) if frame is page.main_frame else None)
        page.goto(launch.as_uri())
        page.wait_for_url(f"http://127.0.0.1:{served['port']}/memories", timeout=10_000)
        assert page.locator("input[name=q]").count() == 1  # the memories page, signed in
        addresses = [*visited, page.url, page.evaluate("location.href")]
    finally:
        context.close()  # Chromium writes its history database as it closes
    assert any(a.endswith("/memories") for a in addresses)
    assert not [a for a in addresses if TOKEN in a]
    with sqlite3.connect(profile / "Default" / "History") as db:
        kept = [row[0] for row in db.execute("SELECT url FROM urls")]
    assert any(url.endswith("/memories") for url in kept), kept
    assert not [url for url in kept if TOKEN in url]


def test_search_forget_restore_live_and_screenshots(served, browser, tmp_path):
    memory = served["memory"]
    kept = memory.remember("Integration tests run against a real PostgreSQL, never SQLite",
                           category="decisions").id
    memory.remember("The <script>alert(1)</script> tag is data </textarea> here", category="general")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    page.goto(served["url"])
    assert page.url.endswith("/memories")  # the token became a cookie and left the address
    page.fill("input[name=q]", "which database do integration tests use")
    page.press("input[name=q]", "Enter")
    page.wait_for_selector(f"#m-{kept}")
    page.click(f"#m-{kept} a.id")
    page.wait_for_selector("pre.content")
    assert "real PostgreSQL" in page.inner_text("pre.content")

    page.click("button:has-text('Forget')")
    page.wait_for_selector("text=Forgotten (archived)")
    assert memory.get(kept).archived
    page.click("button:has-text('Restore')")
    page.wait_for_selector("p.notice:has-text('Restored.')")
    assert not memory.get(kept).archived

    # Live: a memory another process stores appears on the open page within a second.
    page.goto(f"http://127.0.0.1:{served['port']}/memories")
    hub = served["viewer"].hub
    deadline = time.monotonic() + 10
    while not hub._queues and time.monotonic() < deadline:  # the page's stream is connected
        time.sleep(0.05)
    assert hub._queues, "the page never opened its live stream"
    import cems

    with cems.open() as other:  # another connection, as a session's capture would use
        captured = other.remember("Captured live: the build cache lives in /var/cache/ci",
                                  category="learnings", source="session", tags=["session:live0001"]).id
    stored = time.monotonic()
    page.wait_for_selector(f"#live #m-{captured}", timeout=5000)
    seen = time.monotonic() - stored
    assert seen < 1.0, f"the captured memory took {seen:.2f} s to appear"
    assert not dialogs  # no memory text ran as a script
    folder = _screenshots(tmp_path)
    page.screenshot(path=str(folder / "memories.png"), full_page=True)

    page.goto(f"http://127.0.0.1:{served['port']}/preview")
    page.fill("textarea[name=prompt]", "where does the build cache live?")
    page.fill("input[name=folder]", str(tmp_path))
    page.click("button:has-text('Preview')")
    page.wait_for_selector("#profile")
    assert "memory-profile" in page.inner_text("#profile")
    page.screenshot(path=str(folder / "preview.png"), full_page=True)
    assert (folder / "memories.png").stat().st_size > 10_000
    page.close()


def test_reading_works_without_javascript(served, browser):
    memory = served["memory"]
    found = memory.remember("Feature flags are read from LaunchDarkly at startup", category="decisions").id
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(served["url"])
    page.fill("input[name=q]", "where are feature flags read from")
    page.press("input[name=q]", "Enter")
    page.wait_for_selector(f"#m-{found}")
    page.click(f"#m-{found} a.id")
    assert "LaunchDarkly" in page.inner_text("pre.content")
    context.close()
