"""Live settings: `cems config set KEY VALUE` stores a setting in the database, per user or per team, and
every search reads it on its next request (the warm search server included), no restart.

Precedence, highest first: the environment (CEMS_KEY), your stored value, your team's stored value,
`$CEMS_HOME/config.toml`, the default (cems_cli/defaults.py). Values are validated with the same Settings
model as the environment, so a stored value can never be one the environment would refuse.

Only what may change between two searches is stored: ranking weights and thresholds, what the prompt hook
injects, the LLM model and timeout, lifecycle periods. Where the data lives, who you are and the embedding
model are not (changing those needs a restart or `cems reindex`), nor are credentials.
"""

from __future__ import annotations

import functools
import json
import os
import threading
from typing import TYPE_CHECKING, Any

from cems_cli.errors import UserError

if TYPE_CHECKING:
    import psycopg

    from cems_cli.config import Settings

LIVE_KEYS = (
    "search_mode", "search_limit", "context_budget", "fusion", "fusion_vector_weight", "lexical_coverage",
    "hybrid_vector_weight", "session_window", "session_neighbour_weight", "session_weight",
    "phrase_weight", "summaries", "summary_results", "superseded_weight", "rrf_k",
    "rrf_original_weight", "rrf_expansion_weight", "rerank_backend", "rerank_input_limit",
    "relevance_threshold", "min_similarity", "strong_signal_threshold", "strong_signal_gap",
    "recall_limit", "recall_token_budget", "recall_min_score", "recall_min_relative", "recall_min_similarity",
    "recall_min_confidence",
    "llm_model", "llm_timeout", "context_ttl_days", "archive_grace_days",
    # Capture's and summaries' model (never a program path: a stored value must not choose what runs).
    "llm_backend", "claude_code_model", "claude_code_timeout",
)
# Settings that choose where prompts or memories are sent (a reranker, an LLM, an embedding service): each
# user's own choice, never a team's. A team admin who set `rerank_backend=ollama` had every teammate's prompt
# and memories posted to port 11434 of the teammate's machine, where any local user may listen. Refused by
# `cems config set --team`, ignored in a team's stored row, and refused by the database
# (sql/013_team_walls.sql, stored_settings_user_only_keys, keeps the same list).
USER_ONLY_KEYS = frozenset({"rerank_backend", "llm_backend", "embedding_backend"})


def check_team_key(key: str) -> str:
    """`key`, or UserError when a team may not set it."""
    if key in USER_ONLY_KEYS:
        raise UserError(f"{key} chooses where prompts or memories are sent: each user sets it for themselves "
                        f"(cems config set {key} VALUE, without --team)")
    return key


def check_key(key: str) -> str:
    name = key.strip().lower().removeprefix("cems_").replace("-", "_")
    if name not in LIVE_KEYS:
        raise UserError(f"{key!r} is not a setting that can be stored (see `cems config list`)")
    return name


def parse_value(key: str, text: str) -> Any:
    """`text` as the setting's value, validated like the environment's CEMS_KEY would be."""
    from pydantic import TypeAdapter, ValidationError

    from cems_cli.config import Settings

    field = Settings.model_fields[key]
    assert field.annotation is not None  # every field of Settings is annotated
    raw: Any = text
    if text.strip().lower() in ("none", "null"):
        raw = None
    try:
        value = TypeAdapter(field.annotation).validate_python(raw)
        # Range constraints (ge/le…) live in the field's metadata: check them the same way.
        Settings.__pydantic_validator__.validate_assignment(Settings.model_construct(), key, value)
    except ValidationError as error:
        message = str(error.errors()[0].get("msg", "invalid value")).removeprefix("Value error, ")
        raise UserError(f"invalid value for {key}: {message} (got {text!r})") from None
    return value


def _from_environment(key: str) -> bool:
    return f"CEMS_{key.upper()}" in os.environ


def apply(base: Settings, stored: dict[str, dict[str, Any]]) -> Settings:
    """`base` (environment, config.toml, defaults) with the stored values where the environment is silent;
    a user's own value over the team's. A stored value the current model refuses is skipped."""
    update: dict[str, Any] = {}
    for kind in ("team", "user"):  # the user's last: it wins
        for key, value in stored.get(kind, {}).items():
            if kind == "team" and key in USER_ONLY_KEYS:
                continue  # a team's row that chooses where data goes (an older CEMS stored it): not heard
            if key in LIVE_KEYS and not _from_environment(key):
                update[key] = value
    if not update:
        return base
    checked = {}
    for key, value in update.items():
        text = value if isinstance(value, str) else json.dumps(value)
        valid, parsed = _checked(key, text)
        if valid:  # else stored by another version of CEMS with other rules: the layer below stands
            checked[key] = parsed
    return base.model_copy(update=checked)


@functools.lru_cache(maxsize=512)
def _checked(key: str, text: str) -> tuple[bool, Any]:
    """(valid, value) of a stored value: validated once per distinct value, not on every search (a
    validator is built per call of `parse_value`)."""
    try:
        return True, parse_value(key, text)
    except UserError:
        return False, None


def source_of(
    key: str, stored: dict[str, dict[str, Any]], toml_keys: set[str] | None = None
) -> str:
    """Where the value in effect comes from; `toml_keys` (config.toml's keys) is read when not given."""
    if _from_environment(key):
        return "environment"
    if key in stored.get("user", {}):
        return "user"
    if key in stored.get("team", {}) and key not in USER_ONLY_KEYS:
        return "team"
    if key in (toml_keys if toml_keys is not None else toml_keys_of_config()):
        return "config.toml"
    return "default"


def toml_keys_of_config() -> set[str]:
    import tomllib

    from cems_cli import paths

    try:
        with open(paths.config_file_path(), "rb") as handle:
            return set(tomllib.load(handle))
    except (OSError, tomllib.TOMLDecodeError):
        return set()


class LiveSettings:
    """The stored settings of each (user, team), reloaded when the database's change counter moves: one
    one-row read per search when nothing changed. Shared by every request of a process (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version = -1
        self._stored: dict[tuple[str, str | None], dict[str, dict[str, Any]]] = {}

    def stored(self, conn: psycopg.Connection, user: str, team: str | None) -> dict[str, dict[str, Any]]:
        from cems_cli.store import settings as store

        current = store.version(conn)
        with self._lock:
            if current != self._version:
                self._stored.clear()
                self._version = current
            cached = self._stored.get((user, team))
        if cached is None:
            cached = store.stored(conn, user, team)
            with self._lock:
                if self._version == current:
                    self._stored[(user, team)] = cached
        return cached


LIVE = LiveSettings()
