"""Observer settings: `CEMS_OBSERVER_*` environment variables, then `$CEMS_HOME/config.toml`, then defaults.

Kept apart from `cems_cli.config.Settings` so the observer's knobs live with the observer; the sources and
their order are the same, so a user sets them the same way.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import AliasChoices, Field, ValidationError

from cems_cli import defaults, paths
from cems_cli.config import CemsSettingsBase, SettingsError


class ObserverSettings(CemsSettingsBase):
    # Roots to watch, separated by os.pathsep or commas; empty means `<Claude config dir>/projects`.
    observer_paths: str = ""
    # Claude Code moves `~/.claude` here when set; read only to find the default root.
    claude_config_dir: str = Field(default="", validation_alias=AliasChoices("CLAUDE_CONFIG_DIR"))

    # A session whose transcript has not changed for this long is finalized: its open chunk is stored
    # (digest) or its gathered material is extracted (LLM) even below the batch threshold.
    observer_idle_seconds: float = Field(default=defaults.OBSERVER_IDLE_SECONDS, ge=0)
    # Split a long turn into several chunks past this much rendered text or this many tool calls.
    observer_chunk_max_chars: int = Field(default=defaults.OBSERVER_CHUNK_MAX_CHARS, ge=500)
    observer_chunk_max_tools: int = Field(default=defaults.OBSERVER_CHUNK_MAX_TOOLS, ge=1)

    # LLM extraction: start once a session has gathered this much text; send at most this much per call.
    observer_llm: bool = True  # false: deterministic digests even when an LLM is configured
    observer_batch_chars: int = Field(default=defaults.OBSERVER_BATCH_CHARS, ge=1)
    observer_batch_max_chars: int = Field(default=defaults.OBSERVER_BATCH_MAX_CHARS, ge=1000)
    observer_llm_model: str | None = None  # default: CEMS_LLM_MODEL
    observer_llm_timeout: float = Field(default=defaults.OBSERVER_LLM_TIMEOUT, gt=0, le=3600)
    observer_backoff_initial: float = Field(default=defaults.OBSERVER_BACKOFF_INITIAL, ge=0)
    observer_backoff_max: float = Field(default=defaults.OBSERVER_BACKOFF_MAX, ge=0)
    # After this many failed attempts on the same material, store its deterministic digests instead, so one
    # batch the model can never answer does not hold back everything behind it (0 = retry forever).
    observer_llm_max_attempts: int = Field(default=defaults.OBSERVER_LLM_MAX_ATTEMPTS, ge=0)

    # Reading: commit at least every this many bytes (bounds memory and the work a crash repeats);
    # lines longer than the cap are skipped and counted, never loaded whole.
    observer_commit_bytes: int = Field(default=defaults.OBSERVER_COMMIT_BYTES, ge=1)
    observer_max_line_bytes: int = Field(default=defaults.OBSERVER_MAX_LINE_BYTES, ge=1024)
    observer_commit_chunks: int = Field(default=defaults.OBSERVER_COMMIT_CHUNKS, ge=1)

    # Daemon: wake at least this often (idle finalization, LLM retries); full rescan as a safety net
    # for file events the OS dropped.
    observer_tick_seconds: float = Field(default=defaults.OBSERVER_TICK_SECONDS, gt=0)
    observer_rescan_seconds: float = Field(default=defaults.OBSERVER_RESCAN_SECONDS, gt=0)
    # Lifecycle maintenance (`cems maintain`) for the observing user, in the background, when this long has
    # passed since the last run (by any process: the time is kept in the database); 0 = never.
    observer_maintain_seconds: float = Field(default=defaults.OBSERVER_MAINTAIN_SECONDS, ge=0)

    @property
    def roots(self) -> list[Path]:
        """The folders to watch, expanded, de-duplicated, in the order given."""
        raw = [p.strip() for p in re.split(rf"[{re.escape(os.pathsep)},]", self.observer_paths) if p.strip()]
        if not raw:
            base = (
                Path(self.claude_config_dir).expanduser()
                if self.claude_config_dir.strip()
                else Path.home() / ".claude"
            )
            raw = [str(base / "projects")]
        roots: list[Path] = []
        for item in raw:
            path = Path(item).expanduser()
            path = path.resolve() if path.exists() else path.absolute()
            if path not in roots:
                roots.append(path)
        return roots


def load_observer_settings(**overrides: object) -> ObserverSettings:
    """Observer settings; SettingsError with a one-line message naming the variable if one is bad."""
    try:
        return ObserverSettings(**overrides)  # type: ignore[arg-type]
    except ValidationError as error:
        first = error.errors()[0]
        name = "CEMS_" + str((first.get("loc") or ("?",))[0]).upper()
        raise SettingsError(f"invalid setting {name}: {first.get('msg', 'invalid value')}") from None
    except (OSError, ValueError) as error:
        raise SettingsError(f"invalid configuration in {paths.config_file_path()}: {error}") from None
