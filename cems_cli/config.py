"""Settings: `CEMS_*` environment variables, then `$CEMS_HOME/config.toml`, then defaults.

Nothing else in the package reads `os.environ` for CEMS settings (the stdlib-only hook fast paths use
`cems_cli.paths`, which agrees with `home` here).
"""

from __future__ import annotations

import getpass
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from cems_cli import defaults, paths
from cems_cli.embedding.limits import MAX_MAX_MEMORY_BYTES, MIN_MAX_MEMORY_BYTES
from cems_cli.project import normalize_project, project_for_dir

LOCAL_MODEL = "all-MiniLM-L6-v2"
OPENAI_DEFAULT_MODEL = "text-embedding-3-small"
_DEFAULT_DIMS = {
    LOCAL_MODEL: 384,
    OPENAI_DEFAULT_MODEL: 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "hashing": 384,  # the built-in `hashing` backend, shaped like the local model
}


class SettingsError(ValueError):
    """A bad setting; the message is one line naming the variable."""


# Settings whose value may carry a credential: an error about one never shows the value.
SECRET_SETTINGS = frozenset({"database_url", "llm_api_key", "llm_base_url"})


class CemsSettingsBase(BaseSettings):
    """`CEMS_*` environment variables first, then `$CEMS_HOME/config.toml`: every settings class of CEMS."""

    model_config = SettingsConfigDict(env_prefix="CEMS_", extra="ignore", validate_default=True)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = paths.config_file_path()
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if toml_file.is_file():
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
        return tuple(sources)

    # Folders, not text: on Linux a path may be any bytes, and it is opened, never stored.
    _PATH_SETTINGS: ClassVar[frozenset[str]] = frozenset({"home", "observer_paths", "claude_config_dir"})

    @field_validator("*", mode="before")
    @classmethod
    def _valid_utf8(cls, value: Any, info: ValidationInfo) -> Any:
        # Invalid UTF-8 in the environment arrives as lone surrogates (surrogateescape), which PostgreSQL
        # and stdout both refuse later, as an internal error: refuse it here, naming the variable.
        if isinstance(value, str) and info.field_name not in cls._PATH_SETTINGS:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("not valid UTF-8") from None
        return value


class Settings(CemsSettingsBase):

    home: Path = Field(default_factory=paths.cems_home)
    database_url: str | None = None
    user: str = Field(default_factory=lambda: _os_user())
    team: str | None = None
    project: str | None = None

    # The name of a `cems.embedders` entry point: built in, `local`, `openai` and `hashing` (no model, for
    # tests) (cems_cli/plugins.py).
    embedding_backend: str = Field(default=defaults.EMBEDDING_BACKEND, min_length=1)
    embedding_model: str | None = None
    embedding_dim: int | None = Field(default=None, ge=8, le=16000)
    embedding_batch_size: int = Field(default=defaults.EMBEDDING_BATCH_SIZE, ge=1, le=2048)
    # The largest memory text (and search query) accepted, in UTF-8 bytes: embedding cost grows with the
    # text, see cems_cli/embedding/limits.py for the measurements behind the default.
    max_memory_bytes: int = Field(
        default=defaults.MAX_MEMORY_BYTES, ge=MIN_MAX_MEMORY_BYTES, le=MAX_MAX_MEMORY_BYTES
    )

    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_model: str = defaults.LLM_MODEL
    llm_timeout: float = Field(default=defaults.LLM_TIMEOUT, gt=0, le=600)
    # What capture and summaries ask (never a search, never a hook): `claude-code` runs the user's own
    # Claude Code CLI headless; `openai` the endpoint above, when one is configured.
    llm_backend: Literal["openai", "claude-code"] = defaults.LLM_BACKEND
    claude_code_path: str = defaults.CLAUDE_CODE_PATH
    claude_code_model: str = defaults.CLAUDE_CODE_MODEL
    claude_code_timeout: float = Field(default=defaults.CLAUDE_CODE_TIMEOUT, gt=0, le=3600)

    search_mode: Literal["vector", "hybrid", "auto"] = defaults.SEARCH_MODE
    search_limit: int = Field(default=defaults.SEARCH_LIMIT, ge=1, le=1000)
    context_budget: int = Field(default=defaults.CONTEXT_BUDGET, ge=50)
    # "linear": normalised BM25 + weighted cosine (keeps score gaps); "rrf": weighted reciprocal rank fusion.
    # Measured on LoCoMo in bench/RESULTS.md.
    fusion: Literal["linear", "rrf"] = defaults.FUSION
    fusion_vector_weight: float = Field(default=defaults.FUSION_VECTOR_WEIGHT, ge=0, le=100)
    # linear only: how much of a whole-query BM25 match the best lexical match must reach to count fully
    # (retrieval/fusion.py); 0 divides by the best match alone.
    lexical_coverage: float = Field(default=defaults.LEXICAL_COVERAGE, ge=0, le=1)
    hybrid_vector_weight: float = Field(default=defaults.HYBRID_VECTOR_WEIGHT, ge=0, le=1)  # rrf only
    # Session context (retrieval/neighbours.py): neighbours within `session_window` places, and the best
    # memory of the session, lend part of their score. 0 and 0 switch the stage off.
    session_window: int = Field(default=defaults.SESSION_WINDOW, ge=0, le=100)
    session_neighbour_weight: float = Field(default=defaults.SESSION_NEIGHBOUR_WEIGHT, ge=0, le=10)
    session_weight: float = Field(default=defaults.SESSION_WEIGHT, ge=0, le=10)
    phrase_weight: float = Field(default=defaults.PHRASE_WEIGHT, ge=0, le=10)
    # A memory a newer one of its project says was replaced weighs this much (retrieval/supersede.py).
    superseded_weight: float = Field(default=defaults.SUPERSEDED_WEIGHT, ge=0, le=1)
    # Ranking stages off by default, switched on by name: CEMS_EXPERIMENTS=time_cue,time_answer
    # (retrieval/experiments.py). NoDecode: the environment's value is a comma-separated list, not JSON.
    experiments: Annotated[tuple[str, ...], NoDecode] = defaults.EXPERIMENTS
    # Overview questions get summaries of groups of memories first (cems_cli/engine/summaries.py).
    summaries: bool = defaults.SUMMARIES
    summary_results: int = Field(default=defaults.SUMMARY_RESULTS, ge=0, le=10)
    rrf_k: int = Field(default=defaults.RRF_K, ge=1)
    rrf_original_weight: float = Field(default=defaults.RRF_ORIGINAL_WEIGHT, ge=0)
    rrf_expansion_weight: float = Field(default=defaults.RRF_EXPANSION_WEIGHT, ge=0)
    # Unset: the LLM reranker when an LLM is configured, none otherwise. Cosine rescoring ("embedding")
    # repeats what fusion already weighed and measured worse on LoCoMo (Recall@10 0.741 vs 0.765).
    # A `cems.rerankers` entry point (built in: llm, ollama, embedding) or `disabled`; None: llm when an
    # LLM is configured, else disabled.
    rerank_backend: str | None = None
    rerank_input_limit: int = Field(default=defaults.RERANK_INPUT_LIMIT, ge=1)
    relevance_threshold: float = Field(default=defaults.RELEVANCE_THRESHOLD, ge=0, le=1)
    # No shared word and a cosine below this: no evidence at all, never a result (retrieval/filtering.py).
    min_similarity: float = Field(default=defaults.MIN_SIMILARITY, ge=0, le=1)
    strong_signal_threshold: float = Field(default=defaults.STRONG_SIGNAL_THRESHOLD, ge=0, le=1)
    strong_signal_gap: float = Field(default=defaults.STRONG_SIGNAL_GAP, ge=0, le=1)
    ollama_url: str = defaults.OLLAMA_URL
    reranker_model: str = defaults.RERANKER_MODEL

    # What the prompt hook injects (CEMS_RECALL_*): the hook itself reads only the environment (it is
    # stdlib only) and sends what is set there; the search server fills in the rest from these, so a value
    # stored with `cems config set` reaches the next prompt.
    recall_limit: int = Field(default=defaults.RECALL_LIMIT, ge=1, le=100)
    recall_token_budget: int = Field(default=defaults.RECALL_TOKEN_BUDGET, ge=50, le=100_000)
    recall_min_score: float = Field(default=defaults.RECALL_MIN_SCORE, ge=0, le=1)
    recall_min_relative: float = Field(default=defaults.RECALL_MIN_RELATIVE, ge=0, le=1)
    recall_min_similarity: float = Field(default=defaults.RECALL_MIN_SIMILARITY, ge=0, le=1)
    recall_min_confidence: float = Field(default=defaults.RECALL_MIN_CONFIDENCE, ge=0, le=1)

    # Lifecycle maintenance (engine/maintain.py): a captured session `context` memory neither accessed nor
    # updated for this many days expires; an archived memory is deleted for good this many days later.
    context_ttl_days: float = Field(default=defaults.CONTEXT_TTL_DAYS, gt=0)
    archive_grace_days: float = Field(default=defaults.ARCHIVE_GRACE_DAYS, ge=0)

    # A rule that cannot be checked in time: "deny" (counts as matched) or "allow" (skipped). The hook reads
    # it itself (cems_cli.rules.timeout_policy); it is deliberately not a live setting (`cems config set`).
    rules_on_timeout: Literal["deny", "allow"] = defaults.RULES_ON_TIMEOUT

    @field_validator("embedding_backend")
    @classmethod
    def _installed_embedder(cls, value: str) -> str:
        # The built-in names cost nothing; another name is looked up among the installed entry points
        # (~10-50 ms, only then), so a typo is a settings error before anything is stored.
        if value in ("local", "openai", "hashing"):
            return value
        from cems_cli.plugins import EMBEDDERS, available

        installed = available(EMBEDDERS)
        if value not in installed:
            raise ValueError(f"no such embedding backend (installed: {', '.join(sorted(installed))})")
        return value

    @field_validator("experiments", mode="before")
    @classmethod
    def _known_experiments(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.split(",")
        if not isinstance(value, (list, tuple)):
            return value  # the field's own type check refuses it
        names = tuple(dict.fromkeys(str(n).strip().lower() for n in value if str(n).strip()))
        if names:
            # Imported only when one is named: the registry is the one list of names, and a search that
            # names none loads no experiment.
            from cems_cli.retrieval.experiments import EXPERIMENTS

            unknown = [n for n in names if n not in EXPERIMENTS]
            if unknown:
                known = ", ".join(sorted(EXPERIMENTS))
                raise ValueError(f"unknown experiment {unknown[0]!r} (known: {known})")
        return names

    @field_validator("user")
    @classmethod
    def _user_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @field_validator("team", "database_url", "llm_base_url", "llm_api_key", "embedding_model", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("project")
    @classmethod
    def _project_prefixed(cls, value: str | None) -> str | None:
        return normalize_project(value) if value and value.strip() else None

    @field_validator("database_url")
    @classmethod
    def _database_url_parses(cls, value: str | None) -> str | None:
        if value is not None:
            problem = database_url_problem(value)
            if problem:
                raise ValueError(problem)
        return value

    # Derived values -------------------------------------------------------------------------------
    @property
    def resolved_embedding_model(self) -> str:
        if self.embedding_model:
            return self.embedding_model
        if self.embedding_backend == "local":
            return LOCAL_MODEL
        # A plugin backend names its model with CEMS_EMBEDDING_MODEL (and CEMS_EMBEDDING_DIM); by default
        # the backend's name stands for it, so switching backends is a model change `cems reindex` sees.
        return OPENAI_DEFAULT_MODEL if self.embedding_backend == "openai" else self.embedding_backend

    @property
    def resolved_embedding_dim(self) -> int:
        if self.embedding_dim:
            return self.embedding_dim
        return _DEFAULT_DIMS.get(self.resolved_embedding_model, 1536)

    @property
    def resolved_rerank_backend(self) -> str:
        if self.rerank_backend:
            return self.rerank_backend
        return "llm" if self.llm_configured else "disabled"

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url or self.llm_api_key)

    def current_project(self, cwd: str | None = None) -> str:
        return self.project or project_for_dir(cwd or os.getcwd())


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "user"


_URI_SCHEMES = ("postgresql://", "postgres://")
# libpq's parse errors that name an option and nothing else; the others quote the URI or a piece of the
# string (possibly of the password), so they are never shown.
_SAFE_CONNINFO_ERROR = re.compile(
    r'(invalid connection option|invalid URI query parameter:) "[A-Za-z_][A-Za-z0-9_]*"'
)


def database_url_problem(url: str) -> str | None:
    """Why libpq would refuse `url`, in words that never repeat any part of it; None if it parses.

    Checked when settings load, so a malformed CEMS_DATABASE_URL is a one-line settings error before
    anything tries to connect (libpq's own messages quote the whole URI, password included).
    """
    import psycopg  # only when a URL is set: connecting with it needs psycopg anyway

    uri = url.strip().lower().startswith(_URI_SCHEMES)
    expected = (
        "a malformed postgresql:// URI"
        if uri
        else "neither a postgresql:// URI nor key=value connection settings"
    )
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as error:
        named = _SAFE_CONNINFO_ERROR.search(str(error))
        return f"{expected} ({named.group(0)})" if named else expected
    for port in str(info.get("port") or "").split(","):
        # libpq only reports a bad port when connecting, with the text it could not read (which, typed
        # in the wrong place, may be the password).
        if port.strip() and not (port.strip().isdigit() and 1 <= int(port) <= 65535):
            return "the port is not a number from 1 to 65535"
    return None


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    loc = first.get("loc") or ("?",)
    name = "CEMS_" + str(loc[0]).upper()
    message = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
    value = first.get("input")
    secret = str(loc[0]) in SECRET_SETTINGS
    shown = (
        f" (got {value!r})"
        if not secret and isinstance(value, (str, int, float)) and len(str(value)) < 80
        else ""
    )
    return f"invalid setting {name}: {message}{shown}"


_URI_PASSWORD = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@'\"]*:)[^\s'\"]*@")
_KEY_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'?|\S+)", re.IGNORECASE)


def _configured_secrets() -> list[str]:
    """Credentials the user configured (environment, then config.toml through the settings)."""
    from urllib.parse import unquote

    values = [os.environ.get("CEMS_DATABASE_URL", ""), os.environ.get("CEMS_LLM_API_KEY", "")]
    try:
        settings = get_settings()
        values += [settings.database_url or "", settings.llm_api_key or ""]
    except Exception:  # noqa: BLE001 - the settings may be what failed; the environment is enough then
        pass
    secrets: set[str] = set()
    for value in values:
        if not value:
            continue
        if "://" in value:
            userinfo = value.split("://", 1)[1].rpartition("@")[0]
            if ":" in userinfo:
                password = userinfo.split(":", 1)[1]
                secrets.update({password, unquote(password)})
        match = re.search(r"\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", value, re.IGNORECASE)
        if match:
            secrets.add(match.group(1).strip("'"))
        if "://" not in value and "=" not in value:
            secrets.add(value)  # an API key: the whole value is the secret
    # Too short to be a credential worth hiding, and replacing it would garble the message.
    return sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True)


def mask_secrets(text: str) -> str:
    """`text` without passwords: URI passwords and `password=` values become ***, and so does any
    configured credential (CEMS_DATABASE_URL's password, CEMS_LLM_API_KEY) wherever it appears."""
    text = _URI_PASSWORD.sub(r"\g<head>***@", text)
    text = _KEY_PASSWORD.sub(r"\g<head>***", text)
    for secret in _configured_secrets():
        text = text.replace(secret, "***")
    return text


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment and config file; SettingsError with a one-line message if bad."""
    try:
        return Settings(**overrides)
    except ValidationError as error:
        raise SettingsError(_describe(error)) from None
    except (OSError, ValueError) as error:  # e.g. malformed config.toml
        raise SettingsError(f"invalid configuration in {paths.config_file_path()}: {error}") from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return load_settings()
