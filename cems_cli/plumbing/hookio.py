"""Plumbing shared by every Claude Code hook: read stdin, answer with one JSON object, fail open.

Stdlib only and cheap to import: hooks run before every tool call and the whole process must stay within a
few tens of milliseconds. In particular the `json` package is not imported here, because it imports `re`
(~15 ms on a small machine); the C accelerator `_json` that `json` itself uses does the work directly.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from _json import make_scanner
    from collections.abc import Callable
    from typing import Any

# Declared before the import so the fallback's None fits (annotations are never evaluated here).
_encode_str: Callable[[str], str] | None
_make_scanner: type[make_scanner] | None
try:
    from _json import encode_basestring_ascii as _encode_str
    from _json import make_scanner as _make_scanner
except ImportError:  # not CPython: fall back to the json package, slower but equivalent
    _encode_str = None
    _make_scanner = None

MAX_PARSE_BYTES = 64 * 1024 * 1024
MAX_CONTEXT_CHARS = 10_000  # Claude Code caps additionalContext and reasons at 10,000 characters
_TRUNCATED = "\n[… truncated]"
_LOG_ROTATE_BYTES = 5 * 1024 * 1024
_JSON_WHITESPACE = " \t\n\r"
_FALSY = frozenset({"", "0", "false", "no", "off"})


# --- locations ------------------------------------------------------------------------------------------


def cems_home() -> str:
    """Same answer as `cems_cli.paths.cems_home()`, without importing pathlib (~25 ms here).
    tests/unit/test_hookio.py pins the two together."""
    explicit = os.environ.get("CEMS_HOME", "").strip()
    if explicit:
        return os.path.expanduser(explicit)
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    base = os.path.expanduser(xdg) if xdg else os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "cems")


def is_disabled() -> bool:
    """`CEMS_DISABLE` set to anything but an empty/false-like value turns every hook into a no-op."""
    return os.environ.get("CEMS_DISABLE", "").strip().lower() not in _FALSY


# --- JSON without the json package ----------------------------------------------------------------------


class _ScanContext:
    # The attributes `json.decoder.JSONDecoder` hands to the same C scanner, with json.loads' defaults.
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # NaN / Infinity / -Infinity, as json.loads accepts them


# typeshed types the context as a make_scanner itself; the C scanner only reads the attributes above.
_scan_once = _make_scanner(_ScanContext()) if _make_scanner is not None else None  # type: ignore[arg-type]


def json_loads(text: str) -> Any:
    """`json.loads(text)` for a str; raises ValueError on malformed input."""
    if _scan_once is None:
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(_JSON_WHITESPACE))
    try:
        value, end = _scan_once(text, start)
    except StopIteration as stop:
        raise ValueError(f"Expecting value at character {stop.value}") from None
    if end < len(text.rstrip(_JSON_WHITESPACE)):
        raise ValueError(f"Extra data at character {end}")
    return value


def json_dumps(obj: Any) -> str:
    """Compact, ASCII-only JSON for the plain values hooks emit (dict, list, str, int, float, bool, None)."""
    if _encode_str is None:
        import json

        return json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    out: list[str] = []
    _encode(obj, out, _encode_str)
    return "".join(out)


def _encode(obj: Any, out: list[str], encode_str: Callable[[str], str]) -> None:
    if isinstance(obj, str):
        out.append(encode_str(obj))
    elif obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, int):
        out.append(int.__repr__(obj))
    elif isinstance(obj, float):
        if obj != obj or obj in (float("inf"), float("-inf")):
            raise ValueError("NaN and infinity are not valid JSON")
        out.append(float.__repr__(obj))
    elif isinstance(obj, dict):
        out.append("{")
        for index, (key, value) in enumerate(obj.items()):
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be str, not {type(key).__name__}")
            out.append("," if index else "")
            out.append(encode_str(key))
            out.append(":")
            _encode(value, out, encode_str)
        out.append("}")
    elif isinstance(obj, list | tuple):
        out.append("[")
        for index, value in enumerate(obj):
            out.append("," if index else "")
            _encode(value, out, encode_str)
        out.append("]")
    else:
        raise TypeError(f"{type(obj).__name__} is not JSON serializable")


# --- stdin ----------------------------------------------------------------------------------------------


def read_stdin(max_bytes: int = MAX_PARSE_BYTES) -> bytes | None:
    """All of stdin (Claude Code gets EPIPE if a hook exits early), or None past `max_bytes`: the rest is
    drained and discarded rather than kept in memory."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        return b""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = stream.read(1 << 20)
        if not chunk:
            break
        size += len(chunk)
        if size <= max_bytes:
            chunks.append(chunk)
        elif chunks:
            chunks.clear()
    return None if size > max_bytes else b"".join(chunks)


def parse_payload(raw: bytes | None) -> dict[str, Any] | None:
    """The event object, or None unless the bytes are one JSON object. Bad UTF-8 is replaced, not fatal."""
    if not raw:
        return None
    text = raw.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        payload = json_loads(text)
    except (ValueError, RecursionError):
        return None
    return payload if isinstance(payload, dict) else None


# --- answers --------------------------------------------------------------------------------------------


def cap_text(text: str, limit: int = MAX_CONTEXT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - len(_TRUNCATED)] + _TRUNCATED


def respond(obj: dict[str, Any]) -> None:
    """Write exactly one JSON object, and nothing else, to stdout."""
    sys.stdout.write(json_dumps(obj) + "\n")
    sys.stdout.flush()


def additional_context_answer(event_name: str, text: str) -> dict[str, Any]:
    """Context for Claude from UserPromptSubmit, SessionStart, PostToolUse or PreToolUse."""
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": cap_text(text)}}


def _rule_summary(decision: Any) -> tuple[str, str]:
    # A shared rule's reason and pattern are a teammate's text, shown to the agent: inert there like memories.
    from cems_cli.text.inert import for_model

    rule = decision.rule
    reason = (getattr(rule, "reason", "") or "").strip()
    unchecked = getattr(decision, "unchecked", "")
    if unchecked:  # no rule matched for sure (a command only known at run time, or a regex out of time)
        summary = f"{': ' + reason if reason else ''} ({unchecked}; the rule's pattern is {rule.pattern!r})"
        return str(rule.id), for_model(summary)
    return str(rule.id), for_model(f"{': ' + reason if reason else ''} (pattern {rule.pattern!r})")


def pre_tool_use_answer(decision: Any) -> dict[str, Any] | None:
    """The PreToolUse answer for a matcher Decision: block → deny (the reason reaches Claude), ask → the
    user is prompted, warn → no permission decision (normal flow continues) plus context naming the rule."""
    if decision is None:
        return None
    rule_id, summary = _rule_summary(decision)
    if decision.action == "block":
        return {"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": cap_text(f"Blocked by CEMS rule {rule_id}{summary}"),
        }}
    if decision.action == "ask":
        return {"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "ask",
            "permissionDecisionReason": cap_text(f"CEMS rule {rule_id} asks for confirmation{summary}"),
        }}
    if decision.action == "warn":
        return additional_context_answer("PreToolUse", f"Warning from CEMS rule {rule_id}{summary}")
    return None


# --- failing open ---------------------------------------------------------------------------------------


def log_error(message: str, with_traceback: bool = True) -> None:
    """Append to $CEMS_HOME/logs/hooks.log. Never raises: logging must not turn into a hook failure."""
    try:
        detail = ""
        if with_traceback and sys.exc_info()[0] is not None:
            import traceback

            detail = traceback.format_exc()
        import time

        logs = os.path.join(cems_home(), "logs")
        os.makedirs(logs, mode=0o700, exist_ok=True)
        path = os.path.join(logs, "hooks.log")
        try:
            if os.path.getsize(path) > _LOG_ROTATE_BYTES:
                os.replace(path, path + ".1")
        except OSError:
            pass
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        hook = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "hook"
        with open(path, "a", encoding="utf-8", errors="replace") as log:
            log.write(f"{stamp} [{hook} pid={os.getpid()}] {message}\n{detail}")
    except BaseException:  # see docstring
        pass


def run_hook(handler: Callable[[dict[str, Any]], dict[str, Any] | None]) -> int:
    """Run one hook: drain stdin, call `handler(payload)`, print its answer. Returns the exit code, always 0:
    disabled, malformed input and internal errors all mean "no opinion" (exit 0, no output)."""
    try:
        raw = read_stdin()
        if is_disabled():
            return 0
        payload = parse_payload(raw)
        if payload is None:
            return 0
        answer = handler(payload)
        if answer:
            respond(answer)
    except BaseException:  # even SystemExit/KeyboardInterrupt: a crash must not block the agent
        log_error("hook failed; failing open")
    return 0
