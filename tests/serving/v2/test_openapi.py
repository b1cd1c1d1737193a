"""/v2/openapi.json (serving/v2/openapi.py): the V2 API described, and schemathesis holding the live server to it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
EXAMPLES = 100  # per operation and phase: 1,500-odd requests, about 30 s on 2 cores


@pytest.fixture
def document(demo_app):
    response = demo_app.test_client().get("/v2/openapi.json")
    assert response.status_code == 200 and response.mimetype == "application/json"
    return response.json


def test_the_document_lists_every_v2_route(document, demo_app):
    assert document["openapi"] == "3.1.0"
    routes = {
        re.sub(r"<(\w+)>", lambda m: "{model_name}" if m[1] == "model" else "{model_version}", rule.rule)
        for rule in demo_app.url_map.iter_rules()
        if rule.rule.startswith("/v2") and rule.rule != "/v2/openapi.json"
    }
    # The document describes every route (tests/serving/http/test_openapi_coverage.py); V2's are these.
    assert {path for path in document["paths"] if path.startswith("/v2") and path != "/v2/openapi.json"} == routes


def test_the_request_schema_refuses_what_the_server_refuses(document):
    schemas = document["components"]["schemas"]
    schema = {**schemas["InferenceRequest"], "components": {"schemas": schemas}}
    valid = {"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1.0]}]}
    jsonschema.validate(valid, schema)
    for invalid in [
        {"inputs": []},
        {**valid, "id": 1.5},
        {**valid, "extra": 1},
        {"inputs": [{**valid["inputs"][0], "datatype": "fp32"}]},
        {"inputs": [{**valid["inputs"][0], "parameters": {"shared_memory_region": "r"}}]},
    ]:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(invalid, schema)


# Every warning schemathesis 4.32 knows but missing_auth: the repository API's load and unload answer only
# 401/403 without the operator's token, by design; their fuzzing still runs and must find no 5xx.
WARNINGS = [
    "missing_test_data",
    "base_url_mismatch",
    "validation_mismatch",
    "missing_deserializer",
    "unused_openapi_auth",
    "unsupported_regex",
    "method_not_allowed",
    "constants_extraction",
    "unmatched_filter",
    "unresolvable_reference",
    "low_valid_rate",
    "rate_limited",
    "dictionary_mismatch",
    "timeout_units",
]


@pytest.mark.slow
def test_schemathesis_finds_no_server_error_and_no_response_off_the_schema(live_server, tmp_path):
    # positive_data_acceptance is left out: which inputs a model takes is in its metadata, not in the
    # document, so a request the schema allows (any input name) is rightly refused with a 400.
    command = [
        str(SCHEMATHESIS),
        "run",
        f"{live_server}/v2/openapi.json",
        "--checks",
        "all",
        "--exclude-checks",
        "positive_data_acceptance",
        # The V2 routes, as before the document described every route: files and pages are not fuzzed.
        "--include-path-regex",
        "^/v2",
        # Generation's routes (Triton's generate extension) have no model on the demo repository: they are
        # fuzzed against the tiny decoder in tests/serving/generate/test_generate_served.py.
        "--exclude-path-regex",
        "/generate",
        "--max-examples",
        str(EXAMPLES),
        "--workers",
        "2",
        "--seed",
        "1",
        "--no-color",
        "--warnings",
        ",".join(WARNINGS),
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    summary = [line for line in done.stdout.splitlines() if re.search(r"generated|No issues|failures? in", line)]
    print("\n".join(summary))
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "No issues found" in done.stdout
