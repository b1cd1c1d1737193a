"""The cors_origins setting: from the environment, a JSON file or create_app's mapping; errors name bad entries."""

from __future__ import annotations

import json

import pytest

from fixtures.cors import ALLOWED, OTHER_ALLOWED
from onnxport.serving import config
from onnxport.serving.app import create_app
from onnxport.serving.config import ConfigError

pytestmark = pytest.mark.usefixtures("clean_environment")


def test_default_is_no_origin():
    assert config.load({}, environ={})["cors_origins"] == []


def test_from_the_environment_comma_separated():
    loaded = config.load(None, environ={"ONNXPORT_CORS_ORIGINS": f" {ALLOWED} ,{OTHER_ALLOWED},, "})
    assert loaded["cors_origins"] == [ALLOWED, OTHER_ALLOWED]
    assert config.load(None, environ={"ONNXPORT_CORS_ORIGINS": ""})["cors_origins"] == []
    assert config.load(None, environ={"ONNXPORT_CORS_ORIGINS": "*"})["cors_origins"] == ["*"]


def test_from_a_json_file_as_a_list_or_a_string(tmp_path):
    path = tmp_path / "onnxport.json"
    path.write_text(json.dumps({"cors_origins": [ALLOWED, "http://[::1]:8080"]}))
    assert config.load(None, environ={"ONNXPORT_CONFIG": str(path)})["cors_origins"] == [ALLOWED, "http://[::1]:8080"]
    path.write_text(json.dumps({"cors_origins": f"{ALLOWED},{OTHER_ALLOWED}"}))
    assert config.load(None, environ={"ONNXPORT_CONFIG": str(path)})["cors_origins"] == [ALLOWED, OTHER_ALLOWED]


def test_from_the_create_app_mapping(tmp_path):
    assert config.load({"cors_origins": [OTHER_ALLOWED]}, environ={})["cors_origins"] == [OTHER_ALLOWED]
    assert config.load({"cors_origins": f"{ALLOWED}"}, environ={})["cors_origins"] == [ALLOWED]
    assert config.load({"cors_origins": ("http://LOCALHOST:80",)}, environ={})["cors_origins"] == ["http://localhost"]


@pytest.mark.parametrize(
    "entry",
    [
        "app.example",  # no scheme
        "https://app.example/",  # a path, even an empty one, is not part of an origin
        "https://app.example/lib",
        "https://app.example:99999",
        "https://app.example:0",
        "https://user@app.example",
        "https://*.example",
        "//app.example",
        "null",
    ],
)
def test_a_bad_origin_is_named(entry):
    with pytest.raises(ConfigError) as raised:
        config.load(None, environ={"ONNXPORT_CORS_ORIGINS": f"{ALLOWED},{entry}"})
    message = str(raised.value)
    assert "$ONNXPORT_CORS_ORIGINS" in message and "cors_origins" in message
    assert f"{entry!r} is not an origin" in message
    assert "scheme://host[:port]" in message and "*" in message


def test_a_bad_origin_in_the_file_names_the_file(tmp_path):
    path = tmp_path / "onnxport.json"
    path.write_text(json.dumps({"cors_origins": [ALLOWED, "app.example"]}))
    with pytest.raises(ConfigError) as raised:
        config.load(None, environ={"ONNXPORT_CONFIG": str(path)})
    assert str(path) in str(raised.value) and "'app.example' is not an origin" in str(raised.value)


@pytest.mark.parametrize("value", [5, {"origin": ALLOWED}, [ALLOWED, 5]])
def test_a_value_that_is_no_list_of_origins(tmp_path, value):
    path = tmp_path / "onnxport.json"
    path.write_text(json.dumps({"cors_origins": value}))
    with pytest.raises(ConfigError) as raised:
        config.load(None, environ={"ONNXPORT_CONFIG": str(path)})
    assert str(path) in str(raised.value) and "expected a list of origins" in str(raised.value)


def test_a_bad_origin_in_the_mapping_fails_create_app(tmp_path):
    with pytest.raises(ConfigError) as raised:
        create_app({"repository": str(tmp_path), "cors_origins": ["https://app.example/"]})
    message = str(raised.value)
    assert "setting cors_origins" in message and "'https://app.example/' is not an origin" in message


def test_the_setting_is_documented():
    setting = next(s for s in config.SETTINGS if s.name == "cors_origins")
    assert "scheme://host[:port]" in setting.help and "*" in setting.help
