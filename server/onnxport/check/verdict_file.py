"""The repository's record of browser verdicts (`conformance.json`, schema `onnxport.verdicts`).

`onnxport check` against its own server merges the browser rows of its report into it: one entry
per (model, variant, form, runtime, device kind), the newest check winning (except that a `skipped` row
never replaces a verdict), and entries of artifacts the manifest no longer serves dropped. The server
answers it at /api/conformance.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping

from onnxport.accuracy import browser_runtimes
from onnxport.check.report_types import BrowserIdentity, CheckReport, CheckRow
from onnxport.json_boundary import JsonObject
from onnxport.repository import atomic, variant_record
from onnxport.repository.layout import VERDICTS_FILE
from onnxport.repository.manifest import Manifest
from onnxport.repository.variant_table import order as variant_order

SCHEMA = "onnxport.verdicts"
SCHEMA_VERSION = 1
RUNTIMES = browser_runtimes.CHECKED  # the browser runtimes `onnxport check` runs (check_run takes them from here)
DECIDED = ("pass", "fail", "error", "unsupported")  # verdicts on the artifact, which the library's plan reads
# `skipped` too, with its reason (a string input the browser cannot carry; no adapter), so the file says
# which artifacts the check could not run; it never replaces a verdict of the same key (merge).
RECORDED = (*DECIDED, "skipped")

Warn = Callable[[str], None]


def print_warning(message: str) -> None:
    print(f"onnxport: warning: {message}", file=sys.stderr)


def record(
    repository: Path,
    report: CheckReport,
    checked_manifest: Manifest,
    current_manifest: Manifest,
    warn: Warn = print_warning,
) -> Path:
    """Merge the report's browser verdicts into <repository>/conformance.json; returns its path.

    `checked_manifest` is the one the browser ran (it names each variant's sha256),
    `current_manifest` the one on disk now (a build during the check makes verdicts stale).
    """
    path = Path(repository) / VERDICTS_FILE
    # The repository's one writer lock: two checks finishing together must not lose each other's
    # verdicts. A build holds it for its whole run; the check waits for it and says so.
    with atomic.lock(path.parent, wait=True, waiting=warn):
        merged = merge(read(path, warn), from_report(report, checked_manifest), current_manifest)
        write(path, merged)
    return path


def from_report(report: CheckReport, manifest: Mapping[str, Any], checked: str | None = None) -> list[JsonObject]:
    """One entry per browser result the check decided or skipped (not `source`)."""
    browser = report.get("browser") or {}
    kind = device_kind(browser)
    checked = checked or report.get("created") or datetime.now(timezone.utc).isoformat(timespec="seconds")
    entries: list[JsonObject] = []  # conformance.json's entries, as merge() reads them back from the file
    for row in report.get("results", []):
        if row.get("runtime") not in RUNTIMES or row.get("status") not in RECORDED:
            continue
        sha256 = row.get("sha256") or _variant(manifest, row["model"], row["variant"]).get("sha256")
        if not sha256:
            continue  # no artifact to attach the verdict to: it could never be matched or kept
        entries.append(
            {
                "model": row["model"],
                "variant": row["variant"],
                "form": row.get("form"),
                "runtime": row["runtime"],
                "sha256": sha256,
                "status": row["status"],
                "reason": row.get("reason"),
                # A failure's reason as data too (accuracy/reasons.py), where the page gave it.
                **({"reason_data": row["reason_data"]} if row.get("reason_data") else {}),
                "basis": row.get("basis"),
                "max_abs": max_abs(row),
                "device_kind": kind,
                "browser": browser,
                "onnxruntime_web": (row.get("identity") or {}).get("onnxruntime_web"),
                "checked": checked,
            }
        )
    return entries


def device_kind(browser: BrowserIdentity) -> str:
    """What the verdict is about: the browser build and, where there is one, the WebGPU adapter."""
    if browser.get("device_kind"):
        return str(browser["device_kind"])
    adapter = browser.get("adapter") or {}
    gpu = "/".join(str(adapter.get(k) or "") for k in ("vendor", "architecture")).strip("/")
    return " | ".join(part for part in (str(browser.get("user_agent") or "unknown browser"), gpu) if part)


def max_abs(row: CheckRow) -> float | None:
    """The largest error over the row's outputs; None when none was measured (JSON turns NaN into null)."""
    values = [o.get("max_abs") for o in (row.get("outputs") or {}).values() if isinstance(o, dict)]
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return max(numbers) if numbers else None


def served_hashes(manifest: Manifest) -> set[str]:
    """The sha256 of every served variant and of each of its served forms."""
    hashes = set()
    for entry in manifest.get("models", {}).values():
        for record in entry.get("variants", {}).values():
            if not variant_record.served(record) or not record.get("sha256"):
                continue
            hashes.add(record["sha256"])
            hashes |= {
                form["sha256"]
                for form in variant_record.forms_of(record).values()
                if variant_record.made_form(form) and form.get("status") == "ok" and form.get("sha256")
            }
    return hashes


def merge(existing: list[JsonObject], new: list[JsonObject], manifest: Manifest) -> list[JsonObject]:
    """New entries replace old ones of the same key, except a skip over a verdict (a check that could not
    run a pair leaves what an earlier one found); entries of artifacts no longer served go."""
    served = served_hashes(manifest)
    by_key = {_key(e): e for e in existing if isinstance(e, dict)}
    for entry in new:
        old = by_key.get(_key(entry))
        if not (
            entry.get("status") == "skipped"
            and old
            and old.get("status") in DECIDED
            and old.get("sha256") == entry.get("sha256")
        ):
            by_key[_key(entry)] = entry
    kept = [e for e in by_key.values() if isinstance(e.get("sha256"), str) and e["sha256"] in served]
    return sorted(kept, key=_order)


def read(path: Path, warn: Warn = print_warning) -> list[JsonObject]:
    """The file's entries; none when it is missing, and none with a warning when it cannot be used."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        warn(f"{path} is not readable JSON ({exc}); it is replaced by this check's verdicts")
        return []
    if (
        not isinstance(data, dict)
        or data.get("schema") != SCHEMA
        or data.get("schema_version") != SCHEMA_VERSION
        or not isinstance(data.get("verdicts"), list)
    ):
        found = (data.get("schema"), data.get("schema_version")) if isinstance(data, dict) else type(data).__name__
        warn(
            f"{path}: expected schema {SCHEMA!r} version {SCHEMA_VERSION} with a verdicts list, got {found!r}; "
            "it is replaced by this check's verdicts"
        )
        return []
    return data["verdicts"]


def write(path: Path, verdicts: list[JsonObject]) -> None:
    """Atomically: readers (the server) see the old file or the new one, never half of one."""
    atomic.write_json_atomically(path, {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "verdicts": verdicts})


def _variant(manifest: Mapping[str, Any], model: str, variant: str) -> JsonObject:
    return manifest.get("models", {}).get(model, {}).get("variants", {}).get(variant, {})


def _key(entry: JsonObject) -> tuple:
    return tuple(entry.get(k) for k in ("model", "variant", "form", "runtime", "device_kind"))


def _order(entry: JsonObject) -> tuple:
    runtime = entry.get("runtime")
    return (
        str(entry.get("model")),
        variant_order(str(entry.get("variant"))),
        str(entry.get("variant")),
        str(entry.get("form") or ""),
        RUNTIMES.index(runtime) if runtime in RUNTIMES else len(RUNTIMES),
        str(entry.get("device_kind")),
    )
