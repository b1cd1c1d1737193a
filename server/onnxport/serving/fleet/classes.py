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
# /metrics names a class by a closed set of values (metric_class): the engine without its version, the cores
# bucket, and these adapter vendors and, per vendor, architectures (the names Chromium's Dawn gives); any
# other is "other", so no report can add a label value.
OTHER = "other"
KNOWN_ADAPTERS: dict[str, tuple[str, ...]] = {
    "amd": ("gcn-1", "gcn-2", "gcn-3", "gcn-4", "gcn-5", "rdna-1", "rdna-2", "rdna-3", "rdna-4"),
    "apple": ("common-1", "common-2", "common-3", "metal-3"),
    "arm": ("midgard", "bifrost", "valhall", "gen-5"),
    "google": ("swiftshader",),
    "intel": ("gen-7", "gen-8", "gen-9", "gen-11", "gen-12lp", "gen-12hp", "xe-lpg", "xe-2lpg", "xe-2hpg"),
    "mesa": ("llvmpipe", "lavapipe"),
    "microsoft": ("warp",),
    "nvidia": ("kepler", "maxwell", "pascal", "volta", "turing", "ampere", "lovelace", "hopper", "blackwell"),
    "qualcomm": ("adreno-4xx", "adreno-5xx", "adreno-6xx", "adreno-7xx", "adreno-8xx"),
}


def cores_bucket(cores: int) -> str:
    return next((name for most, name in CORE_BUCKETS if cores <= most), MORE_CORES)


def normalize(text: str) -> str:
    """An adapter string as the class holds it: trimmed, lower-cased, at most ADAPTER_CHARS characters."""
    return text.strip().lower()[:ADAPTER_CHARS]


def class_key(cls: Mapping[str, Any]) -> str:
    """ "Chrome 131 · 2 cores · google swiftshader (software)", "WebKitGTK · 3-4 cores · no WebGPU"."""
    engine = cls["engine"] if cls["engine_major"] is None else f"{cls['engine']} {cls['engine_major']}"
    cores = "1 core" if cls["cores"] == "1" else f"{cls['cores']} cores"
    if cls["adapter_vendor"] == NO_ADAPTER:
        return f"{engine} · {cores} · no WebGPU"
    adapter = " ".join(part for part in (cls["adapter_vendor"], cls["adapter_architecture"]) if part)
    adapter = adapter or "unnamed WebGPU adapter"
    return f"{engine} · {cores} · {adapter}" + (" (software)" if cls["software_adapter"] else "")


def metric_class(cls: Mapping[str, Any]) -> str:
    """The class's name in /metrics, from a closed set: "Chrome · 2 cores · google swiftshader (software)",
    "Chrome · 2 cores · other"; a vendor or architecture outside KNOWN_ADAPTERS is "other", the version goes."""
    vendor, architecture = cls["adapter_vendor"], cls["adapter_architecture"]
    if vendor not in (NO_ADAPTER, "", *KNOWN_ADAPTERS):
        vendor, architecture = OTHER, ""
    elif architecture and architecture not in KNOWN_ADAPTERS.get(vendor, ()):
        architecture = OTHER
    engine = cls["engine"] if cls["engine"] in ENGINES else OTHER
    return class_key(
        {**cls, "engine": engine, "engine_major": None, "adapter_vendor": vendor, "adapter_architecture": architecture}
    )


def metric_class_count() -> int:
    """How many names metric_class can give: the bound of /metrics' device_class label."""
    adapters = 3 + sum(2 + len(names) for names in KNOWN_ADAPTERS.values())  # none, unnamed, other; vendor alone,
    return len(ENGINES) * len(BUCKET_NAMES) * adapters * 2  # vendor other, its architectures; software or not
