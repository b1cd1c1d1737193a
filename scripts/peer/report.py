"""The bench's figures: the pairs of dtypes, one row per pair (medians, ratios onnxport/peer, sizes, cosines), the
printed table and the JSON document."""

from __future__ import annotations

import statistics

import numpy as np
from browser_run import Results, Side
from reference import cosines

MB = 1_000_000
# onnxport variant(s) -> the peer's dtype it is set beside. The 4-bit row takes whichever of onnxport's
# weight-only or 4-bit variants the manifest serves (others are adding them); q4 is measured either way.
PAIRS = [("fp32", ["fp32"], "fp32"), ("int8", ["int8-dynamic"], "q8"), ("4-bit", ["int4", "int8-weights"], "q4")]


def pairs(served: list[str]) -> list[tuple[str, str | None, str]]:
    """[(label, onnxport variant or None, peer dtype)] for what the manifest serves."""
    rows: list[tuple[str, str | None, str]] = []
    for label, variants, dtype in PAIRS:
        present = [v for v in variants if v in served]
        rows.extend((f"{label} ({v})", v, dtype) for v in present)
        if not present:
            rows.append((label, None, dtype))
    return rows


def sides(rows: list[tuple[str, str | None, str]]) -> list[Side]:
    found: list[Side] = []
    for _, variant, dtype in rows:
        for side in ([Side("onnxport", variant)] if variant else []) + [Side("peer", dtype)]:
            if side not in found:
                found.append(side)
    return found


def table_rows(rows, results: Results, *, reference: np.ndarray, sizes: dict[str, int]) -> list[dict]:
    out = []
    for label, variant, dtype in rows:
        ox, peer = (f"onnxport/{variant}" if variant else None), f"peer/{dtype}"
        row: dict = {"pair": label, "onnxport": variant, "peer": dtype,
                     "bytes": {"onnxport": sizes.get(ox) if ox else None, "peer": sizes.get(peer)}}
        for batch in ("1", "8"):
            row[f"warm_b{batch}_ms"] = _both(ox, peer, lambda n, b=batch: _median(results.warm.get(n, {}).get(b)))
            # The best call too: another program's burst slows a call, nothing makes one faster (threads.js's rule).
            row[f"best_b{batch}_ms"] = _both(ox, peer, lambda n, b=batch: min(results.warm.get(n, {}).get(b) or [None]))
        row["cold_ms"] = _both(ox, peer, lambda n: _median([c["ms"] for c in results.cold.get(n, [])]))
        row["cold_load_ms"] = _median([c["ms"] for c in results.cold_load.get(variant, [])]) if variant else None
        row["min_cosine"] = _both(ox, peer, lambda n: _min_cosine(results.embeddings.get(n), reference))
        # The cold start's one embedding (TEXTS[0] alone) against the reference's first row: a check it is right.
        row["cold_cosine"] = _both(ox, peer, lambda n: _min_cosine(
            [c["embedding"] for c in results.cold.get(n, [])], reference[:1].repeat(len(results.cold.get(n, [])), 0)))
        for key in ("warm_b1_ms", "warm_b8_ms", "best_b1_ms", "best_b8_ms", "cold_ms"):
            a, b = row[key]["onnxport"], row[key]["peer"]
            row[key]["ratio"] = a / b if a is not None and b else None
        out.append(row)
    return out


def printed(rows: list[dict], header: list[str]) -> str:
    cells = [["pair", "size MB ox / peer", "warm b1 ms ox / peer (x)", "warm b8 ms ox / peer (x)",
              "best b1 / b8 (x)", "cold ms ox / peer (x)", "cold load() ox", "min cos ox / peer"]]
    for row in rows:
        size = row["bytes"]
        cells.append([
            f"{row['pair']} vs {row['peer']}",
            f"{_num(size['onnxport'], MB, 1)} / {_num(size['peer'], MB, 1)}",
            *(_timed(row[k]) for k in ("warm_b1_ms", "warm_b8_ms")),
            " / ".join(_ratio(row[k]) for k in ("best_b1_ms", "best_b8_ms")),
            _timed(row["cold_ms"]),
            _num(row["cold_load_ms"], 1, 0),
            f"{_num(row['min_cosine']['onnxport'], 1, 5)} / {_num(row['min_cosine']['peer'], 1, 5)}",
        ])
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join([*header, *lines])


def _both(ox, peer, measure) -> dict:
    return {"onnxport": measure(ox) if ox else None, "peer": measure(peer)}


def _median(values) -> float | None:
    return statistics.median(values) if values else None


def _min_cosine(embeddings, reference) -> float | None:
    if embeddings is None or len(embeddings) == 0:
        return None
    return float(cosines(np.asarray(embeddings), reference[:len(embeddings)]).min())


def _num(value, unit: float, digits: int) -> str:
    return "-" if value is None else f"{value / unit:,.{digits}f}"


def _ratio(cell: dict) -> str:
    return "-" if cell["ratio"] is None else f"{cell['ratio']:.2f}x"


def _timed(cell: dict) -> str:
    ratio = "" if cell["ratio"] is None else f" ({cell['ratio']:.2f}x)"
    return f"{_num(cell['onnxport'], 1, 1)} / {_num(cell['peer'], 1, 1)}{ratio}"
