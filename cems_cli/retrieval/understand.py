"""Query understanding without a model: intent, complexity, domains, entities, signals, route.

This is what runs when no LLM is configured, and the fallback for every field an LLM answers badly
(`parse_llm_analysis`). Everything here is regular expressions over the query text: microseconds, no I/O.

Routing (auto mode, seed 000 "route_to_strategy"): vector only for simple queries that need no reasoning
and touch at most one domain; hybrid for moderate/complex, reasoning, 2+ domains, and (seed 000's hybrid
use cases) preference queries. We also send to hybrid:
- temporal and aggregation queries: they need the date-aware expansions and the session context that
  only the hybrid path runs;
- queries naming an entity (identifier, path, quoted text, proper name): exact strings are what the
  lexical stream finds and embeddings blur (on LoCoMo BM25 alone beats MiniLM cosine, 0.453 vs 0.331).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from cems_cli.retrieval.types import (
    COMPLEXITIES,
    INTENTS,
    ROUTES,
    Complexity,
    Intent,
    QueryAnalysis,
    Route,
)
from cems_cli.text.terms import name_tokens, query_terms, words

# ---------------------------------------------------------------------------------------------- domains
# Each keyword belongs to one domain only, so "2+ domains" really means the query spans areas.
_DOMAIN_WORDS: dict[str, frozenset[str]] = {
    "database": frozenset(
        "database databases db sql postgres postgresql psql mysql sqlite mongodb mongo redis schema "
        "migration migrations pgvector orm sqlalchemy prisma tsvector".split()
    ),
    "frontend": frozenset(
        "frontend front-end react vue svelte angular css html dom tailwind ui ux browser nextjs next.js "
        "vite webpack jsx tsx".split()
    ),
    "backend": frozenset(
        "backend back-end api apis endpoint endpoints server restful graphql fastapi django flask express "
        "grpc microservice microservices http webhook".split()
    ),
    "devops": frozenset(
        "docker kubernetes k8s ci cd deploy deploying deployment deployments terraform ansible helm nginx "
        "coolify aws gcp azure container containers compose hetzner".split()
    ),
    "testing": frozenset(
        "test tests testing pytest jest vitest unittest mock mocks fixture fixtures coverage e2e "
        "playwright cypress tdd".split()
    ),
    "security": frozenset(
        "security auth authentication authorization oauth jwt password passwords secret secrets cors "
        "csrf xss vulnerability vulnerabilities encryption tls ssl permission permissions".split()
    ),
    "git": frozenset(
        "git commit commits branch branches merge rebase github gitlab cherry-pick stash".split()
    ),
    "python": frozenset(
        "python pip venv poetry uv pydantic asyncio typer numpy pandas ruff mypy pyproject".split()
    ),
    "javascript": frozenset(
        "javascript js typescript ts node nodejs node.js npm yarn pnpm bun deno eslint".split()
    ),
}
_DOMAIN_PHRASES: dict[str, tuple[str, ...]] = {
    "git": ("pull request", "merge conflict"),
    "devops": ("github actions", "docker compose"),
    "security": ("api key", "access token"),
}

# ---------------------------------------------------------------------------------------------- signals
_TEMPORAL = re.compile(
    r"\b(?:first|last|before|after|when|yesterday|today|tonight|tomorrow|ago|since|until|till|dates?|"
    r"recent|recently|lately|earlier|earliest|latest|previous|previously|during|timeline|"
    r"weeks?|months?|years?|weekend|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"january|february|march|april|june|july|august|september|october|november|december|"
    r"how long|what time|(?:19|20)\d\d)\b"
)
_PREFERENCE = re.compile(
    r"\brecommend\w*|\bsuggest\w*|\bwhat should (?:i|we)\b|"
    r"\bshould (?:i|we) (?:use|try|pick|choose|go with|learn|read|watch|buy)\b|"
    r"\bprefer\w*|\bfavou?rite\b|\bbest\b[^?.!]*\bfor me\b|\b(?:would|might|do) i (?:like|enjoy|love)\b"
)
_AGGREGATION = re.compile(
    r"\bhow (?:many|much|often)\b|\bnumber of\b|\bcount\b|\btotal\b|\bevery\b|\beach\b|"
    r"\ball (?:the|my|of|our|your|times?|sessions?)\b|^\s*list\b|\blist (?:all|my|the|every|of)\b"
)

# Questions about a whole project or topic rather than one fact ("catch me up", "what have we done on billing
# this month?"): answered first from summaries of groups of memories (retrieval/raptor.py). "What did we
# decide about X" asks for one fact and is left out; so is every question about one thing.
_WHEN_SPAN = r"(?:this|last|past) (?:week|month|sprint|quarter|year)|recently|lately|today|yesterday|so far"
_OVERVIEW = re.compile(
    r"\boverview\b|\bsummar(?:y|ies|ise|ize)\b|\brecap\b|\bcatch (?:me|us) up\b|"
    r"\b(?:bring|get) (?:me|us) up to speed\b|\bwhere (?:are|were|do) we (?:at|stand)\b|\bwhere are we\b|"
    r"\bwhat (?:have|had) (?:we|i|you) (?:been )?(?:done|doing|worked on|working on|changed|built)\b|"
    r"\bwhat (?:did|do) (?:we|i|you) (?:work on|change|build)\b|"
    rf"\bwhat (?:did|do) (?:we|i|you) do (?:on \S+(?: \S+)? )?(?:{_WHEN_SPAN})\b|"
    rf"\bwhat(?:'s| has)? (?:been )?(?:happened|happening|going on) (?:{_WHEN_SPAN}|since)\b|"
    r"\bwhat(?:'s| has) been (?:happening|going on)\b|"
    r"\b(?:history|state|status) of\b|\b(?:our|the) progress on\b|\beverything (?:about|on)\b"
)
# What is left of an overview question once its overview words are gone: with nothing left it asks for
# the whole project ("catch me up"), else for a topic ("what have we done on billing?").
_OVERVIEW_WORDS = frozenset(
    "overview summary summaries summarise summarize recap catch me us up bring get speed where stand at "
    "done do doing worked work working been changed change built build happened happening going on history "
    "state status progress everything about project repo repository codebase this last past month week "
    "weeks months today yesterday recently so far lately give tell please quick short".split()
)


def is_overview(query: str) -> bool:
    return bool(_OVERVIEW.search(query.lower()))


def overview_topic(query: str) -> list[str]:
    """The content words of an overview question besides its overview words: its topic, if it has one."""
    return [t for t in query_terms(query) if t not in _OVERVIEW_WORDS]


# Questions about the world rather than about the asker's own work: "Explain what React.memo does", "What's
# the difference between a Deployment and a StatefulSet?", "How do generics work in Go?", "What is a
# goroutine?". Memories answer them only when one is about the very thing asked (the prompt hook asks for
# that evidence, _rank.GENERAL_MIN_LEXICAL); otherwise whatever shares a topic word is injected as noise.
# A question that speaks of "we", "our", "here", "this repo"… or of the past is about the asker's work.
_GENERAL_KNOWLEDGE = re.compile(
    r"^(?:(?:can|could) you |please )?(?:explain|describe)\b|"
    r"^what(?:'s| is| are) the differences? between\b|\bdifferences? between\b.*\band\b|"
    r"^what(?:'s| is| are) (?:an?|the purpose of|the point of)\s(?:\S+\s?){1,3}[?.!]*$|"
    r"^how (?:do|does) [^?]*\bwork(?:s)?(?: in [\w.#+ -]+| under the hood)?\s*[?.!]*$"
)
_ABOUT_OWN_WORK = re.compile(
    r"\b(?:we|our|ours|us|i|my|mine|me|he|she|his|her|him|they|their|them|here|before|previously|again|"
    r"yesterday|ago|last \w+|did|was|were|had|have|has|failed|broke|changed|decided|fixed|happened)\b|"
    r"\bthis (?:repo|repository|project|codebase|code|service|app|team|branch)\b"
)


def asks_general_knowledge(query: str) -> bool:
    """The question asks about the world (how a language, library or tool works), not about the asker's
    work: see _GENERAL_KNOWLEDGE."""
    text = " ".join(query.lower().split())
    return bool(_GENERAL_KNOWLEDGE.search(text)) and not _ABOUT_OWN_WORK.search(text)


# ----------------------------------------------------------------------------------------------- intent
_RECALL_STRONG = re.compile(
    r"\b(?:did|have|had|was|were) (?:i|we)\b|\bremember\b|\brecall\b|\blast time\b|\bpreviously\b|"
    r"\b(?:i|we) (?:used|said|mentioned|told|decided|chose|wrote|fixed|tried)\b"
)
_RECALL_WEAK = re.compile(r"\b(?:my|our|i|we)\b")
_TROUBLE = re.compile(
    r"\berrors?\b|\bexceptions?\b|\btraceback\b|\bcrash\w*|\bfail\w*|\bbroken\b|\bbugs?\b|\bfix(?:es|ed|ing)?\b|"
    r"\bdebug\w*|\bissues?\b|\bproblems?\b|\bwrong\b|\bhang(?:s|ing)?\b|\btime(?:d)? ?out\b|"
    r"\brefused\b|\bdenied\b|\bnot working\b|\bdoes(?:n't| not) work\b|\bwon't\b|\bcan't\b|\bcannot\b|"
    r"\bunable\b|\bstack ?trace\b|\bsegfault\b|\bpanic\w*|\bwhy (?:is|does|do|am|are|did)\b"
)
_HOW_TO = re.compile(
    r"^\s*how (?:do|can|should|would|to)\b|\bhow to\b|\bsteps to\b|\bset ?up\b|\bconfigur\w*|"
    r"\binstall\w*|\bway to\b"
)

# ------------------------------------------------------------------------------------------- complexity
_COMPARISON = re.compile(
    r"\bcompar\w*|\bvs\b|\bversus\b|\bdifferen(?:ce|ces|t) between\b|\btrade-?offs?\b|"
    r"\bpros and cons\b|\bbetter than\b|\bwhich\b[^?]*\bor\b"
)
_WHY = re.compile(r"\bwhy\b")
_SECOND_QUESTION = re.compile(r"\band (?:what|how|why|when|which|where|who)\b")
_ORDERING = re.compile(r"\b(?:first|before|after|earlier|earliest|latest|last)\b")
_CHOICE = re.compile(r"\bwhich\b|\bor\b")

# --------------------------------------------------------------------------------------------- entities
# Priority order: an earlier pattern's span wins over a later one overlapping it.
_ENTITY_PATTERNS: tuple[tuple[re.Pattern[str], bool], ...] = (
    (re.compile(r"\"([^\"\n]{1,200})\"|“([^”\n]{1,200})”|`([^`\n]{1,200})`"), True),
    (re.compile(r"(?<![\w'])'([^'\n]{1,200})'(?![\w])|‘([^’\n]{1,200})’"), True),
    (re.compile(r"https?://[^\s\"'`<>]+"), False),
    (re.compile(r"(?<![\w/.~])(?:~|\.{1,2})?/?(?:[\w.@-]+/)+[\w.@-]*"), False),
    (re.compile(r"(?<![\w.])[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)+(?!\w)"), False),
    (re.compile(r"\b[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+\b"), False),
    (re.compile(r"\b(?:[a-z]+(?:[A-Z][a-z0-9]*)+|[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+)\b"), False),
    (re.compile(r"\b[A-Z][A-Z0-9]{2,}\b"), False),
)
_NAME = re.compile(r"\b[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)*\b")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n])[\s\"'(\[]*$")
_NOT_ENTITIES = frozenset({"e.g", "i.e", "etc", "vs"})
_TRAILING_PUNCT = ".,;:!?)]}"

def detect_domains(query: str) -> list[str]:
    text = query.lower()
    # Whole names ("next.js", "front-end") and their parts ("docker-compose" → "docker").
    tokens = name_tokens(text)
    found = []
    for domain, keywords in _DOMAIN_WORDS.items():
        phrases = _DOMAIN_PHRASES.get(domain, ())
        if tokens & keywords or any(re.search(rf"\b{re.escape(p)}\b", text) for p in phrases):
            found.append(domain)
    return found


def _spans_overlap(start: int, end: int, taken: list[tuple[int, int]]) -> bool:
    return any(start < t_end and t_start < end for t_start, t_end in taken)


def extract_entities(query: str) -> list[str]:
    """Quoted text, URLs, paths, dotted names, snake_case, CamelCase, ACRONYMS, mid-sentence proper names."""
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []

    def take(start: int, end: int, text: str) -> None:
        if text and text.lower() not in _NOT_ENTITIES and not _spans_overlap(start, end, taken):
            taken.append((start, end))
            found.append((start, text))

    for pattern, quoted in _ENTITY_PATTERNS:
        for match in pattern.finditer(query):
            if quoted:  # the text between the quotes, exactly as written
                take(match.start(), match.end(), next((g for g in match.groups() if g), "").strip())
            else:  # "see src/app.py." ends a sentence; the full stop is not part of the path
                take(match.start(), match.end(), match.group(0).rstrip(_TRAILING_PUNCT))

    for match in _NAME.finditer(query):
        start, words = match.start(), match.group(0).split()
        if _SENTENCE_START.search(query[:start]):
            # "What Caroline said": the first word is capitalised by grammar, the rest may be a name.
            if len(words) == 1:
                continue
            start = match.start() + match.group(0).index(words[1], len(words[0]))
            words = words[1:]
        take(start, match.end(), " ".join(words))

    unique: dict[str, str] = {}
    for _, text in sorted(found):
        unique.setdefault(text.lower(), text)
    return list(unique.values())


def _signals(text: str) -> tuple[bool, bool, bool]:
    return bool(_TEMPORAL.search(text)), bool(_PREFERENCE.search(text)), bool(_AGGREGATION.search(text))


def _intent(text: str, is_preference: bool) -> Intent:
    # Precedence: the more specific reading wins ("How did I fix X?" is recall, not troubleshooting).
    if is_preference:
        return "preference"
    if _RECALL_STRONG.search(text):
        return "recall"
    if _TROUBLE.search(text):
        return "troubleshooting"
    if _HOW_TO.search(text):
        return "how-to"
    if _RECALL_WEAK.search(text):
        return "recall"
    return "factual"


def _reasoning_and_complexity(
    text: str, domains: list[str], is_temporal: bool, is_aggregation: bool
) -> tuple[bool, Complexity]:
    comparison = bool(_COMPARISON.search(text))
    why = bool(_WHY.search(text))
    several_questions = text.count("?") >= 2 or bool(_SECOND_QUESTION.search(text))
    ordering = is_temporal and bool(_ORDERING.search(text)) and bool(_CHOICE.search(text))
    requires_reasoning = comparison or why or several_questions or ordering or is_aggregation

    count = len(words(text))
    points = (2 if count > 20 else 1 if count > 10 else 0) + (1 if len(domains) >= 2 else 0)
    points += 2 if comparison else 0
    points += sum(1 for flag in (why, several_questions, ordering, is_aggregation) if flag)
    complexity: Complexity = "simple" if points == 0 else "moderate" if points <= 2 else "complex"
    return requires_reasoning, complexity


def choose_route(analysis: QueryAnalysis) -> Route:
    """Auto-mode routing; see the module docstring for why each condition sends a query to hybrid."""
    needs_hybrid = (
        analysis.complexity != "simple"
        or analysis.requires_reasoning
        or len(analysis.domains) >= 2
        or analysis.is_preference
        or analysis.is_temporal
        or analysis.is_aggregation
        or bool(analysis.entities)
    )
    return "hybrid" if needs_hybrid else "vector"


def heuristic_analysis(query: str) -> QueryAnalysis:
    text = " ".join(query.lower().split())
    domains = detect_domains(query)
    is_temporal, is_preference, is_aggregation = _signals(text)
    requires_reasoning, complexity = _reasoning_and_complexity(text, domains, is_temporal, is_aggregation)
    analysis = QueryAnalysis(
        intent=_intent(text, is_preference),
        complexity=complexity,
        domains=domains,
        entities=extract_entities(query),
        requires_reasoning=requires_reasoning,
        is_temporal=is_temporal,
        is_preference=is_preference,
        is_aggregation=is_aggregation,
        route="vector",
    )
    analysis.route = choose_route(analysis)
    return analysis


# ------------------------------------------------------------------------------------------- LLM answer
_INTENT_ALIASES = {
    "how_to": "how-to",
    "howto": "how-to",
    "how to": "how-to",
    "troubleshoot": "troubleshooting",
}
_COMPLEXITY_ALIASES = {"medium": "moderate", "low": "simple", "high": "complex"}
_MAX_LIST_ITEMS = 8
_MAX_ITEM_CHARS = 80


def _choice(value: Any, allowed: tuple[str, ...], aliases: Mapping[str, str], fallback: str) -> str:
    if not isinstance(value, str):
        return fallback
    key = value.strip().lower()
    key = aliases.get(key, key)
    return key if key in allowed else fallback


def _flag(value: Any, fallback: bool) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "false", "no"):
        return value.strip().lower() in ("true", "yes")
    return fallback


def _strings(value: Any, fallback: list[str], lower: bool) -> list[str]:
    if not isinstance(value, list):
        return fallback
    unique: dict[str, str] = {}
    for item in value:
        if isinstance(item, str) and 0 < len(item.strip()) <= _MAX_ITEM_CHARS:
            text = item.strip().lower() if lower else item.strip()
            unique.setdefault(text.lower(), text)
    return list(unique.values())[:_MAX_LIST_ITEMS]


def parse_llm_analysis(data: Any, query: str) -> QueryAnalysis:
    """Validate an LLM's analysis (seed 000's JSON shape); any missing or unknown field falls back to the
    heuristic value. Never raises: a bad model answer must not fail a search."""
    fallback = heuristic_analysis(query)
    if not isinstance(data, Mapping):
        return fallback
    analysis = QueryAnalysis(
        intent=cast(Intent, _choice(data.get("primary_intent", data.get("intent")), INTENTS,
                                    _INTENT_ALIASES, fallback.intent)),
        complexity=cast(Complexity, _choice(data.get("complexity"), COMPLEXITIES, _COMPLEXITY_ALIASES,
                                            fallback.complexity)),
        domains=_strings(data.get("domains"), fallback.domains, lower=True),
        entities=_strings(data.get("entities"), fallback.entities, lower=False),
        requires_reasoning=_flag(data.get("requires_reasoning"), fallback.requires_reasoning),
        is_temporal=_flag(_first_key(data, "temporal", "is_temporal"), fallback.is_temporal),
        is_preference=_flag(_first_key(data, "preference", "is_preference"), fallback.is_preference),
        is_aggregation=_flag(_first_key(data, "aggregation", "is_aggregation"), fallback.is_aggregation),
        route="vector",
        source="llm",
    )
    # The model may ask for the thorough path, never veto it: the rules send to hybrid the queries
    # (preference, temporal, entities...) that vector-only search is known to miss.
    asked = _choice(data.get("route"), ROUTES, {}, "vector")
    analysis.route = "hybrid" if asked == "hybrid" else choose_route(analysis)
    return analysis


def _first_key(data: Mapping[str, Any], *keys: str) -> Any:
    return next((data[key] for key in keys if key in data), None)
