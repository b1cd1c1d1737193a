"""onnxport: export once, run anywhere, and prove it."""

__version__ = "0.1.0"
