"""Summaries of groups of memories (RAPTOR) against the real embedded PostgreSQL: made by maintenance, kept
while their memories stay, gone with any of them, answered first to overview questions; by the LLM
through the openai client when one is configured, extractive when it fails."""

from __future__ import annotations

import json

import pytest

PROJECT = "project:acme/api"
# With the local model: the two session-cache texts are 0.75 alike, the two invoice texts 0.88; every
# other pair below 0.4. So two groups, two memories left alone.
REDIS_A = "We use Redis for the session cache of the admin app."
REDIS_B = "The session cache in Redis keeps admin sessions for 30 minutes."
INVOICE_A = "Invoice PDFs are rendered with WeasyPrint in the billing worker."
INVOICE_B = "The billing worker renders invoice PDFs with WeasyPrint and needs Pango."
ALONE = ("Memcached was dropped as the session cache because it evicted admin sessions.",
         "Use tabs for indentation in the Makefile.")


@pytest.fixture
def svc(env):
    from cems_cli.config import load_settings
    from cems_cli.engine.service import MemoryService

    with MemoryService(load_settings()) as service:
        yield service


@pytest.fixture
def memories(svc) -> dict[str, str]:
    ids = {}
    for text in (REDIS_A, REDIS_B, INVOICE_A, INVOICE_B, *ALONE):
        ids[text], created = svc.remember(text, project=PROJECT)
        assert created
    return ids


def ok(cli, *args: str, extra_env: dict[str, str] | None = None):
    result = cli(*args, "--json", extra_env=extra_env)
    assert result.code == 0, result.stderr
    return result.json()


def listed(cli) -> list[dict]:
    return ok(cli, "summaries")["summaries"]


def member_ids(svc, summary_id: str) -> set[str]:
    row = svc.conn.execute("SELECT members FROM memory_summaries WHERE id = %s", (summary_id,)).fetchone()
    return {str(m) for m in row[0]} if row else set()


def test_maintenance_summarises_each_group_and_the_project_and_keeps_what_did_not_change(cli, svc, memories):
    report = ok(cli, "maintain")["summaries"]
    assert report == {"projects": 1, "groups": 2, "overviews": 1, "written": 3, "deleted": 0, "by_llm": 0,
                      "skipped": 0}
    found = listed(cli)
    assert [(s["project"], s["level"], s["members"], s["method"]) for s in found] == [
        (PROJECT, 2, 4, "extractive"), (PROJECT, 1, 2, "extractive"), (PROJECT, 1, 2, "extractive")]
    groups = {frozenset(member_ids(svc, s["id"])) for s in found if s["level"] == 1}
    assert groups == {frozenset({memories[REDIS_A], memories[REDIS_B]}),
                      frozenset({memories[INVOICE_A], memories[INVOICE_B]})}
    redis = next(s for s in found if s["level"] == 1 and "Redis" in s["content"])
    assert redis["content"].startswith("acme/api — ") and "(2 memories, " in redis["content"]
    assert "session cache" in redis["content"] and "redis" in redis["title"]
    overview = found[0]
    assert overview["content"].startswith("acme/api: 6 memories in 2 topics, ")
    assert redis["title"] in overview["content"]

    again = ok(cli, "maintain")["summaries"]
    assert (again["written"], again["deleted"], again["groups"]) == (0, 0, 2)
    assert [s["id"] for s in listed(cli)] == [s["id"] for s in found]
    # A dry run says what it would do and does nothing.
    dry = ok(cli, "maintain", "--dry-run")
    assert dry["dry_run"] is True and dry["summaries"]["written"] == 0


def test_an_overview_question_gets_the_summary_first_and_a_question_of_fact_does_not(cli, svc, memories):
    ok(cli, "summaries", "--rebuild")
    results = ok(cli, "search", "catch me up on the session cache")["results"]
    assert results[0]["category"] == "summary" and "Redis" in results[0]["content"]
    assert results[0]["citation"] == "summary of memories (project acme/api)"
    assert results[0]["tags"] == ["summary:level1"]
    assert any(r["id"] == memories[REDIS_A] for r in results[1:])  # the memories still follow

    whole = ok(cli, "search", "give me an overview of the project", "--all")["results"]
    assert whole[0]["category"] == "summary" and whole[0]["tags"] == ["summary:level2"]

    fact = ok(cli, "search", "What store backs the session cache?")["results"]
    assert fact and all(r["category"] != "summary" for r in fact)
    nothing = ok(cli, "search", "overview of xyzzy plugh frobnicate")["results"]
    assert all(r["category"] != "summary" for r in nothing)
    # A time the question names keeps only summaries of memories from then.
    old = ok(cli, "search", "what have we done on the session cache in March 2019?")["results"]
    assert all(r["category"] != "summary" for r in old)


@pytest.mark.real_model  # judges ranking: the overview summary first
def test_the_prompt_hook_injects_the_overview(svc, memories, env):
    from cems_cli.engine.recall import format_recall
    from cems_cli.engine.summaries import build_summaries

    build_summaries(svc.conn, svc.settings)
    results = svc.recall("what have we done on invoices so far?", svc.recall_options(current_project=PROJECT))
    block = format_recall([r.to_json() for r in results], PROJECT)
    first = block.splitlines()[2]
    assert first.startswith("- [") and "(summary, " in first and "summary of memories)" in first
    assert "WeasyPrint" in first


def test_a_forgotten_or_archived_memory_takes_its_summaries_with_it(cli, svc, memories):
    ok(cli, "maintain")
    invoice = next(s for s in listed(cli) if s["level"] == 1 and "WeasyPrint" in s["content"])
    ok(cli, "forget", memories[REDIS_A])
    left = listed(cli)
    assert [s["id"] for s in left] == [invoice["id"]]  # the Redis group and the project's overview went
    svc.conn.execute("UPDATE memory_documents SET archived = true WHERE id = %s", (memories[INVOICE_B],))
    assert listed(cli) == []
    ok(cli, "maintain")
    assert listed(cli) == []  # one Redis memory left: no group of two
    svc.remember("Admin sessions live in the Redis session cache.", project=PROJECT)
    ok(cli, "maintain")
    redis = [s for s in listed(cli) if "Redis" in s["content"]]
    assert len(redis) == 1
    # Purged, not only archived: the row's deletion does it too, and no row holds its text any more.
    ok(cli, "forget", "--purge", memories[REDIS_B])
    assert [s for s in listed(cli) if "Redis" in s["content"]] == []
    assert svc.conn.execute("SELECT count(*) FROM memory_summaries WHERE user_id = %s AND content LIKE %s",
                            (svc.settings.user, f"%{REDIS_B[:30]}%")).fetchone()[0] == 0


def test_another_users_memories_never_enter_my_summaries(cli, svc, memories):
    other = svc.for_identity(f"other-{svc.settings.user}", None, None)
    other.remember("We use Redis for the session cache of the admin app, said someone else.", project=PROJECT)
    ok(cli, "maintain")
    mine = set(memories.values())
    for summary in listed(cli):
        assert member_ids(svc, summary["id"]) <= mine


def test_an_llm_writes_the_summaries_and_a_failing_one_leaves_them_extractive(cli, memories, fake_openai):
    llm = {"CEMS_LLM_BASE_URL": fake_openai.base_url, "CEMS_LLM_API_KEY": "sk-test", "CEMS_LLM_MODEL": "fake",
           "CEMS_LLM_TIMEOUT": "3"}

    def answer(body: dict) -> str:
        prompt = body["messages"][1]["content"]
        if "Topic summaries" in prompt:
            return json.dumps({"title": "API overview", "summary": "Sessions in Redis, invoices in PDF."})
        if "Redis" in prompt:
            return json.dumps({"title": "Session cache on Redis", "summary": "Admin sessions live in Redis."})
        return "{}"  # unusable: that group stays extractive

    fake_openai.responder = answer
    report = ok(cli, "maintain", extra_env=llm)["summaries"]
    assert (report["written"], report["by_llm"]) == (3, 2)
    by_title = {s["title"]: s for s in listed(cli)}
    redis = by_title["Session cache on Redis"]
    assert redis["method"] == "llm" and redis["content"].startswith("acme/api — ")
    day = redis["period_start"][:10]
    assert redis["content"].endswith(f"(2 memories, {day}): Admin sessions live in Redis.")
    assert by_title["API overview"]["method"] == "llm"
    assert [s["method"] for s in by_title.values()].count("extractive") == 1
    prompts = [r.body["messages"][1]["content"] for r in fake_openai.chat_requests]
    assert any(REDIS_A in p and REDIS_B in p for p in prompts)
    # Unchanged groups are not asked about again.
    asked = len(fake_openai.chat_requests)
    assert ok(cli, "maintain", extra_env=llm)["summaries"]["written"] == 0
    assert len(fake_openai.chat_requests) == asked


def test_summaries_can_be_switched_off(cli, svc, memories):
    off = {"CEMS_SUMMARIES": "false"}
    assert "summaries" not in ok(cli, "maintain", extra_env=off)
    assert listed(cli) == []
    ok(cli, "summaries", "--rebuild")
    results = ok(cli, "search", "catch me up on the session cache", extra_env=off)["results"]
    assert all(r["category"] != "summary" for r in results)


def test_the_summaries_command_lists_filters_and_explains_an_empty_list(cli, memories):
    empty = cli("summaries")
    assert empty.code == 0 and "no summaries yet" in empty.stdout
    rebuilt = cli("summaries", "--rebuild")
    assert rebuilt.code == 0 and "3 were written" in rebuilt.stdout
    assert "2 groups and 1 project summarised" in rebuilt.stdout
    assert len(ok(cli, "summaries", "--project", "acme/api")["summaries"]) == 3
    assert ok(cli, "summaries", "--project", "other")["summaries"] == []
    full = cli("summaries", "--full")
    assert full.code == 0 and "WeasyPrint" in full.stdout and "level 2" in full.stdout


def test_summaries_keep_to_the_scope_the_budget_and_the_confidence_floor(cli, svc, memories):
    from cems_cli.engine.summaries import build_summaries

    build_summaries(svc.conn, svc.settings)
    question = "catch me up on the session cache"
    assert svc.recall(question, svc.recall_options(current_project=PROJECT))[0].category == "summary"
    shared = ok(cli, "search", question, "--scope", "shared")["results"]
    assert all(r["category"] != "summary" for r in shared)
    # A summary larger than the whole budget is left out; the memories that fit still come.
    small = svc.recall(question, svc.recall_options(current_project=PROJECT, token_budget=25))
    assert small and all(r.category != "summary" for r in small)
    sure = svc.recall(question, svc.recall_options(current_project=PROJECT, min_confidence=0.99))
    assert all(r.category != "summary" for r in sure)


def test_reindexing_drops_the_summaries_and_takes_the_new_dimension(lone_store):
    """`cems reindex` with another model: summaries are embedded too, so they go (maintenance makes them
    again) and their column takes the new dimension."""
    import numpy as np

    from cems_cli.engine.summaries import build_summaries
    from cems_cli.store.reindex import reindex

    lone = lone_store
    for text in (REDIS_A, REDIS_B):
        lone.remember(text, project=PROJECT)
    assert build_summaries(lone.conn, lone.settings).written > 0

    class Small:
        model, dim = "small-test", 8

        def embed(self, texts):
            return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)

    reindex(lone.conn, Small(), "small-test")
    assert lone.conn.execute("SELECT count(*) FROM memory_summaries").fetchone()[0] == 0
    column = lone.conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                               "WHERE attrelid = 'memory_summaries'::regclass AND attname = 'embedding'")
    assert column.fetchone()[0] == "vector(8)"


def test_a_memory_forgotten_while_its_summary_is_made_leaves_no_summary(svc, memories, monkeypatch):
    """Summaries are made outside the write's transaction (an LLM may take its time): a memory archived in
    between leaves its group unwritten, and the others are written."""
    import cems_cli.engine.summaries as summaries

    embed = summaries._embed

    def forget_then_embed(made, embedder):
        svc.conn.execute("UPDATE memory_documents SET archived = true WHERE id = %s", (memories[REDIS_A],))
        return embed(made, embedder)

    monkeypatch.setattr(summaries, "_embed", forget_then_embed)
    report = summaries.build_summaries(svc.conn, svc.settings)
    # The Redis group and the project's overview held the archived memory: neither is written.
    assert (report.skipped, report.written) == (2, 1)
    rows = svc.conn.execute("SELECT members FROM memory_summaries WHERE user_id = %s",
                            (svc.settings.user,)).fetchall()
    assert len(rows) == 1 and memories[REDIS_A] not in {str(m) for m in rows[0][0]}
