"""What a command is: a command line as segments, each with its kind (test, lint, format, typecheck, build,
generate, migrate, install, tool) and a canonical form that stays the same from run to run."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from cems_cli.capture.error_lines import one_line
from cems_cli.command.invocations import capture_commands


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
