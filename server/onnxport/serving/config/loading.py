"""The settings' values from their sources, later ones winning: the defaults, a JSON file named by
ONNXPORT_CONFIG (or the `config_file` setting), ONNXPORT_<NAME> environment variables, then the mapping given
to create_app() (the command's flags come this way)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, cast

from onnxport.serving.config.server_settings import ServerSettings
from onnxport.serving.config.setting import ConfigError, Setting
from onnxport.serving.config.table import SETTINGS

ENV_PREFIX = "ONNXPORT_"


def load(overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> ServerSettings:
    environ = os.environ if environ is None else environ
    known = {s.name: s for s in SETTINGS}
    config: dict[str, object] = {s.name: s.default for s in SETTINGS}
    config_file = (overrides or {}).get("config_file") or environ.get(f"{ENV_PREFIX}CONFIG")
    if config_file:
        config.update(_from_file(Path(config_file), known))
    for setting in SETTINGS:
        raw = environ.get(ENV_PREFIX + setting.name.upper())
        if raw is not None:
            config[setting.name] = _parse(setting, raw, f"${ENV_PREFIX}{setting.name.upper()}")
    for key, value in (overrides or {}).items():
        if key == "config_file":
            continue
        if key not in known:
            raise ConfigError(f"unknown setting {key!r}; known: {', '.join(known)}")
        config[key] = _coerce(known[key], value, f"setting {key}")
    return cast(ServerSettings, config)  # every row's name, each value as its rule made it


def _from_file(path: Path, known: dict[str, Setting]) -> dict[str, object]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"config file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: expected a JSON object of settings")
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"config file {path}: unknown settings {', '.join(unknown)}; known: {', '.join(known)}")
    return {k: _coerce(known[k], v, f"{path}: {k}") for k, v in data.items()}


def _coerce(setting: Setting, value: Any, where: str) -> Any:
    """Text is parsed like an environment value; anything else is checked when the setting says how."""
    if isinstance(value, str):
        return _parse(setting, value, where)
    if setting.check is None:
        return value
    try:
        return setting.check(value)
    except ValueError as exc:
        shown = "the value" if setting.secret else repr(value)
        raise ConfigError(f"{where}: {shown} is not a valid {setting.name}: {exc}") from exc


def _parse(setting: Setting, raw: str, where: str) -> Any:
    try:
        return setting.parse(raw)
    except ValueError as exc:
        raise ConfigError(f"{where}: {raw!r} is not a valid {setting.name}: {exc}") from exc
