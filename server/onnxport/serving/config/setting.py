"""What a setting is, and the error a value that does not fit it raises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from onnxport.errors import UsageError


class ConfigError(UsageError):
    """A setting (config file, ONNXPORT_* variable, option) the user gave does not fit: the CLI exits 2."""


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    parse: Callable[[str], Any]
    help: str
    # Validates a value that came as JSON or Python rather than text (a list in the config file).
    check: Callable[[Any], Any] | None = None
    secret: bool = False  # its value is never put in a message
