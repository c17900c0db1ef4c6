"""Time cues in a query: "on October 13, 2023", "in May 2023", "in June", "in 2024", "yesterday", "last week".

A query that names a time asks about what was recorded then. The cue becomes a predicate on a memory's
created_at: an overview question keeps the summaries whose period overlaps it (_present._overview), and the
`time_cue` experiment boosts the memories it matches (retrieval/experiments.py). Memories are recorded
after what they describe (a conversation mentions yesterday's trip), so every window also takes in the days
that follow it.

Stdlib only (`re`, `datetime`): parsed on the hooks' warm path (an overview question).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

# Memories about a day or a month are often recorded a little after it.
FOLLOW_DAYS = 7

MONTH_NAMES = {
    name: number
    for number, names in enumerate(
        (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
         ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
         ("october", "oct"), ("november", "nov"), ("december", "dec")),
        start=1,
    )
    for name in names
}
# Any month name or abbreviation, longest first ("march" before "mar").
MONTH_PATTERN = "(?:" + "|".join(sorted(MONTH_NAMES, key=len, reverse=True)) + ")"
# A month name that is part of a file name or path ("march.py", "march/", "may_utils") is not a month.
_MONTH = rf"(?P<month>{MONTH_PATTERN})(?:\.(?!\w))?(?![\w/]|\.\w)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_PATTERNS = (
    ("day", re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I)),  # October 13, 2023
    ("day", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I)),  # 13 October 2023
    ("iso", re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)\b")),  # 2023-10-13
    ("month_year", re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.I)),  # May 2023
    # A bare month needs a preposition: "may" alone is usually the verb.
    ("month", re.compile(rf"\b(?:in|during|since|early|late|mid|of|last)(?:\s+|\s*-\s*){_MONTH}\b", re.I)),
    ("year", re.compile(rf"\b(?:in|during|of|since)\s+{_YEAR}\b", re.I)),
)
_RELATIVE = (
    (re.compile(r"\btoday\b|\bthis morning\b|\btonight\b", re.I), 1),
    (re.compile(r"\byesterday\b|\blast night\b", re.I), 2),
    (re.compile(r"\b(?:this|last|past) week\b", re.I), 14),
    (re.compile(r"\b(?:this|last|past) month\b", re.I), 62),
)
_AGO = re.compile(r"\b(?P<n>\d+|a|an|one|two|three|four|five|six)\s+(?P<unit>day|week|month)s?\s+ago\b", re.I)
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 31}


@dataclass(frozen=True)
class TimeCue:
    """The time a query names: a window of created_at (start inclusive, end exclusive), or a month of any
    year (a bare "in June" names no year)."""

    label: str
    start: datetime | None = None
    end: datetime | None = None
    month: int | None = None

    def matches(self, moment: datetime) -> bool:
        moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        if self.month is not None:
            if moment.month == self.month:
                return True
            following = self.month % 12 + 1
            return moment.month == following and moment.day <= FOLLOW_DAYS
        assert self.start is not None and self.end is not None
        return self.start <= moment < self.end


def parse_time_cue(query: str, now: datetime) -> TimeCue | None:
    """The first (most specific) time the query names, or None."""
    for kind, pattern in _PATTERNS:
        found = pattern.search(query)
        if found is None:
            continue
        cue = _cue(kind, found)
        if cue is not None:
            return cue
    return _relative_cue(query, now)


def _cue(kind: str, found: re.Match[str]) -> TimeCue | None:
    groups = found.groupdict()
    label = found.group(0).strip()
    try:
        if kind in ("day", "iso"):
            month = int(groups["month"]) if kind == "iso" else MONTH_NAMES[groups["month"].lower()]
            start = datetime(int(groups["year"]), month, int(groups["day"]), tzinfo=UTC)
            return TimeCue(label, start - timedelta(days=1), start + timedelta(days=FOLLOW_DAYS + 1))
        if kind == "month_year":
            start = datetime(int(groups["year"]), MONTH_NAMES[groups["month"].lower()], 1, tzinfo=UTC)
            return TimeCue(label, start, _next_month(start) + timedelta(days=FOLLOW_DAYS))
        if kind == "month":
            return TimeCue(label, month=MONTH_NAMES[groups["month"].lower()])
        start = datetime(int(groups["year"]), 1, 1, tzinfo=UTC)
        return TimeCue(label, start, start.replace(year=start.year + 1) + timedelta(days=FOLLOW_DAYS))
    except ValueError:  # "February 31, 2023": not a date, so not a cue
        return None


def _next_month(moment: datetime) -> datetime:
    return moment.replace(year=moment.year + 1, month=1) if moment.month == 12 else moment.replace(
        month=moment.month + 1
    )


def _relative_cue(query: str, now: datetime) -> TimeCue | None:
    now = now if now.tzinfo else now.replace(tzinfo=UTC)
    ago = _AGO.search(query)
    if ago:
        count = _NUMBERS.get(ago.group("n").lower()) or int(ago.group("n"))
        days = count * _UNIT_DAYS[ago.group("unit").lower()]
        centre = now - timedelta(days=days)
        slack = max(1, days // 4)
        return TimeCue(ago.group(0), centre - timedelta(days=slack), centre + timedelta(days=slack + 1))
    for pattern, days in _RELATIVE:
        found = pattern.search(query)
        if found:
            return TimeCue(found.group(0), now - timedelta(days=days), now + timedelta(days=1))
    return None
