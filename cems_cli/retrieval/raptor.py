"""Summaries of groups of memories (retrieval plan step 14.5, RAPTOR), without I/O: which memories group
together, and what an extractive summary of a group and of a whole project says.

Grouping is single-pass "leader" clustering over each memory's embedding in the order the memories were
recorded: a memory joins the group whose centroid is most alike (cosine >= `similarity`, the group not yet
full) or starts a new one. Hand-written because the work is small and the property wanted is one a library
clusterer lacks: a memory's group depends only on the memories recorded before it, so new memories never
reshuffle the old groups, and a group whose members did not change keeps its summary (an LLM is not asked
again each day). Agglomerative clustering of n memories costs O(n²) memory and reorders everything on each
new row.

The extractive summary lists the gist of a group's most central memories in time order, under a title of
the words that set the group apart from the project's other groups (TF-IDF); the project summary lists its
groups. Both are used offline and whenever the LLM is not configured or fails.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from cems_cli import defaults
from cems_cli.text.terms import STOPWORDS

# The most central memories a group summary quotes, and the groups a project summary lists.
GROUP_QUOTES = 6
PROJECT_GROUPS = 8
GIST_CHARS = 200
TITLE_WORDS = 3
_TITLE_TERM_CHARS = 30
_ENTITY_WEIGHT = 1.5
# Two gists this alike (shared words / all their words) say the same thing: the second is left out.
_SAME_GIST = 0.8

# A memory's words for a title, not a query's terms (cems_cli/text/terms.py): a title names files and paths
# whole ("src/cache.py", "next.config.ts"), and a number alone never makes one.
_WORD = re.compile(r"[A-Za-z][\w.+#/-]*[\w+#]|[A-Za-z]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])")
# A title's words are never the query's stop words, nor the words every captured record says.
_STOPWORDS = STOPWORDS | frozenset(
    "about after again all also any because before being here just let let's more most no not now once only "
    "other out over per same some such they those through too under up use used uses using via we'll while "
    "project session claude code asked changed failed passed ran run running worked instead done".split()
)


@dataclass(frozen=True)
class Member:
    """A memory as grouping and summarising see it."""

    id: str
    category: str
    text: str
    created_at: datetime
    source: str | None = None
    entities: tuple[str, ...] = ()  # what it names (cems_entities(), sql/010): the best words for a title


@dataclass
class Group:
    members: list[int] = field(default_factory=list)  # indices into the project's members
    centroid: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self.members)


@dataclass(frozen=True)
class Summary:
    level: int
    title: str
    content: str
    members: tuple[str, ...]
    period_start: datetime
    period_end: datetime
    method: str = "extractive"

    @property
    def member_key(self) -> str:
        return member_key(self.members)


def member_key(ids: Sequence[str]) -> str:
    """The identity of a group: the same members give the same key whatever their order."""
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:32]


def group_memories(
    vectors: np.ndarray,
    similarity: float = defaults.SUMMARY_SIMILARITY,
    max_size: int = defaults.SUMMARY_GROUP_SIZE,
) -> list[Group]:
    """Leader clustering of L2-normalised `vectors` (rows in the order the memories were recorded). Each
    memory costs one product with the centroids found so far: O(memories x groups)."""
    import numpy as np

    groups: list[Group] = []
    if len(vectors) == 0:
        return groups
    centroids = np.zeros((len(vectors), vectors.shape[1]), dtype=np.float32)  # at most one group a memory
    sums = np.zeros_like(centroids)
    open_ = np.zeros(len(vectors), dtype=bool)  # groups not yet full
    for index, vector in enumerate(vectors):
        best = -1
        if groups:
            alike = centroids[: len(groups)] @ vector
            alike[~open_[: len(groups)]] = -np.inf
            candidate = int(np.argmax(alike))
            if alike[candidate] >= similarity:
                best = candidate
        if best < 0:
            best = len(groups)
            groups.append(Group())
            open_[best] = True
        groups[best].members.append(index)
        sums[best] += vector
        norm = float(np.linalg.norm(sums[best]))
        centroids[best] = sums[best] / norm if norm else sums[best]
        if groups[best].size >= max_size:
            open_[best] = False
    for number, group in enumerate(groups):
        group.centroid = centroids[number].copy()
    return groups


def gist(member: Member, limit: int = GIST_CHARS) -> str:
    """The first sentences of what a memory says, at most `limit` characters, without the final stop. A
    captured session record starts with a line saying which session it was (its citation says that
    already): its gist is what came after ("Asked: …")."""
    text = member.text.strip()
    if member.category == "context" and member.source in ("session", "observer") and "\n" in text:
        text = text.split("\n", 1)[1]
    sentences = _SENTENCE_END.split(" ".join(text.split()))
    taken = sentences[0]
    for sentence in sentences[1:]:
        if len(taken) + 1 + len(sentence) > limit:
            break
        taken += " " + sentence
    if len(taken) > limit:
        cut = taken[: limit - 1]
        space = cut.rfind(" ")
        taken = (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "…"
    return taken.rstrip(".")


def _words(text: str) -> list[str]:
    return [w.lower().strip(".") for w in _WORD.findall(text) if w.lower().strip(".") not in _STOPWORDS
            and len(w) > 1 and not w.isdigit()]


def _title_terms(member: Member, own: set[str]) -> set[str]:
    """What a title may be made of: the memory's short entities (names of tools, files, services) and its
    content words."""
    named = {e for e in member.entities if len(e) <= _TITLE_TERM_CHARS and e.count(" ") <= 1}
    return {t for t in named | set(_words(member.text)) if t not in own}


def group_titles(members: Sequence[Member], groups: Sequence[Group], project: str) -> list[str]:
    """Each group's TITLE_WORDS most telling terms: named by many of its memories, by few of the project's
    other groups (TF-IDF over groups), a named entity before a plain word, the project's own name left out,
    no term inside one already chosen."""
    name = project.removeprefix("project:").lower()
    own = set(_words(name.replace("-", " ").replace("_", " "))) | {name}
    counts = [Counter(t for i in g.members for t in _title_terms(members[i], own)) for g in groups]
    named = [{e for i in g.members for e in members[i].entities} for g in groups]
    document_frequency: Counter[str] = Counter()
    for count in counts:
        document_frequency.update(count.keys())
    titles = []
    for count, entities in zip(counts, named, strict=True):
        def weight(item: tuple[str, int], entities: set[str] = entities) -> tuple[float, str]:
            term, seen = item
            idf = math.log((1 + len(groups)) / (1 + document_frequency[term])) + 0.1
            return -seen * idf * (_ENTITY_WEIGHT if term in entities else 1.0), term

        chosen: list[str] = []
        for term, _seen in sorted(count.items(), key=weight):
            if any(term in c or c in term for c in chosen):
                continue
            chosen.append(term)
            if len(chosen) == TITLE_WORDS:
                break
        titles.append(", ".join(chosen) or "various")
    return titles


def _alike(a: str, b: str) -> bool:
    """The same thing said twice: one gist inside the other (a session's record quotes the decision taken
    in it), or nearly the same words."""
    na, nb = " ".join(_words(a)), " ".join(_words(b))
    if not na or not nb:
        return a == b
    if na in nb or nb in na:
        return True
    wa, wb = set(na.split()), set(nb.split())
    return len(wa & wb) / len(wa | wb) >= _SAME_GIST


def _day(moment: datetime) -> str:
    return moment.date().isoformat()


def _period(moments: Sequence[datetime]) -> str:
    first, last = _day(min(moments)), _day(max(moments))
    return first if first == last else f"{first} – {last}"


def central_members(members: Sequence[Member], vectors: np.ndarray, group: Group, count: int) -> list[int]:
    """The `count` members closest to the group's centroid, in the order they were recorded."""
    import numpy as np

    if group.centroid is None or group.size <= count:
        return sorted(group.members)
    alike = vectors[group.members] @ group.centroid
    chosen = [group.members[i] for i in np.argsort(-alike, kind="stable")[:count]]
    return sorted(chosen)


def summarise_group(
    members: Sequence[Member], vectors: np.ndarray, group: Group, title: str, project: str
) -> Summary:
    """Level 1, extractive: "<project> — <title> (N memories, <period>): <date> <category>: <gist>; …"."""
    quoted: list[tuple[int, str]] = []
    for index in central_members(members, vectors, group, GROUP_QUOTES * 2):
        line = gist(members[index])
        if any(_alike(line, earlier) for _, earlier in quoted):
            continue
        quoted.append((index, line))
        if len(quoted) == GROUP_QUOTES:
            break
    lines = [f"{_day(members[i].created_at)} {members[i].category}: {line}" for i, line in quoted]
    moments = [members[i].created_at for i in group.members]
    name = project.removeprefix("project:") or "no project"
    head = f"{name} — {title} ({group.size} memories, {_period(moments)})"
    left = group.size - len(quoted)
    tail = f" (+{left} more)" if left > 0 else ""
    return Summary(
        level=1,
        title=title,
        content=head + ": " + "; ".join(lines) + tail + ".",
        members=tuple(members[i].id for i in group.members),
        period_start=min(moments),
        period_end=max(moments),
    )


_QUOTE_HEAD = re.compile(r"^\d{4}-\d{2}-\d{2} \w+: ")


def _lead(summary: Summary) -> str:
    """What a group summary says first, after its head: its first quoted memory (extractive) or its first
    sentence (a model's)."""
    body = summary.content.split(": ", 1)[-1]
    body = _QUOTE_HEAD.sub("", body)
    first = _SENTENCE_END.split(body.split("; ", 1)[0], maxsplit=1)[0].rstrip(".")
    return first if len(first) <= GIST_CHARS else first[: GIST_CHARS - 1].rstrip() + "…"


def summarise_project(project: str, groups: Sequence[Summary], member_count: int) -> Summary:
    """Level 2, extractive: the project's largest groups (then the latest), each with its period and its
    first quoted line."""
    name = project.removeprefix("project:") or "no project"
    start = min(g.period_start for g in groups)
    end = max(g.period_end for g in groups)
    shown = sorted(groups, key=lambda g: (-len(g.members), -g.period_end.timestamp()))[:PROJECT_GROUPS]
    parts = []
    for summary in sorted(shown, key=lambda g: g.period_start):
        said = _lead(summary)
        when = _period([summary.period_start, summary.period_end])
        parts.append(f"{summary.title} ({len(summary.members)}, {when}: {said})")
    more = len(groups) - len(shown)
    tail = f"; and {more} more topics" if more > 0 else ""
    content = (f"{name}: {member_count} memories in {len(groups)} topics, {_period([start, end])}. Topics: "
               + "; ".join(parts) + tail + ".")
    all_members = tuple(m for g in groups for m in g.members)
    return Summary(level=2, title=f"{name} overview", content=content, members=all_members,
                   period_start=start, period_end=end)
