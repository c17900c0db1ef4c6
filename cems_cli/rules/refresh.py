"""Rebuild the local rules snapshot from the database (after every rule change, and on demand)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from cems_cli.rules.model import Rule
from cems_cli.rules.snapshot import write_snapshot


def rules_from_rows(rows) -> list[Rule]:
    from cems_cli.text.redact import sanitize_field

    return [
        Rule(
            id=r.id,
            tool=r.tool,
            pattern=r.pattern,
            action=r.action,
            # Rows stored before reasons were redacted must not reach the snapshot file or a shared copy raw.
            reason=sanitize_field(r.reason) or "",
            field=r.field,
            regex=r.regex,
            project=r.project,
            scope=r.scope,
            user_id=r.user_id,
            team_id=r.team_id,
            created_at=r.created_at.isoformat(timespec="seconds"),
        )
        for r in rows
    ]


def write_rules_snapshot(conn, identity, home: Path) -> list[Rule]:
    from cems_cli.paths import rules_snapshot_path
    from cems_cli.store.rules import visible_rules

    rules = rules_from_rows(visible_rules(conn, identity))
    write_snapshot(rules, rules_snapshot_path(home))
    return rules


def refresh_snapshot() -> int:
    """Called by the PreToolUse hook when the snapshot is missing or corrupt; returns the rule count."""
    from cems_cli.config import get_settings
    from cems_cli.store.db import connect
    from cems_cli.store.memories import Identity

    settings = get_settings()
    with contextlib.closing(connect(settings, check_dimension=False)) as conn:
        identity = Identity(settings.user, settings.team)
        if settings.database_url:
            from cems_cli.store.teams import session

            found = session(conn)
            if found.restricted:  # a team server: the database says who this is (CEMS_USER is not asked)
                identity = Identity(found.user, settings.team if settings.team in found.teams else None)
        return len(write_rules_snapshot(conn, identity, settings.home))
