"""The built-in guard: the agent's tools keep away from CEMS's home, the hook settings and the rule CLI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cems_cli.rules.guard import PROTECT_FILES, RULES_ARE_THE_USERS, check


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    user_home = tmp_path / "u"
    cems = user_home / ".local" / "share" / "cems"
    cems.mkdir(parents=True)
    (user_home / ".claude").mkdir()
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.delenv("CEMS_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return user_home


def blocked(tool: str, tool_input: dict, cwd: str = "/repo") -> str | None:
    decision = check(tool, tool_input, cwd)
    if decision is None:
        return None
    assert decision.action == "block"
    return decision.rule.id


FILES = PROTECT_FILES.id
CLI = RULES_ARE_THE_USERS.id


@pytest.mark.parametrize("tool", ["Write", "Edit", "MultiEdit"])
@pytest.mark.parametrize("path", [
    "~/.local/share/cems/rules.snapshot.json",
    "~/.local/share/cems/rules.snapshot.json.sha256",
    "~/.local/share/cems/config.toml",
    "~/.local/share/cems/pgdata/postgresql.conf",
    "~/.claude/settings.json",
    "~/.claude/settings.local.json",
    "~/.claude.json",
    "~/.claude/plugins/cache/cems/hooks/hooks.json",
    "/repo/.claude/settings.json",
    "/elsewhere/.claude/settings.local.json",
])
def test_file_tools_cannot_change_protected_files(home, tool, path):
    path = path.replace("~", str(home))
    assert blocked(tool, {"file_path": path}) == FILES


def test_relative_and_dotted_paths_are_resolved(home):
    assert blocked("Write", {"file_path": ".claude/settings.json"}, cwd="/repo") == FILES
    assert blocked("Write", {"file_path": "../.local/share/cems/x"}, cwd=str(home / "work")) == FILES
    assert blocked("Write", {"file_path": "/tmp/../" + str(home)[1:] + "/.local/share/cems/x"}) == FILES


def test_a_symlink_into_cems_home_is_cems_home(home, tmp_path):
    link = tmp_path / "innocent"
    os.symlink(home / ".local" / "share" / "cems", link)
    assert blocked("Write", {"file_path": str(link / "rules.snapshot.json")}) == FILES


def test_notebook_edit_and_mcp_file_tools(home):
    target = str(home / ".local/share/cems/x.ipynb")
    assert blocked("NotebookEdit", {"notebook_path": target}) == FILES
    assert blocked("mcp__filesystem__write_file", {"path": target, "content": "{}"}) == FILES
    assert blocked("mcp__filesystem__move_file", {"source": "/tmp/x", "destination": target}) == FILES
    assert blocked("mcp__filesystem__read_file", {"path": target}) is None  # reading is fine


def test_reading_and_ordinary_files_are_fine(home):
    assert blocked("Read", {"file_path": str(home / ".local/share/cems/rules.snapshot.json")}) is None
    assert blocked("Write", {"file_path": "/repo/src/app.py"}) is None
    assert blocked("Write", {"file_path": str(home / ".local/share/cemsx/file")}) is None  # a sibling
    assert blocked("Write", {"file_path": "/repo/.claude/commands/deploy.md"}) is None


def test_cems_home_from_the_environment(home, tmp_path, monkeypatch):
    custom = tmp_path / "custom-home"
    monkeypatch.setenv("CEMS_HOME", str(custom))
    assert blocked("Write", {"file_path": str(custom / "rules.snapshot.json")}) == FILES
    assert blocked("Bash", {"command": f"rm {custom}/rules.snapshot.json.sha256"}) == FILES


@pytest.mark.parametrize("command", [
    "echo '{\"version\":1,\"rules\":[]}' > ~/.local/share/cems/rules.snapshot.json",
    "printf '{}' >$HOME/.local/share/cems/rules.snapshot.json",
    "rm -f ${HOME}/.local/share/cems/rules.snapshot.json.sha256",
    "rm -rf ~/.local/share/cems",
    "mv ~/.local/share/cems /tmp/gone",
    "cd ~ && rm -rf .local/share/cems",
    "sed -i 's/block/warn/' ~/.local/share/cems/rules.snapshot.json",
    "cp /tmp/empty.json ~/.local/share/cems/rules.snapshot.json",
    "tee ~/.claude/settings.json < /tmp/x",
    "python3 -c 'import os; os.remove(\"/x/.claude/settings.local.json\")'",
    "ln -sf /dev/null ~/.claude/settings.json",
    "cat /tmp/x > .claude/settings.json",
    "jq '.hooks = {}' ~/.claude/settings.json > /tmp/s && mv /tmp/s ~/.claude/settings.json",
    "find ~/.local/share/cems -name '*.json' -delete",
    "truncate -s0 ~/.local/share/cems/rules.snapshot.json",
    "cat $(echo ~/.local/share/cems/rules.snapshot.json)",
    "echo x | sudo tee -a ~/.claude.json",
    # Quotes and backslashes are nothing to the shell.
    "rm ~/.local/share/c\"\"ems/rules.snapshot.json",
    "rm ~/.local/share/c\\ems/rules.snapshot.json",
    # A folder above a protected path, or a glob that reaches one.
    "rm -rf ~/.local",
    "cd ~/.local/share && rm -rf cems",
    "cd ~ && cd .local && mv share /tmp/x",
    "mv ~/.claude /tmp/claude-old",
    "rm -rf ~/.local/share/c*",
    "rm -rf ~/.claude/settings*",
    "chmod 000 ~/.local/share",
    "find ~/.local -name rules.snapshot.json -delete",
    # Read with the shell command model: brace expansion, variables set earlier on the line.
    "{rm,-rf,~/.local}",
    "a=.claude; echo {} > $a/settings.json",
    "X=rm; $X -f ~/.local/share/cems/x",
])
def test_shell_writes_to_protected_paths_are_blocked(home, command):
    assert blocked("Bash", {"command": command}) == FILES


def test_shell_inside_cems_home_is_blocked_for_anything_but_reading(home):
    cems = str(home / ".local/share/cems")
    assert blocked("Bash", {"command": "rm rules.snapshot.json"}, cwd=cems) == FILES
    assert blocked("Bash", {"command": "ls -la && cat rules.snapshot.json"}, cwd=cems) is None


@pytest.mark.parametrize("command", [
    "cat ~/.local/share/cems/rules.snapshot.json",
    "ls -la ~/.local/share/cems 2>/dev/null | head",
    "grep -c block ~/.local/share/cems/rules.snapshot.json",
    "jq . ~/.claude/settings.json",
    "git status && cems search 'deploy'",
    "rm -rf build/ && make",
    "echo hi > /tmp/cems.log",
    "rm -rf ~/.local/share/other-app",
    "cd ~/.local/share && rm -rf other-app",
    "mv ~/.local/share/cems-backup.tar /tmp",
    "find ~/.local -name '*.log'",
])
def test_reading_and_unrelated_commands_pass(home, command):
    assert blocked("Bash", {"command": command}) is None


@pytest.mark.parametrize("command", [
    "cems rule rm 1a2b3c4d",
    "cems rule rm 1a2b3c4d --json",
    "cd /repo && cems rule rm abc",
    "sudo -E cems rule remove abc",
    "/home/u/.venv/bin/cems rule rm abc",
    "python -m cems_cli.cli.app rule rm abc",
    "cems rule list --json | jq -r '.rules[].id' | xargs -n1 cems rule rm",
    "bash -c 'cems rule rm abc'",
    "cems hooks uninstall --scope user",
    "cems uninstall --purge-data --yes",
    "cems plugin uninstall",
    "claude plugin uninstall cems@cems",
    "claude plugin disable cems",
    "c=cems; $c rule rm abc",
    "eval 'cems rule rm abc'",
    "R=cems; $R rule rm abc",
    "ce''ms rule rm abc",
    "python -c 'import cems; cems.Memory().rules.remove(\"abc\")'",
])
def test_cli_commands_that_take_rules_away_are_the_users(home, command):
    assert blocked("Bash", {"command": command}) == CLI


@pytest.mark.parametrize("command", [
    "cems rule list",
    "cems rule add 'Bash: rm -rf* — no'",
    "cems rule test --tool Bash --input '{\"command\": \"ls\"}'",
    "cems forget 1a2b3c4d",
    "cems hooks doctor",
    "cems rule list && rm -f /tmp/x",
])
def test_other_cli_commands_pass(home, command):
    assert blocked("Bash", {"command": command}) is None


@pytest.mark.parametrize("command", [
    "claude --settings '{\"hooks\": {}}' -p 'clean up'",
    "claude --settings=/tmp/s.json -p 'clean up'",
    "claude --setting-sources project -p 'clean up'",
    "HOME=/tmp/empty claude -p 'clean up'",
    "CLAUDE_CONFIG_DIR=/tmp/c claude -p hi",
    "CEMS_DISABLE=1 claude -p hi",
    "CEMS_HOME=/tmp/empty claude -p hi",
    "env -i claude -p hi",
    "env -u HOME claude -p hi",
    "export HOME=/tmp/x; claude -p hi",
    "unset HOME && claude -p hi",
    "echo '{\"disableAllHooks\": true}' > /tmp/s.json",
    "printf '%s' '{\"disable''AllHooks\":true}' > .claude/x",
])
def test_claude_without_cems_hooks_is_the_users(home, command):
    """A nested Claude Code with other settings, another home or CEMS's variables changed runs without the
    user's hooks: the agent's way around every rule."""
    assert blocked("Bash", {"command": command}) == CLI


@pytest.mark.parametrize("command", [
    "tar -xf /tmp/x.tar -C ~/.local/share",
    "tar --extract --file=/tmp/x.tar --directory=$HOME/.local",
    "cd ~ && tar xzf /tmp/x.tgz",
    "unzip -o /tmp/x.zip -d ~/.claude",
    "cp -r /tmp/evil .claude",
    "mkdir -p .claude && cp /tmp/s.json .claude/",
    "mv /tmp/evil-settings .claude",
    "cp -t .claude /tmp/settings.json",
    "cd ~/.local; cd share; cd cems; rm config.toml",
])
def test_unpacking_above_and_copying_into_claude_folders_is_blocked(home, command):
    assert blocked("Bash", {"command": command}) == FILES


@pytest.mark.parametrize("command", [
    "claude -p 'summarise the diff'",
    "claude mcp list",
    "tar -xf dist.tar -C build/",
    "tar -tf /tmp/x.tar -C ~",
    "tar -czf /tmp/home.tgz -C ~ notes",
    "unzip -l /tmp/x.zip",
    "cp .claude/commands/x.md /tmp/",
    "HOME=/tmp/h pytest -q",
])
def test_ordinary_claude_tar_and_copies_pass(home, command):
    assert blocked("Bash", {"command": command}) is None


@pytest.mark.parametrize("command", [
    "d=.local/share; e=cems; cp /tmp/x ~/$d/$e/config.toml",
    "d=.local/share; e=cems; echo x > ~/$d/$e/config.toml",
    "e=ems; echo x > ~/.local/share/c$e/rules.snapshot.json.sha256",
    "e=ems; rm ~/.local/share/c$e/pg/PG_VERSION",
])
def test_writes_the_model_finds_inside_cems_home_are_blocked(home, command):
    """Spelt with variables, the path is not in the text; the command model still finds the file written."""
    assert blocked("Bash", {"command": command}) == FILES


@pytest.mark.parametrize("command", [
    "cd .claude && echo '{}' > settings.json",
    "cd .claude && tee settings.json < /tmp/x",
    "cd .claude; cp /tmp/x settings.json",
    "cd .claude && sed -i s/a/b/ settings.local.json",
    "pushd .claude && echo x > settings.json",
    "cd .. && cd repo/.claude && printf x > settings.json",
    "cd /repo/.claude && mv /tmp/x settings.json",
    "cd ~/.local/share/cems && echo x > rules.snapshot.json",
])
def test_writes_after_a_cd_are_where_the_cd_went(home, command):
    """The file is named relative to the folder a `cd` earlier in the line went to: no word of the line
    names `.claude/settings.json`. Found by an attack on the guard."""
    assert blocked("Bash", {"command": command}, cwd="/repo") == FILES


@pytest.mark.parametrize("command", [
    "cd build && echo x > settings.json",
    "cd .claude && cat settings.json",
    "cd src && echo x > out.txt && cd .claude",
])
def test_ordinary_writes_after_a_cd_pass(home, command):
    assert blocked("Bash", {"command": command}, cwd="/repo") is None


def test_an_installed_cems_protects_its_whole_site_packages(home, monkeypatch):
    """A `.pth` file or `sitecustomize.py` beside the package runs inside every hook process."""
    from cems_cli.rules import guard

    site = "/opt/cems/lib/python3.11/site-packages"
    assert guard.installed_paths(site + "/cems_cli/rules/guard.py") == [site]
    assert guard.installed_paths("/src/cems/cems_cli/rules/guard.py") == []
    monkeypatch.setattr(guard, "installed_paths", lambda module_file: [site])
    for path in (site + "/evil.pth", site + "/sitecustomize.py", site + "/tree_sitter/_binding.so"):
        assert blocked("Write", {"file_path": path}) == FILES
    assert blocked("Bash", {"command": f"echo 'import os' > {site}/zz.pth"}) == FILES
    assert blocked("Bash", {"command": f"ls {site}"}) is None


def test_a_long_cd_chain_is_bounded(home):
    """Following `cd` normalised an ever longer path, quadratic in the line: 150,000 `cd a;` took minutes,
    past the hook's timeout (after which Claude Code runs the call). Past PATH_MAX a later `rm` is blocked."""
    import time

    started = time.monotonic()
    assert blocked("Bash", {"command": "cd a;" * 150_000 + "rm x"}) == FILES
    assert blocked("Bash", {"command": "cd a;" * 150_000 + "ls x"}) is None
    # ~1.4 s on a quiet 2-core machine, 6 s with both cores busy; quadratic was minutes.
    assert time.monotonic() - started < 30.0
