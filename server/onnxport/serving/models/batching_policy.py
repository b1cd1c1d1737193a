"""Which models get dynamic batching: the `dynamic_batching` setting, or the latest bench's verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from onnxport.repository.layout import BENCH_FILE

# The bench's verdict per engine: Ray's batching (@serve.batch behind Ray's proxy) is measured on its own.
VERDICTS = {"waitress": "dynamic_batching", "ray": "dynamic_batching_ray"}


def policy(settings: dict[str, Any], engine: str = "waitress") -> dict[str, Any]:
    return {
        "enabled": enabled_for(settings, engine),
        "window_ms": settings["batch_window_ms"],
        "max_batch": settings["max_batch"],
    }


def enabled_for(settings: dict[str, Any], engine: str = "waitress") -> Callable[[str], bool]:
    choice = str(settings["dynamic_batching"]).strip()
    if choice == "all":
        return lambda model: True
    if choice in ("none", ""):
        return lambda model: False
    if choice != "auto":
        chosen = {m.strip() for m in choice.split(",") if m.strip()}
        return lambda model: model in chosen
    bench = Path(settings["repository"]) / BENCH_FILE
    cache: dict[str, Any] = {"stamp": None, "verdicts": {}}

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
            cache.update(stamp=stamp, verdicts=verdicts)
        return bool(cache["verdicts"].get(model, False))

    return measured
