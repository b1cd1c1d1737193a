"""Server settings, declared as data: name, default, type and help.

Sources, later ones winning: the defaults here, a JSON file named by
ONNXPORT_CONFIG (or the `config_file` setting), ONNXPORT_<NAME> environment
variables, then the mapping given to create_app().
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from onnxport.errors import UsageError
from onnxport.project import CHECKOUT, PACKAGED_WEB


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


def _path(value: str) -> Path:
    return Path(value).expanduser()


def _spinning(value: str) -> str:
    choice = value.strip().lower()
    if choice not in ("auto", "on", "off"):
        raise ValueError("expected auto, on or off")
    return choice


def _request_log(value: str) -> str:
    choice = value.strip().lower()
    if choice not in ("json", "text", "off"):
        raise ValueError("expected json, text or off")
    return choice


def _seconds(value: Any) -> float:
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


def _timeout(value: Any) -> float:
    """A time limit in seconds, above 0: text or a JSON number."""
    rule = "expected a number of seconds above 0 (e.g. 10 or 2.5)"
    try:
        seconds = _seconds(value)
    except ValueError:
        raise ValueError(rule) from None
    if seconds <= 0:
        raise ValueError(rule)
    return seconds


def _positive(value: Any) -> int:
    """A whole number, 1 or more: text of digits or a JSON integer."""
    text = value.strip() if isinstance(value, str) else None
    if text is not None and text.isascii() and text.isdigit():
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("expected a whole number, 1 or more")
    return value


_SIZE_UNITS = {"": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}


def _address_space(value: Any) -> int:
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


def _connections(value: Any) -> int:
    try:
        return _positive(value)
    except ValueError:
        raise ValueError("expected a whole number of connections, 1 or more (e.g. 1000)") from None


def _bool(value: Any) -> bool:
    """true/false, yes/no, on/off, 1/0 (any case): text or a JSON boolean."""
    if isinstance(value, bool):
        return value
    choice = value.strip().lower() if isinstance(value, str) else None
    if choice in ("true", "yes", "on", "1"):
        return True
    if choice in ("false", "no", "off", "0"):
        return False
    raise ValueError("expected true or false")


def _db_path(value: str) -> Path | str | None:
    value = value.strip()
    return None if not value else value if value == ":memory:" else Path(value).expanduser()


def _providers(value: str) -> list[str]:
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


def _url(value: str) -> str | None:
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


def _url_or_none(value: Any) -> str | None:
    if value is None:
        return None
    raise ValueError(f"expected a URL (a string) or null, got {value!r}")


def _token(value: str) -> str | None:
    return value.strip() or None


def _token_or_none(value: Any) -> str | None:
    if value is None:
        return None
    raise ValueError("expected a token (a string) or null")  # the value itself is never echoed


def _origins(value: str) -> list[str]:
    return [origin(entry) for entry in value.split(",") if entry.strip()]


def _origin_list(value: Any) -> list[str]:
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


# The defaults: in a checkout, its own folders (`make run`); installed, the package's copy of the browser side
# and a repository in the working folder (relative: resolved where the command runs). project.py tells which.
if CHECKOUT is not None:
    DEFAULT_REPOSITORY = CHECKOUT / "models" / ".repository"
    WEB_ROOT = CHECKOUT / "web"
    ORT_ROOT = CHECKOUT / "node_modules" / "onnxruntime-web" / "dist"
    TOKENIZERS_ROOT = CHECKOUT / "node_modules" / "@huggingface" / "tokenizers" / "dist"
    CHARTJS_ROOT = CHECKOUT / "node_modules" / "chart.js" / "dist"
else:
    DEFAULT_REPOSITORY = Path("onnxport-repository")
    WEB_ROOT = PACKAGED_WEB / "web"
    ORT_ROOT = PACKAGED_WEB / "ort"
    TOKENIZERS_ROOT = PACKAGED_WEB / "vendor" / "tokenizers"
    CHARTJS_ROOT = PACKAGED_WEB / "vendor" / "chartjs"

SETTINGS = [
    Setting(
        "repository",
        DEFAULT_REPOSITORY,
        _path,
        "Model repository folder (manifest.json, artifacts/, testdata/); default models/.repository in a "
        "checkout, ./onnxport-repository where onnxport is installed.",
    ),
    Setting("web_root", WEB_ROOT, _path, "Folder of the browser app, served at /."),
    Setting(
        "ort_root",
        ORT_ROOT,
        _path,
        "onnxruntime-web's files from the pinned npm package (its dist folder in a checkout, the files the "
        "library loads in an installed package), served at /ort/.",
    ),
    Setting(
        "tokenizers_root",
        TOKENIZERS_ROOT,
        _path,
        "@huggingface/tokenizers' dist folder from the pinned npm package, served at /vendor/tokenizers/.",
    ),
    Setting(
        "chartjs_root",
        CHARTJS_ROOT,
        _path,
        "Chart.js's dist folder from the pinned npm package (the performance page's charts), served at "
        "/vendor/chartjs/.",
    ),
    Setting(
        "debug_root",
        None,
        _path,
        "Folder of debug models served at /debug/ (set by `onnxport check --locate`; off when empty).",
    ),
    Setting(
        "tolerances_file",
        None,
        _path,
        'JSON file of conformance tolerance overrides ({"fp32/wasm": {"abs": 1e-6}}), merged over the table.',
    ),
    Setting(
        "max_request_bytes", 64 * 1024 * 1024, int, "Largest accepted request body in bytes; larger ones get HTTP 413."
    ),
    Setting(
        "max_json_string_bytes",
        64 * 1024,
        _positive,
        "Most bytes of JSON strings (quotes and escapes counted) in a V2 request to a model that takes no text "
        "(no BYTES input, no raw input), whose strings are only names, datatypes and an id; past it, 413 while "
        "the body is still being read. A model that takes text is bounded by max_request_bytes alone.",
        check=_positive,
    ),
    # Raw input (texts and image files made into tensors by a model's pipeline) costs far more than its bytes:
    # these budgets are checked before the work, and a request over one gets HTTP 413 naming it.
    Setting(
        "raw_max_rows", 32, _positive, "Most texts (or text pairs) or images in one raw-input request.", check=_positive
    ),
    Setting(
        "raw_max_text_bytes",
        16 * 1024 * 1024,
        _positive,
        "Most UTF-8 bytes of text in one raw-input request (each text is cut to what the tokenizer can keep "
        "before it is tokenized).",
        check=_positive,
    ),
    Setting(
        "raw_max_image_pixels",
        4096 * 4096,
        _positive,
        "Most pixels of one image file, read from its header before it is decoded.",
        check=_positive,
    ),
    Setting(
        "raw_max_request_pixels",
        4 * 4096 * 4096,
        _positive,
        "Most pixels of all the image files in one raw-input request together.",
        check=_positive,
    ),
    Setting(
        "providers",
        ["CPUExecutionProvider"],
        _providers,
        "onnxruntime execution providers in priority order (comma-separated); those this "
        "onnxruntime build lacks are dropped, CPU is always last.",
    ),
    Setting("intra_op_threads", 0, int, "Threads per onnxruntime session for one operator (0 = all cores)."),
    Setting("inter_op_threads", 1, int, "Threads per onnxruntime session across operators."),
    Setting(
        "intra_op_spinning",
        "auto",
        _spinning,
        "Whether onnxruntime's idle threads spin for the next operator: on, off, or auto (on for waitress; off "
        "on Ray Serve, whose proxy and replicas share the cores: `onnxport bench --engine ray` measured more "
        "throughput without it).",
    ),
    Setting(
        "dynamic_batching",
        "auto",
        str,
        "Models whose concurrent requests are batched: auto (where the latest `onnxport bench` in the "
        "repository measured a gain), all, none, or a comma-separated list of models.",
    ),
    Setting("batch_window_ms", 2.0, float, "How long a batch waits for more requests, in milliseconds."),
    Setting("max_batch", 32, int, "Most rows in one dynamic batch."),
    Setting("host", "127.0.0.1", listen_host, "Address `onnxport serve` listens on."),
    Setting(
        "port",
        8000,
        port_number,
        "Port `onnxport serve` listens on (0: any free port, printed at start).",
        check=port_number,
    ),
    Setting("workers", 8, int, "Request threads of the WSGI server (sessions are shared between them)."),
    # Limits for slow clients (serving/waitress/connections.py): enough connections that hundreds of idle ones starve
    # no one, and deadlines that a client trickling a byte a second cannot stretch.
    Setting(
        "max_connections",
        1000,
        _connections,
        "Most client connections `onnxport serve` holds open at once; past it, new ones wait in the system's "
        "backlog until one closes. The open-file limit is raised to fit, if the system allows.",
        check=_connections,
    ),
    Setting(
        "idle_timeout",
        30.0,
        _timeout,
        "Seconds a kept-alive connection may sit with no request on it (or with an answer its client does not "
        "read) before it is closed.",
        check=_timeout,
    ),
    Setting(
        "header_timeout",
        10.0,
        _timeout,
        "Seconds within which a request's head (request line and headers) must arrive whole, from the "
        "connection's opening (from its first byte for a later request on a kept-alive connection); past it, "
        "408 and the connection is closed, however steadily bytes trickle in.",
        check=_timeout,
    ),
    Setting(
        "body_timeout",
        60.0,
        _timeout,
        "Seconds within which a request's body must arrive whole once its head has; past it, 408 and the "
        "connection is closed. A request read whole is never cut, however long it runs.",
        check=_timeout,
    ),
    Setting(
        "drain_seconds",
        30.0,
        _seconds,
        "On SIGTERM or Ctrl-C, `onnxport serve` stops accepting and answers every accepted request before it "
        "exits, waiting at most this many seconds; requests still running then are abandoned and the exit "
        "status is 1 (0 only when nothing was dropped).",
        check=_seconds,
    ),
    Setting(
        "request_log",
        "json",
        _request_log,
        "One line per request on stderr: json (id, method, path, model, version, protocol json/binary, status, "
        "bytes_in, bytes_out, ms, and the error a refused request got), text (the same as words), or off.",
    ),
    Setting(
        "cors_origins",
        [],
        _origins,
        "Origins (scheme://host[:port], or * for any) whose pages may use the manifest, artifacts, golden "
        "data, /ort/, /vendor/tokenizers/, /vendor/chartjs/, /web/, /api/ and /v2/ cross-origin (comma-separated; "
        "default: none, same-origin only).",
        check=_origin_list,
    ),
    Setting(
        "artifacts_url",
        None,
        _url,
        "Base URL of a published repository (a CDN, or a static server's /repository/) from which a Ray Serve "
        "replica downloads the manifest and artifacts, each sha256-verified, into the `repository` folder "
        "before serving (off when empty).",
        check=_url_or_none,
    ),
    Setting(
        "admin_token",
        None,
        _token,
        "Secret that turns on the repository API's load and unload (POST /v2/repository/models/<m>/load, "
        "/unload): requests must send `Authorization: Bearer <token>`. Off when empty (they answer 403); "
        "never logged or echoed. Set it through the environment or the config file, not a command line.",
        check=_token_or_none,
        secret=True,
    ),
    # Fleet verdicts (docs/reference/fleet.md): browsers' reports folded into one vote per network, device class and
    # file.
    Setting(
        "fleet_reports",
        True,
        _bool,
        "Whether the server takes browsers' fleet reports (POST /api/fleet/reports) and publishes their "
        "verdicts and times (GET /api/fleet); when false, reports get 404 and GET /api/fleet 204 (no fleet).",
        check=_bool,
    ),
    Setting(
        "fleet_min_clients",
        3,
        _positive,
        "k: distinct networks (IPv4 /24, IPv6 /48) needed before a fleet verdict or time is published; a fail "
        "needs k failing networks and 2/3 of the group's. One network's many clients are one vote.",
        check=_positive,
    ),
    Setting(
        "fleet_db",
        None,
        _db_path,
        "sqlite file of the fleet's votes (default: fleet.sqlite3 in the repository folder; :memory: keeps "
        "them in memory). Not writable: in memory, with one log line.",
    ),
    Setting(
        "fleet_client_rate",
        20,
        _positive,
        "Fleet reports a minute one client (browser token) may send; past it, 429 with Retry-After.",
        check=_positive,
    ),
    Setting(
        "fleet_address_rate",
        600,
        _positive,
        "Fleet reports a minute from one network (IPv4 /24, IPv6 /48; held in memory only, salted and "
        "hashed); past it, 429.",
        check=_positive,
    ),
    Setting(
        "fleet_max_clients",
        1000,
        _positive,
        "Most votes (distinct networks) kept per fleet group; the oldest go first.",
        check=_positive,
    ),
    Setting("fleet_max_age_days", 90, _positive, "Days a fleet vote counts; older ones are dropped.", check=_positive),
    Setting(
        "fleet_max_groups",
        20000,
        _positive,
        "Most fleet groups (file, runtime, device class) kept. When full, a new group replaces one with fewer "
        "than k networks (its own network's first, then the network with the most groups'; oldest first); "
        "groups with k networks are never evicted, and a new group is refused while only those are left.",
        check=_positive,
    ),
    Setting(
        "fleet_network_groups",
        100,
        _positive,
        "Fleet groups one network (IPv4 /24, IPv6 /48) may create an hour; results that would create more "
        "are not folded (the report is still answered 202 with the count folded).",
        check=_positive,
    ),
    # `onnxport import`'s budgets (its --max-nodes and --time-limit override them): a file is refused or the
    # import stopped, with one line naming the limit, before a giant graph takes minutes and GBs.
    Setting(
        "import_max_nodes",
        50_000,
        _positive,
        "Most nodes (subgraphs included) of a model `onnxport import` takes; a bigger one is refused before "
        "any work (exit 2). Real models have hundreds to a few thousand.",
        check=_positive,
    ),
    # What a LightGBM or XGBoost file may declare, checked before its library reads it (which trusts the counts:
    # a crafted one crashed it or took GBs). Generous for real models; a refusal is one line, exit 2.
    Setting(
        "import_max_tree_classes",
        10_000,
        _positive,
        "Most classes (num_class) a LightGBM or XGBoost model file `onnxport import` takes may declare.",
        check=_positive,
    ),
    Setting(
        "import_max_trees",
        1_000_000,
        _positive,
        "Most trees in a LightGBM or XGBoost model file (e.g. 10,000 rounds of 100 classes).",
        check=_positive,
    ),
    Setting(
        "import_max_tree_leaves",
        1_000_000,
        _positive,
        "Most leaves per tree of a LightGBM or XGBoost model file (LightGBM caps num_leaves at 131,072; "
        "an XGBoost tree of depth 20 has 1,048,576 at most).",
        check=_positive,
    ),
    Setting(
        "import_max_tree_features",
        1_000_000,
        _positive,
        "Most features a LightGBM or XGBoost model file may declare (hashed text features: 2^20).",
        check=_positive,
    ),
    Setting(
        "import_max_tree_file_bytes",
        1 << 30,
        _positive,
        "Largest LightGBM or XGBoost model file, in bytes (1 GiB: its library takes a few times that).",
        check=_positive,
    ),
    Setting(
        "import_max_data_bytes",
        1 << 30,
        _positive,
        "Bytes the --inputs (or --calibration) files of `onnxport import` may declare they unpack to (.npz "
        "members by the zip's sizes and their .npy headers), checked before anything is decompressed.",
        check=_positive,
    ),
    Setting(
        "import_max_text_bytes",
        64 * 1024,
        _positive,
        "Longest doc_string or metadata_props text kept in an imported ONNX model; longer ones are cut to "
        "it right after parsing, with a note.",
        check=_positive,
    ),
    Setting(
        "import_time_limit",
        1800.0,
        _seconds,
        "Seconds `onnxport import` may run before it stops with nothing written (exit 1); 0 for no limit.",
        check=_seconds,
    ),
    # The import's work runs in a child process under these two (convert/sandbox.py): a crafted file that makes
    # a native parser allocate or loop without end stops there, in one line, and the repository is unchanged.
    Setting(
        "import_memory_limit",
        8 << 30,
        _address_space,
        "Address space the import's child process may map (bytes, or with KiB, MiB, GiB); past it, it stops "
        "with nothing written (exit 1); 0 for no limit. Mapped, not used: a 100 MB model's import maps 2.6 GiB "
        "for 1.6 GiB used, a tiny one 1 GiB for 0.3 GiB; the largest real import known (a 97 MB ViT) used "
        "3.3 GB, so 8 GiB leaves it room.",
        check=_address_space,
    ),
    Setting(
        "import_cpu_limit",
        7200.0,
        _seconds,
        "CPU seconds (every thread together) the import's child process may use before it is stopped with "
        "nothing written (exit 1); 0 for no limit. It stops native code that never returns, which the "
        "time limit cannot interrupt; the default is the time limit's 1800 s on 4 busy cores.",
        check=_seconds,
    ),
]
ENV_PREFIX = "ONNXPORT_"


def load(overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    environ = os.environ if environ is None else environ
    known = {s.name: s for s in SETTINGS}
    config = {s.name: s.default for s in SETTINGS}
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
    return config


def _from_file(path: Path, known: dict[str, Setting]) -> dict[str, Any]:
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
