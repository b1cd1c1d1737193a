"""Generation over HTTP without a web framework: Triton's generate extension and the OpenAI-compatible API."""
