"""The waitress adapter: `onnxport serve`'s WSGI server (serve.py), its strict request framing (framing.py),
its slow-client deadlines (connections.py) and its drain on SIGTERM (drain.py). The only modules of the
package that import waitress (pyproject.toml's import contracts)."""
