"""Guard rails through the library: add, list, refresh, remove and test the rules the PreToolUse hook
checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cems_cli.errors import UserError

if TYPE_CHECKING:
    from cems_cli.api._memory import Memory
    from cems_cli.rules.model import Rule


class Rules:
    """Guard rails: rules that block (or warn about) an agent's tool calls, checked by the PreToolUse hook
    from a local snapshot that every change here rewrites."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory

    def add_one(
        self, pattern: str, *, tool: str | None = None, action: str | None = None, reason: str | None = None,
        field: str | None = None, regex: bool = False, project: str | None = None, scope: str = "personal",
        tool_hint: str = "the tool",
    ) -> tuple[Rule, bool]:
        """One rule as `cems rule add` takes it: a pattern and its tool, or without a tool the one-line
        form 'Bash: git push --force* — reason'. Returns it (with its id) and whether it is new; a bad rule
        is a UserError (`tool_hint` names how the caller passes a tool, for its message)."""
        from cems_cli.rules.model import make_rule
        from cems_cli.rules.parse import RuleParts, parse_one_line

        parts: RuleParts = {"pattern": pattern, "tool": tool or "", "action": "block", "reason": ""}
        if tool is None:
            try:
                parts = parse_one_line(pattern)
            except ValueError as error:
                raise UserError(f"{error} (or pass {tool_hint})") from None
        if action is not None:
            parts["action"] = action
        if reason is not None:
            parts["reason"] = reason
        try:
            rule = make_rule(
                **parts, field=field, regex=regex, project=project, scope=scope,
                user_id=self._memory.settings.user,
            )
        except ValueError as error:
            raise UserError(str(error)) from None
        ((stored, created),) = self.add([rule])
        return stored, created

    def add(self, rules: Sequence[Rule]) -> list[tuple[Rule, bool]]:
        """Store rules, all or nothing; returns each (with its id) and whether it is new."""
        from cems_cli.engine.rule_management import add_rules

        return add_rules(self._memory._service, list(rules))

    def list_rules(self, project: str | None = None) -> list[Rule]:
        """The rules in force for you (yours and your team's), optionally those binding one project."""
        from cems_cli.engine.rule_management import list_rules

        return list_rules(self._memory._service, project)

    def refresh(self) -> list[Rule]:
        """Rewrite the local snapshot the PreToolUse hook reads (rules a teammate shared reach this machine);
        returns the rules in force."""
        from cems_cli.rules.refresh import write_rules_snapshot

        service = self._memory._service
        return write_rules_snapshot(service.conn, service.identity, service.settings.home)

    def remove(self, rule_id: str) -> str:
        from cems_cli.engine.rule_management import remove_rule

        return remove_rule(self._memory._service, rule_id)

    def test(self, tool: str, tool_input: dict[str, Any], *, project: str | None = None,
             cwd: str | None = None) -> Any:
        """What the PreToolUse hook would decide for this call (a `rules.matcher.Decision`), with the hook's
        regex budget from any thread (`rules.bounded`) and its answer to a rule out of time
        (CEMS_RULES_ON_TIMEOUT)."""
        from cems_cli.project import normalize_project
        from cems_cli.rules.bounded import decide_bounded

        current = normalize_project(project) if project else self._memory.current_project(cwd)
        return decide_bounded(self.list_rules(), tool, tool_input, current.lower(), cwd,
                              self._memory.settings.rules_on_timeout)
