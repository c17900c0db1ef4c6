"""BM25 over the full-text index: statistics kept per connection, scoring pruned to the rarer terms.

PostgreSQL's own ts_rank has no IDF, which on conversational memories ranks filler words as highly as names
and topics, so BM25 is computed here, in SQL, from three statistics of what the asker can see: N (chunks),
the average content length, and each term's document frequency.

Cost at scale (bench/search_latency.py, 100k memories): scoring every chunk that matches any query term read
~14k rows for a four-term question, and the statistics took another ~120 ms (a count per term through the
documents' visibility). What makes it cheap:
- statistics are counted on the chunks' own owner columns (no join) and kept five minutes per connection
  and visibility (minutes of writes move an IDF by a rounding error; a term not seen before is counted
  when first asked for, and this connection's own writes drop what it keeps). In a store of 20k chunks or
  more whose every chunk the asker sees, a common term's frequency is the planner's estimate instead
  (ANALYZE's share, within a few percent; counting a term of 5-15k chunks took 10-40 ms);
- "max-score" pruning, exact for the result it returns: only chunks holding one of the query's rarer terms
  are scored first. A chunk holding none of them scores less than the summed IDF, at the shortest length,
  of the other terms it holds; when the limit-th score found beats that bound for all of them, nothing
  was missed. Otherwise only chunks holding one of the smallest sets of the other terms whose bound beats
  it are scored (`a & b`: chunks holding two common terms are far fewer than those holding either), after
  the chunks holding all of the other terms when those sets could match many: they raise the floor.
  In a big store, a term held by a large share of it (COMMON_FROM, COMMON_SHARE) brings no chunk in on its
  own when the query has a rarer term; the result is exact over the chunks holding one of the others.
"""
from __future__ import annotations

import itertools
import math
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from cems_cli import defaults
from cems_cli.store.memories import Identity, visibility_clause
from cems_cli.store.search import ChunkHit, SearchFilters, filter_clause

# BM25 parameters. Term frequency is taken as 1: memories are short and a word said twice in one memory
# rarely makes it twice as relevant.
BM25_K1 = 1.2
BM25_B = 0.4  # memories are short and similar in length: length matters less than usual
# A query term found only in a memory's context (weight D), not in its content (weight A), counts this much.
CONTEXT_TERM_WEIGHT = 0.5

# Query terms that stand next to each other ("support group", "dog park") and stand so in a memory's content
# add this much of their mean IDF: proximity is evidence that single terms cannot give (CEMS_PHRASE_WEIGHT;
# judged on both data sets in bench/RESULTS.md).
PHRASE_WEIGHT = defaults.PHRASE_WEIGHT
# Terms at most this many places apart in the query count as a pair (stop words in between keep their
# places, so "trip to the beach" pairs 'trip' and 'beach' at distance 3 and matches "trip to the beach").
PHRASE_MAX_DISTANCE = 3

# Pruning: the rarest terms are scored first while their chunks number at most this many together (the first
# term always). 2,000 rows score in ~15 ms; a common word of a 100k store matches 5-10k.
PRUNE_FIRST_CHUNKS = 2_000
# When even the rarest term holds this many chunks (~30 ms to score them whole), the chunks holding all the
# terms are scored first, for a floor (`_from_a_floor`). Lexical probe of a million templated memories, p50
# 186 -> 25 ms; below this its probes cost more than they save (100k: p50 13 -> 17 ms when always tried).
FLOOR_FIRST_FROM = 10_000
FLOOR_TRIES = 3
# Past the rarest terms, when the sets of the others that may still beat the floor can match this many chunks,
# the chunks holding all the others are scored first (at most RAISE_FLOOR_CHUNKS) to raise it. 1M memories of
# real text and filler, the hook's depth: 120 templated questions p50 50 -> 15 ms, p95 358 -> 130; 200 of
# the session sets' p50 5 ms either way; the same hits.
RAISE_FLOOR_FROM = 10_000
RAISE_FLOOR_CHUNKS = 10_000
# A term this many chunks hold, and this share of all, brings no chunk in on its own when the query has a
# rarer term: a memory sharing only "use" with "Which linter do we use?" is no evidence (idf ~1.4 in a
# million, against ~12 for "linter"), and finding the best of them meant scoring all 238k (0.6 s), since
# fewer than the limit hold "linter". Its chunks still score it when they hold another term. Only stores
# this large are concerned: below it, BM25 is exact over every chunk holding any query term. A million
# memories of real text and filler, 100 questions: the same top 10 for 98 (top 4 for 99), hybrid p50 82-111
# -> 70-85 ms, the prompt hook p50 291 -> 206-219 ms (bench/RESULTS.md).
COMMON_FROM = 10_000
COMMON_SHARE = 0.05
# Statistics are kept per connection for this long. Counting them afresh on every search cost a team
# member's search ~6 ms at 10k memories (1.9k visible: every row's visibility tested twice per search).
# The best chunks by score, this many times the limit, are checked against the live, category and project
# filters (archived, expired and rules memories are few; a --project filter may drop more, then all are).
FIRST_LIMIT_FACTOR = 4
# Past the first terms, chunks are matched by the smallest sets of the other terms that can still beat the
# scores found; more sets than this (many terms of like weight) and every chunk holding any of them is scored.
MAX_TERM_SETS = 64
MAX_SETS_TRIED = 4_096  # sets of up to 12 terms are all tried in ~5 ms; a long prompt's are not
MAX_TERM_ROUNDS = 16  # terms taken in one at a time before the rest are scored together
STATS_SECONDS = 300.0
# From this many chunks on, in a store whose every chunk the asker sees, a common lexeme's document frequency
# is the planner's estimate (the share ANALYZE found in its sample, within a few percent: an IDF moves by
# ~0.02) instead of a count of its 5-15k chunks (10-40 ms each); rarer lexemes, cheap to count, are counted.
# From this many on, the number of chunks is the table's row count as ANALYZE last found it.
ESTIMATE_FROM = 20_000
AVERAGE_SAMPLE_FROM = 20_000
AVERAGE_SAMPLE_CHUNKS = 4_000
_STATS_MAX_TERMS = 4_096  # document frequencies kept per connection and visibility
FTS_COUNTS_MAX = 1_000  # terms cems_fts_counts counts in one call (its limit)


@dataclass(frozen=True)
class LexicalTerms:
    lexemes: list[str]  # distinct stemmed, stopword-free lexemes (the english text search configuration)
    pairs: list[tuple[str, str, int]]  # (first, second, distance) of neighbouring lexemes in the query


def neighbouring_pairs(
    positions: Mapping[str, Sequence[int]], max_distance: int = PHRASE_MAX_DISTANCE
) -> list[tuple[str, str, int]]:
    """Distinct (first, second, distance) for lexemes that follow each other in the query within
    `max_distance` places; a lexeme next to itself ("very very") is no phrase."""
    ordered = sorted((place, lexeme) for lexeme, places in positions.items() for place in places)
    pairs: dict[tuple[str, str, int], None] = {}
    for (place, first), (next_place, second) in itertools.pairwise(ordered):
        if first != second and 0 < next_place - place <= max_distance:
            pairs.setdefault((first, second, next_place - place), None)
    return list(pairs)


def lexical_terms(conn: psycopg.Connection, query: str) -> LexicalTerms:
    """The query's lexemes and neighbouring pairs, in one round trip."""
    rows = conn.execute(
        "SELECT lexeme, positions FROM unnest(to_tsvector('english', %s))", (query,)
    ).fetchall()
    positions = {row[0]: list(row[1] or ()) for row in rows}
    return LexicalTerms(sorted(positions), neighbouring_pairs(positions))


def quoted(lexeme: str) -> str:
    """A lexeme as tsquery text: quoted, so any character in it is taken literally."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _phrase(first: str, second: str, distance: int) -> str:
    """Two lexemes `distance` places apart, both in the content (weight A)."""
    return f"{quoted(first)}:A <{distance}> {quoted(second)}:A"


# --- statistics ------------------------------------------------------------------------------------------


@dataclass
class _Stats:
    expires: float
    chunks: int  # N: visible chunks
    average_length: float  # mean count of distinct content lexemes of a visible chunk
    frequencies: dict[str, int]  # lexeme -> visible chunks holding it in their content
    sees_all: bool  # every chunk of the store is visible to the asker
    estimates: dict[str, float] | None = None  # the planner's share of chunks per common lexeme, once read


_STATS: weakref.WeakKeyDictionary[psycopg.Connection, dict[tuple[Any, ...], _Stats]] = (
    weakref.WeakKeyDictionary()
)


# A search scope as the SQL literal cems_fts_counts and cems_fts_chunks take (sql/015_fts_function.sql,
# 025): they apply the visibility clause of store/memories.py themselves, for members of a team server.
_SCOPE = {"personal": "'personal'", "shared": "'shared'", "both": "'both'"}


def _chunk_visibility(identity: Identity, scope: str) -> tuple[str, dict[str, Any]]:
    """What the asker may see, on the chunks' own owner columns (copied from their memory by a trigger)."""
    return visibility_clause(identity, scope, alias="c")


def collection_stats(
    conn: psycopg.Connection, identity: Identity, scope: str, lexemes: Sequence[str]
) -> tuple[int, float, list[int]]:
    """(N, average content length, document frequency of each lexeme) over the chunks the asker can see.
    Archived memories and rules count too: a statistic of the words in use, not a result."""
    where, params = _chunk_visibility(identity, scope)
    key = (identity.user, identity.team, scope)
    now = time.monotonic()
    per_conn = _STATS.setdefault(conn, {})
    stats = per_conn.get(key)
    if (stats is None or stats.expires <= now) and identity.restricted:
        # A member holds no privilege on the chunks (sql/019_member_api.sql): one function counts what they
        # may see and measures it, as below.
        row = conn.execute("SELECT chunks, average_length FROM cems_chunk_stats(%s, %s, %s, %s)",
                           (scope, identity.team, AVERAGE_SAMPLE_FROM, AVERAGE_SAMPLE_CHUNKS)).fetchone()
        assert row is not None  # the function returns one row
        stats = _Stats(now + STATS_SECONDS, int(row[0]), float(row[1]), {}, False)
    if stats is None or stats.expires <= now:
        # Whether any chunk is another user's: two probes of the owner index. When none is (one user's
        # store, or what row-level security lets through is all the asker's), N is every chunk; testing the
        # visibility of each row reads the whole table (130 ms at 100k).
        probe = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM memory_chunks WHERE user_id < %(vis_user)s) "
            "    OR EXISTS (SELECT 1 FROM memory_chunks WHERE user_id > %(vis_user)s), "
            "  (SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass('memory_chunks'))",
            params,
        ).fetchone()
        assert probe is not None  # a SELECT without FROM returns one row
        others, every = probe
        if every is None or every < ESTIMATE_FROM:
            # Counted while small. In a large store, the row count ANALYZE keeps (autovacuum refreshes it
            # as the table grows by a tenth) is as good for an IDF: counting a million chunks read the whole
            # 2 GB table, 0.5 s of a prompt every STATS_SECONDS on each of the search server's connections.
            row = conn.execute("SELECT count(*) FROM memory_chunks").fetchone()
            assert row is not None  # an aggregate returns one row
            every = int(row[0])
        visible = every
        if others:
            row = conn.execute(f"SELECT count(*) FROM memory_chunks c WHERE {where}", params).fetchone()
            assert row is not None  # an aggregate returns one row
            visible = row[0]
        stats = _Stats(now + STATS_SECONDS, int(visible), _average_length(conn, where, params, every), {},
                       not others)
    missing = [lexeme for lexeme in lexemes if lexeme not in stats.frequencies]
    if missing and stats.sees_all and stats.chunks >= ESTIMATE_FROM:
        if stats.estimates is None:
            stats.estimates = _planner_frequencies(conn)
        for lexeme in missing:
            share = stats.estimates.get(lexeme)
            if share is not None:
                stats.frequencies[lexeme] = round(share * stats.chunks)
        missing = [lexeme for lexeme in missing if lexeme not in stats.frequencies]
    if missing:
        # One GIN probe per term. When the asker sees every chunk (one user's store; under row-level
        # security, the rows the policies let through), the owner test is left out: no second index to
        # AND with and no owner filter per row (a common term of a 100k store: 29 -> 15 ms).
        owner = "" if stats.sees_all else f" AND {where}"
        terms = [quoted(lexeme) + ":A" for lexeme in missing]
        counted = []
        if identity.restricted:
            # One call for every term (sql/025_searches_and_changes.sql), which applies the visibility
            # clause itself; a long prompt's terms go FTS_COUNTS_MAX at a time.
            for start in range(0, len(terms), FTS_COUNTS_MAX):
                counted_row = conn.execute(
                    f"SELECT cems_fts_counts(%(terms)s::tsquery[], {_SCOPE[scope]}, %(vis_team)s)",
                    {**params, "terms": terms[start:start + FTS_COUNTS_MAX]},
                ).fetchone()
                assert counted_row is not None  # a SELECT without FROM returns one row
                counted += counted_row[0]
        else:
            counted_row = conn.execute(
                "SELECT array(SELECT (SELECT count(*) FROM memory_chunks c WHERE c.search_vector @@ t.q"
                f"{owner}) FROM unnest(%(terms)s::tsquery[]) WITH ORDINALITY AS t(q, i) ORDER BY t.i)",
                {**params, "terms": terms},
            ).fetchone()
            assert counted_row is not None  # a SELECT without FROM returns one row
            counted = counted_row[0]
        if len(stats.frequencies) + len(missing) > _STATS_MAX_TERMS:
            stats.frequencies.clear()
        stats.frequencies.update(zip(missing, (int(n) for n in counted), strict=True))
    frequencies = [stats.frequencies[lexeme] for lexeme in lexemes]
    per_conn[key] = stats
    return stats.chunks, stats.average_length, frequencies


def _planner_frequencies(conn: psycopg.Connection) -> dict[str, float]:
    """The share of chunks holding each of the store's most common lexemes, from the statistics ANALYZE
    keeps (the planner's), when they describe content alone: no chunk of the sample had a context, whose
    words they would count too. Empty when there are none, or the session may not read them (row-level
    security hides them from an application role: they describe every user's rows)."""
    row = conn.execute(
        "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.null_frac FROM pg_stats s "
        "JOIN pg_stats c ON c.schemaname = s.schemaname AND c.tablename = s.tablename "
        "  AND c.attname = 'context' "
        "WHERE s.schemaname = current_schema() AND s.tablename = 'memory_chunks' "
        "  AND s.attname = 'search_vector'"
    ).fetchone()
    if row is None or not row[0] or not row[1] or row[2] is None or row[2] < 1.0:
        return {}
    elements, shares = row[0], row[1]
    return {lexeme: float(share) for lexeme, share in zip(elements, shares[: len(elements)], strict=True)}


def _average_length(conn: psycopg.Connection, where: str, params: dict[str, Any], chunks: int) -> float:
    """Mean count of distinct content lexemes per visible chunk. Past AVERAGE_SAMPLE_FROM chunks it is taken
    from a fixed sample of the table's pages (every chunk: ~100 ms at 100k, the sample ~5 ms), the same
    sample each time, so a search stays reproducible."""
    length = "avg(length(ts_filter(c.search_vector, '{a}')))"
    row = None
    if chunks > AVERAGE_SAMPLE_FROM:
        row = conn.execute(
            f"SELECT {length} FROM memory_chunks c TABLESAMPLE SYSTEM (%(share)s) REPEATABLE (0) "
            f"WHERE {where}",
            {**params, "share": 100.0 * AVERAGE_SAMPLE_CHUNKS / chunks},
        ).fetchone()
    if row is None or row[0] is None:
        row = conn.execute(f"SELECT {length} FROM memory_chunks c WHERE {where}", params).fetchone()
    return float(row[0]) if row and row[0] is not None else 0.0


def forget_stats(conn: psycopg.Connection) -> None:
    """Drop what this connection keeps: its own writes (a memory stored, a bulk load) count at once."""
    _STATS.pop(conn, None)


# --- scoring ---------------------------------------------------------------------------------------------


def bm25_idf(total: int, frequency: int) -> float:
    """BM25's inverse document frequency of a term `frequency` of `total` documents hold."""
    return math.log(1.0 + (total - frequency + 0.5) / (frequency + 0.5))


def _first_terms(frequencies: dict[str, int]) -> list[str]:
    """The rarest terms whose chunks number at most PRUNE_FIRST_CHUNKS together, and at least one term held
    by some chunk (a term no content holds is taken for what its contexts match, and does not count)."""
    chosen: list[str] = []
    rows = 0
    for lexeme in sorted(frequencies, key=lambda x: (frequencies[x], x)):
        if rows and rows + frequencies[lexeme] > PRUNE_FIRST_CHUNKS:
            break
        chosen.append(lexeme)
        rows += frequencies[lexeme]
    return chosen


def _bound(lexemes: Sequence[str], idf_of: dict[str, float], pairs, phrase_weights: list[float]) -> float:
    """The highest score a chunk holding only `lexemes` can reach: all of them and their phrases in its
    content, at length zero (where the length factor peaks at (k1 + 1) / (1 + k1 (1 - b)))."""
    held = set(lexemes)
    total = sum(idf_of[lexeme] for lexeme in held)
    total += sum(w for (a, b, _), w in zip(pairs, phrase_weights, strict=True) if a in held and b in held)
    return total * (BM25_K1 + 1) / (1 + BM25_K1 * (1 - BM25_B))


def _best(rows: list[Any], limit: int) -> list[Any]:
    return sorted(rows, key=lambda r: (-r[3], r[0]))[:limit]


def _sets_that_may_beat(terms: Sequence[str], floor: float, idf_of: dict[str, float], pairs,
                        phrase_weights: list[float],
                        also: Sequence[str] = ()) -> list[tuple[str, ...]] | None:
    """The smallest sets of `terms` whose bound beats `floor` (with the terms `also` there, which every chunk
    may hold besides): a chunk must hold one of them to score above it. None when they would take too long
    to find or be too many to write out (a long prompt's terms)."""
    found: list[tuple[str, ...]] = []
    tried = 0
    for size in range(1, len(terms) + 1):
        for candidate in itertools.combinations(terms, size):
            tried += 1
            if tried > MAX_SETS_TRIED:
                return None
            if any(set(smaller) <= set(candidate) for smaller in found):
                continue
            if _bound((*candidate, *also), idf_of, pairs, phrase_weights) > floor:
                found.append(candidate)
                if len(found) > MAX_TERM_SETS:
                    return None
    return found


def lexical_hits(
    conn: psycopg.Connection,
    query: str,
    filters: SearchFilters,
    limit: int,
    phrase_weight: float | None = None,
) -> list[ChunkHit]:
    """BM25 over the full-text index: any query term may match (natural questions rarely contain every
    term), and rare terms count more than common ones (inverse document frequency over what the asker can
    see). Neighbouring query terms found side by side in a memory add `phrase_weight` (PHRASE_WEIGHT when
    None) of their mean IDF."""
    phrase_weight = PHRASE_WEIGHT if phrase_weight is None else phrase_weight
    terms = lexical_terms(conn, query)
    lexemes = terms.lexemes
    if not lexemes:
        return []
    total, average_length, frequencies = collection_stats(conn, filters.identity, filters.scope, lexemes)
    idf = [bm25_idf(total, df) for df in frequencies]
    idf_of = dict(zip(lexemes, idf, strict=True))
    phrase_weights = [phrase_weight * (idf_of[a] + idf_of[b]) / 2 for a, b, _ in terms.pairs]
    scoring = _Scoring(terms, idf, phrase_weights, max(average_length, 1.0), filters, limit)
    frequency_of = dict(zip(lexemes, frequencies, strict=True))
    rows = _from_a_floor(conn, scoring, terms, frequency_of, idf_of, phrase_weights, limit)
    if rows is None:
        rows = _rarest_first(conn, scoring, terms, frequency_of, idf_of, phrase_weights, limit,
                             _too_common(frequency_of, total))
    full_match = sum(idf)
    return [ChunkHit(str(r[0]), str(r[1]), r[2], float(r[3]), full_match) for r in rows]


def _too_common(frequency_of: dict[str, int], total: int) -> list[str]:
    """The query's terms that bring no chunk in on their own (COMMON_FROM, COMMON_SHARE), when a rarer term
    some chunk holds is there to."""
    common = [lexeme for lexeme, n in frequency_of.items() if n >= max(COMMON_FROM, COMMON_SHARE * total)]
    opening = any(n > 0 and lexeme not in common for lexeme, n in frequency_of.items())
    return common if opening else []


def _rarest_first(conn: psycopg.Connection, scoring: _Scoring, terms: LexicalTerms,
                  frequency_of: dict[str, int], idf_of: dict[str, float], phrase_weights: list[float],
                  limit: int, common: Sequence[str] = ()) -> list[Any]:
    """Max-score pruning: score the chunks holding the rarer terms; while a chunk holding only the other
    terms could still beat the limit-th score found, take the next rarest term in and score again. The
    `common` terms open no match: they count in the scores of chunks holding another term."""
    first = _first_terms({lexeme: n for lexeme, n in frequency_of.items() if lexeme not in common})
    rest = sorted((x for x in terms.lexemes if x not in first and x not in common),
                  key=lambda x: (frequency_of[x], x))
    rows = scoring.run(conn, [(term,) for term in first])
    rounds = 0
    raised = False
    covered: tuple[str, ...] | None = None  # every chunk holding all of these was scored
    while rest:
        floor = rows[limit - 1][3] if len(rows) >= limit else None
        if floor is not None and floor > _bound([*rest, *common], idf_of, terms.pairs, phrase_weights):
            break
        # A chunk holding none of the first terms scores less than the bound of the terms it holds: only
        # chunks holding a set of the other terms whose bound beats the limit-th score found can enter.
        # Those hold one of the smallest such sets (an AND of two common terms matches a small share of
        # either's chunks); the best of both passes are the best of all.
        sets = None
        if floor is not None:
            sets = _sets_that_may_beat(rest, floor, idf_of, terms.pairs, phrase_weights, also=common)
        if sets is not None and not raised and _may_match(sets, frequency_of) >= RAISE_FLOOR_FROM:
            # Those sets may hold tens of thousands of chunks (words said together: "image resizer"). The
            # chunks holding all the other terms, the best of the rest, raise the floor the sets are found
            # from (unless they are one of the sets: that set is scored).
            raised = True
            held = tuple(lexeme for lexeme in rest if frequency_of[lexeme] > 0)
            if len(held) >= 2 and not any(set(held) <= set(group) for group in sets):
                rows, covered = _raise_floor(conn, scoring, rows, held, first, limit)
                continue
        if sets is not None:
            # Chunks holding a set with every term of `covered` in it were all scored already.
            sets = [group for group in sets if covered is None or not set(covered) <= set(group)]
            if sets:
                rows = _merged(rows, scoring.run(conn, sets, excluding=first), limit)
            break
        rounds += 1
        if rounds > MAX_TERM_ROUNDS:
            # A long prompt's terms, one by one, were hundreds of statements (on a team server each a call of
            # the search's allowance, sql/025): the chunks holding any of the rest are scored in one pass.
            rows = _merged(rows, scoring.run(conn, [(term,) for term in rest], excluding=first), limit)
            break
        # Too few chunks found to bound anything, or too many sets: the next rarest term's chunks are scored
        # whole, and the bound is tried again.
        term = rest.pop(0)
        rows = _merged(rows, scoring.run(conn, [(term,)], excluding=first), limit)
        first.append(term)
    return rows


def _may_match(sets: Sequence[tuple[str, ...]], frequency_of: dict[str, int]) -> int:
    """At most how many chunks hold one of the `sets`: each set's rarest term's chunks, summed."""
    return sum(min(frequency_of[lexeme] for lexeme in group) for group in sets)


def _raise_floor(conn: psycopg.Connection, scoring: _Scoring, rows: list[Any], held: tuple[str, ...],
                 first: Sequence[str], limit: int) -> tuple[list[Any], tuple[str, ...] | None]:
    """`rows` with the best chunks holding all of `held` and none of `first`, and `held` when every such chunk
    was read (None when the cap cut them short: their scores still count, as any scored chunk's do)."""
    more, complete = scoring.run_capped(conn, [held], RAISE_FLOOR_CHUNKS, excluding=first)
    return _merged(rows, more, limit), held if complete else None


def _merged(rows: list[Any], more: list[Any], limit: int) -> list[Any]:
    """The `limit` best of two passes, a chunk scored by both once."""
    return _best(list({row[0]: row for row in rows + more}.values()), limit)


def _from_a_floor(conn: psycopg.Connection, scoring: _Scoring, terms: LexicalTerms,
                  frequency_of: dict[str, int], idf_of: dict[str, float], phrase_weights: list[float],
                  limit: int) -> list[Any] | None:
    """When even the rarest term is too common to score whole (a big store where every term of the query is
    common: 31k chunks, 0.1-0.3 s, for "Jonas" in a million memories), the chunks holding every term some
    content holds are scored first, the commonest let go while fewer than the limit hold them all. They are
    few and among the best, so the limit-th of them is a floor that only chunks holding one of the smallest
    sets of terms whose bound beats it can pass. Exact like the rest of the pruning. None when that is no
    cheaper (the sets match more chunks than the rarest term does): pruning starts from the rarest term."""
    rarest = min((n for n in frequency_of.values() if n > 0), default=0)
    held = sorted((lexeme for lexeme, n in frequency_of.items() if n > 0), key=lambda x: (frequency_of[x], x))
    if rarest < FLOOR_FIRST_FROM or len(held) < 2:
        return None
    rows: list[Any] = []
    # Fewer chunks than the limit hold them all: the most common term is let go, a few times at most (a long
    # prompt's many terms would otherwise be as many statements before the usual path).
    for _ in range(FLOOR_TRIES):
        rows = scoring.run(conn, [tuple(held)])
        if len(rows) >= limit or len(held) <= 2:
            break
        held.pop()
    if len(rows) < limit:
        return None
    sets = _sets_that_may_beat(list(frequency_of), rows[limit - 1][3], idf_of, terms.pairs, phrase_weights)
    if sets is None:
        return None
    # Chunks holding a set with those terms in it were all scored already; no set at all: nothing beats it.
    others = [group for group in sets if not set(held) <= set(group)]
    # No cheaper than the rarest term: a set of one term as common, or sets that match as many chunks
    # together. An AND of common terms matches far fewer chunks than its rarest term holds, but how many is
    # not known from the terms' frequencies (they co-occur: "connection timeout"): the sets' chunks are
    # scored up to as many as the rarest term holds, and given up if there are more. A million templated
    # memories, the prompt hook's depth: lexical probe p50 168 -> 23 ms against a bound from the
    # frequencies alone (the smallest frequency of each set, summed).
    if sum(frequency_of[group[0]] for group in others if len(group) == 1) >= rarest:
        return None
    if not others:
        return rows
    more, complete = scoring.run_capped(conn, others, rarest)
    return _merged(rows, more, limit) if complete else None


def _tsquery(matching: Sequence[tuple[str, ...]], excluding: Sequence[str] = ()) -> str:
    """Chunks holding every term of one of the `matching` sets, and none of `excluding`."""
    wanted = "(" + " | ".join("(" + " & ".join(quoted(lexeme) for lexeme in group) + ")"
                              for group in matching) + ")"
    if excluding:
        wanted += " & !(" + " | ".join(quoted(lexeme) for lexeme in excluding) + ")"
    return wanted


class _Scoring:
    """The BM25 statement of one query: every term's and phrase's contribution written out as its own CASE
    (2.4x faster per row than summing over unnested arrays: 15 against 37 ms for 5k rows)."""

    def __init__(self, terms: LexicalTerms, idf: list[float], phrase_weights: list[float],
                 average_length: float, filters: SearchFilters, limit: int) -> None:
        self.limit = limit
        self.restricted = filters.identity.restricted
        self.where, self.params = filter_clause(filters)
        chunk_where, chunk_params = _chunk_visibility(filters.identity, filters.scope)
        # The chunks that match, visible to the asker. Under row-level security through cems_fts_chunks
        # (sql/015_fts_function.sql): it runs as its owner, so the GIN index serves the match, and returns
        # what the score reads. Written as a plain condition the match would have to wait for the policy (it
        # is not LEAKPROOF, or EXPLAIN would show a member the rows it hides) and read every visible chunk.
        if filters.identity.restricted:
            self.matched = f"cems_fts_chunks(%(matching)s::tsquery, {_SCOPE[filters.scope]}, %(vis_team)s) c"
        else:
            self.matched = f"memory_chunks c WHERE c.search_vector @@ %(matching)s::tsquery AND {chunk_where}"
        self.params.update(chunk_params)
        self.params.update(f_scope=filters.scope, f_category=filters.category or None,
                           f_project=filters.project or None)
        self.params.update(k1=BM25_K1, b=BM25_B, ctx=CONTEXT_TERM_WEIGHT, avgdl=average_length, limit=limit,
                           first_limit=limit * FIRST_LIMIT_FACTOR)
        parts = []
        for i, (lexeme, weight) in enumerate(zip(terms.lexemes, idf, strict=True)):
            self.params.update({f"t{i}": quoted(lexeme), f"a{i}": quoted(lexeme) + ":A", f"w{i}": weight})
            # Most terms are absent from most chunks: one test settles those, a second the weight.
            parts.append(f"CASE WHEN NOT c.search_vector @@ %(t{i})s::tsquery THEN 0 "
                         f"WHEN c.search_vector @@ %(a{i})s::tsquery THEN %(w{i})s "
                         f"ELSE %(w{i})s * %(ctx)s END")
        for j, (pair, weight) in enumerate(zip(terms.pairs, phrase_weights, strict=True)):
            self.params.update({f"p{j}": _phrase(*pair), f"pw{j}": weight})
            parts.append(f"CASE WHEN c.search_vector @@ %(p{j})s::tsquery THEN %(pw{j})s ELSE 0 END")
        self.score = (
            "(" + " + ".join(parts) + ") * (%(k1)s + 1) / (1 + %(k1)s * (1 - %(b)s + %(b)s * "
            "length(ts_filter(c.search_vector, '{a}')) / %(avgdl)s))"
        )

    def run(self, conn: psycopg.Connection, matching: Sequence[tuple[str, ...]],
            excluding: Sequence[str] = ()) -> list[Any]:
        """The `limit` best chunks among those holding every term of one of the `matching` sets and none of
        `excluding`, scored on every query term, best first (ties by id).

        The chunks are scored on their own (their owner columns say who may see them) and only the best few
        are joined to their memories for the live, category and project filters: joining every match made
        the planner hash all 100k memories (20 ms). When the filters drop too many of those few, the match
        set is joined whole."""
        params = {**self.params, "matching": _tsquery(matching, excluding)}
        scored = f"SELECT c.id, c.document_id, c.chunk_index, {self.score} AS score FROM {self.matched}"
        rows = conn.execute(self._joined(f"{scored} ORDER BY score DESC, c.id LIMIT %(first_limit)s"),
                            params).fetchall()
        if len(rows) < self.limit and self._more_than_first(conn, params):
            rows = conn.execute(self._joined(scored), params).fetchall()
        return rows

    def run_capped(self, conn: psycopg.Connection, matching: Sequence[tuple[str, ...]], cap: int,
                   excluding: Sequence[str] = ()) -> tuple[list[Any], bool]:
        """As `run`, reading at most `cap` matching chunks: (the best of them, whether they were all)."""
        params = {**self.params, "matching": _tsquery(matching, excluding), "cap": cap}
        # The first `cap` matches, scored, and how many there were (a window count, before the limit).
        capped = (f"(SELECT c.id, c.document_id, c.chunk_index, c.search_vector FROM {self.matched} "
                  "LIMIT %(cap)s) c")
        counted = (f"SELECT c.id, c.document_id, c.chunk_index, {self.score} AS score, "
                   f"count(*) OVER () AS matched FROM {capped} "
                   "ORDER BY score DESC, c.id LIMIT %(first_limit)s")
        rows = conn.execute(self._joined(counted, ", m.matched"), params).fetchall()
        if rows and rows[0][4] >= cap:
            return [row[:4] for row in rows], False
        if len(rows) >= self.limit or (rows and rows[0][4] <= params["first_limit"]):
            return [row[:4] for row in rows], True
        # Nothing came back, or the filters dropped too many of the best: as without a cap.
        return self.run(conn, matching, excluding), True

    def _joined(self, scored: str, extra: str = "") -> str:
        """The scored chunks joined to their memories for the filters. A member's memories pass the same
        filters in cems_matching_documents (sql/019_member_api.sql), for just the memories of those chunks."""
        if self.restricted:
            return (f"WITH m AS MATERIALIZED ({scored}) "
                    f"SELECT m.id, m.document_id, m.chunk_index, m.score{extra} FROM m "
                    "WHERE m.document_id IN ("
                    "  SELECT cems_matching_documents(ARRAY(SELECT DISTINCT document_id FROM m), "
                    "    %(f_scope)s, %(vis_team)s, %(f_category)s, %(f_project)s)) "
                    "ORDER BY m.score DESC, m.id LIMIT %(limit)s")
        return (f"SELECT m.id, m.document_id, m.chunk_index, m.score{extra} FROM ({scored}) m "
                f"JOIN memory_documents d ON d.id = m.document_id WHERE {self.where} "
                "ORDER BY m.score DESC, m.id LIMIT %(limit)s")

    def _more_than_first(self, conn: psycopg.Connection, params: dict[str, Any]) -> bool:
        row = conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {self.matched} LIMIT %(first_limit)s + 1) matched",
            params,
        ).fetchone()
        return bool(row and row[0] > params["first_limit"])
