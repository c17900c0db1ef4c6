"""Expected answer type: a question that asks *when* is answered by a memory that says when.

Classic question answering ranks passages by whether they hold the kind of thing the question asks for. The
one kind that text alone shows reliably is time: "When did we move the cache to Redis?" is answered by
"Moved the cache to Redis last Friday", not by "Redis cache settings look fine". Words like "yesterday",
"last week", "on Friday", "in March", "since 2022" or "2024-03-05" mark a memory that tells when.

Measured on LoCoMo (no LLM): among the 30 best candidates of a "when" question, 77% of the gold turns state
a time and 14% of the others do; boosting those that do lifts temporal Recall@5 0.714 → 0.761
(bench/RESULTS.md).

A leading bracketed stamp ("[8 May 2023] …", "[2024-03-05 14:02] …") and the header line of a captured
session record are ignored: they record when the memory was written, which created_at already holds and
time cues already use; they are not the memory saying when.

Used by the `time_answer` experiment (retrieval/experiments.py), off by default. Stdlib only (`re`).
"""

from __future__ import annotations

import re

from cems_cli.retrieval.timecues import MONTH_PATTERN

# "When …?", "What year …?", "In which month …?", "How long ago …?", "Since when …?", "On what date …?".
_ASKS_FOR_TIME = re.compile(
    r"^\W*(?:when\b|since when\b|how long ago\b|"
    r"(?:(?:in|on|during|by)\s+)?(?:what|which)\s+(?:year|month|week|day|date|season)s?\b)",
    re.I,
)

_MONTH = MONTH_PATTERN + r"\.?"
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?"
_COUNT = r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a\s+few|a\s+couple\s+of|several|many)"
_UNIT = r"(?:day|week|month|year|decade)"
_PERIOD = r"(?:week|weekend|month|year|night|morning|afternoon|evening|summer|winter|spring|fall|autumn)"
_STATES_TIME = re.compile(
    r"\b(?:"
    r"yesterday|today|tonight|tomorrow|recently|ago|"  # deictic: relative to when it was said
    r"just\s+(?:got|went|came|had|made|took|did|began|bought|found|left|won|\w+ed)|"  # "I just moved"
    rf"for\s+(?:about\s+|over\s+|almost\s+|nearly\s+|the\s+(?:past|last)\s+)?{_COUNT}\s+{_UNIT}s?|"
    rf"(?:last|next|this|past)\s+(?:{_PERIOD}|{_WEEKDAY}|time)|{_WEEKDAY}|"
    # A bare month needs a preposition ("may" alone is usually the verb); a day makes it a date either way.
    rf"(?:in|on|since|until|by|during|early|late|mid|around|before|after)(?:\s+|\s*-\s*){_MONTH}|"
    rf"{_MONTH}\s+[0-3]?\d(?:st|nd|rd|th)?|[0-3]?\d(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}|"
    r"(?:in|since|until|by|during|around|before|after)\s+(?:19|20)\d\d|"
    r"(?:19|20)\d\d-[01]\d-[0-3]\d"
    r")\b",
    re.I,
)
_LEADING_STAMP = re.compile(r"^\s*\[[^\]\n]{1,40}\]")
# The first line of a captured session record ("Claude Code session 1a2b3c4d in acme/api on branch main,
# 2026-11-22 14:02 UTC.", written by capture/sessions.render) says when the session ran, which created_at
# holds and every recalled line shows; it is not the memory saying when something was done. Boosting it
# ranked every session record above "Decided to move the session cache to Redis" on "when did we…?".
_CAPTURE_HEADER = re.compile(r"^Claude Code (?:session|subagent) [^\n]*(?:\n|$)")


def asks_for_time(query: str) -> bool:
    """The question asks when something happened."""
    return bool(_ASKS_FOR_TIME.search(query))


def states_time(content: str) -> bool:
    """The memory says when something happened (a leading stamp of when it was written does not count)."""
    content = _CAPTURE_HEADER.sub("", _LEADING_STAMP.sub("", content, count=1), count=1)
    return bool(_STATES_TIME.search(content))
