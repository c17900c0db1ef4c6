"""Every route of `cems ui` over HTTP (Starlette's TestClient) on the real embedded store: what each page
shows, every write (with its CSRF token), bad input answered with a message and nothing lost, and memory
text printed as text (a memory holding `<script>` and `</textarea>`)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the web extra is not installed (pip install 'cems[ui]')")

from starlette.testclient import TestClient  # noqa: E402

PORT = 18766
TOKEN = "http-test-token"
CSRF = "http-test-csrf"
HOSTILE = "Deploy note <script>alert('x')</script> then </textarea><b>bold</b> & more"


@pytest.fixture
def memory(env):
    import cems

    with cems.open() as opened:
        yield opened


@pytest.fixture
def client(memory):
    from cems_cli.ui.app import create_app

    app = create_app(memory, token=TOKEN, port=PORT, csrf=CSRF, live=False)
    with TestClient(app, base_url=f"http://127.0.0.1:{PORT}", follow_redirects=False) as test_client:
        test_client.cookies.set(f"cems_ui_{PORT}", TOKEN)
        yield test_client


def _post(client: TestClient, path: str, **fields: str):
    return client.post(path, data={"csrf": CSRF, **fields}, headers={"origin": f"http://127.0.0.1:{PORT}"})


def test_pages_need_the_token(memory):
    from cems_cli.ui.app import create_app

    app = create_app(memory, token=TOKEN, port=PORT, csrf=CSRF, live=False)
    with TestClient(app, base_url=f"http://127.0.0.1:{PORT}", follow_redirects=False) as anonymous:
        for path in ("/memories", "/preview", "/rules", "/sessions", "/maintenance", "/team", "/live",
                     "/static/htmx.min.js"):
            assert anonymous.get(path).status_code == 401, path
        assert anonymous.post("/rules", data={"csrf": CSRF, "line": "Bash: ls — x"}).status_code == 401
        assert anonymous.get(f"/memories?token={TOKEN}").status_code == 303
        assert anonymous.get("/memories").status_code == 200


def test_memory_text_is_escaped_everywhere(client, memory):
    memory_id = memory.remember(HOSTILE, category="decisions").id
    pages = [client.get("/memories"), client.get(f"/memories/{memory_id}"),
             client.get("/memories", params={"q": "deploy note script bold"}),
             client.get("/sessions"), client.get(f"/memories/{memory_id}", params={"q": "deploy note"})]
    for page in pages:
        assert page.status_code == 200
        assert "<script>alert" not in page.text
        assert "<b>bold</b>" not in page.text
    detail = pages[1].text
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in detail
    # Inside the edit form the text cannot close the textarea: exactly one closing tag, the form's own.
    assert detail.count("</textarea>") == 1 and "&lt;/textarea&gt;" in detail
    assert memory_id[:8] in pages[2].text


def test_search_with_filters(client, memory):
    pinned = memory.remember("We deploy the billing service with helm charts", category="decisions",
                             pin=True).id
    other = memory.remember("Prefer ruff over flake8 for linting", category="preferences").id
    found = client.get("/memories", params={"q": "how do we deploy billing"})
    assert found.status_code == 200 and pinned[:8] in found.text
    assert other[:8] not in client.get("/memories", params={"category": "decisions"}).text
    only_pinned = client.get("/memories", params={"pinned": "yes"}).text
    assert pinned[:8] in only_pinned and other[:8] not in only_pinned
    assert other[:8] in client.get("/memories", params={"source": "manual", "since": "2000-01-01"}).text
    assert "No memories here" in client.get("/memories", params={"until": "2000-01-01"}).text
    assert pinned[:8] in client.get("/memories", params={"q": "deploy billing helm", "pinned": "yes"}).text


def test_the_list_pages_through_older_memories(client, memory):
    rows = [{"content": f"Paged memory number {i} about the build", "category": "context"} for i in range(55)]
    memory.import_records(rows)
    first = client.get("/memories", params={"category": "context"}).text
    assert first.count('class="memory') == 50
    older = re.search(r'href="/memories\?([^"]+)" id="older"', first)
    assert older and "category=context" in older.group(1) and "page=2" in older.group(1)
    second = client.get("/memories?" + older.group(1).replace("&amp;", "&")).text
    assert second.count('class="memory') == 5 and 'id="older"' not in second


@pytest.mark.parametrize(("params", "message"), [
    ({"since": "yesterday"}, "since: expected a date like 2026-01-31"),
    ({"category": "nonsense"}, "unknown category"),
    ({"scope": "everyone"}, "unknown scope"),
    ({"pinned": "maybe"}, "pinned: expected yes or no"),
    ({"state": "archived", "q": "anything"}, "search covers live memories"),
    ({"page": "0"}, "page: expected a number from 1"),
    ({"source": "a\x00b"}, "source: a NUL character is not allowed"),
    ({"project": "org/\x00repo"}, "project: a NUL character is not allowed"),
])
def test_bad_filters_get_a_message(client, params, message):
    answer = client.get("/memories", params=params)
    assert answer.status_code == 400
    assert message in answer.text


def test_edge_inputs_get_a_page_not_a_server_error(client, memory):
    """The last day there is, a NUL in a project or a pin reason: each failed in the store or in date
    arithmetic (a 500 from the server) before."""
    memory_id = memory.remember("A memory for the edges of input", category="general").id
    assert client.get("/memories", params={"until": "9999-12-31"}).status_code == 200
    answer = client.get("/sessions", params={"project": "\x00"})
    assert answer.status_code == 400 and "project: a NUL character is not allowed" in answer.text
    assert _post(client, f"/memories/{memory_id}/pin", reason="keep\x00 it").status_code == 303
    assert memory.get(memory_id).pin_reason == "keep it"


def test_forget_restore_pin_edit_from_the_memory_page(client, memory):
    memory_id = memory.remember("The staging database is on port 5433", category="context").id
    forgotten = _post(client, f"/memories/{memory_id}/forget")
    assert forgotten.status_code == 303 and forgotten.headers["location"].endswith("?done=forgotten")
    assert memory.get(memory_id).archived
    assert memory_id[:8] in client.get("/memories", params={"state": "archived"}).text
    assert "Restore" in client.get(forgotten.headers["location"]).text
    assert _post(client, f"/memories/{memory_id}/restore").status_code == 303
    assert not memory.get(memory_id).archived
    assert _post(client, f"/memories/{memory_id}/pin", reason="ops").status_code == 303
    assert memory.get(memory_id).pinned and memory.get(memory_id).pin_reason == "ops"
    assert _post(client, f"/memories/{memory_id}/unpin").status_code == 303
    assert not memory.get(memory_id).pinned
    edited = _post(client, f"/memories/{memory_id}/edit", text="The staging database is on port 6543")
    assert edited.status_code == 303
    assert memory.get(memory_id).content == "The staging database is on port 6543"
    assert "Saved." in client.get(edited.headers["location"]).text
    history = client.get(f"/memories/{memory_id}").text
    assert "last changed" in history


def test_the_history_lists_each_edit_with_the_text_before(client, memory):
    memory_id = memory.remember("Staging runs <b>postgres 15</b>", category="context").id
    assert _post(client, f"/memories/{memory_id}/edit", text="Staging runs postgres 16").status_code == 303
    assert _post(client, f"/memories/{memory_id}/pin", reason="ops").status_code == 303
    history = client.get(f"/memories/{memory_id}").text.split("<h2>History</h2>")[1]
    entries = re.findall(r'<li class="edit-entry">(.*?)</li>', history, re.S)
    assert len(entries) == 2
    assert f"edited by {memory.settings.user}: pinned, pin reason" in entries[0]  # newest first
    assert "edited by" in entries[1] and ": text" in entries[1]
    before = "<details><summary>text before</summary><pre>Staging runs &lt;b&gt;postgres 15&lt;/b&gt;</pre>"
    assert before in entries[1]


def test_a_bad_edit_keeps_what_was_typed(client, memory):
    memory_id = memory.remember("Use uv for virtual environments", category="preferences").id
    typed = "\x00" * 3
    answer = _post(client, f"/memories/{memory_id}/edit", text=typed)
    assert answer.status_code == 400 and 'class="error"' in answer.text
    assert memory.get(memory_id).content == "Use uv for virtual environments"
    big = "word " * 20_000  # 100 kB, over the 16 KiB CEMS_MAX_MEMORY_BYTES
    answer = _post(client, f"/memories/{memory_id}/edit", text=big)
    assert answer.status_code == 400 and answer.text.count("word ") >= 20_000  # the text is not lost
    assert memory.get(memory_id).content == "Use uv for virtual environments"


def test_writes_need_csrf_and_unknown_things_are_named(client, memory):
    memory_id = memory.remember("Tabs are never used in this repository", category="preferences").id
    assert client.post(f"/memories/{memory_id}/forget", data={}).status_code == 403
    assert client.post(f"/memories/{memory_id}/forget", data={"csrf": "nope"}).status_code == 403
    assert not memory.get(memory_id).archived
    answer = _post(client, f"/memories/{memory_id}/forget", **{"x": "1"})
    assert answer.status_code == 303
    assert _post(client, f"/memories/{memory_id}/explode").status_code == 404
    assert client.get("/memories/deadbeefdeadbeef").status_code == 404
    shared = _post(client, f"/memories/{memory_id}/share")
    assert shared.status_code == 400 and "sharing needs a team" in shared.text


def test_a_search_explains_the_score(client, memory, monkeypatch):
    memory_id = memory.remember("The release train leaves every Tuesday at noon", category="decisions").id
    page = client.get(f"/memories/{memory_id}", params={"q": "when does the release train leave"}).text
    assert "Why it ranks" in page and "Confidence" in page and "meaning (cosine similarity)" in page
    # Opened from a results page, a memory shows that search's factors without searching again.
    query = "release train Tuesday"
    assert memory_id[:8] in client.get("/memories", params={"q": query}).text
    monkeypatch.setattr(memory, "search", lambda *a, **k: pytest.fail("searched again"))
    assert "Why it ranks" in client.get(f"/memories/{memory_id}", params={"q": query}).text


def test_preview_shows_what_the_hooks_would_inject(client, memory, tmp_path: Path):
    pinned = memory.remember("Always run make lint before pushing", category="preferences", pin=True,
                             project="project:acme/api").id
    recalled = memory.remember("The payments service retries webhooks three times with backoff",
                               category="decisions", project="").id
    answer = client.get("/preview", params={"prompt": "how many times are payment webhooks retried?",
                                            "folder": str(tmp_path)})
    assert answer.status_code == 200
    text = answer.text
    assert "&lt;memory-profile&gt;" in text and pinned[:8] in text
    assert "&lt;memory-recall&gt;" in text and recalled[:8] in text and "confidence" in text
    assert memory.history(recalled).last_recalled is None  # looking is not use
    trivial = client.get("/preview", params={"prompt": "ok", "folder": str(tmp_path)}).text
    assert "a trivial prompt" in trivial
    missing = client.get("/preview", params={"prompt": "deploy?", "folder": "/no/such/folder"})
    assert missing.status_code == 400 and "no folder" in missing.text


def test_rules_add_list_test_and_count(client, memory, env):
    added = _post(client, "/rules", line="Bash: git push --force* — force pushes rewrite shared history")
    assert added.status_code == 303
    page = client.get(added.headers["location"]).text
    assert "Rule added" in page and "git push --force*" in page
    rule = memory.rules.list_rules()[0]
    tested = client.get("/rules", params={"tool": "Bash", "input": "git push --force origin main"}).text
    assert re.search(r"<b>block</b>: rule .*" + rule.id[:8], tested)
    assert "force pushes rewrite shared history" in tested
    assert "<b>allow</b>" in client.get("/rules", params={"tool": "Bash", "input": "git status"}).text
    from cems_cli.rules.hits import record

    for _ in range(3):
        record(env["CEMS_HOME"], rule.id, "block", 0.0)
    assert "3 block" in client.get("/rules").text
    bad = _post(client, "/rules", line="not a rule at all")
    assert bad.status_code == 400 and 'value="not a rule at all"' in bad.text


def test_sessions_show_what_each_session_stored(client, memory):
    first = memory.remember("Session one found the flaky test in test_io", category="learnings",
                            tags=["session:abc12345ffff"]).id
    second = memory.remember("Session one fixed the flaky test with a retry", category="learnings",
                             tags=["session:abc12345ffff"]).id
    page = client.get("/sessions").text
    assert "session abc12345" in page and first[:8] in page and second[:8] in page
    assert page.index(first[:8]) < page.index(second[:8])  # oldest first within a session
    assert "No session stored anything" in client.get("/sessions", params={"project": "other/repo"}).text


def test_maintenance_shows_both_texts_and_restores(client, memory):
    # A text no other test stores, so that the only near duplicate is the one made here. (On the shared test
    # store, many users' identical vectors once crowded the HNSW probe and this merge was missed; a store
    # this small is now compared exactly: store/lifecycle.PAIR_EXACT_LIMIT.)
    text = f"The API gateway {uuid.uuid4().hex[:8]} times out after 30 seconds"
    kept = memory.remember(text, category="learnings").id
    copy = memory.remember(text + ".", category="learnings", source="session").id
    dry = client.get("/maintenance")
    assert dry.status_code == 200 and "what it would do" in dry.text
    assert "would absorb" in dry.text and copy[:8] in dry.text and kept[:8] in dry.text
    assert not memory.get(copy).archived
    ran = _post(client, "/maintenance")
    assert ran.status_code == 200 and f"/memories/{copy}/restore" in ran.text
    assert memory.get(copy).archived
    assert _post(client, f"/memories/{copy}/restore").status_code == 303
    assert not memory.get(copy).archived


def test_team_page_on_the_embedded_store(client):
    page = client.get("/team")
    assert page.status_code == 200 and "This store is your own" in page.text


def test_static_files_are_the_vendored_htmx(client):
    assert 'version:"2.' in client.get("/static/htmx.min.js").text
    assert "0BSD" in client.get("/static/LICENSE-htmx.txt").text or "Zero" in client.get(
        "/static/LICENSE-htmx.txt").text
    assert client.get("/").headers["location"] == "/memories"
