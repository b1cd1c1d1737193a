"""Pipelines: what turns a user's raw input (text, an image) into a model's tensors, and its outputs into an
answer. spec.py is the manifest's `pipeline` key; text.py, image.py and answers.py are its Python side, the
reference the browser library's side is checked against."""
