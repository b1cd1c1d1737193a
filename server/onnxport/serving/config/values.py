"""The rules a setting's value is parsed and checked by: text from a variable, a flag or a config file, and
JSON values from the file. Each raises ValueError with the words of what was expected."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def user_path(value: str) -> Path:
    return Path(value).expanduser()


def spinning(value: str) -> str:
    choice = value.strip().lower()
    if choice not in ("auto", "on", "off"):
        raise ValueError("expected auto, on or off")
    return choice


def request_log_format(value: str) -> str:
    choice = value.strip().lower()
    if choice not in ("json", "text", "off"):
        raise ValueError("expected json, text or off")
    return choice


def seconds(value: Any) -> float:
    """A duration in seconds, 0 or more: text or a JSON number."""
    rule = "expected a number of seconds, 0 or more (e.g. 30 or 2.5)"
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError(rule) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise ValueError(rule)
    return float(value)


def timeout(value: Any) -> float:
    """A time limit in seconds, above 0: text or a JSON number."""
    rule = "expected a number of seconds above 0 (e.g. 10 or 2.5)"
    try:
        limit = seconds(value)
    except ValueError:
        raise ValueError(rule) from None
    if limit <= 0:
        raise ValueError(rule)
    return limit


def positive(value: Any) -> int:
    """A whole number, 1 or more: text of digits or a JSON integer."""
    text = value.strip() if isinstance(value, str) else None
    if text is not None and text.isascii() and text.isdigit():
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("expected a whole number, 1 or more")
    return value


_SIZE_UNITS = {"": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}


def address_space(value: Any) -> int:
    """Bytes of address space, 0 (no limit) or at least 256 MiB: a whole number, or text with KiB, MiB or GiB."""
    rule = "expected bytes, 0 (no limit) or at least 256 MiB, e.g. 8GiB, 512MiB or 8589934592"
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmg]ib)?\s*", value, re.IGNORECASE)
        if match is None:
            raise ValueError(rule)
        value = int(float(match[1]) * _SIZE_UNITS[(match[2] or "").lower()])
    if isinstance(value, bool) or not isinstance(value, int) or (value != 0 and value < 256 << 20):
        raise ValueError(rule)
    return value


def connections(value: Any) -> int:
    try:
        return positive(value)
    except ValueError:
        raise ValueError("expected a whole number of connections, 1 or more (e.g. 1000)") from None


def boolean(value: Any) -> bool:
    """true/false, yes/no, on/off, 1/0 (any case): text or a JSON boolean."""
    if isinstance(value, bool):
        return value
    choice = value.strip().lower() if isinstance(value, str) else None
    if choice in ("true", "yes", "on", "1"):
        return True
    if choice in ("false", "no", "off", "0"):
        return False
    raise ValueError("expected true or false")


def db_path(value: str) -> Path | str | None:
    value = value.strip()
    return None if not value else value if value == ":memory:" else Path(value).expanduser()


def providers(value: str) -> list[str]:
    return [p.strip() for p in value.split(",") if p.strip()]


ANY_ORIGIN = "*"
_ORIGIN = re.compile(
    r"(?P<scheme>[a-z][a-z0-9+.-]*)://"
    r"(?P<host>\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*)"
    r"(?::(?P<port>[0-9]{1,5}))?",
    re.IGNORECASE,
)
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def origin(entry: str) -> str:
    """An origin as browsers send it in the Origin header: lower case, without the scheme's default port."""
    entry = entry.strip()
    if entry == ANY_ORIGIN:
        return entry
    match = _ORIGIN.fullmatch(entry)
    if not match or (match["port"] and not 0 < int(match["port"]) < 65536):
        raise ValueError(
            f"{entry!r} is not an origin; expected scheme://host[:port] with no path "
            f"(e.g. https://example.com or http://localhost:8080), or {ANY_ORIGIN} for any origin"
        )
    scheme, host, port = match["scheme"].lower(), match["host"].lower(), match["port"]
    port = None if port is None or _DEFAULT_PORTS.get(scheme) == str(int(port)) else str(int(port))
    return f"{scheme}://{host}" + (f":{port}" if port else "")


def url(value: str) -> str | None:
    value = value.strip()
    if not value:
        return None
    scheme, _, rest = value.partition("://")
    if scheme.lower() not in ("http", "https") or not rest.split("/", 1)[0]:
        raise ValueError(
            "expected an http:// or https:// URL of a published repository folder "
            "(e.g. https://cdn.example.com/models/ or http://host:8000/repository/)"
        )
    return value


def url_or_none(value: Any) -> str | None:
    if value is None:
        return None
    raise ValueError(f"expected a URL (a string) or null, got {value!r}")


def token(value: str) -> str | None:
    return value.strip() or None


def token_or_none(value: Any) -> str | None:
    if value is None:
        return None
    raise ValueError("expected a token (a string) or null")  # the value itself is never echoed


def origins(value: str) -> list[str]:
    return [origin(entry) for entry in value.split(",") if entry.strip()]


def origin_list(value: Any) -> list[str]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(entry, str) for entry in value):
        raise ValueError(f"expected a list of origins (strings) or one comma-separated string, got {value!r}")
    return [origin(entry) for entry in value]


PORT_RULE = "expected a whole number from 0 to 65535 (0: any free port)"
HOST_RULE = (
    "expected a host name or IP address to listen on, without scheme or port "
    "(e.g. 127.0.0.1, localhost, ::1, or 0.0.0.0 for every interface)"
)


def port_number(value: Any) -> int:
    """A TCP port: text of digits or an int, 0..65535. Checked here because the sockets layer does not:
    getaddrinfo wraps 99999 to 34463, and the server would listen there while printing :99999."""
    text = value.strip() if isinstance(value, str) else None
    if text is not None and text.isascii() and text.isdigit():
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
        raise ValueError(PORT_RULE)
    return value


def listen_host(value: str) -> str:
    """A host to listen on. Only the form is checked (whether this machine has it, binding tells):
    an empty host would make waitress fail with a traceback, a URL or host:port is a common slip."""
    host = value.strip()
    if not host or any(c.isspace() or c == "/" for c in host) or host.count(":") == 1:
        raise ValueError(HOST_RULE)
    return host


def model_folders(value: str) -> dict[str, Path]:
    """name=folder pairs, comma-separated (text of a variable or a flag): generation_models."""
    pairs: dict[str, Path] = {}
    for entry in value.split(","):
        if not entry.strip():
            continue
        name, sep, folder = entry.partition("=")
        if not sep:
            raise ValueError(f"expected name=folder pairs, comma-separated; {entry.strip()!r} has no '='")
        pairs.update(model_folder_map({name.strip(): folder.strip()}))
    return pairs


def model_folder_map(value: Any) -> dict[str, Path]:
    """A JSON object of model name -> decoder folder: generation_models from a config file or a mapping."""
    rule = "expected an object of model name -> decoder folder (names of letters, digits, '.', '_', '-')"
    if not isinstance(value, dict):
        raise ValueError(f"{rule}, got {value!r}")
    for name, folder in value.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", name):
            raise ValueError(f"{rule}; model name {name!r} is not one")
        if not isinstance(folder, (str, Path)) or not str(folder).strip():
            raise ValueError(f"{rule}; model {name!r} has folder {folder!r}")
    return {name: Path(folder).expanduser() for name, folder in value.items()}
