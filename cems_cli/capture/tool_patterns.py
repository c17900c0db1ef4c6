"""From captured tool events to `patterns` statements about a project. Pure: no I/O, no clock.

What a project's tool events say, each as one stable sentence:
* how its tests, lint, formatting, type checks, build, code generation, migrations and deploys run (a
  command of that kind that succeeded);
* how its dependencies are installed (package manager commands that succeeded);
* which files keep changing (edited in at least 4 tool calls across at least 2 sessions);
* errors and the fix that worked (a command failed, files were changed or packages installed, and the
  same command then passed, in the same session).

Each statement has a `key` (its identity within the project) and a `text` derived only from the events,
without counts that grow with every event: the same events always give the same statements, so reprocessing
stores nothing new (the store deduplicates by content hash, the worker also remembers emitted keys).

Bash responses carry no exit code (hooks-reference §2), so `bash_failed` infers failure:
1. a PostToolUseFailure event, `interrupted: true`, or a non-zero exit code field if a version adds one;
2. otherwise, a success summary in the last lines of output (pytest "N passed", jest "Tests: N passed",
   cargo "test result: ok", go "ok"/"PASS") without a failure count means success;
3. otherwise, a line-anchored failure marker anywhere in stdout or stderr means failure: "Exit code N",
   a Python traceback or `SomeError:` line, `error:`/`fatal:`/`error[E…]:`, compiler `file:line: error`,
   `npm ERR!`, pytest/jest/go/cargo failure summaries, make's `*** … Error N`, "command not found",
   "No such file or directory", ruff/mypy "Found N errors".
Output on stderr alone is not a failure: git, npm, pip and most build tools write progress there.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cems_cli.capture.error_lines import error_line, one_line
from cems_cli.command.invocations import capture_commands

# --------------------------------------------------------------------------- events


@dataclass(frozen=True)
class ToolEvent:
    """One captured tool call, as the spool holds it (already clipped and redacted)."""

    tool_use_id: str
    session_id: str
    tool_name: str
    cwd: str
    received_at: float
    failure_event: bool = False  # PostToolUseFailure
    tool_input: dict[str, Any] = field(default_factory=dict)
    tool_response: dict[str, Any] | None = None
    error: str = ""  # PostToolUseFailure's message
    interrupted: bool = False

    @classmethod
    def from_spool(
        cls,
        *,
        tool_use_id: str,
        session_id: str,
        event: str,
        tool_name: str,
        cwd: str | None,
        received_at: float,
        data: dict[str, Any],
    ) -> ToolEvent:
        tool_input = data.get("input")
        response = data.get("response")
        error = data.get("error")
        return cls(
            tool_use_id=tool_use_id,
            session_id=session_id or "",
            tool_name=tool_name,
            cwd=cwd or "",
            received_at=float(received_at),
            failure_event=event == "PostToolUseFailure",
            tool_input=tool_input if isinstance(tool_input, dict) else {},
            tool_response=response if isinstance(response, dict) else None,
            error=error if isinstance(error, str) else "",
            interrupted=data.get("interrupted") is True,
        )


@dataclass(frozen=True)
class Statement:
    key: str  # identity within the project, e.g. "test:pytest -q"
    text: str
    kind: str  # test, lint, format, typecheck, build, generate, migrate, deploy, install, tool, hot_file, fix
    session_id: str  # the session of the event that made it true
    at: float  # when that event was captured


# --------------------------------------------------------------------------- did a Bash call fail?

_EXIT_CODE_FIELDS = ("exitCode", "exit_code", "returnCode", "returncode")
_FAILURE_MARKERS = re.compile(
    r"^Exit code [1-9]\d*\s*$"
    r"|^Traceback \(most recent call last\):"
    r"|^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception): "
    r"|^(?:error|fatal|ERROR|FATAL)(?:\[[\w-]+\])?:"
    r"|^\S+:\d+(?::\d+)?: (?:fatal )?error\b"
    r"|\berror TS\d+:"
    r"|^(?:npm|pnpm) (?:ERR!|error\b)|^error Command failed"
    r"|^=+ .*\b[1-9]\d* (?:failed|errors?)\b.*=+$"
    r"|^(?:\d+ \w+, )*[1-9]\d* (?:failed|errors?)\b.* in [\d.]+s\b"
    r"|^FAILED \S|^ERROR \S"
    r"|^Tests:\s+[1-9]\d* failed|^\s*Test Files\s+[1-9]\d* failed"
    r"|^FAIL\b|^--- FAIL:|^test result: FAILED"
    r"|^make(?:\[\d+\])?: \*\*\* .*Error \d+"
    r"|: command not found\s*$|: No such file or directory\s*$"
    r"|^Found [1-9]\d* errors?\b|^✖ [1-9]\d* problems?",
    re.M,
)
_SUCCESS_SUMMARY = re.compile(
    r"^=+ (?:[1-9]\d* passed|no tests ran)\b.*=+$"
    r"|^[1-9]\d* passed\b.* in [\d.]+s\b"
    r"|^Tests:\s+[1-9]\d* passed, [1-9]\d* total"
    r"|^test result: ok\."
    r"|^ok\s+\S+\s|^PASS$"
    r"|^All checks passed!$|^Success: no issues found",
    re.M,
)
_FAILURE_COUNT = re.compile(r"\b[1-9]\d* (?:failed|errors?)\b")


def _exit_code(response: dict[str, Any] | None) -> int | None:
    if not response:
        return None
    for name in _EXIT_CODE_FIELDS:
        value = response.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _output_parts(event: ToolEvent) -> list[str]:
    response = event.tool_response or {}
    parts = [response.get("stdout"), response.get("stderr"), event.error]
    return [part for part in parts if isinstance(part, str) and part.strip()]


def bash_output(event: ToolEvent) -> str:
    """Everything the call printed, plus the failure message of a PostToolUseFailure."""
    return "\n".join(_output_parts(event))


def bash_failed(event: ToolEvent) -> bool:
    """Did this Bash call fail? See the module docstring for the heuristic."""
    if event.failure_event or event.interrupted or (event.tool_response or {}).get("interrupted") is True:
        return True
    code = _exit_code(event.tool_response)
    if code is not None:
        return code != 0
    return output_says_failed(*_output_parts(event))


def output_says_failed(*parts: str) -> bool:
    """The output half of the heuristic (stdout, stderr…), also for a transcript's tool result text."""
    for part in parts:
        tail = "\n".join(line.strip() for line in part.strip().splitlines()[-5:])
        if _SUCCESS_SUMMARY.search(tail) and not _FAILURE_COUNT.search(tail):
            return False
    return any(_FAILURE_MARKERS.search(part) for part in parts)


# --------------------------------------------------------------------------- what a command is


@dataclass(frozen=True)
class Segment:
    """One simple command of a Bash call: its kind (or None), the tool it runs, how to write it."""

    kind: str | None  # test, lint, format, typecheck, build, generate, migrate, deploy, install, tool
    tool: str  # e.g. "pytest", "npm", "docker compose"
    canonical: str  # the command without selectors, paths, redirections or env assignments
    text: str  # the whole simple command (arguments kept), without env assignments and redirections
    manager: str = ""  # for kind "install": the package manager


_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SOURCE_FILE = re.compile(r"\.(?:pyi?|[cm]?js|jsx|tsx?|go|rs|rb|java|kt|c|cc|cpp|h|hpp|cs|php|swift|vue)$")
# Test selection and per-run temp dirs: they change from run to run, the way tests run does not.
_VALUE_FLAGS = frozenset(
    "-k --deselect -t --testNamePattern --test-name-pattern -run --run --grep -g --basetemp".split()
)
_SELECTOR_FLAGS = _VALUE_FLAGS | {"--lf", "--ff", "--last-failed"}
_SELECTOR_PREFIXES = tuple(f"{flag}=" for flag in sorted(_VALUE_FLAGS))
_MAX_CANONICAL = 120
_PYTHON = re.compile(r"python[\d.]*|py|pypy3?")
_SAFE_WORD = re.compile(r"[\w@%+=:,./-]+")


def _kinds(spec: str) -> dict[tuple[str, ...], str]:
    """Parse "kind: tool sub, tool sub" lines into {(tool, sub): kind}."""
    table: dict[tuple[str, ...], str] = {}
    for line in spec.strip().splitlines():
        kind, _, entries = line.partition(":")
        for entry in entries.split(","):
            table[tuple(entry.split())] = kind.strip()
    return table


def _word_sets(spec: str) -> dict[str, frozenset[str]]:
    """Parse "kind: word word" lines (a kind may take several lines) into {kind: words}."""
    sets: dict[str, set[str]] = {}
    for line in spec.strip().splitlines():
        kind, _, words = line.partition(":")
        sets.setdefault(kind.strip(), set()).update(words.split())
    return {kind: frozenset(words) for kind, words in sets.items()}


# Prefixes that only change how a command runs: dropped from the canonical form.
_TRANSPARENT = frozenset("sudo time nice nohup command exec env xvfb-run stdbuf".split())
# Launchers that stay in the canonical form (they are how the project runs things) but are looked past.
_LAUNCHERS = dict(
    pair.split(":")
    for pair in "uv:run poetry:run pipenv:run pdm:run hatch:run rye:run pnpm:exec yarn:dlx "
    "bundle:exec npm:exec".split()
)
_SINGLE_LAUNCHERS = frozenset("npx bunx pnpx".split())
_TOOLS_BY_KIND = _word_sets("""
test: pytest py.test tox nox jest vitest mocha ava rspec phpunit ctest unittest nosetests karma behave trial
lint: flake8 pylint eslint golangci-lint shellcheck rubocop stylelint hadolint markdownlint markdownlint-cli2
lint: yamllint pyflakes pycodestyle oxlint bandit
format: black prettier gofmt isort rustfmt clang-format autopep8 yapf shfmt
typecheck: mypy pyright basedpyright vue-tsc pyre pytype
build: webpack rollup esbuild build tsup parcel
""")
_BY_SUBCOMMAND = _kinds("""
test: go test, cargo test, cargo nextest, deno test, bun test, mix test, dotnet test, mvn test, mvn verify
test: gradle test, gradlew test, swift test, flutter test, rake test, rake spec, playwright test, cypress run
test: hatch test
lint: cargo clippy, go vet, pre-commit run, deno lint, biome lint, biome check, biome ci
lint: helm lint, terraform validate, tofu validate
format: cargo fmt, go fmt, deno fmt, biome format, ruff format, terraform fmt, tofu fmt
generate: sqlc generate, buf generate, go generate, prisma generate
migrate: alembic upgrade, prisma migrate, flyway migrate, goose up, manage.py migrate, rails db:migrate
build: cargo build, go build, docker build, mvn package, mvn compile, mvn install, gradle build, gradlew build
build: gradle assemble, dotnet build, swift build, vite build, next build, hatch build, poetry build, uv build
build: bun build
""")
# Package managers: (tool, subcommand words…) → manager; the subcommand words stay in the canonical form.
_INSTALLERS = _kinds("""
pip: pip install, pip3 install
uv: uv add, uv sync, uv lock, uv pip install, uv pip sync
poetry: poetry add, poetry install, poetry lock
pipenv: pipenv install, pipenv sync
pdm: pdm add, pdm install, pdm sync
npm: npm install, npm i, npm ci, npm add
yarn: yarn add, yarn install, yarn
pnpm: pnpm add, pnpm install, pnpm i
bun: bun add, bun install, bun i
cargo: cargo add, cargo fetch
go: go get, go mod tidy, go mod download
bundler: bundle install, bundle add
gem: gem install
composer: composer install, composer require
conda: conda install, mamba install, micromamba install
brew: brew install
apt: apt-get install, apt install
dotnet: dotnet add package
mix: mix deps.get
deno: deno add
""")
_SCRIPT_RUNNERS = frozenset("npm yarn pnpm bun".split())
_MAKE_LIKE = frozenset("make just task".split())
# Script names (npm run <name>, make <name>) by prefix, first match wins: "test:unit" is a test run.
_SCRIPT_PREFIXES = tuple(
    tuple(pair.split(":"))
    for pair in "test:test e2e:test lint:lint format:format fmt:format prettier:format typecheck:typecheck "
    "type-check:typecheck types:typecheck check-types:typecheck tsc:typecheck build:build check:test "
    "generate:generate gen:generate codegen:generate deploy:deploy migrate:migrate db-migrate:migrate".split()
)
_INSTALL_FLAG_VALUES = frozenset("-e --editable -r --requirement".split())
_INSTALL_KEPT_FLAGS = _INSTALL_FLAG_VALUES | set(
    "--frozen --locked --dev -D --no-dev --all-extras --upgrade -U".split()
)
# Other developer tools (kind "tool"). No statement says that a project uses one: "the `kubectl`
# command-line tool is used" told nobody anything, and was injected as noise whenever it matched. A run of
# one can be what fixed a failure ("it passed after running `docker compose up -d postgres`").
_DEV_TOOLS = frozenset(
    """
docker docker-compose kubectl helm terraform tofu gh alembic prisma aws gcloud az psql redis-cli flyway
ansible ansible-playbook vagrant skaffold tilt cdk serverless sam supabase firebase wrangler vercel netlify
heroku flyctl fly pulumi packer minikube kind dbt django-admin manage.py rails mysql mongosh sqlite3 celery
uvicorn gunicorn flask hugo make just task bazel nx turbo lerna storybook sqlx diesel goose migrate atlas
liquibase
""".split()
)


def _segments(command: str) -> list[tuple[list[str], str | None]]:
    """Simple commands of a command line as `cems_cli.command.model` reads them (assignments, redirections
    and wrappers such as `timeout 600` or `nice -n 10` gone), each with the directory of a `cd` before it
    (if any). Only the first command of a pipeline counts: `pytest | tail -5` is a pytest run."""
    out: list[tuple[list[str], str | None]] = []
    cd_dir: str | None = None
    for invocation in capture_commands(command.replace("\\\n", " ")):
        if invocation.pipe:
            continue
        words = invocation.words
        if words[0] in ("cd", "pushd"):
            cd_dir = words[1] if len(words) > 1 else None
        else:
            out.append((words, cd_dir))
    return out


def _positionals(words: Sequence[str]) -> list[str]:
    return [w for w in words if not w.startswith("-")]


def _quote(word: str) -> str:
    return word if _SAFE_WORD.fullmatch(word) else shlex.quote(word)


def _pathlike(word: str) -> bool:
    if word in (".", "./...", "./", "..."):
        return False
    return "/" in word or "::" in word or bool(_SOURCE_FILE.search(word))


def _runnable(words: list[str]) -> tuple[list[str], int]:
    """Drop env assignments and transparent prefixes (`sudo -E`, `time`, `timeout 60`); return the words
    and where the tool itself starts, past launchers such as `uv run`, `npx` or `python -m`."""
    words = list(words)
    while words:
        first = os.path.basename(words[0])
        if _ASSIGNMENT.match(words[0]) or first in _TRANSPARENT:
            words.pop(0)
            while words and words[0].startswith("-"):
                flag = words.pop(0)
                if flag in ("-n", "-u", "-g") and words:  # nice -n 10, sudo -u user
                    words.pop(0)
        elif first == "timeout":
            words = [w for w in words[1:] if not w.startswith("-")][1:] if len(words) > 2 else []
        else:
            break
    start = 0
    while start < len(words):
        name = os.path.basename(words[start])
        rest = words[start + 1 :]
        if name in _SINGLE_LAUNCHERS:
            start += 1
            while start < len(words) and words[start].startswith("-"):
                start += 1
            continue
        if _LAUNCHERS.get(name) and rest and rest[0] == _LAUNCHERS[name]:
            start += 2
            continue
        if _PYTHON.fullmatch(name) and rest:
            if rest[0] == "-m" and len(rest) > 1:
                start += 2
                continue
            if not rest[0].startswith("-"):
                start += 1  # python manage.py …, python script.py …
                continue
        break
    return words, start


def _tool_name(word: str) -> str:
    name = os.path.basename(word)
    return "gradlew" if name in ("gradlew", "gradlew.bat") else name


# A project's own test runner, run as a script: Django's `tests/runtests.py`, SymPy's `bin/test`, a
# `run_tests.sh`. Named so by convention; `test` alone is the shell's builtin unless run as a path.
_TEST_SCRIPTS = frozenset({"runtests", "run_tests", "run-tests", "runtest", "run_test", "test", "tests"})
_SCRIPT_SUFFIXES = (".py", ".sh", ".bash")


def _is_test_script(word: str) -> bool:
    name = os.path.basename(word)
    stem = name.removesuffix(next((s for s in _SCRIPT_SUFFIXES if name.endswith(s)), ""))
    return stem.lower() in _TEST_SCRIPTS and ("/" in word or stem != name)


def _script_kind(script: str) -> str | None:
    script = script.lower()
    for prefix, kind in _SCRIPT_PREFIXES:
        if script == prefix or script.startswith((prefix + ":", prefix + "-", prefix + "_")):
            return kind
    return None


def _kind_of(tool: str, args: list[str]) -> tuple[str | None, str]:
    """(kind, package manager) of a tool invocation."""
    subs = _positionals(args)
    for length in (3, 2):
        words = (tool, *subs[: length - 1])
        if len(words) == length and words in _INSTALLERS:
            return "install", _INSTALLERS[words]
    if not subs and (tool,) in _INSTALLERS:
        return "install", _INSTALLERS[(tool,)]
    sub = subs[0] if subs else ""
    if tool == "ruff":
        return ("format" if sub == "format" else "lint"), ""
    if tool == "tsc":
        return ("typecheck" if "--noEmit" in args else "build"), ""
    if tool == "cmake" and "--build" in args:
        return "build", ""
    if tool == "docker" and sub == "compose" and len(subs) > 1 and subs[1] == "build":
        return "build", ""
    if (tool, sub) in _BY_SUBCOMMAND:
        return _BY_SUBCOMMAND[(tool, sub)], ""
    if tool in _SCRIPT_RUNNERS:
        script = subs[1] if sub in ("run", "run-script") and len(subs) > 1 else sub
        if sub == "t":
            return "test", ""
        kind = _script_kind(script) if script else None
        if kind:
            return kind, ""
        if script:
            return _kind_of(script, [])[0], ""
        return None, ""
    if tool in _MAKE_LIKE:
        if not sub or sub in ("all", "build"):
            return ("build" if tool == "make" else None), ""
        kind = _script_kind(sub)
        if kind:
            return kind, ""
    for kind, tools in _TOOLS_BY_KIND.items():
        if tool in tools:
            return kind, ""
    if tool in _DEV_TOOLS:
        return "tool", ""
    return None, ""


def _canonical(words: list[str], start: int, kind: str | None, cd_dir: str | None, cwd: str) -> str:
    text = _install_canonical(words, start) if kind == "install" else _general_canonical(words, start, cwd)
    return _cd_prefix(cd_dir, cwd) + text


def _general_canonical(words: list[str], start: int, cwd: str) -> str:
    kept = words[: start + 1]
    skip_value = False
    for word in words[start + 1 :]:
        if skip_value:
            skip_value = False
            continue
        if word in _SELECTOR_FLAGS:
            skip_value = word in _VALUE_FLAGS
            continue
        if word.startswith(_SELECTOR_PREFIXES) or "$" in word or "`" in word:
            continue
        if not word.startswith("-") and _pathlike(word):
            continue
        if word.startswith("-") and "=" in word and _pathlike(word.split("=", 1)[1]):
            continue
        kept.append(word)
    return " ".join(_quote(_relative(w, cwd)) for w in kept)


def _install_canonical(words: list[str], start: int) -> str:
    """`npm install lodash --save` → `npm install`; `pip install -e .` and `-r requirements.txt` stay."""
    tool = _tool_name(words[start])
    kept = words[: start + 1]
    sub_words = 0
    for length in (3, 2, 1):
        candidate = (tool, *_positionals(words[start + 1 :])[: length - 1])
        if candidate in _INSTALLERS:
            sub_words = length - 1
            break
    rest = words[start + 1 :]
    taken = 0
    index = 0
    while index < len(rest):
        word = rest[index]
        if taken < sub_words and not word.startswith("-"):
            kept.append(word)
            taken += 1
        elif word in _INSTALL_KEPT_FLAGS:
            kept.append(word)
            if word in _INSTALL_FLAG_VALUES and index + 1 < len(rest):
                kept.append(rest[index + 1])
                index += 1
        index += 1
    return " ".join(_quote(w) for w in kept)


def _relative(word: str, cwd: str) -> str:
    if cwd and word.startswith(cwd.rstrip("/") + "/"):
        return word[len(cwd.rstrip("/")) + 1 :]
    return word


def _cd_prefix(cd_dir: str | None, cwd: str) -> str:
    if not cd_dir or "$" in cd_dir or "`" in cd_dir or cd_dir in (".", "-", "~"):
        return ""
    relative = _relative(cd_dir, cwd)
    if relative.startswith("/") or relative.startswith("~"):
        return ""  # somewhere else on this machine: not a fact about the project
    return f"cd {_quote(relative)} && "


def parse_command(command: str, cwd: str = "") -> list[Segment]:
    """The simple commands of a Bash command line, classified."""
    segments: list[Segment] = []
    for words, cd_dir in _segments(command):
        words, start = _runnable(words)
        if start >= len(words):
            continue
        tool = _tool_name(words[start])
        args = words[start + 1 :]
        if tool == "docker" and args[:1] == ["compose"]:
            tool, args = "docker compose", args[1:]
        kind, manager = _kind_of(tool.split()[0] if tool == "docker compose" else tool, words[start + 1 :])
        if kind is None and _is_test_script(words[start]):
            kind = "test"
        canonical = _canonical(words, start, kind, cd_dir, cwd)
        text = one_line(" ".join(_quote(_relative(w, cwd)) for w in words), _MAX_CANONICAL)
        segments.append(Segment(kind, tool, canonical, text, manager))
    return segments


def command_identity(segments: Sequence[Segment]) -> str:
    """What makes two Bash calls "the same command" when deciding that a retry passed: the last
    classified segment, else all segments."""
    for segment in reversed(segments):
        if segment.kind and segment.kind != "tool":
            return segment.canonical
    return " && ".join(s.canonical for s in segments)[:200]


# --------------------------------------------------------------------------- statements

_EDIT_TOOLS = {
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "Write": "file_path",
    "NotebookEdit": "notebook_path",
}
HOT_FILE_MIN_EDITS = 4
HOT_FILE_MIN_SESSIONS = 2
_MAX_FIX_FILES = 4
_MAX_FIX_COMMANDS = 3

_KIND_TEXT = {
    "test": "the tests run with `{cmd}`",
    "lint": "the code is linted with `{cmd}`",
    "format": "the code is formatted with `{cmd}`",
    "typecheck": "types are checked with `{cmd}`",
    "build": "the build runs with `{cmd}`",
    "generate": "code is generated with `{cmd}`",
    "migrate": "database migrations run with `{cmd}`",
    "deploy": "deploys run with `{cmd}`",
}


def project_label(project: str) -> str:
    return project.removeprefix("project:")


def _edited_path(event: ToolEvent) -> str:
    name = _EDIT_TOOLS.get(event.tool_name)
    if not name:
        return ""
    path = event.tool_input.get(name) or (event.tool_response or {}).get("filePath")
    return path if isinstance(path, str) else ""


def _edit_succeeded(event: ToolEvent) -> bool:
    return not (event.failure_event or event.interrupted)


@dataclass
class _Failing:
    event: ToolEvent
    error: str
    changes_at: int  # len(session changes) when it failed


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def derive_statements(project: str, events: Iterable[ToolEvent]) -> list[Statement]:
    """Every statement the events support, in a deterministic order (by the event that made each true)."""
    label = project_label(project)
    ordered = sorted(events, key=lambda e: (e.received_at, e.tool_use_id))
    found: dict[str, Statement] = {}

    def add(key: str, kind: str, text: str, event: ToolEvent) -> None:
        if key not in found:
            found[key] = Statement(key, text, kind, event.session_id, event.received_at)

    edits: dict[str, list[ToolEvent]] = {}
    changes: dict[str, list[str]] = {}  # per session: "edit:<path>" / "cmd:<canonical>", in order
    failing: dict[tuple[str, str], _Failing] = {}

    for event in ordered:
        session_changes = changes.setdefault(event.session_id, [])
        path = _edited_path(event)
        if path:
            if _edit_succeeded(event):
                session_changes.append(f"edit:{_relative(path, event.cwd)}")
                edits.setdefault(path, []).append(event)
                _hot_file(path, edits[path], label, add)
            continue
        if event.tool_name != "Bash":
            continue
        command = event.tool_input.get("command")
        if not isinstance(command, str) or not command.strip():
            continue
        segments = parse_command(command, event.cwd)
        if not segments:
            continue
        identity = command_identity(segments)
        if bash_failed(event):
            key = (event.session_id, identity)
            if key not in failing:
                failing[key] = _Failing(event, error_line(bash_output(event)), len(session_changes))
            continue
        for segment in segments:
            if segment.kind in _KIND_TEXT and len(segment.canonical) <= _MAX_CANONICAL:
                add(
                    f"{segment.kind}:{segment.canonical}",
                    segment.kind,
                    f"In project {label} {_KIND_TEXT[segment.kind].format(cmd=segment.canonical)}.",
                    event,
                )
            elif segment.kind == "install" and len(segment.canonical) <= _MAX_CANONICAL:
                session_changes.append(f"cmd:{segment.text}")
                add(
                    f"install:{segment.canonical}",
                    "install",
                    f"In project {label} dependencies are installed with `{segment.canonical}` "
                    f"({segment.manager}).",
                    event,
                )
            elif segment.kind == "tool":
                session_changes.append(f"cmd:{segment.text}")
        fixed = failing.pop((event.session_id, identity), None)
        if fixed is not None:
            _fix(fixed, identity, session_changes, label, event, add)
    return sorted(found.values(), key=lambda s: (s.at, s.key))


# A failing command that later passed is a `learnings` memory, which the capture engine makes from the
# transcript (it knows what happened in between); every other statement is a `patterns` memory.
NOT_PATTERNS = frozenset({"fix"})


def pattern_statements(project: str, events: Iterable[ToolEvent]) -> list[Statement]:
    """The statements stored as `patterns` memories, whichever trigger saw the events: the capture worker
    (the PostToolUse hook's spooled events) and the capture engine (the commands a transcript's turn ran).
    Their texts are the same for the same command, so the store's content dedup keeps one of each."""
    return [s for s in derive_statements(project, events) if s.kind not in NOT_PATTERNS]


_Add = Callable[[str, str, str, ToolEvent], None]


def _hot_file(path: str, edits: list[ToolEvent], label: str, add: _Add) -> None:
    sessions = {e.session_id for e in edits}
    if len(edits) >= HOT_FILE_MIN_EDITS and len(sessions) >= HOT_FILE_MIN_SESSIONS:
        shown = _relative(path, edits[0].cwd)
        add(
            f"hot_file:{path}",
            "hot_file",
            f"In project {label} the file `{shown}` changes often: it was edited in several sessions.",
            edits[-1],
        )


def _fix(
    failing: _Failing, identity: str, session_changes: list[str], label: str, event: ToolEvent, add: _Add
) -> None:
    between = session_changes[failing.changes_at :]
    files: list[str] = []
    commands: list[str] = []
    for change in between:
        kind, _, value = change.partition(":")
        target = files if kind == "edit" else commands
        if value not in target:
            target.append(value)
    if not files and not commands:
        return  # passed again with nothing changed: flaky or environmental, not a fix
    actions: list[str] = []
    if files:
        shown = files[:_MAX_FIX_FILES] + (
            [f"{len(files) - _MAX_FIX_FILES} more files"] if len(files) > _MAX_FIX_FILES else []
        )
        actions.append("editing " + _join(shown))
    if commands:
        actions.append("running " + _join([f"`{c}`" for c in commands[:_MAX_FIX_COMMANDS]]))
    digest = hashlib.sha256(f"{identity}\0{failing.error}".encode()).hexdigest()[:16]
    add(
        f"fix:{digest}",
        "fix",
        f"In project {label} `{identity}` failed with `{failing.error}`; it passed after "
        f"{' and '.join(actions)}.",
        event,
    )
