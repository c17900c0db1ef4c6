"""Superseded memories: what a newer memory of the same project says was replaced weighs less.

"We'll use Kafka for the event stream" (September) and "Let's switch the event stream from Kafka to NATS"
(October) both answer "what do we use for the event stream?", and the older one says it in the question's
own words. Among a search's best candidates, a memory is superseded when a newer one of the same project, on
the same topic (cosine of their chunks at least `min_similarity`), says that what it names was replaced:
"switch … from A to B", "move … from A to B", "migrate from A", "replace A with B", "drop A and use B",
"instead of A", "rather than A", "no longer use A". Its score is multiplied by the weight
(`CEMS_SUPERSEDED_WEIGHT`) and kept below the memory that replaced it: still found, never ahead of it.
Pinned memories are never demoted; nor is a memory that itself says A was replaced (the decision, and the
session record quoting it).

Pure: no I/O. Hand-written patterns because no library reads "switch from A to B" in a commit-message
register; they run over a handful of candidates (microseconds).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cems_cli.models import project_of
from cems_cli.retrieval.types import Candidate

# The old thing: a name of one or two words ("Kafka", "Redux Toolkit", "log/slog", "sealed-secrets").
_NAME = r"(?:the\s+)?([\w./@+-]{2,40}(?:\s+(?-i:[A-Z])[\w./@+-]{1,30})?)"
_CHANGE = re.compile(
    r"\b(?:switch(?:ed|es|ing)?|mov(?:e|ed|es|ing)|migrat(?:e|ed|es|ing)|port(?:ed|s|ing)?|"
    r"chang(?:e|ed|es|ing))\b[^.;:!?\n]{0,60}?\bfrom\s+" + _NAME + r"\s+(?:to|over to|onto)\b"
    r"|\b(?:migrat(?:e|ed|es|ing)|mov(?:e|ed|es|ing))\s+(?:away\s+)?(?:off|from)\s+" + _NAME + r"\b"
    r"|\breplac(?:e|ed|es|ing)\s+" + _NAME + r"\s+(?:with|by)\b"
    r"|\b(?:drop|dropped|drops|dropping|remove|removed|ditch|ditched|retire|retired)\s+" + _NAME +
    r"\s+(?:and|for|in favou?r of)\b"
    r"|\b(?:instead\s+of|rather\s+than)\s+" + _NAME +
    r"|\bno\s+longer\s+(?:use|uses|using|run|runs|on)\s+" + _NAME,
    re.IGNORECASE,
)
# A superseded memory ends at most this share of the score of the memory that replaced it.
BELOW = 0.95
# Words that start no name: "instead of one shared bucket" names nothing that a memory could be about.
_STOP = frozenset("a an all any both each every it its my one ones our some that the their them these this "
                  "those two your using".split())


def replaced_names(text: str) -> set[str]:
    """The lower-cased names `text` says were replaced ("kafka", "redux toolkit")."""
    found: set[str] = set()
    for match in _CHANGE.finditer(text):
        name = next((g for g in match.groups() if g), "")
        name = name.strip(" .,;:").lower()
        if name and name.split()[0] not in _STOP and len(name) >= 2:
            found.add(name)
    return found


def _names(name: str) -> re.Pattern[str]:
    """A replaced name as whole words, its first word alone too ("Redux Toolkit" → "redux")."""
    first = name.split()[0]
    options = {re.escape(name), re.escape(first)} if len(first) >= 3 else {re.escape(name)}
    alternatives = "|".join(sorted(options, key=len, reverse=True))
    return re.compile(r"(?<![\w-])(?:" + alternatives + r")(?![\w-])", re.IGNORECASE)


def _cosine(a: Candidate, b: Candidate) -> float | None:
    if a.embedding is None or b.embedding is None:
        return None
    import numpy as np

    x = np.asarray(a.embedding, dtype=np.float32)
    y = np.asarray(b.embedding, dtype=np.float32)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norm if norm else None


def apply_supersession(candidates: Sequence[Candidate], weight: float, min_similarity: float) -> int:
    """Demote the candidates a newer one of the same project replaced (in place; their explain["adjust"]
    records it). Returns how many were demoted."""
    if weight >= 1.0 or len(candidates) < 2:
        return 0
    changes = [(c, replaced_names(c.content)) for c in candidates]
    newer_changes = [(c, names) for c, names in changes if names]
    if not newer_changes:
        return 0
    demoted = 0
    for old, own in changes:
        if old.pinned:
            continue
        for new, names in newer_changes:
            if new is old or new.created_at <= old.created_at or project_of(new.source_ref) != project_of(
                old.source_ref
            ):
                continue
            named = [n for n in names if n not in own and _names(n).search(old.content)]
            if not named:
                continue
            alike = _cosine(old, new)
            if alike is None or alike < min_similarity:
                continue
            adjust = old.explain.setdefault("adjust", {})
            # What ranking and confidence read after the adjustments: the weight, and at most just below the
            # memory that replaced it (said in the question's own words, the old one can be far ahead).
            before = adjust.get("unclamped", old.score)
            after = min(before * weight, new.explain.get("adjust", {}).get("unclamped", new.score) * BELOW)
            adjust["unclamped"] = after
            old.score = min(1.0, max(0.0, after))
            adjust["score"] = old.score
            adjust["superseded_by"] = {
                "id": new.document_id, "replaced": sorted(named), "cosine": round(alike, 4),
                "weight": weight,
            }
            demoted += 1
            break
    return demoted
