"""Which models get dynamic batching: the `dynamic_batching` setting, or the latest bench's verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, TypedDict

from onnxport.repository.layout import BENCH_FILE
from onnxport.serving.config import ServerSettings

# The bench's verdict per engine: Ray's batching (@serve.batch behind Ray's proxy) is measured on its own.
VERDICTS = {"waitress": "dynamic_batching", "ray": "dynamic_batching_ray"}


class BatchingPolicy(TypedDict):
    enabled: Callable[[str], bool]  # whether a model's concurrent requests are batched
    window_ms: float
    max_batch: int


class _BenchRead(TypedDict):
    stamp: tuple[int, int, int] | None  # the bench file's inode, mtime and size when it was read
    verdicts: dict[str, bool]  # model -> batching measured a gain


def policy(settings: ServerSettings, engine: str = "waitress") -> BatchingPolicy:
    return {
        "enabled": enabled_for(settings, engine),
        "window_ms": settings["batch_window_ms"],
        "max_batch": settings["max_batch"],
    }


def enabled_for(settings: ServerSettings, engine: str = "waitress") -> Callable[[str], bool]:
    choice = str(settings["dynamic_batching"]).strip()
    if choice == "all":
        return lambda model: True
    if choice in ("none", ""):
        return lambda model: False
    if choice != "auto":
        chosen = {m.strip() for m in choice.split(",") if m.strip()}
        return lambda model: model in chosen
    bench = Path(settings["repository"]) / BENCH_FILE
    cache: _BenchRead = {"stamp": None, "verdicts": {}}

    def measured(model: str) -> bool:
        # A new bench changes the verdict without a restart; the file is parsed only when it changed.
        try:
            st = bench.stat()
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            return False
        if stamp != cache["stamp"]:
            try:
                verdicts = json.loads(bench.read_text()).get("recommendations", {}).get(VERDICTS[engine], {})
            except (OSError, ValueError):
                verdicts = {}
            cache["stamp"], cache["verdicts"] = stamp, verdicts
        return bool(cache["verdicts"].get(model, False))

    return measured
