"""Progressive recall over MCP, through the SDK's own client against `cems mcp`: search lists a compact index,
`timeline` shows what was stored around a memory or a session, `get` returns full texts for chosen ids and
an error of its own for each id that names no memory of the user's (another user's included)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from mcp import ClientSession

import cems
from cems_cli.text.tokens import count_tokens
from tests.integration.test_mcp_server import _error, _ok, _serve

SESSION = "5e551011-aaaa-4bbb-8ccc-000000000001"
T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def _at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


@pytest.fixture
def store(env) -> dict[str, str]:
    """One project's memories around a session of four, another project's in between, another user's."""
    ids: dict[str, str] = {}
    with cems.open() as memory:

        def add(name: str, text: str, minutes: int, **options: Any) -> None:
            ids[name] = memory.remember(text, created_at=_at(minutes), **options).id

        add("before", "We pin Python to 3.11 in the api service.", 0, category="decisions")
        add("s1", "The migration 0042 failed: relation invoices already exists.", 10, category="learnings",
            tags=[f"session:{SESSION}"], source="session")
        add("other", "The web app deploys through Vercel previews.", 11, project="project:acme/web")
        add("s2", "Fixed it with alembic stamp head before upgrading.", 12, category="learnings",
            tags=[f"session:{SESSION}"], source="session", title="alembic stamp head fixes 0042")
        add("s3", "Decided: every migration gets a downgrade that is tested in CI.", 14,
            category="decisions", tags=[f"session:{SESSION}"], source="session")
        add("s4", "CI now runs alembic downgrade -1 after upgrade head.", 16, category="patterns",
            tags=[f"session:{SESSION}"], source="session")
        add("after", "Invoices are numbered per tenant, never globally.", 30, category="decisions")
        add("gone", "Staging uses the eu-west-1 database.", 31, category="context")
        memory.forget(ids["gone"])
    with cems.open(user=f"{env['CEMS_USER']}-other") as other:
        ids["foreign"] = other.remember("The other user's deploy key lives in vault/prod.", tags=[
            "session:5e551011-ffff-4bbb-8ccc-000000000002"]).id
    return ids


@pytest.mark.real_model  # the index ranks the memory the question means first
def test_search_index_then_get_the_chosen_ids(env, store):
    async def body(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["index"] = await _ok(session, "search", {"query": "how was the 0042 migration failure fixed?"})
        chosen = [entry["id"] for entry in out["index"]["results"][:2]]
        out["chosen"] = chosen
        out["get"] = await _ok(session, "get", {"ids": [chosen[0], chosen[1][:8]]})
        out["mixed"] = await _ok(session, "get", {"ids": [
            store["s2"][:8], store["foreign"], store["gone"], "0000dead", "not an id"]})
        out["none"] = await _error(session, "get", {"ids": []})
        return out

    out = _serve(env, body)
    entries = out["index"]["results"]
    assert entries and all(set(e) == {"id", "title", "date", "category", "tokens", "confidence"}
                           for e in entries)
    by_id = {e["id"]: e for e in entries}
    assert store["s2"] in by_id
    entry = by_id[store["s2"]]
    assert entry["title"] == "alembic stamp head fixes 0042" and entry["date"] == "2026-11-20T09:12Z"
    assert entry["category"] == "learnings"
    assert entry["tokens"] == count_tokens("Fixed it with alembic stamp head before upgrading.")
    # get: the full texts, in the order asked, prefixes resolved, each with its citation.
    got = out["get"]["memories"]
    assert [m["id"] for m in got] == out["chosen"] and out["get"]["count"] == 2
    assert all(m["content"] and m["citation"] for m in got)
    # One bad id is an error of its own; another user's memory is no memory at all, never its text.
    mixed = out["mixed"]["memories"]
    assert out["mixed"]["count"] == 1
    assert mixed[0] == {
        "id": store["s2"], "category": "learnings", "date": "2026-11-20T09:12Z",
        "title": "alembic stamp head fixes 0042", "tags": [f"session:{SESSION}"],
        "content": "Fixed it with alembic stamp head before upgrading.",
        "citation": "Claude Code session in project acme/api",
    }
    assert mixed[1] == {"id": store["foreign"], "error": f"no memory with id {store['foreign']!r}"}
    assert mixed[2] == {"id": store["gone"], "error": f"memory {store['gone']} is forgotten (archived)"}
    assert mixed[3] == {"id": "0000dead", "error": "no memory with id '0000dead'"}
    assert mixed[4] == {"id": "not an id", "error": "no memory with id 'not an id'"}
    assert "vault/prod" not in json_text(out["mixed"])
    assert out["none"] == "invalid arguments for get: ids needs at least 1 item"


def json_text(payload: Any) -> str:
    import json

    return json.dumps(payload, ensure_ascii=False)


def test_timeline_around_a_memory_and_a_session(env, store):
    async def body(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["in_session"] = await _ok(session, "timeline", {"id": store["s2"][:8], "before": 5, "after": 1})
        out["in_project"] = await _ok(session, "timeline", {"id": store["s2"], "within": "project"})
        out["everything"] = await _ok(session, "timeline", {"id": store["s2"], "within": "all",
                                                            "before": 2, "after": 0})
        out["session"] = await _ok(session, "timeline", {"session": SESSION[:8]})
        out["session_only"] = await _ok(session, "timeline", {"session": SESSION, "within": "session"})
        out["hand_written"] = await _ok(session, "timeline", {"id": store["after"], "before": 1})
        out["errors"] = {
            "neither": await _error(session, "timeline", {}),
            "both": await _error(session, "timeline", {"id": store["s1"], "session": SESSION}),
            "foreign session": await _error(session, "timeline", {"session": "5e551011-ffff"}),
            "foreign id": await _error(session, "timeline", {"id": store["foreign"]}),
            "no session": await _error(session, "timeline", {"id": store["before"], "within": "session"}),
            "forgotten": await _error(session, "timeline", {"id": store["gone"]}),
        }
        return out

    out = _serve(env, body)
    s1, s2, s3, s4 = (store[k] for k in ("s1", "s2", "s3", "s4"))

    def ids(payload: dict[str, Any]) -> list[str]:
        return [m["id"] for m in payload["memories"]]

    in_session = out["in_session"]
    assert in_session["within"] == "session" and in_session["session"] == SESSION
    assert in_session["anchor"] == s2 and in_session["project"] == "project:acme/api"
    assert ids(in_session) == [s1, s2, s3]  # one after, as asked; nothing of the project outside it
    assert (in_session["before"], in_session["after"], in_session["count"]) == (1, 1, 3)
    assert [m.get("anchor", False) for m in in_session["memories"]] == [False, True, False]
    assert set(in_session["memories"][0]) == {"id", "title", "date", "category", "tokens"}
    # The project's memories, oldest first; the other project's memory recorded in between is not one.
    assert ids(out["in_project"]) == [store["before"], s1, s2, s3, s4, store["after"]]
    assert ids(out["everything"]) == [s1, store["other"], s2]  # every project's
    # A session by a prefix of its id: its memories (the anchor), and its project's before and after.
    around = out["session"]
    assert around["session"] == SESSION and around["within"] == "project" and around["session_total"] == 4
    assert ids(around) == [store["before"], s1, s2, s3, s4, store["after"]]
    assert [m.get("anchor", False) for m in around["memories"]] == [False, True, True, True, True, False]
    assert ids(out["session_only"]) == [s1, s2, s3, s4]
    # A memory without a session: its project; the forgotten one is not listed.
    assert out["hand_written"]["within"] == "project" and ids(out["hand_written"]) == [s4, store["after"]]
    errors = out["errors"]
    assert errors["neither"] == errors["both"] == "give a memory id or a session, not both and not neither"
    assert errors["foreign session"] == "no session '5e551011-ffff' among your memories"
    assert errors["foreign id"] == f"no memory with id {store['foreign']!r}"
    assert errors["no session"].endswith("was not captured in a session (use within project or all)")
    assert errors["forgotten"] == f"memory {store['gone']} is forgotten (archived)"
