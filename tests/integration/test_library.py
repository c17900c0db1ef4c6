"""`import cems`: the library every front end goes through, on the real embedded PostgreSQL."""

from __future__ import annotations

import pytest

import cems


@pytest.fixture
def memory(env):
    with cems.open() as opened:
        yield opened


def test_open_takes_explicit_settings_over_the_environment(env, tmp_path):
    opened = cems.open(user="someone-else", project="project:acme/web")
    try:
        assert opened.settings.user == "someone-else"
        assert opened.current_project() == "project:acme/web"
        assert opened.settings.home == cems.open().settings.home  # the rest from the environment
    finally:
        opened.close()


@pytest.mark.real_model  # "which package manager" finds the pnpm preference by meaning
def test_remember_search_get_list_and_forget(memory):
    first = memory.remember("In this repo we use pnpm, never npm", category="preferences")
    assert isinstance(first, cems.Remembered) and first.created
    assert memory.remember("In this repo we use pnpm, never npm", category="preferences") == (first.id, False)
    memory.remember("Deploys run through the pipeline on main.", category="patterns")

    [best, *_] = memory.search("which package manager")
    assert isinstance(best, cems.SearchResult)
    assert (best.id, best.category) == (first.id, "preferences")
    assert best.source == "manual" and best.citation == "written by hand (project acme/api)"
    assert best.to_json()["citation"] == best.citation

    record = memory.get(first.id[:8])
    assert isinstance(record, cems.MemoryRecord) and record.id == first.id
    assert {r.id for r in memory.list_memories(category="preferences")} == {first.id}

    assert memory.forget(first.id[:8]) == [first.id]
    assert [r.id for r in memory.search("which package manager")] != [first.id]
    # Archived: kept for its grace period, not live.
    assert first.id not in {r.id for r in memory.list_memories()}


def test_bad_input_raises_user_error_and_stores_nothing(memory):
    with pytest.raises(cems.UserError, match="search query is empty"):
        memory.search("   ")
    with pytest.raises(cems.UserError, match="category"):
        memory.remember("x y z", category="nonsense")
    with pytest.raises(cems.UserError):
        memory.forget(["0000dead", "ffffbeef"])
    assert memory.status().total == 0


def test_pin_and_unpin(memory):
    remembered = memory.remember("Always run `make check` before pushing.", category="patterns")
    assert memory.pin(remembered.id, reason="team convention", category="convention") == remembered.id
    assert memory.get(remembered.id).pinned
    memory.unpin(remembered.id)
    assert not memory.get(remembered.id).pinned


def test_recall_injects_few_clearly_relevant_memories_and_profile(memory):
    memory.remember("In this repo we use pnpm, never npm", category="preferences", project="project:acme/api")
    for n in range(6):
        memory.remember(f"Unrelated note number {n} about the coffee machine.", category="general")
    recalled = memory.recall("which package manager should I use?", project="project:acme/api")
    assert [r.content for r in recalled][:1] == ["In this repo we use pnpm, never npm"]
    assert len(recalled) <= 3
    assert memory.recall("xyzzy plugh frobnicate") == []
    assert "pnpm" in memory.profile("project:acme/api")


def test_rules_add_list_test_share_and_remove(memory, monkeypatch):
    from cems_cli.rules.model import make_rule

    rule = make_rule(pattern="git push --force*", tool="Bash", action="block", reason="shared history",
                     user_id=memory.settings.user)
    [(stored, created)] = memory.rules.add([rule])
    assert created and stored.id
    assert [r.id for r in memory.rules.list_rules()] == [stored.id]
    decision = memory.rules.test("Bash", {"command": "git push -f origin main"})
    assert decision is not None and decision.action == "block" and decision.rule.id == stored.id
    assert memory.rules.test("Bash", {"command": "git status"}) is None

    shared = memory.share(stored.id, team="red")  # a rule is shared as a rule: it binds the team
    assert shared.created
    as_team = memory.for_identity(memory.settings.user, "red")
    assert any(r.scope == "shared" for r in as_team.rules.list_rules())

    assert memory.rules.remove(stored.id[:8]) == stored.id


def test_status_maintain_export_and_import(memory, env):
    memory.remember("The session cache lives in Redis.", category="decisions")
    status = memory.status()
    assert (status.user, status.total) == (memory.settings.user, 1)
    assert status.to_json()["counts"] == [{"scope": "personal", "category": "decisions", "count": 1}]
    report = memory.maintain(dry_run=True)
    assert report.to_json()["dry_run"] is True
    # What maintenance (or forgetting) archived, the library brings back; an unknown id is a UserError.
    [forgotten] = memory.forget(memory.list_memories()[0].id)
    restored = memory.restore(forgotten[:8])
    assert (restored.id, restored.merged_into, restored.undone) == (forgotten, None, [])
    assert [r.id for r in memory.list_memories()] == [forgotten]
    with pytest.raises(cems.UserError, match="no archived memory of yours"):
        memory.restore("0123abcd")

    lines = [line.encode() for line in memory.export_jsonl()]
    assert len(lines) == 1
    other = memory.for_identity(memory.settings.user + "-copy")
    imported = other.import_jsonl(lines)
    assert imported.created == 1
    assert [r.content for r in other.list_memories()] == ["The session cache lives in Redis."]


@pytest.mark.real_model  # the README's search finds by meaning
def test_the_readme_example_runs(env, capsys):
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    example = readme.split("```python\n", 1)[1].split("```", 1)[0]
    assert "cems.open()" in example
    exec(compile(example, "README.md", "exec"), {})  # noqa: S102 - the documented example, run as written
    assert "In this repo we use pnpm, never npm" in capsys.readouterr().out


def test_open_keeps_the_callers_umask_and_makes_its_files_owner_only(env, tmp_path):
    """A program using the library keeps its umask (022 here): the CLI's private umask is not set, so the
    data folder and every file CEMS makes in it carry owner-only modes of their own."""
    import os
    import stat

    from cems_cli.store.embedded import stop_server

    home = tmp_path / "library-home"
    previous = os.umask(0o022)
    try:
        with cems.open(home=home) as opened:
            opened.remember("The library keeps its own files private.")
            assert opened.search("private files")
        assert os.umask(0o022) == 0o022  # the caller's umask, unchanged
    finally:
        os.umask(previous)
        stop_server(home / "pg")
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    opened_up = []
    for root, dirs, files in os.walk(home):  # not into the cluster's own folder (PostgreSQL's modes)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d)) and d != "pg"]
        for name in [*dirs, *files]:
            path = os.path.join(root, name)
            if not os.path.islink(path) and os.lstat(path).st_mode & 0o077:
                opened_up.append(f"{oct(stat.S_IMODE(os.lstat(path).st_mode))} {path}")
    assert opened_up == []
