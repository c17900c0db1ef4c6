"""From transcript lines to observations: a session cut into chunks, each chunk's digest, LLM extraction.

A *chunk* is one user request and the work that followed it: it opens at a prompt and closes at the next
prompt that follows some activity, when the session id changes, when it grows past the size limits (a long
turn becomes several chunks), or when the caller flushes it (session idle, file truncated or gone).

Chunk boundaries depend only on the transcript's content, never on when or in how many pieces it was read,
and the open chunk (the builder's state) round-trips through JSON exactly. That is what lets the observer
commit its state with each file offset and resume after a crash with the same result as one clean pass.

Everything kept is cleaned when it is captured (`<private>` blocks dropped, secrets redacted, clipped), so
the pending state and the LLM backlog stored in the database never hold what a memory may not.

This module holds the records (`Observation`, `Chunk`, `Limits`) and the cleaning; `chunks` builds the
chunks, `digests` makes a closed chunk's digest, and `extraction` asks the LLM.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from cems_cli import defaults
from cems_cli.text.redact import redact_secrets, strip_private

SOURCE = "observer"
NO_OBSERVE_MARKER = defaults.NO_OBSERVE_MARKER
# The session's `context` memory is always the deterministic record (capture/sessions.py); the model adds
# the categories that need understanding.
LLM_CATEGORIES = ("learnings", "decisions", "patterns", "preferences")
# The tools that change a file, and the argument that names it.
EDIT_TOOLS = {"Edit": "file_path", "MultiEdit": "file_path", "Write": "file_path",
              "NotebookEdit": "notebook_path"}

_SLACK = 512  # extra characters redacted past a clip point, so a secret cut in half is still recognised

_SUBCOMMAND_TOOLS = frozenset(
    "npm yarn pnpm bun cargo go make just task uv poetry git docker kubectl pip alembic terraform helm gh "
    "celery prisma ansible-galaxy".split()
)
# Prefixes that change how a command runs, not what it is; launchers that run the project's tools.
_LAUNCHERS = frozenset(
    tuple(pair.split(":"))
    for pair in "uv:run poetry:run pipenv:run pdm:run hatch:run rye:run pnpm:exec bundle:exec npm:exec "
    "yarn:dlx".split()
)
_SINGLE_LAUNCHERS = frozenset("npx bunx pnpx".split())
# Commands that only look at the state of things; a retry that passes after one of these was not fixed
# by it. Programs, and subcommands of any program (`alembic current`, `helm history`, `kubectl get`).
_LOOKING_PROGRAMS = frozenset(
    "ls cat head tail less more grep rg ag find fd pwd echo printf which type whereis file stat wc tree du "
    "df ps top env printenv id whoami hostname uname date diff jq yq".split()
)
_LOOKING_SUBCOMMANDS = frozenset(
    "status log logs diff show current history heads list ls ps top images get describe version inspect "
    "ping info branch config view".split()
)


# --------------------------------------------------------------------------- records


@dataclass
class Observation:
    """A memory-to-be: what MemoryService.prepare needs, with the transcript's time of the activity."""

    text: str
    category: str
    tags: list[str]
    project: str | None
    title: str | None = None
    created_at: str | None = None  # ISO-8601 from the transcript
    session_id: str = ""
    line: int = 0  # transcript line (1-based) where the turn that produced it starts: provenance
    # Several sightings of one thing (a command a rule blocked, tried again) make one memory: the store
    # keeps one memory per `key` and counts the sightings (`count` in this turn).
    key: str = ""
    count: int = 1
    # A command (or file) of the project's roll of one kind (capture/pattern_rolls.py): `roll` is the kind.
    roll: str = ""
    item: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Observation:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class Chunk:
    """A closed chunk: its rendering for an LLM and its deterministic digest observations."""

    session_id: str
    project: str | None
    branch: str
    first_at: str
    last_at: str
    text: str
    observations: list[Observation]
    # What the turn adds to its session's record (capture/sessions.py): asked, changed, commands, blocked…
    session: dict[str, Any] = field(default_factory=dict)
    sidechain: bool = False
    line: int = 0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["observations"] = [o.to_json() for o in self.observations]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Chunk:
        values = dict(data)
        values["observations"] = [Observation.from_json(o) for o in data.get("observations", [])]
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in values.items() if k in known})


@dataclass(frozen=True)
class Limits:
    chunk_max_chars: int = 8000
    chunk_max_tools: int = 40


# --------------------------------------------------------------------------- cleaning


def clip(text: str, limit: int, *, one_line: bool = True) -> str:
    """`text` as it may be kept: private blocks dropped, secrets redacted, at most `limit` characters."""
    text = strip_private(text.replace("\x00", ""))
    if len(text) > limit + _SLACK:
        text = text[: limit + _SLACK]
    text = redact_secrets(text)
    text = " ".join(text.split()) if one_line else text.strip()
    if len(text) > limit:
        text = text[: max(limit - 1, 0)].rstrip() + "…"
    # json.loads turns "\ud800" escapes into lone surrogates, which PostgreSQL cannot store.
    return text.encode("utf-8", errors="replace").decode("utf-8")


def command_key(command: str) -> str:
    """What identifies a command across retries: the program (and its subcommand for tools like npm or
    git), after `cd …&&` prefixes, environment assignments and launchers (`uv run`, `npx`, `sudo`).
    `pytest -q tests/x.py` → `pytest`; `uv run alembic upgrade head` → `alembic upgrade`."""
    from cems_cli.command.invocations import capture_commands

    # The last top-level command that is not the tail of a pipeline, wrappers such as `timeout 600` or
    # `nice -n 10` removed (`cems_cli.command.model`): `cd x && pytest -q | tail` is keyed `pytest`.
    invocations = [inv for inv in capture_commands(command) if not inv.pipe]
    words = list(invocations[-1].words) if invocations else []
    if len(words) > 1 and (words[0], words[1]) in _LAUNCHERS:
        words = words[2:]
    elif words and words[0] in _SINGLE_LAUNCHERS:
        words = words[1:]
    if not words:
        return ""
    program = words[0].rsplit("/", 1)[-1]
    if program in ("python", "python3") and len(words) > 2 and words[1] == "-m":
        return f"python -m {words[2]}"
    if program in _SUBCOMMAND_TOOLS and len(words) > 1 and not words[1].startswith("-"):
        return f"{program} {words[1]}"
    return program


def _inspects(command: str) -> bool:
    """A command that only looks (`ls`, `git status`, `alembic current`, `kubectl get`): not a fix."""
    program = command_key(command).split(" ", 1)[0]
    if program in _LOOKING_PROGRAMS:
        return True
    # The first words after the program that are not options (`celery -A app inspect ping`).
    words = command.split("&&")[-1].split("|")[0].split()
    after = words[words.index(program) + 1 :] if program in words else words[1:]
    return any(w in _LOOKING_SUBCOMMANDS for w in [w for w in after if not w.startswith("-")][:3])
