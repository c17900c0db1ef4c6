"""The most telling line of a failed command's output: the text a later search for the same problem will
contain ("No module named 'ledger'", "column "burst_limit" does not exist"), not the runner's summary of it
("14 failed", "ELIFECYCLE Command failed with exit code 1.", "make: *** [Makefile:23: test] Error 1").

One chooser for both capture paths (tool events and transcripts), so a failure seen by either is remembered
with the same words. Hand-written: no library picks the meaningful line out of arbitrary tool output.
"""

from __future__ import annotations

import re

from cems_cli.text.terminal import without_terminal_control

# pytest's detail lines ("E   ModuleNotFoundError: No module named 'ledger'") name what failed a test or its
# collection, under a first line that only says where ("ImportError while loading conftest …").
_PYTEST_DETAIL = re.compile(r"^E\s+(\S.*)$")
# A line that names a problem: an exception, an error or failure marker, a missing thing, a refusal.
_TELLING = re.compile(
    r"\w*(?:Error|Exception)\b|FAILED|\bfailed\b|^--- FAIL: |fatal:|error|No such file|not found|"
    r"does not exist|denied|cannot|refused|unreachable",
    re.IGNORECASE,
)
# Lines that say that something failed, or how many things did, without saying what: counts, runners'
# wrappers, separators, the tool's exit code.
_SAYS_NOTHING = re.compile(
    r"^(?:Exit code \d+|Traceback \(most recent call last\):|FAIL|PASS)$"
    r"|^(?:FAIL|ok)\s+\S+\s+[\d.]+s$"  # go test's per-package lines
    r"|^\d+ (?:failed|passed|errors?|skipped|deselected|issues?)\b"
    r"|\bELIFECYCLE\b"
    r"|^make(?:\[\d+\])?: \*\*\* \[[^\]]*\] Error \d+$"
    r"|^\* [\w-]+: \d+$"
    r"|^[-=_~*#\s]+$|^=+.*=+$"
)
# Frame characters some tools draw around messages (terraform's "│ Error: …", playwright's boxes).
_FRAME = "│╷╵║╔╗╚╝═┃|"


# A learning quotes the error before the fix ("`cmd` failed with "…"; it passed after running `fix`"), and the
# prompt hook shows 300 characters of a memory: quoting 240 of alembic's "Multiple head revisions are
# present…" pushed `alembic merge` out of what the next session saw. The start of an error line says what
# went wrong; its end is mostly advice and values.
ERROR_CHARS = 160


def error_line(output: str, limit: int = ERROR_CHARS) -> str:
    """One line, at most `limit` characters: a pytest `E` line, else the first line naming a problem, else
    the first line that says anything, else the first line. Backticks become quotes (the line is quoted
    inside Markdown)."""
    output = without_terminal_control(output)
    written = [line.strip().strip(_FRAME).strip() for line in output.splitlines()]
    written = [line for line in written if line]
    lines = [line for line in written if not _SAYS_NOTHING.match(line)]
    for line in lines:
        match = _PYTEST_DETAIL.match(line)
        if match:
            return one_line(match.group(1), limit)
    if not lines:  # only "Exit code 2" or a count: still more than nothing
        return one_line(written[0], limit) if written else "an error"
    index = next((i for i, line in enumerate(lines) if _TELLING.search(line)), 0)
    chosen = lines[index]
    if chosen.startswith("--- FAIL: ") and index + 1 < len(lines):
        # go test names the test, then says what went wrong on the next line: both are worth finding.
        chosen += " " + lines[index + 1]
    return one_line(chosen, limit)


def one_line(text: str, limit: int) -> str:
    """`text` on one line (whitespace collapsed, backticks as quotes), cut to `limit` characters."""
    text = " ".join(text.replace("`", "'").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
