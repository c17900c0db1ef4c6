"""Claude Code transcripts kept outside `~/.claude/projects` (an archive of `*.jsonl`) laid out as it is.

The transcripts are already in the form the capture engine reads; only the layout is Claude Code's again:
`<encoded cwd>/<file name>` by the cwd the session's lines name. Left out: files with no conversation
(empty, or only summaries and snapshots), and subagent transcripts (every conversation line `isSidechain`):
Claude Code fires no Stop for a subagent, and its parent session holds what the subagent returned.

A Windows cwd (`C:\\Users\\me`) is written as Git Bash names it (`/c/Users/me`): on this side it would be a
relative path, and the project it stands for would depend on the folder the benchmark runs in. Nothing
else of a kept file changes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from cems_cli.evaluation.datasets import DatasetError
from cems_cli.evaluation.transcript_writer import encode_cwd

_WINDOWS = re.compile(r"^([A-Za-z]):[\\/]?")


def posix_cwd(cwd: str) -> str:
    """`C:\\Users\\me` → `/c/Users/me` (Git Bash's name for it); any other cwd as it is."""
    match = _WINDOWS.match(cwd)
    if match is None:
        return cwd
    rest = cwd[match.end():].replace("\\", "/").strip("/")
    return f"/{match[1].lower()}" + (f"/{rest}" if rest else "")


def _posix_line(raw: bytes) -> bytes:
    """The line with a Windows `cwd` field renamed, its other bytes as they were."""
    try:
        record = json.loads(raw)
    except ValueError:
        return raw
    cwd = record.get("cwd") if isinstance(record, dict) else None
    if not isinstance(cwd, str) or posix_cwd(cwd) == cwd:
        return raw
    for old in (json.dumps(cwd), json.dumps(cwd, ensure_ascii=False)):
        for sep in (b'"cwd":', b'"cwd": '):
            key = sep + old.encode()
            if key in raw:
                return raw.replace(key, sep + json.dumps(posix_cwd(cwd)).encode(), 1)
    return raw


def describe(path: Path) -> tuple[str, bool] | None:
    """(cwd, is a subagent transcript) of a transcript; None when it holds no conversation line."""
    cwd, conversation, sidechain = "", 0, 0
    try:
        with path.open("rb") as handle:
            for raw in handle:
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(record, dict) or record.get("type") not in ("user", "assistant"):
                    continue
                conversation += 1
                sidechain += record.get("isSidechain") is True
                cwd = cwd or str(record.get("cwd") or "")
    except OSError as error:
        raise DatasetError(f"cannot read {path}: {error.strerror or error}") from None
    if not conversation or not cwd:
        return None
    return cwd, sidechain == conversation


def convert(folder: Path, out: Path) -> list[Path]:
    """Copies every main-session transcript of `folder` (any depth) to `out/<encoded cwd>/`."""
    written: list[Path] = []
    for path in sorted(folder.rglob("*.jsonl")):
        described = describe(path)
        if described is None or described[1]:
            continue
        target = out / encode_cwd(posix_cwd(described[0])) / path.name
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with path.open("rb") as source:
            target.write_bytes(b"".join(_posix_line(raw) for raw in source))
        target.chmod(0o600)
        written.append(target)
    if not written:
        raise DatasetError(f"{folder} holds no Claude Code transcript with a conversation")
    return written
