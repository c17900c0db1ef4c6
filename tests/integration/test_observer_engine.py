"""The observer engine on real files and the real database: deltas, partial lines, garbage, truncation,
replacement, several roots, vanished files, the feedback-loop rule, redaction, concurrent observers."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from cems_cli.capture.observations import NO_OBSERVE_MARKER
from cems_cli.capture.observer import Observer
from cems_cli.capture.observer_settings import ObserverSettings
from tests.integration.test_observer_synth import SessionWriter, dump, one_pass, write_session
from tests.support.paths import SAMPLE_SESSION, SAMPLE_TRANSCRIPT


@pytest.fixture
def svc(env):
    from cems_cli.config import load_settings
    from cems_cli.engine.service import MemoryService

    with MemoryService(load_settings()) as service:
        yield service


def make_observer(svc, *roots: Path, idle: float = 0, **options) -> Observer:
    settings = ObserverSettings(
        observer_paths=",".join(str(r) for r in roots), observer_idle_seconds=idle, **options
    )
    return Observer(svc, settings)


def stored(svc) -> list[tuple[str, str]]:
    rows = svc.conn.execute(
        "SELECT content, category FROM memory_documents WHERE user_id = %s AND source = 'observer' "
        "AND NOT archived ORDER BY content, category",
        (svc.settings.user,),
    ).fetchall()
    return sorted((r[0], r[1]) for r in rows)


def file_row(svc, path: Path) -> tuple[int, dict | None]:
    row = svc.conn.execute(
        "SELECT read_offset, pending FROM observer_files WHERE user_id = %s AND path = %s",
        (svc.settings.user, str(path)),
    ).fetchone()
    return (int(row[0]), row[1]) if row else (0, None)


def make_idle(path: Path) -> None:
    old = time.time() - 3600
    os.utime(path, (old, old))


def test_sample_transcript_becomes_a_searchable_context_memory(svc, tmp_path):
    root = tmp_path / "projects"
    path = root / "-home-priya-invoice-worker" / f"{SAMPLE_SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    shutil.copy(SAMPLE_TRANSCRIPT, path)
    report = make_observer(svc, root).sync()
    assert report.errors == []
    assert (report.lines, report.malformed, report.observations) == (6, 0, 1)
    row = svc.conn.execute(
        "SELECT content, category, tags, source, source_ref, created_at FROM memory_documents "
        "WHERE user_id = %s",
        (svc.settings.user,),
    ).fetchone()
    content, category, tags, source, source_ref, created_at = row
    # Provenance: the project, then the session and the transcript line where it started.
    assert (category, source) == ("context", "observer")
    assert source_ref == f"project:invoice-worker:session:{SAMPLE_SESSION}:L1"
    assert f"session:{SAMPLE_SESSION}" in tags and "branch:fix/webhook-timeout" in tags
    for fact in (
        "fail with ReadTimeout",
        "src/invoice_worker/webhooks.py",
        'rg -n "timeout="',
        "fix/webhook-timeout",
    ):
        assert fact in content
    assert created_at.isoformat().startswith("2026-04-14T16:02:24")  # the transcript's last line
    question = "what did we change when webhook deliveries timed out?"
    results = svc.search(question, svc.search_options(track_access=False))
    assert results and results[0].content == content


def test_appends_in_arbitrary_pieces_give_the_same_memories_as_one_pass(svc, tmp_path):
    root = tmp_path / "projects"
    source = tmp_path / "whole.jsonl"
    write_session(source, "piecewise-session-1", 6, seed=3)
    data = source.read_bytes()
    path = root / "-home-dev-shop-api" / "piecewise-session-1.jsonl"
    path.parent.mkdir(parents=True)
    observer = make_observer(svc, root, idle=300)
    cuts = sorted({0, len(data), *[len(data) * k // 7 + 13 * k for k in range(1, 7)]})
    for start, end in zip(cuts, cuts[1:], strict=False):
        with open(path, "ab") as handle:
            handle.write(data[start:end])
        report = observer.sync()
        assert report.errors == []
        offset, _pending = file_row(svc, path)
        # Only whole lines are consumed: the offset sits just past the last newline written so far.
        assert offset == data.rfind(b"\n", 0, end) + 1
    make_idle(path)
    observer.sync()
    assert stored(svc) == one_pass(source)
    assert file_row(svc, path) == (len(data), None)


def test_a_batch_folds_a_sessions_turns_and_stores_its_record_once(svc, tmp_path):
    """A catching-up observer embeds a session's context memory once per committed batch, not once per
    turn, and stores what a run committing one turn at a time stores."""
    root = tmp_path / "projects"
    path = root / "-home-dev-shop-api" / "batched-session-1.jsonl"
    write_session(path, "batched-session-1", 12, seed=5)
    make_idle(path)
    batched = make_observer(svc, root).sync()
    assert batched.errors == [] and batched.chunks == 12
    # Eleven turns close in the read's one batch (the record stored once); the last closes when the session
    # is found idle, a second commit, which updates it once.
    assert batched.sessions_updated == 1
    whole = stored(svc)
    assert whole == one_pass(path)
    svc.conn.execute("DELETE FROM memory_documents WHERE user_id = %s", (svc.settings.user,))
    svc.conn.execute("DELETE FROM observer_files WHERE user_id = %s", (svc.settings.user,))
    svc.conn.execute("DELETE FROM capture_sessions WHERE user_id = %s", (svc.settings.user,))
    one_by_one = make_observer(svc, root, observer_commit_chunks=1).sync()
    assert one_by_one.errors == [] and one_by_one.sessions_updated == 11
    assert stored(svc) == whole


def test_garbage_lines_are_skipped_counted_and_never_stop_reading(svc, tmp_path):
    root = tmp_path / "projects"
    clean = tmp_path / "clean.jsonl"
    write_session(clean, "garbage-session-1", 3, seed=5)
    lines = clean.read_bytes().splitlines(keepends=True)
    garbage = [
        b"{not json\n",
        b"[1, 2, 3]\n",
        b"\xff\xfe\x00 binary junk\n",
        b"null\n",
        b'{"type": "user", "message": ' + b'"x' * 20000 + b'"}\n',
    ]  # longer than the 16 KiB line cap
    mixed = []
    for index, line in enumerate(lines):
        mixed.append(line)
        if index % 5 == 2 and garbage:
            mixed.append(garbage.pop())
    assert not garbage
    path = root / "p" / "garbage-session-1.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(mixed) + b"\n\n")  # blank lines are not errors
    observer = make_observer(svc, root, observer_max_line_bytes=16384)
    report = observer.sync()
    assert report.errors == [] and report.malformed == 5
    assert stored(svc) == one_pass(clean)
    assert observer.status()["malformed_lines"] == 5


def test_truncated_file_is_read_again_without_storing_anything_twice(svc, tmp_path):
    root = tmp_path / "projects"
    path = root / "p" / "trunc-session-1.jsonl"
    write_session(path, "trunc-session-1", 3, seed=11)
    original = path.read_bytes()
    observer = make_observer(svc, root, idle=300)
    observer.sync()
    make_idle(path)
    observer.sync()
    before = stored(svc)
    assert before == one_pass(path)
    # Cut back to a prefix (mid-line), then the same content written again: nothing new is stored.
    with open(path, "r+b") as handle:
        handle.truncate(len(original) // 3)
    cut = observer.sync()
    assert cut.resets == 1 and cut.errors == []
    assert file_row(svc, path)[0] == original.rfind(b"\n", 0, len(original) // 3) + 1
    path.write_bytes(original)
    grown = observer.sync()
    assert grown.resets == 0 and grown.observations == 0 and grown.errors == []
    make_idle(path)
    observer.sync()
    assert stored(svc) == before
    # Emptied and reused by another session: that one is stored, the old memories stay.
    path.write_bytes(b"")
    observer.sync()
    write_session(path, "other-session-9", 2, seed=12)
    make_idle(path)
    assert observer.sync().resets == 0  # offset was already back at 0
    assert set(stored(svc)) == set(before) | set(one_pass(path))
    assert len(stored(svc)) == len(set(before) | set(one_pass(path)))  # shared patterns are stored once


def test_content_replaced_in_place_at_the_same_size_is_detected_by_fingerprint(svc, tmp_path):
    root = tmp_path / "projects"
    path = root / "p" / "session.jsonl"
    write_session(path, "aaaaaaaa-same-size", 2, seed=21)
    observer = make_observer(svc, root)
    observer.sync()
    before = stored(svc)
    replacement = path.read_bytes().replace(b"aaaaaaaa-same-size", b"bbbbbbbb-same-size")
    with open(path, "r+b") as handle:  # same inode, same size, different bytes
        handle.write(replacement)
    report = observer.sync()
    assert report.resets == 1
    assert set(stored(svc)) == set(before) | set(one_pass(path))
    assert any("session bbbbbbbb" in text for text, _ in stored(svc))


def test_a_copy_with_more_lines_under_a_new_inode_continues_from_the_offset(svc, tmp_path):
    root = tmp_path / "projects"
    path = root / "p" / "copied-session.jsonl"
    writer = SessionWriter("copied-session", seed=31)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(dump(r) for _ in range(2) for r in writer.turn_lines()))
    observer = make_observer(svc, root, idle=300)
    observer.sync()
    offset, _ = file_row(svc, path)
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(path.read_bytes() + b"".join(dump(r) for r in writer.turn_lines()))
    os.replace(copy, path)  # e.g. a sync tool writing the file anew
    report = observer.sync()
    assert report.resets == 0 and report.bytes_read == path.stat().st_size - offset


def test_two_roots_several_files_and_new_files(svc, tmp_path, monkeypatch):
    first, second = tmp_path / "claude-a" / "projects", tmp_path / "claude-b" / "projects"
    write_session(first / "-home-dev-a" / "s1.jsonl", "root-a-session", 2, seed=41)
    write_session(second / "-home-dev-b" / "s2.jsonl", "root-b-session", 2, seed=42, cwd="/home/dev/billing")
    monkeypatch.setenv("CEMS_OBSERVER_PATHS", f"{first}{os.pathsep}{second}")
    settings = ObserverSettings(observer_idle_seconds=0)
    assert settings.roots == [first.resolve(), second.resolve()]
    observer = Observer(svc, settings)
    report = observer.sync()
    assert report.files == 2 and report.errors == []
    projects = {
        r[0]
        for r in svc.conn.execute(
            "SELECT DISTINCT source_ref FROM memory_documents WHERE user_id = %s", (svc.settings.user,)
        )
    }
    assert {ref.split(":session:")[0] for ref in projects} == {"project:shop-api", "project:billing"}
    # A new project folder and session appear under the second root.
    new = second / "-home-dev-c" / "s3.jsonl"
    write_session(new, "root-b-new-session", 1, seed=43)
    report = observer.sync([new])
    # Its pattern is already known from the first root's session: stored once, counted as a duplicate.
    assert report.files == 1 and report.observations + report.duplicates == len(one_pass(new))
    assert observer.status()["files_watched"] == 3
    assert observer.status()["bytes_behind"] == 0


def test_a_vanished_transcript_leaves_its_open_chunk_stored_and_its_row_dropped(svc, tmp_path):
    root = tmp_path / "projects"
    path = root / "p" / "gone-session.jsonl"
    write_session(path, "gone-session", 2, seed=51)
    observer = make_observer(svc, root, idle=300)
    observer.sync()
    assert file_row(svc, path)[1] is not None  # the last request is still open
    expected = one_pass(path)
    assert stored(svc) != expected  # the last turn is not in the session's record yet
    path.unlink()
    report = observer.sync()
    assert report.errors == []
    assert stored(svc) == expected
    assert (
        svc.conn.execute(
            "SELECT count(*) FROM observer_files WHERE user_id = %s", (svc.settings.user,)
        ).fetchone()[0]
        == 0
    )


def test_an_open_request_is_stored_only_once_the_session_is_idle(svc, tmp_path):
    root = tmp_path / "projects"
    path = root / "p" / "idle-session.jsonl"
    write_session(path, "idle-session", 2, seed=61)
    observer = make_observer(svc, root, idle=300)
    observer.sync()
    first_turn_only = stored(svc)
    assert first_turn_only and "Task 2:" not in "".join(t for t, _ in first_turn_only)
    observer.sync()
    assert stored(svc) == first_turn_only  # still within the idle time
    make_idle(path)
    observer.sync()
    assert stored(svc) == one_pass(path)


def test_cems_own_sessions_are_never_observed(svc, tmp_path):
    root = tmp_path / "projects"
    home = svc.settings.home
    write_session(root / "a" / "inside-home.jsonl", "inside-home", 2, seed=71, cwd=str(home / "work"))
    marked = root / "b" / "marked.jsonl"
    writer = SessionWriter("marked-session", seed=72)
    lines = [r for _ in range(2) for r in writer.turn_lines()]
    lines[0]["message"]["content"] = f"{NO_OBSERVE_MARKER}\nExtract memories from this transcript."
    marked.parent.mkdir(parents=True)
    marked.write_bytes(b"".join(dump(r) for r in lines))
    observer = make_observer(svc, root)
    report = observer.sync()
    total = sum(p.stat().st_size for p in root.rglob("*.jsonl"))
    assert report.errors == [] and report.files == 2 and report.bytes_read == total
    assert stored(svc) == []
    assert observer.status()["ignored_files"] == 2


def test_secrets_and_private_blocks_reach_neither_memories_nor_pending_state(svc, tmp_path):
    root = tmp_path / "projects"
    path = root / "p" / "secret-session.jsonl"
    writer = SessionWriter("secret-session", seed=81)
    lines = [r for r in writer.turn_lines()]
    secret = "sk-ant-api03-" + "Q" * 40
    lines[0]["message"]["content"] = (
        f"Deploy with ANTHROPIC_API_KEY={secret} and the staging box "
        "<private>db7.internal.corp password hunter2</private> please"
    )
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(dump(r) for r in lines))
    observer = make_observer(svc, root, idle=300)
    observer.sync()
    _offset, pending = file_row(svc, path)
    everything = json.dumps(pending)
    make_idle(path)
    observer.sync()
    everything += json.dumps(stored(svc))
    assert "Deploy with" in everything and "[REDACTED" in everything
    for leaked in (secret, "db7.internal.corp", "hunter2"):
        assert leaked not in everything


def test_two_observers_on_the_same_files_store_each_chunk_once(svc, tmp_path):
    from cems_cli.config import load_settings
    from cems_cli.engine.service import MemoryService

    root = tmp_path / "projects"
    paths = [root / "p" / f"race-{i}.jsonl" for i in range(2)]
    for i, path in enumerate(paths):
        write_session(path, f"race-session-{i}", 8, seed=90 + i)
    reports = []
    with MemoryService(load_settings()) as other:
        observers = [
            make_observer(svc, root, observer_commit_chunks=1),
            make_observer(other, root, observer_commit_chunks=1),
        ]
        threads = [threading.Thread(target=lambda o=o: reports.append(o.sync())) for o in observers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
    assert all(r.errors == [] for r in reports)
    produced = [item for path in paths for item in one_pass(path, unique=False)]
    expected = sorted(set(produced))  # the two sessions share some learnings: stored once
    # Had both observers stored the same chunk, one would have been told "already stored": a duplicate
    # beyond those the data itself contains.
    assert sum(r.duplicates for r in reports) <= len(produced) - len(expected)
    # A pass that lost a race skips that file until the next pass: never more than the data holds.
    assert sum(r.observations for r in reports) <= len(expected)
    # The loser of a race backs off; whatever it skipped, a later pass finishes.
    make_observer(svc, root).sync()
    assert stored(svc) == expected


def test_a_pass_stopped_between_two_commits_is_resumed_by_the_next(svc, tmp_path):
    root = tmp_path / "projects"
    path = root / "p" / "stopped-session.jsonl"
    write_session(path, "stopped-session", 6, seed=111)
    make_idle(path)
    observer = make_observer(svc, root, idle=300, observer_commit_chunks=1)
    commit = observer._commit

    def commit_then_stop(*args):  # SIGTERM arriving right after the first commit
        commit(*args)
        observer.stop.set()

    observer._commit = commit_then_stop
    observer.sync()
    offset, _pending = file_row(svc, path)
    assert 0 < offset < path.stat().st_size
    # Size and mtime have not changed since the stopped pass looked, yet the rest must still be read.
    make_observer(svc, root, idle=300).sync()
    assert stored(svc) == one_pass(path)
    assert file_row(svc, path) == (path.stat().st_size, None)


def test_an_observer_acting_on_a_stale_read_cannot_flush_an_open_chunk_twice(svc, tmp_path, monkeypatch):
    from cems_cli.store import observer as store

    root = tmp_path / "projects"
    path = root / "p" / "flushed-session.jsonl"
    write_session(path, "flushed-session", 2, seed=121)
    make_idle(path)
    make_observer(svc, root, idle=10**9).sync()  # read to the end; the last request stays open
    stale = store.files_with_pending(svc.conn, svc.settings.user)  # what a second observer read...
    assert len(stale) == 1
    make_observer(svc, root, idle=300).sync()  # ...before the first finalized it (offset unchanged)
    assert stored(svc) == one_pass(path)
    monkeypatch.setattr(store, "files_with_pending", lambda conn, user: stale)
    report = make_observer(svc, root, idle=300).sync()
    assert report.conflicts == 1 and report.duplicates == 0 and report.observations == 0
    assert stored(svc) == one_pass(path)


def test_only_regular_files_inside_the_roots_are_read_never_a_link_or_a_fifo(svc, tmp_path):
    """A repository (or anyone who can write under a watched folder) must not make the observer read and
    store another file: a link named *.jsonl, a linked folder, a file swapped for a link after discovery,
    or a FIFO (which would also hang a plain open)."""
    root, outside = tmp_path / "projects", tmp_path / "elsewhere"
    real = root / "-home-dev-a" / "real.jsonl"
    write_session(real, "inside-session", 1, seed=51)
    write_session(outside / "secret.jsonl", "outside-session", 2, seed=52)
    (root / "-home-dev-a" / "link.jsonl").symlink_to(outside / "secret.jsonl")
    (root / "linked-folder").symlink_to(outside, target_is_directory=True)
    os.mkfifo(root / "-home-dev-a" / "fifo.jsonl")
    observer = make_observer(svc, root)

    def sessions() -> set[str]:
        refs = svc.conn.execute(
            "SELECT source_ref FROM memory_documents WHERE user_id = %s", (svc.settings.user,)
        ).fetchall()
        return {ref.split(":session:")[1].split(":")[0] for (ref,) in refs if ":session:" in (ref or "")}

    def watched() -> set[str]:
        rows = svc.conn.execute("SELECT path FROM observer_files WHERE user_id = %s", (svc.settings.user,))
        return {path for (path,) in rows}

    assert observer.discover() == [real]
    report = observer.sync()
    assert report.errors == [] and report.files == 1
    assert sessions() == {"inside-session"} and watched() == {str(real)}
    # Named one by one (file-change events): still refused.
    events = [root / "-home-dev-a" / "link.jsonl", root / "linked-folder" / "secret.jsonl",
              root / "-home-dev-a" / "fifo.jsonl"]
    report = observer.sync(events)
    assert report.errors == [] and report.files == 0
    assert sessions() == {"inside-session"} and watched() == {str(real)}
    # The transcript swapped for a link to the other file, after it was read: the open file is checked.
    real.unlink()
    real.symlink_to(outside / "secret.jsonl")
    report = observer.sync([real])
    assert report.errors == [] and report.files == 0 and sessions() == {"inside-session"}


def test_both_triggers_build_the_engine_with_one_factory(svc, tmp_path, monkeypatch):
    """The Stop hook's worker and the observer daemon get the same engine from `capture_engine`: the
    observer's settings from CEMS_OBSERVER_*, and the extraction client those settings ask for."""
    from cems_cli.capture import observer, worker
    from cems_cli.config import get_settings

    monkeypatch.setenv("CEMS_OBSERVER_PATHS", str(tmp_path))
    monkeypatch.setenv("CEMS_OBSERVER_LLM", "false")
    built: list[str] = []
    real = observer.capture_engine

    def spy(service, observer_settings=None, **options):
        engine = real(service, observer_settings, **options)
        built.append(engine.source)
        return engine

    monkeypatch.setattr(observer, "capture_engine", spy)
    stop_worker = worker._Worker(get_settings(), None, worker.Summary())  # type: ignore[arg-type]
    try:
        engine = stop_worker.observer
    finally:
        stop_worker.close()
    assert (engine.source, engine.llm, engine.roots) == ("session", None, [tmp_path])
    assert observer.capture_engine(svc).source == "observer"
    assert built == ["session", "observer"]


def test_a_projects_test_commands_from_transcripts_make_one_memory(svc, tmp_path):
    """The capture engine adds a turn's test commands to the project's one roll of them, as the worker
    does with tool events (capture/pattern_rolls.py): variants with options added are the command."""
    root = tmp_path / "projects"
    path = root / "-home-dev-shop-api" / "roll-session-0001.jsonl"
    path.parent.mkdir(parents=True)
    writer = SessionWriter("roll-session-0001", seed=3)
    records = []
    commands = ("npm test", "npm run test:e2e -- --headed", "npm run test:e2e", "npm test")
    for turn, command in enumerate(commands):
        records.append(writer._user(f"Run the tests, round {turn}."))
        records.extend(writer._tool(f"msg_roll_{turn}", "Bash", {"command": command}, "5 passed in 0.5s"))
        records.append(writer._assistant(f"msg_roll_{turn}_end", {"type": "text", "text": "All pass."}))
    path.write_bytes(b"".join(dump(record) for record in records))
    make_idle(path)
    report = make_observer(svc, root).sync()
    assert report.errors == []
    patterns = [text for text, category in stored(svc) if category == "patterns"]
    assert patterns == ["In project shop-api the tests run with `npm test` or `npm run test:e2e`."]


def test_a_command_holding_a_secret_is_named_once_in_its_roll(svc):
    from cems_cli.capture.pattern_rolls import store_in_roll

    token = "sk-ant-api03-" + "a1b2c3d4e5" * 4
    for _ in range(3):  # the command runs again each turn: compared as stored (redacted), it is known
        store_in_roll(svc, project="project:shop-api", kind="test", item=f"`API_KEY={token} npm test`",
                      source="observer", source_ref="project:shop-api", tags=[], created_at=None)
    (content,) = [text for text, category in stored(svc) if category == "patterns"]
    assert token not in content and content.count("npm test") == 1, content
