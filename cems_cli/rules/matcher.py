"""Decide which rule, if any, applies to a tool call.

This module runs inside the PreToolUse hook before every tool call, so it imports no library at module level,
nor do the modules beside it that it uses (`_compile`: patterns, `_candidates`: the values of a call they are
tried on, `_shapes`: command shapes): `re` and `fnmatch` cost ~15 ms each on a small machine (a third of the
hook budget), and most patterns are plain `*` globs that str methods match exactly.
`re` is imported only when a rule actually needs it.

Rules are duck-typed: anything with the attributes of `cems_cli.rules.model.Rule` (`id`, `tool`, `pattern`,
`action`, `reason`, `field`, `regex`, `project`). The hook passes the slotted records of
`cems_cli.rules.snapshot`, the CLI passes `Rule` dataclasses.
"""

from __future__ import annotations

from cems_cli.rules._candidates import _Values, _values, _write_values
from cems_cli.rules._compile import _glob_literal_head, _has_glob_syntax, compile_pattern, regex_literals

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any


ACTIONS = ("block", "ask", "warn")
# Strictness: the highest rank wins when several rules match one call.
ACTION_RANK = {"warn": 1, "ask": 2, "block": 3}

# The argument a rule's pattern is matched against when the rule names no --field.
_MAIN_FIELDS = {
    "Bash": "command",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "Write": "file_path",
    "Read": "file_path",
    "NotebookEdit": "notebook_path",
    "NotebookRead": "notebook_path",
    "WebFetch": "url",
}


# A rule on Edit guards every tool that changes a file's contents, as Claude Code's own `Edit(…)` permission
# rules do: otherwise `Edit: migrations/*` is dodged by rewriting the file with Write or MultiEdit.
_TOOL_FAMILIES = {"Edit": frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})}
# Rules on these tools also see the files a Bash command writes (`echo x > f`, `sed -i`, `tee f`).
_EDIT_FAMILY = _TOOL_FAMILIES["Edit"]

# Regex rules run `re.search` in C, which cannot be stopped from Python except by a signal: all the regex
# searches of one tool call share this much wall time. A rule still unchecked when it is spent counts as
# matched (its action applies, saying it was not checked), unless the caller passes on_timeout="allow"
# (CEMS_RULES_ON_TIMEOUT): otherwise a long enough command would walk past any regex rule. Patterns known
# to backtrack catastrophically are refused at `cems rule add` (`cems_cli.rules.model`).
REGEX_BUDGET_SECONDS = 0.1
TIMED_OUT = (f"not checked within the {REGEX_BUDGET_SECONDS:g} s regex budget, so it counts as matched; "
             "CEMS_RULES_ON_TIMEOUT=allow lets such calls through")


class Decision:
    """The winning rule for one tool call: what to do, which rule said so, and the value it matched.
    `unchecked`: the rule could not be checked within the time budget, and counts as matched."""

    __slots__ = ("action", "rule", "value", "unchecked")

    def __init__(self, action: str, rule: Any, value: str, unchecked: str = "") -> None:
        self.action = action
        self.rule = rule
        self.value = value
        # Set when no rule matched for sure, but the command cannot be checked and `rule` may be concerned.
        self.unchecked = unchecked

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Decision):
            return NotImplemented
        return (self.action, self.rule, self.value) == (other.action, other.rule, other.value)

    def __hash__(self) -> int:
        return hash((self.action, self.value))

    def __repr__(self) -> str:
        rule_id = getattr(self.rule, "id", self.rule)
        unchecked = ", unchecked=True" if self.unchecked else ""
        return f"Decision(action={self.action!r}, rule={rule_id!r}, value={self.value!r}{unchecked})"


def main_field(tool_name: str, rule_field: str | None) -> str:
    """The tool_input key a rule matches: its own --field, else the tool's main argument, else ""
    (meaning: no main argument is known, match any top-level string argument)."""
    if rule_field:
        return rule_field
    return _MAIN_FIELDS.get(tool_name, "")


# --- decision -------------------------------------------------------------------------------------------


def _tool_matches(rule_tool: str, tool_name: str) -> bool:
    if rule_tool == tool_name:
        return True
    family = _TOOL_FAMILIES.get(rule_tool)
    if family is not None:
        return tool_name in family
    # `mcp__github__*` cannot match `Bash`: checking the literal head first spares compiling the glob.
    return (_has_glob_syntax(rule_tool) and tool_name.startswith(_glob_literal_head(rule_tool))
            and compile_pattern(rule_tool)(tool_name))


def _project_of(project: str | None | Callable[[], str | None], memo: list[str | None]) -> str | None:
    if not memo:
        try:
            memo.append(project() if callable(project) else project)
        except Exception:
            memo.append(None)  # an unreadable repository leaves project rules out; global rules still apply
    return memo[0]


def decide(
    rules: Iterable[Any],
    tool_name: str,
    tool_input: Mapping[str, Any],
    project: str | None | Callable[[], str | None] = None,
    cwd: str | None = None,
    on_timeout: str | Callable[[], str] = "deny",
) -> Decision | None:
    """The strictest matching rule (block > ask > warn; ties go to the earliest rule), or None.

    A regex rule not checked within the call's budget (REGEX_BUDGET_SECONDS) counts as matched, as an
    `unchecked` Decision, unless `on_timeout` is "allow" (it may be a zero-argument callable, called only
    when a rule ran out of time: reading the setting costs more than the matching).

    A glob rule matches when its pattern matches one of the candidate values whole, or, for a shell
    command, when one of the commands it runs has the rule's shape (`_Values.structural`). A rule on Edit
    (Write, MultiEdit…) also matches a shell command that writes one of its paths (`> f`, `sed -i`, `tee`).

    A shell command that cannot be checked before it runs (`eval "$x"`, `curl … | sh`, a command name from
    `$(…)`: `cems_cli.command.model`) is answered "ask", naming the first Bash block rule that applies, when
    no rule blocks it for sure: the user sees the command and decides. Without a Bash block rule such a
    command is not held up: no rule could be concerned by it.
    `project` may be a zero-argument callable: it is called at most once, and only when a project rule
    otherwise matches, because finding the project reads `.git/config` and imports pathlib.
    """
    if not isinstance(tool_name, str) or not hasattr(tool_input, "get"):
        return None
    best: Decision | None = None
    best_rank = 0
    project_memo: list[str | None] = []
    values_by_field: dict[str, _Values] = {}
    main = _MAIN_FIELDS.get(tool_name, "")
    regex_deadline: list[float] = []
    unchecked_by: Any = None  # the first Bash block rule, when the command cannot be checked
    timed_out: Any = None  # the strictest rule that ran out of time, first of its rank
    for rule in rules:
        rank = ACTION_RANK.get(rule.action, 0)
        if rank <= best_rank:
            continue
        try:
            rule_tool = rule.tool
            if tool_name == "Bash" and rule_tool in _EDIT_FAMILY and not rule.field:
                field = "\0writes"  # the files the command writes, matched like an Edit's file_path
                values = values_by_field.get(field)
                if values is None:
                    command = values_by_field.get("command") or _values("command", tool_input, cwd)
                    values_by_field["command"] = command
                    values = values_by_field[field] = _write_values(command, cwd)
            elif rule_tool != tool_name and not _tool_matches(rule_tool, tool_name):
                continue
            else:
                field = rule.field or main
                values = values_by_field.get(field)
                if values is None:
                    values = values_by_field[field] = _values(field, tool_input, cwd)
            if unchecked_by is None and values.unchecked and rank == ACTION_RANK["block"] and (
                field == "command" and (not rule.project or (_project_of(project, project_memo) or "").lower()
                                        == rule.project.lower())):
                unchecked_by = rule
            candidates = values.texts
            pattern = rule.pattern
            if rule.regex:
                literals = regex_literals(pattern)
                if literals and not any(all(text in value for text in literals) for value in candidates):
                    continue
                matched = _search_within(compile_pattern(pattern, True), candidates, regex_deadline)
            else:
                head = _glob_literal_head(pattern)
                first, space, rest = head.partition(" ")
                # No value starts with this word and no command is named by it (`/bin/rm` names `rm`):
                # most rules stop here, at one set lookup.
                if space and first not in values.firsts and (
                    "/" not in first or values.commands is None
                    or first.rpartition("/")[2] not in values.firsts
                ):
                    continue
                matched = None
                if not head or any(value.startswith(head) for value in candidates):
                    predicate = compile_pattern(pattern)
                    matched = next((value for value in candidates if predicate(value)), None)
                if matched is None and values.commands and (
                    space or (head == pattern and (first in values.firsts or "/" in first))
                ):
                    matched = values.structural(pattern, first, rest)
            if matched is None:
                continue
            if rule.project:
                current = _project_of(project, project_memo)
                if not current or current.lower() != rule.project.lower():
                    continue
        except TimeoutError:
            if timed_out is None or rank > ACTION_RANK.get(timed_out.action, 0):
                timed_out = rule
            continue
        except Exception:
            # One broken rule (say, a hand-edited snapshot with a bad regex) must not disable the others.
            continue
        best, best_rank = Decision(rule.action, rule, matched), rank
        if rank == ACTION_RANK["block"]:
            break
    if timed_out is not None and ACTION_RANK.get(timed_out.action, 0) > best_rank:
        policy = on_timeout() if callable(on_timeout) else on_timeout
        if policy != "allow":
            return Decision(timed_out.action, timed_out, "", unchecked=TIMED_OUT)
    if unchecked_by is not None and best_rank < ACTION_RANK["ask"]:
        command_values = values_by_field["command"]
        return Decision("ask", unchecked_by, command_values.texts[0] if command_values.texts else "",
                        unchecked="cannot be checked: " + "; ".join(command_values.unchecked))
    return best


def _on_alarm(signum: int, frame: Any) -> None:
    # The builtin TimeoutError: a class of our own would cost its creation on every hook start.
    raise TimeoutError("the regex budget of this tool call is spent")


def _search_within(predicate: Callable[[str], bool], values: list[str], deadline: list[float]) -> str | None:
    """The first value `predicate` (a regex search) accepts, within what is left of the tool call's regex
    budget; raises TimeoutError once it is spent. `deadline` holds the call's deadline once a search ran.

    `re` checks for signals while it backtracks, so an interval timer whose handler raises stops even a
    catastrophic search. Where there are no interval timers (Windows) or no signal handlers (a thread other
    than the main one), the search runs unbounded: `cems rule add` still refuses the known-bad patterns.
    """
    import time

    if not deadline:
        deadline.append(time.monotonic() + REGEX_BUDGET_SECONDS)
    remaining = deadline[0] - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("the regex budget of this tool call is spent")
    try:
        # The C module: `signal` itself builds enums on import, a cost every regex tool call would pay.
        import _signal

        previous = _signal.signal(_signal.SIGALRM, _on_alarm)
    except (ImportError, AttributeError, ValueError):
        return next((value for value in values if predicate(value)), None)
    try:
        _signal.setitimer(_signal.ITIMER_REAL, remaining)
        try:
            return next((value for value in values if predicate(value)), None)
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
    finally:
        _signal.signal(_signal.SIGALRM, _signal.SIG_DFL if previous is None else previous)
