"""Harness: a real `onnxport serve` subprocess and a real Chromium, shared by check, bench and the tests."""
