"""Server settings, declared as data: name, default, type and help.

Sources, later ones winning: the defaults, a JSON file named by ONNXPORT_CONFIG (or the `config_file`
setting), ONNXPORT_<NAME> environment variables, then the mapping given to create_app().

What a setting is (setting.py), the rules values are parsed by (values.py), where folders point by default
(folders.py), the table of settings (table.py), their loading from those sources (loading.py) and the typed
settings it returns (server_settings.py); this module is the way in.
"""

from __future__ import annotations

from onnxport.serving.config.loading import ENV_PREFIX, load
from onnxport.serving.config.server_settings import ServerSettings
from onnxport.serving.config.setting import ConfigError, Setting
from onnxport.serving.config.table import SETTINGS
from onnxport.serving.config.values import ANY_ORIGIN, HOST_RULE, PORT_RULE, listen_host, origin, port_number

__all__ = [
    "ANY_ORIGIN",
    "ENV_PREFIX",
    "HOST_RULE",
    "PORT_RULE",
    "SETTINGS",
    "ConfigError",
    "ServerSettings",
    "Setting",
    "listen_host",
    "load",
    "origin",
    "port_number",
]
