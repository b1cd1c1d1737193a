"""Generation in Triton's statistics extension (`GET /v2/models/{m}/stats` of a generation model): the counts
and nanoseconds of its generations, in the entry Triton's clients read, with a `generation` object beside them
for what Triton's entry has no field for (time to first token, prompt and generated tokens)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from onnxport.json_boundary import JsonObject


@dataclass
class Tally:
    generations: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    first_token_ns: int = 0
    decode_ns: int = 0
    success_ns: int = 0
    fail_ns: int = 0
    last_ms: int = 0


class Tallies:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_model: dict[str, Tally] = {}

    def add(
        self, model: str, failed: bool, seconds: float, prompt: int, generated: int, first: float, decode: float
    ) -> None:
        with self._lock:
            tally = self._by_model.setdefault(model, Tally())
            if failed:
                tally.failures += 1
                tally.fail_ns += int(seconds * 1e9)
                return
            tally.generations += 1
            tally.success_ns += int(seconds * 1e9)
            tally.prompt_tokens += prompt
            tally.generated_tokens += generated
            tally.first_token_ns += int(first * 1e9)
            tally.decode_ns += int(decode * 1e9)
            tally.last_ms = time.time_ns() // 1_000_000

    def entry(self, model: str, version: str) -> JsonObject:
        """Triton's model_stats entry: an inference is a generated token, an execution a generation."""
        with self._lock:
            t = self._by_model.get(model) or Tally()
            zero = {"count": 0, "ns": 0}
            return {
                "name": model,
                "version": version,
                "last_inference": t.last_ms,
                "inference_count": t.generated_tokens,
                "execution_count": t.generations,
                "inference_stats": {
                    "success": {"count": t.generations, "ns": t.success_ns},
                    "fail": {"count": t.failures, "ns": t.fail_ns},
                    "queue": dict(zero),
                    "compute_input": dict(zero),
                    "compute_infer": {"count": t.generations, "ns": t.success_ns},
                    "compute_output": dict(zero),
                    "cache_hit": dict(zero),
                    "cache_miss": dict(zero),
                },
                "batch_stats": [],
                "memory_usage": [],
                "generation": {
                    "generations": t.generations,
                    "prompt_tokens": t.prompt_tokens,
                    "generated_tokens": t.generated_tokens,
                    "first_token_ns": t.first_token_ns,
                    "decode_ns": t.decode_ns,
                },
            }
