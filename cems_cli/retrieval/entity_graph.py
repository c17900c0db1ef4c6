"""The entity graph (retrieval plan step 11): a memory that names what a strong result names is linked to it.

Every memory carries the entities it names (sql/010_entities.sql: code spans, paths, file names, snake_case
and hyphenated names, identifiers, proper nouns). Two memories naming the same rare entity are linked, and
after fusion a strong candidate lends score along its links, as session context lends it along a session:

    strength(d, c) = Σ idf(e) over the entities d shares with c  /  Σ idf(e) over c's entities     (0..1)
    link(d)        = max over the `top` best other candidates c of  fused(c) · strength(d, c)
    score(d)       = max(fused(d), fused(d) + weight · link(d) · (1 - fused(d)))                   (0..1)

This is the second hop of a multi-hop question: the first result names the person, the project or the file,
and a memory that says the rest about it, sharing no word with the question, rises. It only lends score:
a memory with no link keeps its own, whatever it names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cems_cli import defaults
from cems_cli.retrieval.types import Candidate

DEFAULT_TOP = defaults.ENTITY_TOP


def apply_entity_links(
    candidates: Sequence[Candidate],
    entities: Mapping[str, Sequence[str]],
    idf: Mapping[str, float],
    *,
    weight: float,
    top: int = DEFAULT_TOP,
) -> list[Candidate]:
    """Rescore `candidates` (best first) by their links to the `top` best; `entities` maps a document id to
    what it names, `idf` an entity to its weight (entities of the top candidates at least). Records
    `explain["entities"]` on every candidate that gained. Returns them best first."""
    if weight < 0 or top < 0:
        raise ValueError("entity link weight and top must be ≥ 0")
    sources = []
    for cand in list(candidates)[:top]:
        named = {e: idf.get(e, 0.0) for e in entities.get(cand.document_id, ())}
        mass = sum(named.values())
        if mass > 0:
            sources.append((cand.document_id, cand.score, named, mass))
    if not sources or weight == 0:
        return list(candidates)
    for cand in candidates:
        own = set(entities.get(cand.document_id, ()))
        if not own:
            continue
        best, via, shared_best = 0.0, None, []
        for doc_id, fused, named, mass in sources:
            if doc_id == cand.document_id:
                continue
            shared = [e for e in named if e in own]
            link = fused * sum(named[e] for e in shared) / mass
            if link > best:
                best, via, shared_best = link, doc_id, shared
        if best <= 0:
            continue
        lent = cand.score + weight * best * (1.0 - cand.score)
        if lent > cand.score:
            cand.explain["entities"] = {"via": via, "shared": sorted(shared_best), "link": best,
                                        "before": cand.score, "score": lent}
            cand.score = lent
    return sorted(candidates, key=lambda c: -c.score)
