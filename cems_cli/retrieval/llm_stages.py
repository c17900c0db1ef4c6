"""The optional model-backed stages of retrieval: understand, synthesize, decompose, HyDE, rerank.

Each stage is one request (one per document for the Ollama reranker) and is optional: given no client,
or an endpoint that is slow, failing or answering nonsense, it returns ``None`` (or an empty list) and
the pipeline carries on without it. Answers are filtered, never trusted: wrong types, empty strings
and echoes of the query are dropped here so the pure stages downstream only see clean values.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal, TypeGuard

from cems_cli.llm import LLMClient, note_degraded, run_bounded
from cems_cli.retrieval.confidence import logistic

Kind = Literal["standard", "temporal", "preference"]

# Hook prompts can be whole pasted files; the models only need the question.
MAX_QUERY_CHARS = 2000
MAX_ITEM_CHARS = 200  # one reformulation or sub-question
MAX_QUERIES = 5
MAX_PROFILE_ITEMS = 5
MAX_HYDE_CHARS = 1200
MAX_RERANK_SNIPPET_CHARS = 500
MAX_OLLAMA_DOC_CHARS = 1200
OLLAMA_WORKERS = 4
# Score for a document the Ollama reranker could not judge in time when others were judged: neutral,
# so a slow request neither buries nor promotes it.
NEUTRAL_RERANK_SCORE = 0.5

# --------------------------------------------------------------------------- prompts
# Every system prompt says "JSON": OpenAI refuses json_object mode otherwise.

UNDERSTAND_SYSTEM = (
    "You classify a search query sent to a developer's long-term memory (past fixes, decisions, "
    "preferences, project facts). Reply with one JSON object with exactly these keys:\n"
    '"intent": one of "troubleshooting", "how-to", "factual", "recall", "preference";\n'
    '"complexity": one of "simple", "moderate", "complex";\n'
    '"domains": up to 3 short topic names, e.g. ["postgres", "deployment"];\n'
    '"entities": names of tools, files, projects or people in the query;\n'
    '"temporal": true if it asks when, in what order, or about first/last/before/after;\n'
    '"preference": true if it asks for a recommendation or what the user likes or uses;\n'
    '"aggregation": true if answering needs several memories counted or combined;\n'
    '"requires_reasoning": true if the answer must be inferred rather than looked up;\n'
    '"route": "vector" for a simple lookup of one fact, otherwise "hybrid".'
)
UNDERSTAND_USER = "Query: {query}"

_SYNTH_REPLY = (
    'Reply with JSON: {"queries": ["...", "..."]} holding 2 to 5 queries of at most 12 words, '
    "each different from the original."
)
SYNTH_SYSTEM_STANDARD = (
    "You write alternative search queries for a developer's long-term memory. Stay on the same specific "
    "topic; never generalise to a broader category. Prefer concrete technical terms (tool, library, file, "
    "command, error text) over generic words. " + _SYNTH_REPLY
)
SYNTH_SYSTEM_TEMPORAL = (
    "You write alternative search queries for a developer's long-term memory. The query is about time "
    "or the order of events: name each event involved (both sides of a comparison) and add date words "
    "such as when, date, started, first, last. " + _SYNTH_REPLY
)
SYNTH_SYSTEM_PREFERENCE = (
    "You write alternative search queries for a developer's long-term memory. The query asks for a "
    "recommendation or what the user likes; the memories that answer it are the user's own statements "
    'such as "I use X" or "I prefer Y". Write the queries as short first-person statements the user may '
    "have made on this topic, using the known statements below as examples of domain and wording. "
    + _SYNTH_REPLY
)
SYNTH_SYSTEMS: dict[str, str] = {
    "standard": SYNTH_SYSTEM_STANDARD,
    "temporal": SYNTH_SYSTEM_TEMPORAL,
    "preference": SYNTH_SYSTEM_PREFERENCE,
}
SYNTH_USER = "Query: {query}"
PROFILE_BLOCK = "Known statements by the user:\n{items}\n\n"

DECOMPOSE_SYSTEM = (
    "You split a multi-part question into self-contained sub-questions, one per distinct thing asked, "
    "each answerable on its own. If the question asks only one thing, return an empty list. "
    'Reply with JSON: {"sub_questions": ["...", "..."]}'
)
DECOMPOSE_USER = "Question: {query}"

_HYDE_REPLY = 'Reply with JSON: {"memory": "..."}'
HYDE_SYSTEM_STANDARD = (
    "Write the note a developer would have saved in their long-term memory that answers the query: "
    "2 to 4 plain sentences with concrete names (tools, files, commands, versions), stated as fact, "
    "without mentioning the query. " + _HYDE_REPLY
)
HYDE_SYSTEM_TEMPORAL = (
    "Write the note a developer would have saved in their long-term memory that answers the query: "
    "2 to 4 plain sentences giving specific dates and the order of the events involved, stated as fact, "
    "without mentioning the query. " + _HYDE_REPLY
)
HYDE_SYSTEM_PREFERENCE = (
    "Write what the user would have told their assistant earlier that answers the query: 2 to 4 "
    'sentences in the first person ("I use", "I prefer", "I like", "I avoid") stating concrete choices '
    "and the reasons for them, without mentioning the query. " + _HYDE_REPLY
)
HYDE_SYSTEMS: dict[str, str] = {
    "standard": HYDE_SYSTEM_STANDARD,
    "temporal": HYDE_SYSTEM_TEMPORAL,
    "preference": HYDE_SYSTEM_PREFERENCE,
}
HYDE_USER = "Query: {query}"

RERANK_SYSTEM = (
    "You judge search results from a developer's long-term memory. Rate how useful each numbered memory "
    "is for answering the query: 10 answers it directly, 5 is related but incomplete, 0 is unrelated. "
    "Judge what the memory says, not shared words. "
    'Reply with JSON covering every number: {"scores": {"1": 7, "2": 0}}'
)
RERANK_USER = "Query: {query}\n\nMemories:\n{candidates}"
RERANK_CANDIDATE = "[{n}] {snippet}"

# Qwen3-Reranker's own format: a yes/no judgement whose P(yes) is the relevance score.
QWEN3_RERANK_SYSTEM = (
    "Judge whether the Document meets the requirements based on the Query and the Instruct provided. "
    'Note that the answer can only be "yes" or "no".'
)
QWEN3_RERANK_INSTRUCT = (
    "Given a question to a developer's long-term memory, judge whether the memory helps answer it"
)
QWEN3_RERANK_USER = "<Instruct>: {instruct}\n<Query>: {query}\n<Document>: {document}"
# Sent with "raw": true so the server applies no template of its own; the empty think block is how
# Qwen3 models are told to answer at once.
QWEN3_RERANK_PROMPT = (
    "<|im_start|>system\n{system}<|im_end|>\n"
    "<|im_start|>user\n{user}<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n"
)


# --------------------------------------------------------------------------- stages


def llm_understand(client: LLMClient | None, query: str) -> dict | None:
    """The model's analysis of the query (intent, complexity, domains, entities, flags, route).

    Returned as answered; ``understand.parse_llm_analysis`` validates the fields.
    """
    if not _usable(client, query):
        return None
    answer = client.chat_json(
        UNDERSTAND_SYSTEM, UNDERSTAND_USER.format(query=_clip(query)), max_tokens=200, stage="understand"
    )
    if not answer:
        if answer == {}:
            note_degraded("understand", "empty analysis")
        return None
    return answer


def synthesize_queries(
    client: LLMClient | None, query: str, *, kind: Kind = "standard", profile: Sequence[str] = ()
) -> list[str]:
    """2–5 short reformulations of ``query``; empty when the stage is off or failed.

    ``kind="preference"`` grounds them in the user's own statements (``profile``: "I use …" memories).
    """
    if not _usable(client, query):
        return []
    system = SYNTH_SYSTEMS.get(kind, SYNTH_SYSTEM_STANDARD)
    user = SYNTH_USER.format(query=_clip(query))
    if kind == "preference":
        user = _with_profile(user, profile)
    answer = client.chat_json(system, user, max_tokens=200, stage="synthesis")
    if answer is None:
        return []
    queries = _clean_strings(_string_list(answer, "queries"), max_chars=MAX_ITEM_CHARS, exclude=query)
    if not queries:
        note_degraded("synthesis", "no usable queries in the answer")
    return queries[:MAX_QUERIES]


def decompose(client: LLMClient | None, query: str) -> list[str]:
    """Sub-questions of a multi-part question; empty for a single question or a failed stage."""
    if not _usable(client, query):
        return []
    answer = client.chat_json(
        DECOMPOSE_SYSTEM, DECOMPOSE_USER.format(query=_clip(query)), max_tokens=200, stage="decompose"
    )
    if answer is None:
        return []
    parts = _clean_strings(_string_list(answer, "sub_questions"), max_chars=MAX_ITEM_CHARS)
    # One "sub-question" is the question itself, reworded: nothing to split.
    return parts[:MAX_QUERIES] if len(parts) > 1 else []


def hyde(
    client: LLMClient | None, query: str, *, kind: Kind = "standard", profile: Sequence[str] = ()
) -> str | None:
    """A hypothetical memory that would answer ``query``, phrased as a stored note would be.

    ``kind`` picks the voice: a factual note, a dated account of events, or the user's first-person
    preferences (optionally grounded by ``profile``, the user's known statements).
    """
    if not _usable(client, query):
        return None
    system = HYDE_SYSTEMS.get(kind, HYDE_SYSTEM_STANDARD)
    user = HYDE_USER.format(query=_clip(query))
    if kind == "preference":
        user = _with_profile(user, profile)
    answer = client.chat_json(system, user, max_tokens=250, stage="hyde")
    if answer is None:
        return None
    text = answer.get("memory")
    if not isinstance(text, str):  # tolerate another key name, never another type
        text = next((v for v in answer.values() if isinstance(v, str) and v.strip()), None)
    text = " ".join(text.split()) if isinstance(text, str) else ""
    if len(text) < 12 or _norm(text) == _norm(query):
        note_degraded("hyde", "no usable hypothetical memory in the answer")
        return None
    return text[:MAX_HYDE_CHARS]


def llm_rerank(
    client: LLMClient | None, query: str, docs: Sequence[tuple[str, str]]
) -> dict[str, float] | None:
    """Relevance of each ``(id, snippet)`` to ``query`` in [0, 1], from one request for all of them.

    Candidates are numbered in the prompt (ids are long and models mangle them). Ids the model left
    out score 0; ``None`` when no score at all could be read.
    """
    if not docs or not _usable(client, query):
        return None
    lines = [
        RERANK_CANDIDATE.format(n=n, snippet=_flatten(snippet, MAX_RERANK_SNIPPET_CHARS))
        for n, (_id, snippet) in enumerate(docs, 1)
    ]
    user = RERANK_USER.format(query=_clip(query), candidates="\n".join(lines))
    answer = client.chat_json(RERANK_SYSTEM, user, max_tokens=min(32 + 10 * len(docs), 2048), stage="rerank")
    if answer is None:
        return None
    raw = _index_scores(answer, len(docs))
    if not raw:
        note_degraded("rerank", "no usable scores in the answer")
        return None
    # Asked for 0–10; a model that answers on a 0–1 scale gives fractions no larger than 1.
    scale = 1.0 if max(raw.values()) <= 1.0 and any(v != int(v) for v in raw.values()) else 10.0
    scores = {doc_id: 0.0 for doc_id, _ in docs}
    for n, value in raw.items():
        doc_id = docs[n - 1][0]
        scores[doc_id] = max(scores[doc_id], min(max(value / scale, 0.0), 1.0))
    return scores


def ollama_rerank(
    base_url: str | None,
    model: str | None,
    query: str,
    docs: Sequence[tuple[str, str]],
    timeout: float,
    *,
    workers: int = OLLAMA_WORKERS,
) -> dict[str, float] | None:
    """Relevance of each ``(id, snippet)`` to ``query`` in [0, 1] from a Qwen3-Reranker served by Ollama.

    One ``/api/generate`` request per document, ``workers`` at a time, all within ``timeout`` seconds.
    The score is P(yes) from the token log-probabilities when the server returns them, else 1.0 for an
    answer starting with "yes" and 0.0 for "no". Documents left unjudged (timeout, error, other answer)
    get ``NEUTRAL_RERANK_SCORE``; ``None`` when none could be judged.
    """
    if not base_url or not model or not docs or not query.strip():
        return None
    if not base_url.startswith(("http://", "https://")):  # urllib would also open file:// and ftp://
        note_degraded("ollama_rerank", f"not an HTTP URL: {base_url!r}")
        return None
    url = base_url.rstrip("/") + "/api/generate"
    clipped = _clip(query)

    def judge(doc: tuple[str, str]) -> float | None:
        user = QWEN3_RERANK_USER.format(
            instruct=QWEN3_RERANK_INSTRUCT, query=clipped, document=_flatten(doc[1], MAX_OLLAMA_DOC_CHARS)
        )
        body = {
            "model": model,
            "prompt": QWEN3_RERANK_PROMPT.format(system=QWEN3_RERANK_SYSTEM, user=user),
            "raw": True,
            "stream": False,
            "options": {"temperature": 0, "num_predict": 2},
            "logprobs": True,
            "top_logprobs": 5,
        }
        return p_yes(_post_json(url, body, timeout))

    outcomes = run_bounded(judge, docs, timeout=timeout, workers=workers)
    scores: dict[str, float] = {}
    unjudged: list[str] = []
    for (doc_id, _), outcome in zip(docs, outcomes, strict=True):
        if outcome is not None and outcome.error is None and outcome.value is not None:
            scores[doc_id] = outcome.value
        else:
            unjudged.append(_why(outcome))
    if not scores:
        note_degraded("ollama_rerank", f"no document judged: {unjudged[0]}")
        return None
    if unjudged:
        note_degraded("ollama_rerank", f"{len(unjudged)} of {len(docs)} documents unjudged: {unjudged[0]}")
        for doc_id, _ in docs:
            scores.setdefault(doc_id, NEUTRAL_RERANK_SCORE)
    return scores


def p_yes(answer: dict[str, Any]) -> float | None:
    """P("yes") from an Ollama generate/chat answer; ``None`` if it is neither yes nor no."""
    entries = answer.get("logprobs")
    if isinstance(entries, list):
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            token = str(entry.get("token", "")).strip().lower()
            if not token:
                continue  # whitespace before the verdict
            candidates = [entry, *(entry.get("top_logprobs") or [])]
            yes = _best_logprob(candidates, "yes")
            no = _best_logprob(candidates, "no")
            if yes is not None and no is not None:
                return logistic(yes - no)  # softmax over the two verdicts, as Qwen3-Reranker scores
            if yes is not None:
                return math.exp(yes)
            if no is not None:
                return 1.0 - math.exp(no)
            break  # first real token is neither: fall back to the text
    message = answer.get("message")
    text = answer.get("response")
    if not isinstance(text, str) and isinstance(message, dict):
        text = message.get("content")
    if not isinstance(text, str):
        return None
    verdict = text.strip().lower()
    if verdict.startswith("yes"):
        return 1.0
    if verdict.startswith("no"):
        return 0.0
    return None


# --------------------------------------------------------------------------- helpers


def _usable(client: LLMClient | None, query: str) -> TypeGuard[LLMClient]:
    return client is not None and client.available and bool(query and query.strip())


def _clip(text: str, limit: int = MAX_QUERY_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit]


def _with_profile(user: str, profile: Sequence[str]) -> str:
    """Prefix the user's own statements: the model then expands into their domain, not a generic one."""
    items = _clean_strings(profile, max_chars=MAX_ITEM_CHARS)[:MAX_PROFILE_ITEMS]
    if not items:
        return user
    return PROFILE_BLOCK.format(items="\n".join(f"- {item}" for item in items)) + user


def _flatten(text: str, limit: int) -> str:
    """One line (candidates are one per line in the prompt), clipped."""
    return " ".join(str(text).split())[:limit]


def _norm(text: str) -> str:
    """Comparison key: case, punctuation and spacing don't make a query new."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def _string_list(answer: dict[str, Any], key: str) -> list[Any]:
    """``answer[key]`` if it is a list, else the first list value (models rename keys)."""
    value = answer.get(key)
    if isinstance(value, list):
        return value
    return next((v for v in answer.values() if isinstance(v, list)), [])


def _clean_strings(values: Iterable[Any], *, max_chars: int, exclude: str | None = None) -> list[str]:
    """Strings only, spacing collapsed, no empties, no overlong items, no duplicates, not ``exclude``."""
    seen = {_norm(exclude)} if exclude else set()
    out: list[str] = []
    for value in values:
        if not isinstance(value, str):
            continue
        text = " ".join(value.split())
        key = _norm(text)
        if not key or len(text) > max_chars or key in seen:
            continue
        seen.add(key)
        out.append(text)
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def _index(key: Any, count: int) -> int | None:
    """A 1-based candidate number from "3", "[3]", 3 or "#3"; None if out of range."""
    text = str(key).strip().strip("[]#() ")
    if not text.isdigit():
        return None
    n = int(text)
    return n if 1 <= n <= count else None


def _index_scores(answer: dict[str, Any], count: int) -> dict[int, float]:
    """Candidate number → raw score from ``{"scores": {...}}``, ``{"scores": [{"id", "score"}]}`` or a
    bare ``{"1": 7}``. Unreadable entries are skipped."""
    scores = answer.get("scores", answer)
    pairs: list[tuple[Any, Any]] = []
    if isinstance(scores, dict):
        pairs = list(scores.items())
    elif isinstance(scores, list):
        for item in scores:
            if isinstance(item, dict):
                key = next((item[k] for k in ("id", "index", "n", "number") if k in item), None)
                value = next((item[k] for k in ("score", "relevance") if k in item), None)
                pairs.append((key, value))
    out: dict[int, float] = {}
    for key, value in pairs:
        n = _index(key, count)
        number = _number(value)
        if n is not None and number is not None:
            out[n] = number
    return out


def _best_logprob(candidates: Iterable[Any], word: str) -> float | None:
    best: float | None = None
    for item in candidates:
        if not isinstance(item, dict) or str(item.get("token", "")).strip().lower() != word:
            continue
        value = _number(item.get("logprob"))
        if value is not None:
            value = min(value, 0.0)
            best = value if best is None else max(best, value)
    return best


def _post_json(url: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    import urllib.request  # deferred: ~70 ms of http/email imports most searches never need

    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - configured URL
        answer = json.loads(response.read())
    if not isinstance(answer, dict):
        raise ValueError("answer is not a JSON object")
    return answer


def _why(outcome: Any) -> str:
    if outcome is None:
        return "timed out"
    if outcome.error is not None:
        return repr(outcome.error)
    return "answer was neither yes nor no"
