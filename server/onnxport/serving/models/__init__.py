"""The served models: which the repository serves (catalog.py, its files found through file_paths.py), their
onnxruntime sessions (sessions.py), and how concurrent requests are batched into one run (batching.py, with
batching_policy.py saying for which models). No web framework and no server here."""
