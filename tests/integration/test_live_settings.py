"""`cems config`: settings stored in the database, per user and per team, applied by the next search of
every process without a restart; environment > user > team > config.toml > default."""

from __future__ import annotations

from pathlib import Path

import pytest

import cems
from cems_cli import defaults


@pytest.fixture
def own_home(env, tmp_path, monkeypatch):
    """A CEMS_HOME of this test's own (for its config.toml) on the session's embedded server."""
    from cems_cli.config import get_settings
    from cems_cli.store.embedded import ensure_server

    server = ensure_server(Path(env["CEMS_HOME"]) / "pg")
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("CEMS_HOME", str(home))
    monkeypatch.setenv("CEMS_DATABASE_URL", server.conninfo())
    get_settings.cache_clear()
    yield home
    get_settings.cache_clear()


def test_set_get_unset_and_list(cli):
    stored = cli("config", "set", "recall_limit", "2", "--json").json()
    assert stored == {"key": "recall_limit", "value": 2, "source": "user", "user": 2, "team": None}
    assert cli("config", "get", "CEMS_RECALL_LIMIT", "--json").json()["value"] == 2
    listed = {s["key"]: s for s in cli("config", "list", "--json").json()["settings"]}
    assert listed["recall_limit"]["source"] == "user"
    assert listed["fusion_vector_weight"]["source"] == "default"
    removed = cli("config", "unset", "recall_limit", "--json").json()
    assert (removed["removed"], removed["value"], removed["source"]) == (True, defaults.RECALL_LIMIT,
                                                                         "default")
    assert cli("config", "unset", "recall_limit", "--json").json()["removed"] is False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("set", "recall_limit", "0"), "invalid value for recall_limit: Input should be greater than"),
        (("set", "search_mode", "fast"), "invalid value for search_mode"),
        (("set", "database_url", "postgresql://x"), "'database_url' is not a setting that can be stored"),
        (("set", "llm_api_key", "sk-123"), "'llm_api_key' is not a setting that can be stored"),
        (("get", "nonsense"), "'nonsense' is not a setting that can be stored"),
        (("set", "recall_limit", "2", "--team"), "team settings need a team"),
    ],
)
def test_bad_input_is_one_line_and_stores_nothing(cli, args, message):
    result = cli("config", *args)
    assert result.code == 2 and message in result.stderr
    assert cli("config", "get", "recall_limit", "--json").json()["source"] == "default"


def test_precedence_environment_user_team_toml_default(own_home, cli, monkeypatch):
    (own_home / "config.toml").write_text("search_limit = 7\n")
    assert cli("config", "get", "search_limit", "--json").json() | {"user": None} == {
        "key": "search_limit", "value": 7, "source": "config.toml", "user": None, "team": None}
    monkeypatch.setenv("CEMS_TEAM", "red")
    cli("config", "set", "search_limit", "6", "--team")
    assert cli("config", "get", "search_limit", "--json").json()["source"] == "team"
    cli("config", "set", "search_limit", "4")
    got = cli("config", "get", "search_limit", "--json").json()
    assert (got["value"], got["source"], got["user"], got["team"]) == (4, "user", 4, 6)
    got = cli("config", "get", "search_limit", "--json", extra_env={"CEMS_SEARCH_LIMIT": "9"}).json()
    assert (got["value"], got["source"]) == (9, "environment")
    cli("config", "unset", "search_limit", "--team")  # the team's value goes for the whole team
    monkeypatch.delenv("CEMS_SEARCH_LIMIT")


def test_a_stored_value_changes_an_open_memorys_next_search(env):
    """The warm search server holds one `Memory` open for hours: the next search sees a change made by
    another process, no restart."""
    with cems.open() as server_side, cems.open() as other_process:
        for text in (
            "Deploys run through the pipeline on main.",
            "The deploy pipeline needs a green CI run.",
            "Staging deploys go out with make deploy-staging.",
            "A failed deploy is rolled back with helm rollback.",
        ):
            server_side.remember(text, category="patterns")
        # Counted below the confidence floor too: what is measured is the limit, not the floor.
        assert len(server_side.search("deploy pipeline", include_weak=True)) == 4
        other_process.config.set("search_limit", "2")
        assert len(server_side.search("deploy pipeline", include_weak=True)) == 2
        other_process.config.set("recall_min_confidence", "0")
        other_process.config.set("recall_min_relative", "0.01")
        other_process.config.set("recall_limit", "3")
        assert len(server_side.recall("how do deploys run through the pipeline?")) == 3
        other_process.config.set("recall_limit", "1")
        assert len(server_side.recall("how do deploys run through the pipeline?")) == 1
        for key in ("search_limit", "recall_limit", "recall_min_relative", "recall_min_confidence"):
            other_process.config.unset(key)
        assert len(server_side.search("deploy pipeline", include_weak=True)) == 4


def test_cems_config_set_changes_the_running_search_servers_answers(env, cli):
    """The prompt hook's server is one long-lived process: `cems config set` in another reaches it."""
    from cems_cli.server.client import call_or_start
    from cems_cli.server.daemon import server_pid

    for text in (
        "Deploys run through the pipeline on main.",
        "The deploy pipeline needs a green CI run.",
        "Staging deploys go out with make deploy-staging.",
    ):
        assert cli("remember", text).code == 0
    home = env["CEMS_HOME"]
    ask = {"op": "search", "query": "how do deploys run through the pipeline?", "user": env["CEMS_USER"],
           "project": env["CEMS_PROJECT"]}
    assert cli("config", "set", "recall_min_relative", "0.01").code == 0
    assert cli("config", "set", "recall_min_confidence", "0").code == 0  # the limit is measured here
    before = call_or_start(home, ask, 60.0)
    pid = server_pid(Path(home))
    assert before is not None and len(before["results"]) == 3
    assert cli("config", "set", "recall_limit", "1").code == 0
    after = call_or_start(home, ask, 10.0)
    assert after is not None and len(after["results"]) == 1
    assert server_pid(Path(home)) == pid  # the same process: nothing restarted
    # What the hook's environment sets still wins over the stored value.
    assert len(call_or_start(home, {**ask, "limit": 2}, 10.0)["results"]) == 2
    for key in ("recall_limit", "recall_min_relative", "recall_min_confidence"):
        cli("config", "unset", key)


def test_a_weight_of_zero_short_circuits_its_list_and_says_so(env):
    with cems.open() as memory, cems.open() as other_process:
        memory.remember("Deploys run through the pipeline on main.")
        memory.remember("Our release train leaves on Thursdays.")  # only the vector list could find it
        [top, *_] = memory.search("deploy pipeline", explain=True)
        assert "short_circuited" not in top.explain["pipeline"]["stages"]
        assert "original:vector" in top.explain["fusion"]["ranks"]
        other_process.config.set("fusion_vector_weight", "0")
        found = memory.search("deploy pipeline", explain=True)
        assert found[0].explain["pipeline"]["stages"]["short_circuited"] == ["vector"]
        assert all("original:vector" not in r.explain["fusion"]["ranks"] for r in found)
        other_process.config.unset("fusion_vector_weight")
