"""`onnxport bench`: every path measured side by side in one run (not part of the test suite)."""
