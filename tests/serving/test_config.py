"""server/onnxport/serving/config/: defaults < JSON file (ONNXPORT_CONFIG) < ONNXPORT_* variables
< create_app mapping."""

from __future__ import annotations

import json
import types
import typing
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from onnxport.harness.process import free_port
from onnxport.serving import config
from onnxport.serving.app import create_app
from onnxport.serving.config import SETTINGS, ConfigError, ServerSettings

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch):
    """Settings from the environment of whoever runs the tests must not leak in."""
    import os

    for name in list(os.environ):
        if name.startswith("ONNXPORT_"):
            monkeypatch.delenv(name)


def settings_of(app) -> dict:
    return app.extensions["onnxport"].settings


def write_config(tmp_path, data, name="onnxport.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_defaults():
    loaded = config.load({}, environ={})
    assert loaded == {s.name: s.default for s in SETTINGS}
    assert loaded["repository"] == PROJECT_ROOT / "models" / ".repository"
    assert loaded["web_root"] == PROJECT_ROOT / "web"
    assert loaded["ort_root"] == PROJECT_ROOT / "node_modules" / "onnxruntime-web" / "dist"
    assert loaded["max_request_bytes"] == 64 * 1024 * 1024
    assert loaded["providers"] == ["CPUExecutionProvider"]
    assert (loaded["intra_op_threads"], loaded["inter_op_threads"]) == (0, 1)
    assert (loaded["host"], loaded["port"], loaded["workers"]) == ("127.0.0.1", 8000, 8)


def test_create_app_without_config_uses_the_defaults():
    app = create_app()
    assert settings_of(app) == {s.name: s.default for s in SETTINGS}
    assert app.config["MAX_CONTENT_LENGTH"] == 64 * 1024 * 1024


def test_every_setting_has_a_help_text_and_a_default_of_its_type():
    for setting in SETTINGS:
        assert setting.help.strip(), setting.name
        if isinstance(setting.default, int):
            assert setting.parse(str(setting.default)) == setting.default


def test_json_file_named_by_onnxport_config(tmp_path, monkeypatch):
    path = write_config(
        tmp_path,
        {
            "repository": str(tmp_path / "repo"),
            "port": 9001,
            "max_request_bytes": 5000,
            "providers": "CUDAExecutionProvider, CPUExecutionProvider",
            "workers": "3",
        },
    )
    loaded = config.load(None, environ={"ONNXPORT_CONFIG": str(path)})
    assert loaded["repository"] == tmp_path / "repo"
    assert loaded["port"] == 9001
    assert loaded["max_request_bytes"] == 5000
    assert loaded["providers"] == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert loaded["workers"] == 3  # strings in the file are parsed like environment values
    assert loaded["host"] == "127.0.0.1"  # not in the file: the default

    monkeypatch.setenv("ONNXPORT_CONFIG", str(path))
    app = create_app()
    assert settings_of(app)["port"] == 9001
    assert app.config["MAX_CONTENT_LENGTH"] == 5000


def test_config_file_setting_in_the_mapping(tmp_path):
    path = write_config(tmp_path, {"port": 9002})
    assert config.load({"config_file": str(path)}, environ={})["port"] == 9002


def test_environment_overrides_the_file(tmp_path, monkeypatch):
    path = write_config(tmp_path, {"port": 9001, "host": "0.0.0.0", "max_request_bytes": 5000})
    environ = {
        "ONNXPORT_CONFIG": str(path),
        "ONNXPORT_PORT": "9100",
        "ONNXPORT_MAX_REQUEST_BYTES": "7000",
        "ONNXPORT_PROVIDERS": "CPUExecutionProvider",
        "ONNXPORT_REPOSITORY": str(tmp_path / "env-repo"),
    }
    loaded = config.load(None, environ=environ)
    assert loaded["port"] == 9100
    assert loaded["max_request_bytes"] == 7000
    assert loaded["host"] == "0.0.0.0"  # only in the file
    assert loaded["repository"] == tmp_path / "env-repo"
    assert loaded["providers"] == ["CPUExecutionProvider"]

    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    app = create_app()
    assert settings_of(app)["port"] == 9100
    assert app.config["MAX_CONTENT_LENGTH"] == 7000


def test_create_app_mapping_overrides_environment_and_file(tmp_path, monkeypatch):
    path = write_config(tmp_path, {"port": 9001, "workers": 2})
    monkeypatch.setenv("ONNXPORT_CONFIG", str(path))
    monkeypatch.setenv("ONNXPORT_PORT", "9100")
    monkeypatch.setenv("ONNXPORT_MAX_REQUEST_BYTES", "7000")
    app = create_app({"port": 9200, "max_request_bytes": "1234", "repository": str(tmp_path)})
    settings = settings_of(app)
    assert settings["port"] == 9200
    assert settings["max_request_bytes"] == 1234  # a string in the mapping is parsed
    assert app.config["MAX_CONTENT_LENGTH"] == 1234
    assert settings["workers"] == 2  # from the file, nothing overrides it
    assert settings["repository"] == tmp_path


def test_every_setting_can_be_set_from_the_environment(tmp_path):
    values = {
        "repository": (str(tmp_path / "r"), tmp_path / "r"),
        "web_root": (str(tmp_path / "w"), tmp_path / "w"),
        "ort_root": (str(tmp_path / "o"), tmp_path / "o"),
        "tokenizers_root": (str(tmp_path / "t"), tmp_path / "t"),
        "chartjs_root": (str(tmp_path / "c"), tmp_path / "c"),
        "debug_root": (str(tmp_path / "d"), tmp_path / "d"),
        "tolerances_file": (str(tmp_path / "tol.json"), tmp_path / "tol.json"),
        "dynamic_batching": ("digits,minilm", "digits,minilm"),
        "batch_window_ms": ("5", 5.0),
        "max_batch": ("8", 8),
        "max_request_bytes": ("99", 99),
        "max_json_string_bytes": ("4096", 4096),
        "raw_max_rows": ("16", 16),
        "raw_max_text_bytes": (" 1000", 1000),
        "raw_max_image_pixels": ("640000", 640000),
        "raw_max_request_pixels": ("1280000", 1280000),
        "providers": ("A,B", ["A", "B"]),
        "intra_op_threads": ("2", 2),
        "inter_op_threads": ("3", 3),
        "intra_op_spinning": (" OFF", "off"),
        "host": ("::1", "::1"),
        "port": ("1234", 1234),
        "workers": ("5", 5),
        "max_connections": (" 200", 200),
        "idle_timeout": ("5", 5.0),
        "header_timeout": ("2.5", 2.5),
        "body_timeout": ("30", 30.0),
        "drain_seconds": ("2.5", 2.5),
        "request_log": (" Text", "text"),
        "artifacts_url": ("https://cdn.example/models/", "https://cdn.example/models/"),
        "cors_origins": ("https://a.example, http://localhost:8080", ["https://a.example", "http://localhost:8080"]),
        "admin_token": (" s3cret ", "s3cret"),
        "import_max_nodes": ("2000", 2000),
        "import_time_limit": ("90", 90.0),
        "import_memory_limit": ("6GiB", 6 << 30),
        "import_cpu_limit": ("600", 600.0),
        "import_max_tree_classes": ("100", 100),
        "import_max_trees": ("5000", 5000),
        "import_max_tree_leaves": ("4096", 4096),
        "import_max_tree_features": ("300", 300),
        "import_max_tree_file_bytes": ("1048576", 1 << 20),
        "import_max_data_bytes": ("1048576", 1 << 20),
        "import_max_text_bytes": ("1024", 1024),
        "fleet_reports": (" Off", False),
        "fleet_min_clients": ("5", 5),
        "fleet_db": (str(tmp_path / "f.sqlite3"), tmp_path / "f.sqlite3"),
        "fleet_client_rate": ("10", 10),
        "fleet_address_rate": ("100", 100),
        "fleet_max_clients": ("50", 50),
        "fleet_max_age_days": ("30", 30),
        "fleet_max_groups": ("200", 200),
        "fleet_network_groups": ("20", 20),
        "generation_models": (
            f"tiny={tmp_path}/tiny, b=~/b",
            {"tiny": tmp_path / "tiny", "b": Path("~/b").expanduser()},
        ),
        "generation_max_new_tokens": ("64", 64),
        "generation_max_context": ("512", 512),
        "generation_max_concurrent": ("3", 3),
        "generation_time_limit": ("2.5", 2.5),
    }
    assert set(values) == {s.name for s in SETTINGS}, "a new setting needs a line here"
    environ = {f"ONNXPORT_{name.upper()}": raw for name, (raw, _) in values.items()}
    loaded = config.load(None, environ=environ)
    assert loaded == {name: parsed for name, (_, parsed) in values.items()}
    assert_typed(loaded)


def fits(value: object, hint: object) -> bool:
    """value is of the type hint names (the few forms ServerSettings uses: classes, X | None, list[str])."""
    if isinstance(hint, types.UnionType):
        return any(fits(value, arm) for arm in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if typing.get_origin(hint) is dict:
        key, item = typing.get_args(hint)
        return isinstance(value, dict) and all(fits(k, key) and fits(v, item) for k, v in value.items())
    if typing.get_origin(hint) is list:
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(fits(v, item) for v in value)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    assert isinstance(hint, type), hint
    return isinstance(value, hint) and (hint is bool or not isinstance(value, bool))


def assert_typed(loaded: dict) -> None:
    hints = typing.get_type_hints(ServerSettings)
    wrong = {k: (v, hints[k]) for k, v in loaded.items() if not fits(v, hints[k])}
    assert wrong == {}, "values that do not fit server_settings.py's types"


def test_the_typed_settings_have_one_key_per_row_of_the_table():
    assert list(typing.get_type_hints(ServerSettings)) == [s.name for s in SETTINGS], "a new setting needs a key"
    assert_typed(config.load({}, environ={}))  # the defaults, and the tests above the values each rule parses


def test_unknown_setting_in_the_mapping(tmp_path):
    with pytest.raises(ConfigError) as raised:
        create_app({"repository": str(tmp_path), "max_request_byte": 10})
    assert "'max_request_byte'" in str(raised.value)
    assert "max_request_bytes" in str(raised.value)  # the known ones are listed


def test_unknown_setting_in_the_file(tmp_path):
    path = write_config(tmp_path, {"port": 1, "colour": "blue"})
    with pytest.raises(ConfigError) as raised:
        config.load(None, environ={"ONNXPORT_CONFIG": str(path)})
    assert str(path) in str(raised.value) and "colour" in str(raised.value)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("{not json", "config file"),
        ("[1, 2]", "JSON object"),
    ],
)
def test_unreadable_config_file(tmp_path, text, fragment):
    path = write_config(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        config.load(None, environ={"ONNXPORT_CONFIG": str(path)})
    assert str(path) in str(raised.value) and fragment in str(raised.value)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError) as raised:
        config.load(None, environ={"ONNXPORT_CONFIG": str(tmp_path / "nope.json")})
    assert "nope.json" in str(raised.value)


def test_invalid_environment_value_names_the_variable():
    with pytest.raises(ConfigError) as raised:
        config.load(None, environ={"ONNXPORT_PORT": "eighty"})
    assert "$ONNXPORT_PORT" in str(raised.value) and "'eighty'" in str(raised.value)


def test_invalid_file_value_names_the_file_and_setting(tmp_path):
    path = write_config(tmp_path, {"workers": "many"})
    with pytest.raises(ConfigError) as raised:
        config.load(None, environ={"ONNXPORT_CONFIG": str(path)})
    assert str(path) in str(raised.value) and "workers" in str(raised.value)


# That every setting is documented (docs/reference/server.md, "Settings") is checked in tests/test_docs.py.


def test_onnxport_serve_takes_the_repository_from_the_config_file(repository_copy, spawn_server, tmp_path):
    repository = repository_copy(["iris"])
    port = free_port()
    path = write_config(tmp_path, {"repository": str(repository), "port": port})
    # Live, not ready: the server must come up even when it reads the wrong repository.
    base_url = spawn_server(["serve"], port, env={"ONNXPORT_CONFIG": str(path)}, probe="/v2/health/live")
    with urllib.request.urlopen(base_url + "/v2/models/iris", timeout=10) as response:
        assert response.status == 200
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(base_url + "/v2/models/digits", timeout=10)
    raised.value.close()
    assert raised.value.code == 404  # the copy holds iris only


def test_onnxport_serve_takes_the_port_from_the_config_file(demo_repository, spawn_server, tmp_path):
    port = free_port()
    path = write_config(tmp_path, {"port": port})
    base_url = spawn_server(["serve", "--repository", str(demo_repository)], port, env={"ONNXPORT_CONFIG": str(path)})
    with urllib.request.urlopen(base_url + "/v2", timeout=10) as response:
        assert json.load(response)["name"] == "onnxport"
