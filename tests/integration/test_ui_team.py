"""The viewer's team page on a team server: members, shared memories and the audit log as the user's
database role sees them (row-level security decides, not the viewer)."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette", reason="the web extra is not installed (pip install 'cems[ui]')")

from starlette.testclient import TestClient  # noqa: E402

from tests.integration import test_teams_rls  # noqa: E402
from tests.integration.test_teams_rls import World  # noqa: E402

world = test_teams_rls.world  # the team server fixture: two roles, two teams

PORT = 18767


def _page(world: World, role: str, team: str, monkeypatch: pytest.MonkeyPatch) -> str:
    import cems
    from cems_cli.ui.app import create_app

    monkeypatch.delenv("CEMS_TEAM", raising=False)
    with cems.open(database_url=world.urls[role], team=team) as memory:
        app = create_app(memory, token="t", port=PORT, live=False)
        with TestClient(app, base_url=f"http://127.0.0.1:{PORT}") as client:
            client.cookies.set(f"cems_ui_{PORT}", "t")
            answer = client.get("/team")
            assert answer.status_code == 200
            return answer.text


def test_team_page_shows_what_the_role_may_read(world: World, monkeypatch: pytest.MonkeyPatch):
    shared = world.ok(world.alice, "remember", "Red team deploys on Thursdays <b>only</b>", "--scope",
                      "shared", team=world.red)["id"]
    blue = world.ok(world.bob, "remember", "Blue team secret plan", "--scope", "shared",
                    team=world.blue)["id"]
    alice = _page(world, world.alice, world.red, monkeypatch)
    assert world.red in alice and world.blue not in alice  # alice is not in blue
    assert world.bob in alice and "(admin)" in alice
    assert shared[:8] in alice and blue[:8] not in alice
    assert "&lt;b&gt;only&lt;/b&gt;" in alice
    audit = alice.split("Audit log")[1]
    assert f"<td>{world.alice}</td><td>share</td><td>{world.red}</td>" in audit and blue[:8] not in audit
    bob = _page(world, world.bob, world.blue, monkeypatch)
    assert world.red in bob and world.blue in bob and shared[:8] in bob and blue[:8] in bob


def test_another_users_memory_can_be_neither_read_nor_changed(world: World, monkeypatch: pytest.MonkeyPatch):
    """Alice's viewer on Bob's personal memory (its id known, say from a notice on the shared channel):
    no page, and every write is refused with Bob's memory unchanged. A share names a memory by its path,
    and never stores the path as new shared text."""
    import cems
    from cems_cli.ui.app import create_app

    private = world.ok(world.bob, "remember", "Bob's private note on the payroll export",
                       team=world.red)["id"]
    monkeypatch.delenv("CEMS_TEAM", raising=False)
    with cems.open(database_url=world.urls[world.alice], team=world.red) as memory:
        app = create_app(memory, token="t", port=PORT, csrf="c", live=False)
        with TestClient(app, base_url=f"http://127.0.0.1:{PORT}", follow_redirects=False) as client:
            client.cookies.set(f"cems_ui_{PORT}", "t")
            page = client.get(f"/memories/{private}")
            assert page.status_code == 404 and "payroll" not in page.text
            for action, fields in (("forget", {}), ("pin", {"reason": "mine now"}), ("unpin", {}),
                                   ("edit", {"text": "overwritten"}), ("restore", {}), ("share", {})):
                answer = client.post(f"/memories/{private}/{action}", data={"csrf": "c", **fields})
                assert answer.status_code in (400, 404), (action, answer.status_code)
                assert "payroll" not in answer.text
            before = len(memory.browse(scope="shared", limit=500))
            answer = client.post("/memories/deploy on fridays/share", data={"csrf": "c"})
            assert answer.status_code in (400, 404)
            assert len(memory.browse(scope="shared", limit=500)) == before
    bob = world.ok(world.bob, "show", private, team=world.red)
    assert "payroll" in str(bob) and "overwritten" not in str(bob)
