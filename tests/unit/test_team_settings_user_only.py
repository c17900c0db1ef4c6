"""Settings that choose where prompts or memories go are each user's own: a team's stored row naming one
(written by an older CEMS, before the database refused it) is not heard."""

from __future__ import annotations

import pytest

from cems_cli.errors import UserError
from cems_cli.live_settings import USER_ONLY_KEYS, apply, check_team_key, source_of


def test_a_teams_backend_choice_is_ignored_and_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("CEMS_HOME", str(tmp_path))
    for key in ("CEMS_RERANK_BACKEND", "CEMS_LLM_BACKEND", "CEMS_RECALL_LIMIT"):
        monkeypatch.delenv(key, raising=False)
    from cems_cli.config import load_settings

    base = load_settings()
    team = {"rerank_backend": "ollama", "llm_backend": "claude-code", "recall_limit": 2}
    stored: dict = {"user": {}, "team": team}
    settings = apply(base, stored)
    assert settings.rerank_backend == base.rerank_backend and settings.llm_backend == base.llm_backend
    assert settings.recall_limit == 2  # the team's other settings still apply
    assert source_of("rerank_backend", stored, set()) == "default"
    # A user's own choice is theirs to make.
    assert apply(base, {"user": {"rerank_backend": "disabled"}, "team": {}}).rerank_backend == "disabled"
    for key in USER_ONLY_KEYS:
        with pytest.raises(UserError, match="each user sets it for themselves"):
            check_team_key(key)
    assert check_team_key("recall_limit") == "recall_limit"
