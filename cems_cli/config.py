"""Settings: `CEMS_*` environment variables, then `$CEMS_HOME/config.toml`, then defaults.

Nothing else in the package reads `os.environ` for CEMS settings (the stdlib-only hook fast paths use
`cems_cli.paths`, which agrees with `home` here).
"""

from __future__ import annotations

import getpass
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from cems_cli import paths
from cems_cli.project import normalize_project, project_for_dir
from cems_cli.retrieval.filtering import DEFAULT_MIN_SIMILARITY
from cems_cli.retrieval.fusion import DEFAULT_LEXICAL_COVERAGE

LOCAL_MODEL = "all-MiniLM-L6-v2"
OPENAI_DEFAULT_MODEL = "text-embedding-3-small"
_DEFAULT_DIMS = {
    LOCAL_MODEL: 384,
    OPENAI_DEFAULT_MODEL: 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class SettingsError(ValueError):
    """A bad setting; the message is one line naming the variable."""


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


class Settings(CemsSettingsBase):

    home: Path = Field(default_factory=paths.cems_home)
    database_url: str | None = None
    user: str = Field(default_factory=lambda: _os_user())
    team: str | None = None
    project: str | None = None

    embedding_backend: Literal["local", "openai"] = "local"
    embedding_model: str | None = None
    embedding_dim: int | None = Field(default=None, ge=8, le=16000)
    embedding_batch_size: int = Field(default=64, ge=1, le=2048)

    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_model: str = "gpt-4o-mini"
    llm_timeout: float = Field(default=2.0, gt=0, le=600)

    search_mode: Literal["vector", "hybrid", "auto"] = "hybrid"
    search_limit: int = Field(default=5, ge=1, le=1000)
    context_budget: int = Field(default=2000, ge=50)
    # "linear": normalised BM25 + weighted cosine (keeps score gaps); "rrf": weighted reciprocal rank fusion.
    # Measured on LoCoMo in bench/RESULTS.md.
    fusion: Literal["linear", "rrf"] = "linear"
    fusion_vector_weight: float = Field(default=1.5, ge=0, le=100)
    # linear only: how much of a whole-query BM25 match the best lexical match must reach to count fully
    # (retrieval/fusion.py); 0 divides by the best match alone.
    lexical_coverage: float = Field(default=DEFAULT_LEXICAL_COVERAGE, ge=0, le=1)
    hybrid_vector_weight: float = Field(default=0.3, ge=0, le=1)  # rrf only: blend of the cosine score
    # Session context (retrieval/neighbours.py): neighbours within `session_window` places, and the best
    # memory of the session, lend part of their score. 0 and 0 switch the stage off.
    session_window: int = Field(default=2, ge=0, le=100)
    session_neighbour_weight: float = Field(default=0.5, ge=0, le=10)
    session_weight: float = Field(default=0.2, ge=0, le=10)
    rrf_k: int = Field(default=60, ge=1)
    rrf_original_weight: float = Field(default=2.0, ge=0)
    rrf_expansion_weight: float = Field(default=1.0, ge=0)
    # Unset: the LLM reranker when an LLM is configured, none otherwise. Cosine rescoring ("embedding")
    # repeats what fusion already weighed and measured worse on LoCoMo (Recall@10 0.741 vs 0.765).
    rerank_backend: Literal["llm", "ollama", "embedding", "disabled"] | None = None
    rerank_input_limit: int = Field(default=40, ge=1)
    relevance_threshold: float = Field(default=0.0, ge=0, le=1)
    # No shared word and a cosine below this: no evidence at all, never a result (retrieval/filtering.py).
    min_similarity: float = Field(default=DEFAULT_MIN_SIMILARITY, ge=0, le=1)
    strong_signal_threshold: float = Field(default=0.85, ge=0, le=1)
    strong_signal_gap: float = Field(default=0.15, ge=0, le=1)
    ollama_url: str = "http://127.0.0.1:11434"
    reranker_model: str = "dengcao/Qwen3-Reranker-0.6B:Q8_0"

    # Lifecycle maintenance (cems_cli/maintain.py): a captured session `context` memory neither accessed nor
    # updated for this many days expires; an archived memory is deleted for good this many days later.
    context_ttl_days: float = Field(default=90, gt=0)
    archive_grace_days: float = Field(default=30, ge=0)

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

    # Derived values -------------------------------------------------------------------------------
    @property
    def resolved_embedding_model(self) -> str:
        if self.embedding_model:
            return self.embedding_model
        return LOCAL_MODEL if self.embedding_backend == "local" else OPENAI_DEFAULT_MODEL

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


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    loc = first.get("loc") or ("?",)
    name = "CEMS_" + str(loc[0]).upper()
    message = first.get("msg", "invalid value")
    value = first.get("input")
    shown = f" (got {value!r})" if isinstance(value, (str, int, float)) and len(str(value)) < 80 else ""
    return f"invalid setting {name}: {message}{shown}"


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
