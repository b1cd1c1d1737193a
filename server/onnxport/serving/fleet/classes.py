"""Device classes: the cores bucket and the display key of a class (tests/vectors/fleet_classes.json, which the
library's web/lib/choice/fleet.js reads too)."""

from __future__ import annotations

from typing import Any, Mapping

# (at most this many cores, bucket); more than the last: "17+".
CORE_BUCKETS = ((1, "1"), (2, "2"), (4, "3-4"), (8, "5-8"), (16, "9-16"))
MORE_CORES = "17+"
BUCKET_NAMES = (*(name for _, name in CORE_BUCKETS), MORE_CORES)
ENGINES = ("Chrome", "Firefox", "Safari", "WebKitGTK", "unknown")
ADAPTER_CHARS = 64
NO_ADAPTER = "none"


def cores_bucket(cores: int) -> str:
    return next((name for most, name in CORE_BUCKETS if cores <= most), MORE_CORES)


def normalize(text: str) -> str:
    """An adapter string as the class holds it: trimmed, lower-cased, at most ADAPTER_CHARS characters."""
    return text.strip().lower()[:ADAPTER_CHARS]


def class_key(cls: Mapping[str, Any]) -> str:
    """"Chrome 131 · 2 cores · google swiftshader (software)", "WebKitGTK · 3-4 cores · no WebGPU"."""
    engine = cls["engine"] if cls["engine_major"] is None else f"{cls['engine']} {cls['engine_major']}"
    cores = "1 core" if cls["cores"] == "1" else f"{cls['cores']} cores"
    if cls["adapter_vendor"] == NO_ADAPTER:
        return f"{engine} · {cores} · no WebGPU"
    adapter = " ".join(part for part in (cls["adapter_vendor"], cls["adapter_architecture"]) if part)
    adapter = adapter or "unnamed WebGPU adapter"
    return f"{engine} · {cores} · {adapter}" + (" (software)" if cls["software_adapter"] else "")
