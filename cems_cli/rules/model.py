"""The Rule record and its validation. Every way a rule enters CEMS (CLI, import file, database row, snapshot)
builds a `Rule`, and `Rule` validates itself, so an invalid rule cannot be stored."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from cems_cli.project import normalize_project
from cems_cli.rules.matcher import ACTION_RANK, ACTIONS

SCOPES = ("personal", "shared")
_SCOPE_ALIASES = {"team": "shared"}


@dataclass(frozen=True)
class Rule:
    id: str
    tool: str
    pattern: str
    action: str  # "block" | "ask" | "warn"
    reason: str = ""
    field: str | None = None  # tool_input key to match; None = the tool's main argument
    regex: bool = False  # pattern is a regex (re.search) instead of a shell glob (whole value)
    project: str | None = None  # "project:org/repo"; None = applies everywhere
    scope: str = "personal"  # "personal" | "shared" (team)
    user_id: str = ""
    team_id: str | None = None
    created_at: str | None = None  # ISO-8601 UTC

    def __post_init__(self) -> None:
        validate_rule(self)

    @property
    def strictness(self) -> int:
        return ACTION_RANK[self.action]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Rule:
        """From a snapshot record or database row; unknown keys are ignored, bad values raise ValueError."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a rule must be an object, not {type(data).__name__}")
        values: dict[str, Any] = {}
        for name, kind, required in _FIELD_TYPES:
            value = data.get(name)
            if value is None:
                if required:
                    raise ValueError(f"rule is missing {name!r}")
                continue
            if not isinstance(value, kind):
                raise ValueError(f"rule field {name!r} must be {kind.__name__}, not {type(value).__name__}")
            values[name] = value
        return cls(**values)


_FIELD_TYPES: tuple[tuple[str, type, bool], ...] = (
    ("id", str, True), ("tool", str, True), ("pattern", str, True), ("action", str, True),
    ("reason", str, False), ("field", str, False), ("regex", bool, False), ("project", str, False),
    ("scope", str, False), ("user_id", str, False), ("team_id", str, False), ("created_at", str, False),
)


def _regex_error(pattern: str) -> str | None:
    try:
        re.compile(pattern)
    except re.error as err:
        return f"invalid regex {pattern!r}: {err}"
    return None


def catastrophic_regex_error(pattern: str) -> str | None:
    """Why `pattern` is refused as a rule, if it nests unbounded repeats (`(a+)+$`, `(x*y?)*`): such
    patterns backtrack exponentially on a near-miss, and a rule runs before every tool call. A possessive
    inner repeat (`(a++)+`) or an atomic group (`(?>a+)+`) never backtracks into itself, so it is allowed.

    Only nesting is refused; other slow patterns (overlapping alternatives under a repeat, long chains of
    `.*`) are cut off by the hook's time budget instead (`cems_cli.rules.matcher.REGEX_BUDGET_SECONDS`).
    `re._parser` is CPython's own regex parser: should it ever change shape, the check passes rather than
    blocks the rule, and the time budget still applies."""
    try:
        # typeshed has no stubs for re's private modules (the `sre_*` aliases that have some are deprecated)
        from re import _constants as sre  # type: ignore[attr-defined]
        from re import _parser  # type: ignore[attr-defined]

        tree = _parser.parse(pattern)
        repeats = (sre.MAX_REPEAT, sre.MIN_REPEAT)
        atomic = (getattr(sre, "POSSESSIVE_REPEAT", None), getattr(sre, "ATOMIC_GROUP", None))

        def nested(items: Any, inside_repeat: bool) -> bool:
            for op, av in items:
                if op in repeats:
                    _, high, body = av
                    unbounded = high == sre.MAXREPEAT
                    if unbounded and inside_repeat:
                        return True
                    if nested(body, inside_repeat or unbounded):
                        return True
                elif op in atomic:  # no backtracking into it; its own inside is checked afresh
                    body = av[2] if op == sre.POSSESSIVE_REPEAT else av
                    if nested(body, False):
                        return True
                elif op == sre.SUBPATTERN:
                    if nested(av[3], inside_repeat):
                        return True
                elif op == sre.BRANCH:
                    if any(nested(branch, inside_repeat) for branch in av[1]):
                        return True
                elif op in (sre.ASSERT, sre.ASSERT_NOT):
                    if nested(av[1], inside_repeat):
                        return True
                elif op == sre.GROUPREF_EXISTS:
                    if any(nested(branch, inside_repeat) for branch in av[1:] if branch is not None):
                        return True
            return False

        if nested(tree.data, False):
            return (f"regex {pattern!r} could take exponential time (a repeated group repeats inside, as in "
                    "(a+)+); make the inner repeat possessive (a++) or atomic ((?>a+))")
    except Exception:  # includes RecursionError on absurd nesting: `re.compile` has accepted the pattern
        return None
    return None


def validate_rule(rule: Rule) -> None:
    """Raise ValueError with a one-line message if `rule` could never be enforced as written."""
    if not rule.id.strip():
        raise ValueError("rule id must not be empty")
    if not rule.tool.strip():
        raise ValueError("tool must not be empty")
    if any(ch.isspace() for ch in rule.tool):
        raise ValueError(f"invalid tool {rule.tool!r} (tool names have no spaces: Bash, mcp__github__*)")
    if not rule.pattern.strip():
        raise ValueError("pattern must not be empty")
    if rule.action not in ACTIONS:
        raise ValueError(f"unknown action {rule.action!r} (expected block, ask or warn)")
    if rule.field is not None and not rule.field.strip():
        raise ValueError("field must not be empty when given")
    if rule.regex and (message := _regex_error(rule.pattern)):
        raise ValueError(message)
    if rule.scope not in SCOPES:
        raise ValueError(f"unknown scope {rule.scope!r} (expected personal or shared)")
    if rule.project is not None and not rule.project.startswith("project:"):
        raise ValueError(f"project must look like 'project:org/repo', not {rule.project!r}")


def make_rule(
    pattern: str,
    tool: str,
    action: str = "block",
    reason: str = "",
    field: str | None = None,
    regex: bool = False,
    project: str | None = None,
    *,
    scope: str = "personal",
    user_id: str = "",
    team_id: str | None = None,
    id: str | None = None,
    created_at: str | None = None,
) -> Rule:
    """Normalise user input into a valid Rule (new id and timestamp unless given). Raises ValueError."""
    action = (action or "").strip().lower()
    scope = (scope or "").strip().lower()
    pattern = (pattern or "").strip()
    # Refused only here, where a rule is written, not in `validate_rule`: a rule stored before this check
    # must still load (and be removable), and the hook bounds its time anyway.
    if regex and not _regex_error(pattern) and (message := catastrophic_regex_error(pattern)):
        raise ValueError(message)
    return Rule(
        id=id or str(uuid.uuid4()),
        tool=(tool or "").strip(),
        pattern=pattern,
        action=action,
        reason=" ".join((reason or "").split()),
        field=field.strip() if field is not None else None,
        regex=bool(regex),
        # Project ids from `project_for_dir` are lower case; store rules the same way so they compare equal.
        project=normalize_project(project).lower() if project is not None else None,
        scope=_SCOPE_ALIASES.get(scope, scope),
        user_id=user_id,
        team_id=team_id,
        created_at=created_at or datetime.now(UTC).isoformat(timespec="seconds"),
    )
