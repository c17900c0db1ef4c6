"""Deterministic extraction: what a finished turn says that a developer wants back next week.

Works on what the turn model (`observations.ChunkBuilder`) gathered, with no LLM:
* the real outcome of a tool call: ran, failed, denied by a rule (a PreToolUse hook), denied by the user;
* `decisions`: sentences of the prompt or the final answer that decide ("use X instead of Y", "from now on");
* `preferences`: what the user states about how things are to be done ("always…", "never…", "I prefer…");
* `patterns`: how the project is built, tested, linted, installed (the commands that succeeded, classified by
  `tool_patterns`, whose texts are the same whichever trigger saw the command, so they deduplicate).

Cue lists are hand-written: no library recognises "a sentence that states a preference" offline, and a
regex costs microseconds per turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

RAN, FAILED, DENIED_RULE, DENIED_USER = "ran", "failed", "denied_rule", "denied_user"

# A PreToolUse deny reaches the transcript as an is_error tool_result: "PreToolUse:Bash hook error: <reason>"
# (Claude Code 2.1), "<Tool> operation blocked by hook:\n- <reason>" (earlier 2.x), or CEMS's own wording.
_RULE_DENIAL = re.compile(
    r"^(?:PreToolUse:\S+ )?hook error:\s*(?P<a>.+)"
    r"|operation blocked by hook:?\s*(?:-\s*)?(?P<b>.+)"
    r"|^(?P<c>Blocked by (?:CEMS )?rule\b.+)",
    re.I | re.S,
)
# What Claude Code writes when the user rejects a permission prompt, or permission was never granted.
_USER_DENIAL = re.compile(
    r"The user doesn't want to (?:proceed with this tool use|take this action)"
    r"|requested permissions? to use \S+, but you haven't granted it"
    r"|Permission to use \S+ has been denied"
    r"|\buser (?:rejected|denied) (?:the|this) tool",
    re.I,
)
_CEMS_RULE_ID = re.compile(r"Blocked by CEMS rule [0-9a-f-]{8,}:\s*", re.I)
_RULE_PATTERN_NOTE = re.compile(r"\s*\(pattern '[^']*'\)\s*$")


def tool_outcome(text: str, is_error: bool) -> str:
    """ran / failed / denied_rule / denied_user for one tool_result. Only an is_error result is a denial:
    a successful `grep "hook error:"` must not read as one."""
    if not is_error:
        return RAN
    head = text.strip()[:2000]
    if _USER_DENIAL.search(head):
        return DENIED_USER
    if _RULE_DENIAL.search(head):
        return DENIED_RULE
    return FAILED


def denial_reason(text: str) -> str:
    """The rule's reason, without the hook plumbing around it: "force pushes rewrite shared history"."""
    match = _RULE_DENIAL.search(text.strip())
    reason = next((g for g in match.groups() if g), "") if match else text
    reason = _CEMS_RULE_ID.sub("", reason.strip().splitlines()[0] if reason.strip() else "")
    return _RULE_PATTERN_NOTE.sub("", reason).strip()


# --------------------------------------------------------------------------- sentences

_PREFERENCE = re.compile(
    r"\b(?:always|never|i (?:really )?(?:prefer|like|want|hate|dislike|don't like)|i'd (?:rather|prefer|like)"
    r"|please (?:don't|do not|always|never|use|avoid)|don't ever|do not ever|avoid using"
    r"|we (?:always|never|use|don't use|do not use|prefer)|in this (?:repo|repository|project|codebase) we"
    r"|make sure (?:to|you)|my (?:preference|favourite|favorite))\b",
    re.I,
)
_DECISION = re.compile(
    r"\b(?:decided|decide to|decision(?: is)? to"
    r"|we(?:'ll| will| are going to| should) (?:use|switch|move|go with|keep|stick with|drop|replace)"
    r"|let's (?:use|go with|switch|keep|move|stick with|drop|replace)"
    r"|switch(?:ed|ing)? (?:to|from|over)|instead of|rather than|go(?:ing)? with|chose|chosen|opted"
    r"|from now on|going forward|settled on|replaced \S+ with)\b",
    re.I,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])")
# A paragraph ends at a blank line, and before a list item, heading, quote or table row; a single line break
# inside a paragraph (or between two streamed blocks of one answer) is only a space.
_PARAGRAPH_END = re.compile(r"\n\s*\n|\n(?=\s*(?:[-*•>#|]|\d+[.)])\s)")
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_MIN_WORDS, _MAX_CHARS = 4, 300


def _paragraphs(text: str) -> list[str]:
    """The prose paragraphs of a text, each on one line (code blocks, headings, table rows are not prose)."""
    text = re.sub(r"```.*?(?:```|\Z)", "\n\n", text, flags=re.S)
    return [
        " ".join(_LIST_MARK.sub("", paragraph).split())
        for paragraph in _PARAGRAPH_END.split(text)
        if not paragraph.strip().startswith(("#", "|", ">"))
    ]


def sentences(text: str) -> list[str]:
    """Plain sentences of a prose text."""
    return [sentence for paragraph in _paragraphs(text) for sentence in _plain(paragraph)]


def _plain(paragraph: str) -> list[str]:
    found: list[str] = []
    for part in _SENTENCE_END.split(paragraph):
        part = part.strip()
        if not part:
            continue
        if len(part.split()) < _MIN_WORDS or part.endswith("?"):
            continue
        found.append(part if len(part) <= _MAX_CHARS else part[: _MAX_CHARS - 1].rstrip() + "…")
    return found


def preference_sentences(prompt: str) -> list[str]:
    """What the user said about how they want things done (only the user's words count)."""
    return [s for s in sentences(prompt) if _PREFERENCE.search(s)]


# A decision that gives its own reason needs nothing more; one that does not ("Let's switch to NATS.") is
# kept with the sentence before it, where the reason usually is ("Kafka is too heavy for our volume.").
_REASON = re.compile(r"\b(?:because|since|as|so that|so|to keep|to avoid|due to|given)\b", re.I)


def decision_sentences(text: str) -> list[str]:
    found: list[str] = []
    for paragraph in _paragraphs(text):
        previous = ""
        for sentence in _plain(paragraph):
            if _DECISION.search(sentence):
                if previous and not _REASON.search(sentence) and len(previous) + len(sentence) < _MAX_CHARS:
                    sentence = f"{previous} {sentence}"
                found.append(sentence)
            previous = sentence if not sentence.endswith("…") else ""
    return found


# --------------------------------------------------------------------------- patterns

_PATTERN_KINDS = frozenset(
    {"test", "lint", "format", "typecheck", "build", "generate", "migrate", "deploy", "install"}
)


def pattern_statements(
    project: str | None, session_id: str, cwd: str, commands: Iterable[str]
) -> list[str]:
    """`patterns` texts for the Bash commands of a turn that ran successfully. The texts are those of the
    tool-event path (PostToolUse), word for word, so the store's content dedup keeps one of each."""
    if not project:
        return []
    from cems_cli.capture.tool_patterns import ToolEvent, derive_statements

    events = [
        ToolEvent(
            tool_use_id=f"turn-{index}",
            session_id=session_id,
            tool_name="Bash",
            cwd=cwd,
            received_at=float(index),
            tool_input={"command": command},
            tool_response={"stdout": "", "stderr": ""},
        )
        for index, command in enumerate(commands)
    ]
    return [s.text for s in derive_statements(project, events) if s.kind in _PATTERN_KINDS]
