"""CEMS_MAX_MEMORY_BYTES holds on every path into MemoryService, not only the CLI's: what a person asked to
store is refused with a one-line reason, what capture (Stop hook worker, observer, tool patterns) derived is
cut to the limit and stored, and nothing is ever embedded for minutes."""

from __future__ import annotations

import time

import pytest

from cems_cli.engine.service import MemoryService, UserError
from cems_cli.text.normalize import TRUNCATED_MARK

LIMIT = 16 * 1024
LONG = "The deploy pipeline waits for the canary before the rollout. " * 600  # ~37 KB


@pytest.fixture
def svc(env):
    from cems_cli.config import load_settings

    with MemoryService(load_settings()) as service:
        yield service


def _count(svc: MemoryService) -> int:
    row = svc.conn.execute("SELECT count(*) FROM memory_documents WHERE user_id = %s", (svc.settings.user,))
    return row.fetchone()[0]


@pytest.mark.parametrize("source", ["manual", "import", "rule", None])
def test_an_explicit_write_over_the_limit_is_refused_before_any_work(svc, source):
    started = time.monotonic()
    with pytest.raises(UserError, match="over the limit of 16,384 .*CEMS_MAX_MEMORY_BYTES"):
        svc.remember(LONG, source=source)
    assert time.monotonic() - started < 1  # refused, not embedded
    assert _count(svc) == 0


@pytest.mark.parametrize("source", ["session", "observer", "tool"])
def test_every_capture_source_is_cut_to_the_limit(svc, source):
    memory = svc.prepare(LONG, category="context", source=source)
    assert len(memory.content.encode("utf-8")) <= LIMIT
    assert memory.content.endswith(TRUNCATED_MARK) and memory.content.startswith("The deploy pipeline")


def test_a_captured_memory_over_the_limit_is_stored_cut_in_seconds(svc):
    started = time.monotonic()
    memory_id, created = svc.remember(LONG, category="context", source="observer")
    assert created
    assert time.monotonic() - started < 30  # 16 KiB of prose embeds in seconds, not minutes
    content = svc.get(memory_id).content
    assert len(content.encode("utf-8")) <= LIMIT and content.endswith(TRUNCATED_MARK)


def test_a_captured_update_over_the_limit_is_cut_too(env, monkeypatch):
    """The session record the capture engine rewrites as the session goes on (MemoryService.replace)."""
    from cems_cli.config import load_settings

    monkeypatch.setenv("CEMS_MAX_MEMORY_BYTES", "2048")  # small: the point is the path, not the size
    with MemoryService(load_settings()) as svc:
        memory_id, _ = svc.remember("Session 1: started the migration.", category="context", source="session")
        assert svc.replace(memory_id, svc.prepare(LONG, category="context", source="session"))
        assert len(svc.get(memory_id).content.encode("utf-8")) <= 2048


def test_a_secret_at_the_cut_is_redacted_before_the_cut(svc):
    """Redaction runs on the whole text and the cut comes after: a key straddling the cut is not left
    half-visible (the head of a key no longer matches the pattern that would have caught the whole)."""
    key = "AKIAZ3MPLQ7RTVXW4Y2K"
    cut = LIMIT - len(TRUNCATED_MARK.encode("utf-8"))
    text = "x" * (cut - 8) + " " + key + " and more text after the key " * 10
    memory = svc.prepare(text, category="context", source="observer")
    assert len(memory.content.encode("utf-8")) <= LIMIT
    assert "AKIA" not in memory.content


def test_the_limit_follows_the_setting(env, monkeypatch):
    from cems_cli.config import load_settings

    monkeypatch.setenv("CEMS_MAX_MEMORY_BYTES", "2048")
    with MemoryService(load_settings()) as small:
        with pytest.raises(UserError, match="over the limit of 2,048"):
            small.prepare("word " * 500)
        assert len(small.prepare("word " * 500, source="session").content.encode()) <= 2048
        assert small.prepare("word " * 400).content  # 2,000 bytes: under the limit, stored as given


def test_captured_text_is_stored_without_terminal_control_and_written_text_exactly(svc):
    """A test runner's colours in captured output carry no meaning; what a person wrote is kept as written
    (every front end prints it inert)."""
    coloured = "Deploy \x1b]0;title\x07\x1b[31mfailed\x1b[0m on staging"
    captured = svc.prepare(coloured, category="context", source="observer", title="\x1b[1mDeploy\x1b[0m")
    assert (captured.content, captured.title) == ("Deploy failed on staging", "Deploy")
    assert svc.prepare(coloured, category="context").content == coloured
