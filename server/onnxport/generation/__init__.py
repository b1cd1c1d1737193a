"""Generation: a decoder run in a loop, one token at a time, with its key/value cache carried from step to step.

Framework-free: onnxruntime sessions, a tokenizer and the loop; serving/generate/ puts it behind HTTP, and
convert/decoder/ makes the files it runs.
"""
