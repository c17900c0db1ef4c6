"""Live settings (`cems config`): what is in effect, where it comes from, and storing or removing a value for
you or your team."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cems_cli.errors import UserError

if TYPE_CHECKING:
    from cems_cli.api._memory import Memory


@dataclass(frozen=True)
class SettingValue:
    """One live setting: its value in effect, where that comes from (environment, user, team,
    config.toml, default), and what is stored for you and for your team."""

    key: str
    value: Any
    source: str
    user: Any = None
    team: Any = None

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "source": self.source, "user": self.user,
                "team": self.team}


class Config:
    """Live settings (`cems config`): stored in the database per user or per team, applied by the next
    search of every process, the warm search server included. See cems_cli/live_settings.py."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory

    def list_settings(self) -> list[SettingValue]:
        from cems_cli.live_settings import LIVE_KEYS

        return self._values(LIVE_KEYS)

    def get(self, key: str) -> SettingValue:
        from cems_cli.live_settings import check_key

        return self._value(check_key(key))

    def set(self, key: str, value: str, *, team: bool = False) -> SettingValue:
        """Store `value` (text, as in the environment) for you, or for your whole team."""
        from cems_cli.live_settings import check_key, check_team_key, parse_value
        from cems_cli.store import settings as store

        name = check_team_key(check_key(key)) if team else check_key(key)
        parsed = parse_value(name, value)
        kind, owner = self._owner(team)
        store.put(self._memory._service.conn, kind, owner, name, parsed, self._memory.settings.user)
        return self._value(name)

    def unset(self, key: str, *, team: bool = False) -> bool:
        """Remove your (or your team's) stored value; False when none was stored."""
        from cems_cli.live_settings import check_key
        from cems_cli.store import settings as store

        kind, owner = self._owner(team)
        return store.delete(self._memory._service.conn, kind, owner, check_key(key))

    def _owner(self, team: bool) -> tuple[str, str]:
        settings = self._memory.settings
        if not team:
            return "user", settings.user
        if not settings.team:
            raise UserError("team settings need a team: set CEMS_TEAM or pass --team")
        self._memory._service.require_team(settings.team, admin=True, doing="change its settings")
        return "team", settings.team

    def _value(self, key: str) -> SettingValue:
        return self._values((key,))[0]

    def _values(self, keys: Sequence[str]) -> list[SettingValue]:
        """The settings in effect and what is stored, read once for all `keys`."""
        from cems_cli.live_settings import LIVE, source_of, toml_keys_of_config

        service = self._memory._service
        effective = service.live_settings()
        base = service.base_settings
        stored = LIVE.stored(service.conn, base.user, base.team)
        in_toml = toml_keys_of_config()
        return [
            SettingValue(key, getattr(effective, key), source_of(key, stored, in_toml),
                         stored["user"].get(key), stored["team"].get(key))
            for key in keys
        ]
