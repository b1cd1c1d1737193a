"""What /metrics says of generation, on the app's Prometheus registry (statistics.Recorder's): the generations
running now, time to first token, tokens per second, and the tokens and requests by how they ended."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

FIRST_TOKEN_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
RATE_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)


class GenerationMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.active = Gauge(
            "onnxport_generations_active", "Generations running now (each holds a KV cache)", registry=r
        )
        self.requests = Counter(
            "onnxport_generation_requests",
            "Generations ended, by model and finish reason (stop, length, time, cancelled, error)",
            ["model", "finish"],
            registry=r,
        )
        self.first_token = Histogram(
            "onnxport_generation_first_token_seconds",
            "From the request's start to its first generated token (tokenizing and prefill included)",
            ["model"],
            buckets=FIRST_TOKEN_BUCKETS,
            registry=r,
        )
        self.rate = Histogram(
            "onnxport_generation_tokens_per_second",
            "Decode speed of each generation: tokens after the first over the seconds they took",
            ["model"],
            buckets=RATE_BUCKETS,
            registry=r,
        )
        self.tokens = Counter(
            "onnxport_generation_tokens", "Tokens read (prompt) and generated", ["model", "kind"], registry=r
        )
        self.decode_seconds = Counter(
            "onnxport_generation_decode_seconds",
            "Seconds spent generating tokens after the first",
            ["model"],
            registry=r,
        )
