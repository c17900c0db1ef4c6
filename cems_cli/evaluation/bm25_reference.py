"""A reference for the session benchmark: BM25 over the raw sessions, scored like an injected block.

What a plain search over everything the sessions said would bring to the later session: each question's
project's transcripts are cut into units (a typed prompt; what the assistant said; a tool call with its
result), ranked with Okapi BM25 (`rank_bm25`) against the question, and the top 3 are scored as if they
were the injected block (`sessions_data.score_block`: fact recall, noise, tokens). Units are the raw text,
unredacted and unshortened: a unit holding a long tool output counts all its tokens.

Units are steps rather than whole turns: an agent's turn runs to dozens of tool calls (a SWE-bench run is
one turn), and three whole turns would hold most of a project's words.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cems_cli.evaluation.sessions_data import QuestionScore, SessionQuestion, SessionSet, score_block
from cems_cli.text.terms import words as tokens  # the words the search's own query terms are made of

TOP_K = 3


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(block.get("text") if isinstance(block, dict) and "text" in block
                               else block.get("content") if isinstance(block, dict) else block)
                         for block in content)
    return ""


def units(lines: list[bytes]) -> Iterator[str]:
    """The raw units of a transcript: prompts, what the assistant said, and each tool call with its
    result (the call's input, then the result's text)."""
    calls: dict[str, str] = {}
    for raw in lines:
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        message = record.get("message") if isinstance(record, dict) else None
        if not isinstance(message, dict) or record.get("isSidechain") is True:
            continue
        content = message.get("content")
        if record.get("type") == "user":
            if isinstance(content, str):
                if content.strip():
                    yield content
                continue
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_result":
                    call = calls.pop(str(block.get("tool_use_id")), "")
                    yield f"{call}\n{_text(block.get('content'))}".strip()
                elif block.get("type") == "text" and str(block.get("text") or "").strip():
                    yield str(block["text"])
        elif record.get("type") == "assistant" and isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and str(block.get("text") or "").strip():
                    yield str(block["text"])
                elif block.get("type") == "tool_use":
                    tool_input = block.get("input")
                    shown = " ".join(str(v) for v in tool_input.values()) if isinstance(tool_input, dict) \
                        else str(tool_input or "")
                    calls[str(block.get("id"))] = f"{block.get('name', '')}: {shown}"


@dataclass
class _Index:
    texts: list[str] = field(default_factory=list)
    model: Any = None


def _indexes(dataset: SessionSet, project_of: Callable[[str], str]) -> dict[str, _Index]:
    from rank_bm25 import BM25Okapi

    indexes: dict[str, _Index] = {}
    for transcript in dataset.transcripts:
        index = indexes.setdefault(project_of(transcript.cwd), _Index())
        for turn in transcript.turns:
            index.texts.extend(text for text in units(turn.lines) if tokens(text))
    for index in indexes.values():
        if index.texts:
            index.model = BM25Okapi([tokens(text) for text in index.texts])
    return indexes


def block_of(texts: list[str]) -> str:
    """The top units as a recall block (one memory a line, whitespace folded) for `score_block`."""
    return "\n".join(f"- [bm25-{n}] " + " ".join(text.split()) for n, text in enumerate(texts, 1))


def rank(dataset: SessionSet, questions: list[SessionQuestion], count_tokens: Callable[[str], int],
         *, project_of: Callable[[str], str] | None = None,
         k: int = TOP_K) -> list[tuple[SessionQuestion, str, QuestionScore]]:
    """Each question's top-k raw units of its project by BM25, as a block, scored."""
    if project_of is None:
        from cems_cli.project import project_for_dir

        project_of = project_for_dir
    known: dict[str, str] = {}

    def project(cwd: str) -> str:
        if cwd not in known:
            known[cwd] = project_of(cwd) if cwd else ""
        return known[cwd]

    indexes = _indexes(dataset, project)
    scored = []
    for question in questions:
        index = indexes.get(project(question.project_cwd))
        top: list[str] = []
        query = tokens(question.question)
        if index is not None and index.model is not None and query:
            scores = index.model.get_scores(query)
            order = sorted(range(len(index.texts)), key=lambda n: (-scores[n], n))[:k]
            top = [index.texts[n] for n in order if scores[n] > 0]
        block = block_of(top)
        scored.append((question, block, score_block(question, block, count_tokens)))
    return scored

