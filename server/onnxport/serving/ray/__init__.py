"""`onnxport serve --engine ray`: the same Flask app and V2 API on Ray Serve (engine.py), its replicas
answering the operator routes for the whole deployment (replicas.py), with Ray's own batching (batching.py)."""
