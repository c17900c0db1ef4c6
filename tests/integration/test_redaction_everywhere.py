"""Every stored field is redacted, not only a memory's content: titles, tags, pin and rule reasons (and the
rules snapshot file), the same fields through `cems import` and `cems share`, and the Stop payload's last
assistant message (in the spool and in the memories the worker makes of the turn)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_post_tool_use_hook import capture_environment, git_project, spool_bytes
from tests.integration.test_stop_hook import stop, stop_payload, wait_for_worker
from tests.support.transcripts import Transcript

# Built from pieces so this file does not itself look like it leaks credentials.
GITHUB_TOKEN = "ghp_" + "Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
HF_TOKEN = "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNmQwErTyUi"
MYSQL_PASSWORD = "Tr0ub4dor" + "Pw9"
SESSION_COOKIE = "31d4d96e" + "407aad42c0ffee"
GITLAB_TOKEN = "glpat-" + "Xy7Zw6Vu5Ts4Rq3Po2Nm"
# The second round of kinds: provider prefixes, passwords outside client options, signed URLs, prose.
VAULT_TOKEN = "hvs." + "CAESIJlWh3Xq0b9Ff2y8Zk4TnV1rA6sDpQ"
PYPI_TOKEN = "pypi-" + "AgEIcHlwaS5vcmc" + "CJDI0YjYyYWEzLWZlZWEtNDA1Ny04ZGNiLWQ2NDBkOTI3M2NmOQ"
TELEGRAM_TOKEN = "6123456789" + ":AAH" + "b3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_"
NETRC_PASSWORD = "Qz7" + "netrcPw!"
SAS_SIGNATURE = "Ab3dEf6hIj9kLm2nOp5q" + "%2BRs8tUv1w%3D"
SECRETS = (GITHUB_TOKEN, HF_TOKEN, MYSQL_PASSWORD, SESSION_COOKIE, GITLAB_TOKEN)
MORE_SECRETS = (VAULT_TOKEN, PYPI_TOKEN, TELEGRAM_TOKEN, NETRC_PASSWORD, SAS_SIGNATURE)


def stored_text(user: str) -> str:
    """Every column of the user's memories, chunks and rule specs, as one text to search for secrets."""
    from cems_cli.config import get_settings
    from cems_cli.engine.service import MemoryService

    with MemoryService(get_settings()) as service:
        conn = service.conn
        documents = conn.execute(
            "SELECT row_to_json(d)::text FROM memory_documents d WHERE d.user_id = %s", (user,)
        ).fetchall()
        chunks = conn.execute(
            "SELECT c.content FROM memory_chunks c JOIN memory_documents d ON d.id = c.document_id "
            "WHERE d.user_id = %s",
            (user,),
        ).fetchall()
        rules = conn.execute(
            "SELECT row_to_json(r)::text FROM rules r JOIN memory_documents d ON d.id = r.document_id "
            "WHERE d.user_id = %s",
            (user,),
        ).fetchall()
    return "\n".join(row[0] for row in (*documents, *chunks, *rules))


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, secret


def test_remember_redacts_the_title_and_the_tags(cli, env):
    result = cli(
        "remember", "Deploy notes for the payments service.", "--json",
        "--title", f"deploy with {GITHUB_TOKEN}",
        "--tags", f"payments,{HF_TOKEN},mysql -p{MYSQL_PASSWORD}",
    )
    assert result.code == 0, result.stderr
    shown = cli("show", result.json()["id"], "--json").json()
    assert shown["title"] == "deploy with [REDACTED:github_token]"
    # a tag that was only a secret is dropped; a secret inside a tag becomes its marker
    assert shown["tags"] == ["payments", "mysql -p[REDACTED:password]"]
    assert_no_secret(stored_text(env["CEMS_USER"]))


def test_pin_redacts_its_reason(cli, env):
    memory_id = cli("remember", "Rotate the registry credentials monthly.", "--json").json()["id"]
    reason = f"the registry login is docker login -u ci -p {MYSQL_PASSWORD} registry.io"
    assert cli("pin", memory_id, "--reason", reason).code == 0
    shown = cli("show", memory_id, "--json").json()
    expected = "the registry login is docker login -u ci -p [REDACTED:password] registry.io"
    assert shown["pin_reason"] == expected
    assert_no_secret(stored_text(env["CEMS_USER"]))


def test_share_redacts_fields_a_memory_kept_from_before(cli, env):
    """A row stored before fields were redacted does not carry its secrets into the team's copy."""
    from cems_cli.config import get_settings
    from cems_cli.engine.service import MemoryService

    team = {"CEMS_TEAM": "platform"}
    memory_id = cli("remember", "Cache warming runs at 06:00.", "--json", extra_env=team).json()["id"]
    with MemoryService(get_settings()) as service:
        service.conn.execute(
            "UPDATE memory_documents SET title = %s, tags = %s, pinned = true, pin_reason = %s WHERE id = %s",
            (f"cache {GITHUB_TOKEN}", ["cache", HF_TOKEN], f"Cookie: sid={SESSION_COOKIE}", memory_id),
        )
    shared = cli("share", memory_id, "--json", extra_env=team).json()
    copy = cli("show", shared["id"], "--json", extra_env=team).json()
    assert copy["title"] == "cache [REDACTED:github_token]" and copy["tags"] == ["cache"]
    assert copy["pin_reason"] == "Cookie: sid=[REDACTED:cookie]"


def test_rule_reasons_are_redacted_in_the_database_and_the_snapshot(cli, env, tmp_path):
    added = cli(
        "rule", "add", "git push --force*", "--tool", "Bash", "--json",
        "--reason", f"ask first; the deploy token {GITLAB_TOKEN} is on the wiki",
    )
    assert added.code == 0, added.stderr
    assert added.json()["reason"] == "ask first; the deploy token [REDACTED:gitlab_token] is on the wiki"
    rules_file = tmp_path / "rules.txt"
    rules_file.write_text(f"Bash: rm -rf /* — never; ask in chat, Cookie: sid={SESSION_COOKIE}\n")
    assert cli("rule", "import", str(rules_file)).code == 0
    one_line = cli("rule", "add", f"Bash: mysql -u root* — use mysql -u root -p{MYSQL_PASSWORD}", "--json")
    assert one_line.code == 0, one_line.stderr

    snapshot = (Path(env["CEMS_HOME"]) / "rules.snapshot.json").read_text()
    from cems_cli.rules.snapshot import read_records

    records = read_records(Path(env["CEMS_HOME"]) / "rules.snapshot.json", verify=True)
    reasons = sorted(rule["reason"] for rule in records)
    assert reasons == [
        "ask first; the deploy token [REDACTED:gitlab_token] is on the wiki",
        "never; ask in chat, Cookie: sid=[REDACTED:cookie]",
        "use mysql -u root -p[REDACTED:password]",
    ]
    assert_no_secret(snapshot)
    assert_no_secret(stored_text(env["CEMS_USER"]))


def test_a_reason_stored_before_redaction_is_redacted_in_the_snapshot(cli, env):
    from cems_cli.config import get_settings
    from cems_cli.engine.service import MemoryService

    rule_id = cli("rule", "add", "terraform destroy*", "--tool", "Bash", "--json").json()["id"]
    with MemoryService(get_settings()) as service:
        service.conn.execute(
            "UPDATE rules SET reason = %s WHERE document_id = %s", (f"token {GITHUB_TOKEN}", rule_id)
        )
    listed = cli("rule", "list", "--json").json()["rules"]  # rewrites the snapshot from the database
    assert [rule["reason"] for rule in listed] == ["token [REDACTED:github_token]"]
    assert GITHUB_TOKEN not in (Path(env["CEMS_HOME"]) / "rules.snapshot.json").read_text()


def test_import_redacts_every_field(cli, env):
    line = {
        "content": f"Deploys read the registry password from the vault, never mysql -p{MYSQL_PASSWORD}.",
        "title": f"registry {GITHUB_TOKEN}",
        "tags": ["deploy", HF_TOKEN, f"DB_PASSWORD={MYSQL_PASSWORD}"],
        "pinned": True,
        "pin_reason": f"Cookie: session={SESSION_COOKIE}",
        "source": f"notes {GITLAB_TOKEN}",
        "context": f"asked about {GITHUB_TOKEN}",
    }
    report = cli("import", "-", "--trusted", "--json", stdin=(json.dumps(line) + "\n").encode())
    assert report.code == 0, report.stderr
    [exported] = [json.loads(row) for row in cli("export").stdout.splitlines() if row.strip()]
    assert exported["title"] == "registry [REDACTED:github_token]"
    assert exported["tags"] == ["deploy", "DB_PASSWORD=[REDACTED:secret]"]
    assert exported["pin_reason"] == "Cookie: session=[REDACTED:cookie]"
    assert exported["source"] == "notes [REDACTED:gitlab_token]"
    assert "-p[REDACTED:password]" in exported["content"]
    assert_no_secret(stored_text(env["CEMS_USER"]))


def test_import_redacts_the_second_round_of_kinds_in_every_field(cli, env):
    line = {
        "content": f"~/.netrc for the deploy box:\nmachine api.acme.io login ci password {NETRC_PASSWORD}\n"
                   f"and the backup is at https://acme.blob.core.windows.net/b/db.bak?sv=2022-11-02&sig={SAS_SIGNATURE}",
        "title": f"vault {VAULT_TOKEN}",
        "tags": ["release", f"bot {TELEGRAM_TOKEN}"],
        "pinned": True,
        "pin_reason": f"twine upload -u __token__ -p {PYPI_TOKEN} dist/*",
        "source": f"my password is {NETRC_PASSWORD}",
        "context": f"echo '{NETRC_PASSWORD}' | sudo -S make install",
    }
    report = cli("import", "-", "--trusted", "--json", stdin=(json.dumps(line) + "\n").encode())
    assert report.code == 0, report.stderr
    [exported] = [json.loads(row) for row in cli("export").stdout.splitlines() if row.strip()]
    assert exported["title"] == "vault [REDACTED:vault_token]"
    assert exported["tags"] == ["release", "bot [REDACTED:telegram_bot_token]"]
    assert exported["pin_reason"] == "twine upload -u __token__ -p [REDACTED:pypi_token] dist/*"
    assert exported["source"] == "my password is [REDACTED:password]"
    assert "password [REDACTED:password]" in exported["content"]
    assert "&sig=[REDACTED:signature]" in exported["content"]
    stored = stored_text(env["CEMS_USER"])
    for secret in MORE_SECRETS:
        assert secret not in stored, secret


@pytest.fixture
def capture_env(env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return capture_environment(env, tmp_path, monkeypatch)


def test_the_last_assistant_message_is_redacted_in_the_spool_and_the_memories(capture_env, tmp_path):
    project = Path(git_project(tmp_path / "acme-api"))
    folder = tmp_path / ".claude" / "projects" / "-tmp-acme-api"
    folder.mkdir(parents=True)
    transcript = Transcript(folder / "3f1c2a9e-7b4d-4e1a-9c55-2d8f0b6a1e47.jsonl", cwd=str(project))
    transcript.prompt("Restore the staging database and check the API.")
    transcript.bash("mysql -u root staging < dump.sql", "")
    message = (
        f"Restored it with `mysql -u root -p{MYSQL_PASSWORD} staging`; the API answers with "
        f"`curl -H 'Cookie: sid={SESSION_COOKIE}' https://staging` and the model pulls with {HF_TOKEN}; "
        f"the release went out with `twine upload -p {PYPI_TOKEN}` and the bot token is {TELEGRAM_TOKEN}."
    )
    transcript.say(message)
    stop(capture_env, stop_payload(transcript, message))
    wait_for_worker(capture_env["CEMS_HOME"], 1)

    spooled = spool_bytes(Path(capture_env["CEMS_HOME"]))
    assert b"[REDACTED:password]" in spooled and b"[REDACTED:cookie]" in spooled
    for secret in (*SECRETS, PYPI_TOKEN, TELEGRAM_TOKEN):
        assert secret.encode() not in spooled, secret
    stored = stored_text(capture_env["CEMS_USER"])
    assert stored, "the turn stored no memory"
    assert_no_secret(stored)
    assert PYPI_TOKEN not in stored and TELEGRAM_TOKEN not in stored
