"""JSON at a boundary: a value as it arrives or leaves, before its fields are known to have a type.

`JsonObject` marks the places where JSON enters or leaves onnxport and nothing is yet known of its keys, or its
keys are free (names chosen by a user, a schema's parts). Code that reads the fields of a manifest reads its types
(repository/manifest.py, repository/variant_record.py); the server's settings are serving/config/server_settings.py's.
It is the one `dict[str, Any]` of the package (tests/test_typed_contract.py). The named boundaries:

- recipe.py, convert/prepared.py: a recipe's `facts`, `transformer` and `pipeline` as its author wrote them
- repository/manifest.py, variant_record.py: an entry's free `facts`, a quantizer's `extra_options`
- repository/schema.py: the manifest's JSON Schema; repository/mirror.py: a published manifest before it is checked
- convert/model_build.py: bench inputs as tensor JSON; convert/intake/sources.py: the parts a build key hashes
- convert/forms/: a recipe's transformer options for the fused form
- accuracy/tolerance.py, accuracy/judgement.py: a tolerance and a diagnostic as the report and the page read them
- serving/v2/openapi.py, serving/http/path_items.py, openapi.py and each blueprint's paths(): /v2/openapi.json
- serving/v2/protocol.py, inference.py: the V2 response's header and tensor metadata
- serving/statistics.py, serving/ray/replicas.py, serving/http/statistics_api.py: Triton's statistics bodies
- serving/fleet/: /api/fleet's published document; serving/http/request_log.py: the json form's line
- serving/generate/, serving/http/generate.py: generation's requests and answers (Triton's generate, OpenAI's)
- serving/ray/engine.py, deploy/ray_config.py: Ray Serve's deployment options and config, KubeRay's RayService
- harness/conformance_page.py: what the conformance page reports; harness/speed_ratio.py: the speed section
- check/, bench/: conformance.json's verdicts and the parts of the report and bench.json the pages write
"""

from typing import Any

JsonObject = dict[str, Any]  # a JSON object at a boundary: its keys and values unchecked
