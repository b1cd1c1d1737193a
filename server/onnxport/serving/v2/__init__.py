"""The Open Inference Protocol (V2) without a web framework, as KServe's dataplane: the request schema and its
JSON budget, the protocol's tensors, raw input, inference and the OpenAPI description. http/ and ray/ wrap it;
it imports neither Flask nor waitress (pyproject.toml's import contracts)."""
