"""UserPromptSubmit and SessionStart hooks as real subprocesses, with the warm search server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.paths import PAYLOADS


def _run(
    script: str, payload: dict | bytes, env: dict[str, str], timeout: float = 60
) -> tuple[int, str, str]:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    proc = subprocess.run(
        [sys.executable, str(REPO / "hooks" / script)],
        input=data,
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        timeout=timeout,
    )
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


@pytest.fixture(scope="module", autouse=True)
def one_search_server() -> Iterator[None]:
    """The search server the first prompt starts serves the whole module, stopped at its end: a request
    carries its user, project and recall knobs, so the tests (each a user of its own) share it as agents on
    one machine do, and a start and a stop per test are saved."""
    yield
    from cems_cli.server.daemon import stop_server

    for home in _HOMES_SERVED:
        stop_server(home)


_HOMES_SERVED: set[Path] = set()


@pytest.fixture
def served(cli, env):
    """Memories, with the module's search server for this CEMS_HOME (started on demand by a hook)."""
    cli(
        "remember",
        "Run the tests with `make test`; it builds the virtualenv first.",
        "--category",
        "patterns",
    )
    cli("remember", "I prefer ruff over flake8 for linting Python.", "--category", "preferences")
    pinned = cli("remember", "Never commit secrets; use the vault CLI.", "--category", "decisions", "--json")
    cli("pin", pinned.json()["id"], "--pin-category", "guideline")
    cli("remember", "The staging database was migrated to PostgreSQL 18.", "--category", "context")
    _HOMES_SERVED.add(Path(env["CEMS_HOME"]))
    yield env


def _prompt(prompt: str) -> dict:
    return {"session_id": "s", "hook_event_name": "UserPromptSubmit", "cwd": "/tmp", "prompt": prompt}


def test_prompt_recall_injects_a_memory_block(served):
    code, out, err = _run(
        "user_prompt_submit.py",
        _prompt("how do I run the test suite?"),
        {**served, "CEMS_RECALL_TIME_BUDGET": "30"},
    )
    assert code == 0, err
    context = json.loads(out)["hookSpecificOutput"]
    assert context["hookEventName"] == "UserPromptSubmit"
    text = context["additionalContext"]
    assert text.startswith("<memory-recall>") and text.endswith("</memory-recall>")
    assert "make test" in text.splitlines()[2]  # the best memory comes first, with its id and category
    assert "(patterns, " in text
    # The block was formatted by the server, as the hook would have formatted its results.
    from cems_cli.engine.recall import format_recall
    from cems_cli.server.client import call

    project = served["CEMS_PROJECT"]
    # The module's one server serves every test's user: the request names whose memories it searches.
    answer = call(served["CEMS_HOME"], {"op": "search", "query": "how do I run the test suite?",
                                        "project": project, "user": served["CEMS_USER"]}, 30)
    assert answer and answer["recall"] == format_recall(answer["results"], project)
    assert answer["recall"].splitlines()[2] == text.splitlines()[2]


def test_a_prompt_that_matches_no_memory_injects_nothing(served):
    environment = {**served, "CEMS_RECALL_TIME_BUDGET": "30"}
    code, out, err = _run("user_prompt_submit.py", _prompt("xyzzy plugh frobnicate"), environment)
    assert (code, out) == (0, ""), err


def test_each_injected_memory_shows_its_confidence_and_origin_and_a_floor_holds_back_the_unsure(served):
    environment = {**served, "CEMS_RECALL_TIME_BUDGET": "30"}
    code, out, err = _run("user_prompt_submit.py", _prompt("how do I run the test suite?"), environment)
    assert code == 0, err
    first = json.loads(out)["hookSpecificOutput"]["additionalContext"].splitlines()[2]
    header = first[first.index("(") : first.index(") ") + 1]
    confidence = float(header.split("confidence ")[1].split(";")[0])
    assert 0 < confidence < 1 and "; written by hand" in header and "make test" in first
    environment["CEMS_RECALL_MIN_CONFIDENCE"] = f"{confidence + 0.01:.2f}"
    code, out, err = _run("user_prompt_submit.py", _prompt("how do I run the test suite?"), environment)
    assert (code, out) == (0, ""), err


@pytest.mark.parametrize("prompt", ["ok", "yes", "continue", "Thanks!", "  go ahead. "])
def test_trivial_prompts_inject_nothing(served, prompt):
    assert _run("user_prompt_submit.py", _prompt(prompt), served) == (0, "", "")


@pytest.mark.real_model  # "which linter do I like?" recalls the ruff preference by meaning
def test_fixture_payload_and_warm_latency(served):
    payload = json.loads((PAYLOADS / "UserPromptSubmit.json").read_text())
    env = {**served, "CEMS_RECALL_TIME_BUDGET": "30"}
    assert _run("user_prompt_submit.py", payload, env)[0] == 0
    import time

    started = time.perf_counter()
    code, out, _ = _run("user_prompt_submit.py", _prompt("which linter do I like?"), served)
    assert code == 0 and "ruff" in out
    assert time.perf_counter() - started < 5  # generous: the benchmark measures the real median


def test_no_server_within_a_tiny_budget_fails_open(env, tmp_path):
    home = tmp_path / "cold-home"
    try:
        code, out, err = _run(
            "user_prompt_submit.py",
            _prompt("what did we decide about the database?"),
            {**env, "CEMS_RECALL_TIME_BUDGET": "0.01", "CEMS_HOME": str(home)},
        )
        assert (code, out) == (0, "")
    finally:
        # The hook started a server for the next prompt: wait for it, then stop it and its database.
        import time

        from cems_cli.server.daemon import server_pid, stop_server
        from cems_cli.store.embedded import stop_server as stop_database

        deadline = time.monotonic() + 60
        while server_pid(home) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        stop_server(home)
        stop_database(home / "pg")


def test_session_start_injects_the_profile(served):
    payload = {"session_id": "s", "hook_event_name": "SessionStart", "cwd": "/tmp", "source": "startup"}
    code, out, err = _run("session_start.py", payload, served)
    assert code == 0, err
    text = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("<memory-profile>")
    guidelines = text.index("Pinned guidelines")
    assert text.index("Never commit secrets") > guidelines
    assert "I prefer ruff" in text[text.index("Preferences") :]


def test_a_memory_the_sessions_profile_holds_is_not_recalled_again_in_that_session(served):
    """One request never carries the same memory twice: what SessionStart put in the profile, the prompts of
    that session do not inject again (other sessions still get it)."""
    import os
    import re
    import stat

    environment = {**served, "CEMS_RECALL_TIME_BUDGET": "30"}
    start = {"session_id": "s-profile", "hook_event_name": "SessionStart", "cwd": "/tmp", "source": "startup"}
    code, out, err = _run("session_start.py", start, served)
    assert code == 0, err
    profile = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    [shown] = re.findall(r"\[([0-9a-f]{8})\][^\n]*Never commit secrets", profile)
    question = "Can I commit secrets to the repository, or is there a vault CLI?"

    def recalled(session: str) -> str:
        payload = {**_prompt(question), "session_id": session}
        code, out, err = _run("user_prompt_submit.py", payload, environment)
        assert code == 0, err
        return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""

    assert f"[{shown}]" in recalled("another-session")
    assert f"[{shown}]" not in recalled("s-profile")
    folder = Path(served["CEMS_HOME"]) / "injected"
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(folder / "s-profile").st_mode) == 0o600


@pytest.mark.parametrize(
    "raw", [b"", b"not json", b"[1]", b"\xff\xfe", b'{"hook_event_name": "UserPromptSubmit"}']
)
def test_malformed_input_fails_open(env, raw):
    for script in ("user_prompt_submit.py", "session_start.py"):
        code, out, _ = _run(script, raw, {**env, "CEMS_RECALL_TIME_BUDGET": "0.5"})
        assert code == 0
        if script == "user_prompt_submit.py":
            assert out == ""


def test_disabled_hooks_do_nothing(served):
    code, out, err = _run(
        "user_prompt_submit.py", _prompt("how do I run the tests?"), {**served, "CEMS_DISABLE": "1"}
    )
    assert (code, out, err) == (0, "", "")
