"""Texts that look like memories, for the scale benchmark: mined from real agent sessions, templates only to
fill out the count, and their real embeddings cached outside the repository.

Sources, in this order (each text once, compared case- and space-insensitively):
1. The sessions written by others (the folder given as --data: chef-chopsky, m-claude, swebench-mini;
   bench/agent-sessions/README.md says where to get them), converted to Claude Code transcripts by the
   evaluation's own converters; and the project's own set, `bench/sessions/projects/`. From each
   transcript: the sentences of the agent's answers and of the user's prompts that the capture engine would
   call a fact or a decision (`capture.extract`: not filler, names a path, command, value or cause), and
   the commands the agent ran, as "Ran `…`" notes. Every text goes through the product's secret redaction
   first, as capture does.
2. Templated developer memories (bench/_common.memory_texts) up to the count asked.

Embeddings are made once with the product's local model and cached under
$XDG_CACHE_HOME/cems-bench/scale (default ~/.cache): `texts-<key>.jsonl` and `vectors-<key>.npy`, keyed by
the corpus size and the model name, so a later run (or a larger one, which reuses the prefix) skips the model.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from _common import REPO, memory_texts

OWN_SESSIONS = REPO / "bench" / "sessions" / "projects"
MIN_CHARS, MAX_CHARS = 40, 400
# Commands worth a note: the ones a later session would want again (tests, builds, installs), not `ls`/`cat`.
_USEFUL_COMMAND = re.compile(r"\b(?:pytest|runtests|tox|make|npm|npx|pnpm|yarn|pip|uv|cargo|"
                             r"go (?:test|build)|docker|kubectl|git (?:rebase|bisect|cherry-pick)|"
                             r"python -m|bin/test|alembic|supabase|playwright)\b")


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = base / "cems-bench" / "scale"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _transcripts(work: Path, data: Path | None) -> Iterator[Path]:
    from cems_cli.evaluation.agent_sessions import SETS, convert_set

    for spec in SETS if data is not None else ():
        source = data / spec.name
        if source.is_dir():
            yield from convert_set(spec, source, work / spec.name)
    yield from sorted(OWN_SESSIONS.glob("*/*.jsonl"))


def _texts_of(path: Path) -> Iterator[str]:
    from cems_cli.capture import extract
    from cems_cli.capture.transcript import AssistantText, Malformed, Prompt, ToolCall, parse_line

    with path.open("rb") as handle:
        for raw in handle:
            try:
                line = parse_line(raw)
            except (Malformed, ValueError):
                continue
            for event in line.events if line else ():
                if isinstance(event, AssistantText | Prompt):
                    for sentence in extract.sentences(event.text):
                        if extract.states_a_fact(sentence) or extract.decision_sentences(sentence):
                            yield sentence
                elif isinstance(event, ToolCall) and event.name == "Bash":
                    command = " ".join(str(event.input.get("command", "")).split())
                    if _USEFUL_COMMAND.search(command) and len(command) < MAX_CHARS - 10:
                        yield f"Ran `{command}`"


def mined_texts(data: Path | None) -> list[str]:
    """Memory-like texts from the real sessions (redacted, distinct, MIN_CHARS..MAX_CHARS long)."""
    from cems_cli.text.redact import redact_secrets

    seen: set[str] = set()
    texts: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cems-scale-") as work:
        for path in _transcripts(Path(work), data):
            for text in _texts_of(path):
                text = redact_secrets(text.strip())
                key = _normal(text)
                if MIN_CHARS <= len(text) <= MAX_CHARS and key not in seen:
                    seen.add(key)
                    texts.append(text)
    return texts


def corpus(count: int, data: Path | None) -> tuple[list[str], int]:
    """`count` distinct texts: the mined ones first, then templates. Returns (texts, how many were mined)."""
    mined = mined_texts(data)[:count]
    seen = {_normal(text) for text in mined}
    filler = [text for text in memory_texts(count + len(mined)) if _normal(text) not in seen]
    return mined + filler[: count - len(mined)], len(mined)


def embedded_corpus(count: int, model: str, embed: Callable[[list[str]], np.ndarray], data: Path | None,
                    log: Callable[[str], None] = print) -> tuple[list[str], np.ndarray, int]:
    """The corpus of `count` texts and their real embeddings, from the cache when it holds them."""
    from cems_cli.engine.bulk import embed_all

    key = hashlib.sha256(f"{count}|{model}|{'sessions' if data else 'own'}|v1".encode()).hexdigest()[:12]
    folder = cache_dir()
    texts_path, vectors_path = folder / f"texts-{key}.jsonl", folder / f"vectors-{key}.npy"
    if texts_path.is_file() and vectors_path.is_file():
        lines = [json.loads(line) for line in texts_path.read_text(encoding="utf-8").splitlines()]
        mined = sum(1 for line in lines if line["mined"])
        return [line["text"] for line in lines], np.load(vectors_path), mined
    texts, mined = corpus(count, data)
    log(f"corpus: {len(texts):,} texts ({mined:,} mined from sessions); embedding them once "
        f"(cached in {folder})")
    started, last = time.perf_counter(), [0.0]

    def progress(done: int, total: int) -> None:
        now = time.perf_counter()
        if now - last[0] >= 30 or done == total:
            last[0] = now
            rate = done / max(now - started, 1e-9)
            log(f"  embedded {done:,}/{total:,} ({rate:.0f}/s)")

    vectors = embed_all(texts, embed, progress)
    np.save(vectors_path.with_suffix(".tmp.npy"), vectors)
    os.replace(vectors_path.with_suffix(".tmp.npy"), vectors_path)
    texts_path.write_text("".join(json.dumps({"text": t, "mined": i < mined}) + "\n"
                                  for i, t in enumerate(texts)), encoding="utf-8")
    log(f"  {len(texts):,} texts embedded in {time.perf_counter() - started:.0f} s")
    return texts, vectors, mined
