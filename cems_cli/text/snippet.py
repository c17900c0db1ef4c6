"""The part of a long memory a line shows: the window that holds most of the query's words.

Recall injects one line per memory, and a memory longer than the line's width (a session's record, an
answer with its commands) shows only a window of it. The window must hold what the memory says about the
query, whole:

* a query word is found in the text as itself, by its stem ("errors" finds "ERROR", "running" finds "run")
  or as a prefix of a longer word ("deploy" finds "deployment"; 4 letters or more). Found inside a longer
  word ("pango" in "libpango") it pulled windows toward repeated tool output: measured, it lost as many
  facts as it found;
* windows are compared by the distinct query words they hold, each weighing how rare it is in the store
  (its BM25 IDF: "tests" in every memory of a project weighs little beside "migrate"), then by how many
  matches, and the earliest wins; the matches are centred;
* neither edge cuts a token (a path, a flag, a file name): a token cut by the end is completed when it ends
  within `TOKEN_SLACK` characters, so a line may run that much past the width; otherwise cut tokens are
  left out.

Hand-written: no library picks a query-biased window, and this runs for every recalled line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

SNIPPET_CHARS = 300  # a recalled line's window, and what a reranker reads of each candidate
TOKEN_SLACK = 40  # the most a window grows past its width to finish a path or flag it cut
_MIN_PREFIX_TERM = 4  # "deploy" finds "deployment"; "go" must not find "google"
_WORD = re.compile(r"\w+")


def _matcher(query_terms: Sequence[str]) -> Callable[[str], str | None]:
    """Which query term a word of the text is (None: none)."""
    from cems_cli.text.values import stem

    terms = list(dict.fromkeys(t.lower() for t in query_terms if t))
    exact = set(terms)
    prefixes = tuple(sorted(t for t in terms if len(t) >= _MIN_PREFIX_TERM))
    # Stemming every word of a long memory is the costly part: only a word that starts like a term can
    # share its stem, so the rest are never stemmed.
    stems = {stem(t): t for t in terms if len(t) >= 3}
    heads = {t[:3] for t in stems.values()}

    def match(word: str) -> str | None:
        word = word.lower()
        if word in exact:
            return word
        for prefix in prefixes:
            if word.startswith(prefix):
                return prefix
        if word[:3] in heads:
            found = stems.get(stem(word))
            if found is not None:
                return found
        return None

    return match


def best_snippet(content: str, query_terms: Sequence[str], width: int,
                 weights: Mapping[str, float] | None = None) -> str:
    """The `width`-character window of `content` that holds the most query terms (see the module), each
    term counting its weight (`weights`, by term: how rare it is in the store; 1 when not given)."""
    if width <= 0:
        return ""
    if len(content) <= width:
        return content
    match = _matcher(query_terms)
    matches: list[tuple[int, int, str]] = []
    for m in _WORD.finditer(content):
        term = match(m.group(0))
        if term is not None:
            matches.append((m.start(), m.end(), term))
    weight = weights or {}
    best_key: tuple[float, int] = (-1.0, -1)
    best_span = (0, 0)
    right = 0
    for left in range(len(matches)):
        right = max(right, left)
        while right + 1 < len(matches) and matches[right + 1][1] - matches[left][0] <= width:
            right += 1
        if matches[right][1] - matches[left][0] > width:
            continue  # a single match longer than the window: cannot be shown whole
        window = matches[left : right + 1]
        key = (sum(weight.get(t, 1.0) for t in {t for _, _, t in window}), len(window))
        if key > best_key:
            best_key, best_span = key, (matches[left][0], matches[right][1])
    if best_key[0] < 0:  # no match (or none that fits): the start of the text
        return _whole_tokens(content, 0, width, keep=None)
    span_start, span_end = best_span
    slack = width - (span_end - span_start)
    start = max(0, span_start - slack // 2)
    end = min(len(content), start + width)
    start = max(0, end - width)
    return _whole_tokens(content, start, end, keep=best_span)


def _whole_tokens(content: str, start: int, end: int, keep: tuple[int, int] | None) -> str:
    """content[start:end] without a cut token at either edge, never trimming into the `keep` span: one cut
    by the end is completed when it ends within TOKEN_SLACK characters, else dropped."""
    end = min(end, len(content))
    if end < len(content) and not content[end].isspace():
        finish = next((i for i in range(end, min(len(content), end + TOKEN_SLACK)) if content[i].isspace()),
                      len(content) if len(content) - end <= TOKEN_SLACK else None)
        if finish is not None:
            end = finish
        else:
            floor = max(start, keep[1]) if keep else start
            last_space = next((i for i in range(end - 1, floor - 1, -1) if content[i].isspace()), None)
            if last_space is not None:
                end = last_space
    if start > 0 and not content[start - 1].isspace():
        limit = keep[0] if keep else end
        first_space = next((i for i in range(start, limit) if content[i].isspace()), None)
        if first_space is not None:
            start = first_space + 1
    return content[start:end].strip()
