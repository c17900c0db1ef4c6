"""One `patterns` memory per project and kind: the commands its tests (lint, build, installs…) run with.

A project runs its tests many ways over months (`npm run test:e2e`, `npm run test:e2e -- --reporter=line`,
`cd frontend && npm test`, …). A memory for each (58 in one project of the session sets recorded by others)
crowded every question about tests, and the question found one variant among them. Instead a kind has one
memory, its roll: "In project api the tests run with `pytest` or `make test`.", its commands in the order
they were first seen. A command that only adds options to one the roll names is that command (`npm run
test:e2e -- --reporter=line` is `npm run test:e2e`: the shorter is kept); one that adds an argument is
another (`pip install -e .`, `pytest tests/unit`). Past ROLL_ITEMS (HOT_FILE_ITEMS) the oldest leaves.

Both triggers store through `store_in_roll`: the capture worker (tool events) and the capture engine (the
commands a transcript's turn ran). The roll is read and rewritten under a lock on its tag, so two writers
cannot each drop the other's command.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from typing import TYPE_CHECKING

from cems_cli.capture.tool_patterns import project_label, roll_text

if TYPE_CHECKING:
    from cems_cli.engine.service import MemoryService

# How many items a roll names, the oldest leaving first past it. Commands: a year of one busy project
# named 25 distinct test commands, and one that left was the answer to "how do I run the agent's
# integration tests?". Files that keep changing are hints, and their absolute paths are long.
ROLL_ITEMS = 30
HOT_FILE_ITEMS = 8
# An item as roll_text writes it: a code span, then an install's package manager.
_ITEM = re.compile(r"`[^`\n]+`(?: \([\w.+ -]+\))?")


def roll_tag(project: str, kind: str) -> str:
    return "roll:" + hashlib.blake2b(f"{project}\n{kind}".encode(), digest_size=8).hexdigest()


def items_of(text: str) -> list[str]:
    return _ITEM.findall(text)


def _command(item: str) -> str:
    return item.split("`")[1] if item.count("`") >= 2 else item


def _more_options(longer: str, shorter: str) -> bool:
    """`longer` is `shorter` with options added: every word it adds is a flag (`--reporter=line`, `-x`,
    `--`). An added argument makes another command: `pip install -e .` is not `pip install`, nor is
    `pytest tests/unit` `pytest`."""
    words = iter(longer.split())
    added: list[str] = []
    for word in shorter.split():
        for candidate in words:
            if candidate == word:
                break
            added.append(candidate)
        else:
            return False  # a word of `shorter` is missing from `longer`, or out of order
    added.extend(words)
    return bool(added) and all(word.startswith("-") for word in added)


def with_item(items: list[str], item: str, limit: int = ROLL_ITEMS) -> list[str] | None:
    """`items` with `item` added (None: the roll names it already). A command named with options added
    is that command; commands the roll names with options added give their place to the plain one."""
    command = _command(item)
    longer: list[int] = []
    for index, known in enumerate(items):
        other = _command(known)
        if known == item or other == command or _more_options(command, other):
            return None
        if _more_options(other, command):
            longer.append(index)
    if longer:
        kept = [known for index, known in enumerate(items) if index not in longer[1:]]
        kept[longer[0]] = item
        return kept
    return [*items, item][-limit:]


def store_in_roll(service: MemoryService, *, project: str, kind: str, item: str, source: str,
                  source_ref: str | None, tags: list[str], created_at: datetime | None,
                  title: str | None = None) -> tuple[str | None, bool]:
    """Add `item` to the project's roll of `kind`: (memory id, created); (None, False) when nothing is left
    of the text once private parts are removed. Call inside the caller's transaction."""
    from cems_cli.errors import UserError
    from cems_cli.store import memories
    from cems_cli.text.redact import redact_secrets

    conn = service.conn
    tag = roll_tag(project, kind)
    with conn.transaction():
        # Held to the end of the caller's transaction: the read, the merge and the write are one step.
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (tag,))
        existing = memories.find_live_tagged(conn, service.identity, tag)
        limit = HOT_FILE_ITEMS if kind == "hot_file" else ROLL_ITEMS
        # The roll's items are read back as stored, secrets redacted: compared as such, a command holding a
        # token is named once, not once more each time it runs.
        item = redact_secrets(item)
        items = with_item(items_of(existing.content) if existing else [], item, limit)
        if existing is not None and items is None:
            return existing.id, False
        text = roll_text(project_label(project), kind, items or [item])
        try:
            memory = service.prepare(text, category="patterns", tags=[*tags, tag], title=title,
                                     project=source_ref, source=source, created_at=created_at)
        except UserError:  # nothing left after redaction
            return None, False
        if existing is None:
            return service.store(memory)
        if service.replace(existing.id, memory):
            memories.keep_latest_evidence(conn, existing.id, memory, service.identity)
        return existing.id, False
