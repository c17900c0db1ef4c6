"""Claude Code transcripts kept outside `~/.claude/projects` (an archive of `*.jsonl`) laid out as it is.

The transcripts are already in the form the capture engine reads; only the layout is Claude Code's again:
`<encoded cwd>/<file name>` by the cwd the session's lines name. Left out: files with no conversation
(empty, or only summaries and snapshots), and subagent transcripts (every conversation line `isSidechain`):
Claude Code fires no Stop for a subagent, and its parent session holds what the subagent returned. The
bytes of a kept file are not changed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cems_cli.evaluation.datasets import DatasetError
from cems_cli.evaluation.transcript_writer import encode_cwd


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
        target = out / encode_cwd(described[0]) / path.name
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        shutil.copyfile(path, target)
        target.chmod(0o600)
        written.append(target)
    if not written:
        raise DatasetError(f"{folder} holds no Claude Code transcript with a conversation")
    return written
