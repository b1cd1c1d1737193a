"""The server's settings once loaded: one typed key per row of table.py, as its rule parses it.

load() returns a ServerSettings; the State, the batching policy, the waitress adapter and Ray's deployment
read it. tests/serving/test_config.py holds its keys to the table's names.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict


class ServerSettings(TypedDict):
    repository: Path
    web_root: Path
    ort_root: Path
    tokenizers_root: Path
    chartjs_root: Path
    debug_root: Path | None
    tolerances_file: Path | None
    max_request_bytes: int
    max_json_string_bytes: int
    raw_max_rows: int
    raw_max_text_bytes: int
    raw_max_image_pixels: int
    raw_max_request_pixels: int
    providers: list[str]
    intra_op_threads: int
    inter_op_threads: int
    intra_op_spinning: str  # on, off, auto
    dynamic_batching: str  # auto, all, none, or model names
    batch_window_ms: float
    max_batch: int
    host: str
    port: int
    workers: int
    max_connections: int
    idle_timeout: float
    header_timeout: float
    body_timeout: float
    drain_seconds: float
    request_log: str  # json, text, off
    cors_origins: list[str]
    artifacts_url: str | None
    admin_token: str | None
    fleet_reports: bool
    fleet_min_clients: int
    fleet_db: Path | str | None  # ":memory:" is a str
    fleet_client_rate: int
    fleet_address_rate: int
    fleet_max_clients: int
    fleet_max_age_days: int
    fleet_max_groups: int
    fleet_network_groups: int
    import_max_nodes: int
    import_max_tree_classes: int
    import_max_trees: int
    import_max_tree_leaves: int
    import_max_tree_features: int
    import_max_tree_file_bytes: int
    import_max_data_bytes: int
    import_max_text_bytes: int
    import_time_limit: float
    import_memory_limit: int
    import_cpu_limit: float
    generation_models: dict[str, Path]
    generation_max_new_tokens: int
    generation_max_context: int
    generation_max_concurrent: int
    generation_time_limit: float
