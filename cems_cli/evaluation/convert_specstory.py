"""SpecStory Markdown exports of Cursor-agent sessions (`.specstory/history/*.md`) as Claude Code sessions.

An export is one session: `_**User (2025-09-19 15:02Z)**_` and `_**Assistant (mode)**_` headers open the
turns, and an assistant turn is blocks separated by `---` lines. A block is
* a terminal command (`Tool use: **run_terminal_cmd**`, or, in older exports, a block that starts with a
  ```bash fence): the fence is the command, the next fence its output → a Bash call. SpecStory records no
  exit code, so the result is never marked failed here: the capture engine judges the output itself, as it
  does for any Bash output;
* an edit (`<summary>Edit file: PATH</summary>` or `Apply patch for PATH`) → an Edit call holding the diff;
* another tool (`Tool use: **read_file**`, `grep`, an MCP call…) → a call of that name holding the block;
* anything else: what the assistant said.

Time: the file name's moment (`2025-09-19_19-30Z-…`) starts the session; each later user turn is placed
by its header's time relative to the first header's (the exports' header times are local, the file
name's UTC), lines between them a few seconds apart. Sessions are ordered by that start.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from cems_cli.evaluation.datasets import DatasetError
from cems_cli.evaluation.transcript_writer import TranscriptWriter, session_uuid

_HEADER = re.compile(r"^_\*\*(User|Assistant|Agent)(?: \(([^)]*)\))?\*\*_\s*$")
_FILE_MOMENT = re.compile(r"^(\d{4}-\d\d-\d\d)_(\d\d)-(\d\d)Z")
_HEADER_MOMENT = re.compile(r"^(\d{4}-\d\d-\d\d) (\d\d):(\d\d)Z$")
_TOOL_USE = re.compile(r"^Tool use: \*\*([\w.-]+)\*\*\s*$", re.M)
_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.S | re.M)
_EDIT = re.compile(r"<summary>\s*(?:Edit file:|Apply patch for)\s*(.+?)\s*</summary>")
_SUMMARY = re.compile(r"<summary>\s*(.+?)\s*</summary>", re.S)
_SHELLS = ("bash", "sh", "shell", "zsh", "console")


def file_moment(path: Path) -> datetime:
    match = _FILE_MOMENT.match(path.name)
    if match is None:
        raise DatasetError(f"{path}: not named YYYY-MM-DD_HH-MMZ-<title>.md")
    return datetime.fromisoformat(f"{match[1]}T{match[2]}:{match[3]}:00+00:00")


def _header_moment(text: str | None) -> datetime | None:
    match = _HEADER_MOMENT.match(text or "")
    return datetime.fromisoformat(f"{match[1]}T{match[2]}:{match[3]}:00+00:00") if match else None


def sections(markdown: str) -> list[tuple[str, str | None, str]]:
    """(speaker, header note, body) for each `_**User …**_` / `_**Assistant …**_` section, in order."""
    found: list[tuple[str, str | None, list[str]]] = []
    for line in markdown.splitlines():
        match = _HEADER.match(line)
        if match is not None:
            speaker = "user" if match[1] == "User" else "assistant"
            found.append((speaker, match[2], []))
        elif found:
            found[-1][2].append(line)
    return [(speaker, note, "\n".join(body).strip()) for speaker, note, body in found]


def _blocks(body: str) -> list[str]:
    """An assistant section's blocks: the parts between `---` lines outside code fences."""
    blocks: list[list[str]] = [[]]
    fenced = False
    for line in body.splitlines():
        if line.startswith("```"):
            # An opening fence may name a language; only a bare fence closes one.
            fenced = True if not fenced else line.strip() != "```"
        if line.strip() == "---" and not fenced:
            blocks.append([])
        else:
            blocks[-1].append(line)
    return [text for text in ("\n".join(b).strip() for b in blocks) if text]


def _assistant_block(writer: TranscriptWriter, block: str) -> None:
    tool = _TOOL_USE.search(block)
    name = tool[1] if tool else ""
    rest = (block[:tool.start()] + block[tool.end():]).strip() if tool else block
    fences = list(_FENCE.finditer(rest))
    is_command = bool(fences) and fences[0][1].strip().lower() in _SHELLS and (
        name == "run_terminal_cmd" or (not name and not rest[:fences[0].start()].strip()))
    if is_command:
        command = fences[0][2].strip()
        output = fences[1][2].rstrip("\n") if len(fences) > 1 and not fences[1][1].strip() else ""
        said = rest[:fences[0].start()].strip()
        writer.bash(command, output, exit_code=None, text=said)
        return
    edit = _EDIT.search(rest)
    if edit is not None:
        path = edit[1].strip()
        diff = "\n".join(f[2] for f in fences)
        writer.tool("Edit", {"file_path": path, "old_string": "", "new_string": diff},
                    f"The file {path} has been updated.")
        return
    if name:
        summary = _SUMMARY.search(rest)
        writer.tool(name, {"description": summary[1].strip() if summary else name}, rest)
        return
    writer.say(rest)


def convert_file(path: Path, cwd: str) -> TranscriptWriter:
    try:
        markdown = path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise DatasetError(f"cannot read {path}: {error.strerror or error}") from None
    start = file_moment(path)
    writer = TranscriptWriter(session_uuid("specstory", path.name), cwd, start)
    first_header: datetime | None = None
    for speaker, note, body in sections(markdown):
        if speaker == "user":
            moment = _header_moment(note)
            if moment is not None:
                first_header = first_header or moment
                writer.at(start + (moment - first_header))
            body = body.removesuffix("---").strip()  # the separator SpecStory writes after a prompt
            if body:
                writer.prompt(body)
            continue
        for block in _blocks(body):
            _assistant_block(writer, block)
    return writer


def convert(folder: Path, out: Path, cwd: str) -> list[Path]:
    """Writes every `*.md` export of `folder` as a Claude Code transcript under `out` (a projects folder)."""
    files = sorted(p for p in folder.glob("*.md") if _FILE_MOMENT.match(p.name))
    if not files:
        raise DatasetError(f"{folder} holds no SpecStory export (YYYY-MM-DD_HH-MMZ-*.md)")
    written = []
    for path in files:
        writer = convert_file(path, cwd)
        if writer.lines:
            written.append(writer.write(out))
    return written
