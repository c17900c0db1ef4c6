"""Adding, listing and removing rules: the rule memory, its spec, and the snapshot, kept in step."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cems_cli.errors import UserError
from cems_cli.rules.model import Rule

if TYPE_CHECKING:
    from cems_cli.engine.service import MemoryService


def rule_text(rule: Rule) -> str:
    """The memory text of a rule: readable, searchable, and unique per distinct rule."""
    qualifiers = [rule.action]
    if rule.regex:
        qualifiers.append("regex")
    if rule.field:
        qualifiers.append(f"field={rule.field}")
    if rule.project:
        qualifiers.append(rule.project)
    text = f"Rule ({', '.join(qualifiers)}) {rule.tool}: {rule.pattern}"
    return f"{text} — {rule.reason}" if rule.reason else text


def add_rules(svc: MemoryService, rules: list[Rule]) -> list[tuple[Rule, bool]]:
    """Store rules (all or nothing) and rewrite the snapshot; returns each rule and whether it is new."""
    from dataclasses import replace

    from cems_cli.rules.refresh import write_rules_snapshot
    from cems_cli.store.rules import insert_rule_spec
    from cems_cli.text.redact import sanitize_field

    # The reason is free text kept in the rule table and the snapshot file: the same privacy rules as any
    # memory text. The pattern is not redacted: it is what the rule matches, and redacting it would change
    # which commands are stopped.
    rules = [replace(rule, reason=sanitize_field(rule.reason) or "") for rule in rules]
    prepared = [
        (
            rule,
            svc.prepare(
                rule_text(rule),
                category="rules",
                scope=rule.scope,
                tags=["rule", rule.tool],
                project=rule.project,
                source="rule",
            ),
        )
        for rule in rules
    ]
    stored: list[tuple[Rule, bool]] = []
    with svc.conn.transaction():
        for rule, memory in prepared:
            document_id, created = svc.store(memory)
            inserted = insert_rule_spec(
                svc.conn,
                document_id,
                tool=rule.tool,
                pattern=rule.pattern,
                field=rule.field,
                action=rule.action,
                reason=rule.reason,
                regex=rule.regex,
                project=rule.project,
                restricted=svc.identity.restricted,
            )
            stored.append((_with_id(rule, document_id, svc), created or inserted))
    write_rules_snapshot(svc.conn, svc.identity, svc.settings.home)
    return stored


def _with_id(rule: Rule, document_id: str, svc: MemoryService) -> Rule:
    from dataclasses import replace

    return replace(
        rule,
        id=document_id,
        user_id=svc.settings.user,
        team_id=svc.settings.team if rule.scope == "shared" else None,
    )


def list_rules(svc: MemoryService, project: str | None = None) -> list[Rule]:
    """The rules in force for this user (refreshing the local snapshot on the way)."""
    from cems_cli.rules.refresh import rules_from_rows, write_rules_snapshot
    from cems_cli.store.rules import visible_rules

    rules = write_rules_snapshot(svc.conn, svc.identity, svc.settings.home)
    if project:
        rules = rules_from_rows(visible_rules(svc.conn, svc.identity, project))
    return rules


def remove_rule(svc: MemoryService, rule_id: str) -> str:
    from cems_cli.rules.refresh import write_rules_snapshot
    from cems_cli.store.rules import rule_owner

    document_id = svc.resolve(rule_id)
    owner = rule_owner(svc.conn, document_id, svc.identity)
    if owner is None:
        raise UserError(f"{rule_id!r} is not a rule")
    if owner != svc.settings.user:
        raise UserError(f"rule {rule_id!r} belongs to {owner}; only its owner can remove it")
    svc.forget_ids([document_id], purge=True, rules=True)  # the one way a rule is removed
    write_rules_snapshot(svc.conn, svc.identity, svc.settings.home)
    return document_id


def share_rule(svc: MemoryService, rule_id: str) -> tuple[str, bool]:
    """A shared copy of one of the user's rules, binding the whole team."""
    from dataclasses import replace

    from cems_cli.rules.refresh import rules_from_rows
    from cems_cli.store.rules import visible_rules

    found = [r for r in rules_from_rows(visible_rules(svc.conn, svc.identity)) if r.id == rule_id]
    if not found:
        raise UserError(f"rule {rule_id!r} is not in force (forgotten?)")
    ((stored, created),) = add_rules(svc, [replace(found[0], scope="shared")])
    return stored.id, created
