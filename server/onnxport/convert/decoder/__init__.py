"""Decoder language models exported with a key/value cache (past inputs, present outputs), checked step by step."""
