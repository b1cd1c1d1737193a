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
# What Transformers.js runs on wasm with no dtype given (DEFAULT_DEVICE_DTYPE_MAPPING in its src/utils/dtypes.js).
PEER_DEFAULT_DTYPE = "q8"
DEFAULT = "default"

Row = tuple[str, Side | None, Side]  # (label, onnxport's side or None, the peer's side)


def pairs(served: list[str], *, mode: str, threads: int) -> list[Row]:
    """The rows for what the manifest serves. `pinned`: each pair on `threads` on both sides. `users`: first each
    library's defaults (no options on either side), then each pair with the peer on `threads` and onnxport's
    load() choosing its own."""
    ours = threads if mode == "pinned" else None
    rows: list[Row] = [] if mode == "pinned" else [("defaults", Side("onnxport", DEFAULT), Side("peer", DEFAULT))]
    for label, variants, dtype in PAIRS:
        present = [v for v in variants if v in served]
        peer = Side("peer", dtype, threads)
        rows.extend((f"{label} ({v})", Side("onnxport", v, ours), peer) for v in present)
        if not present:
            rows.append((label, None, peer))
    return rows


def sides(rows: list[Row]) -> list[Side]:
    found: list[Side] = []
    for _, ours, peer in rows:
        for side in ([ours] if ours else []) + [peer]:
            if side not in found:
                found.append(side)
    return found


def pages(rows: list[Row]) -> list[list[Side]]:
    """The sides by the page their warm rounds run on: a row's two sides together, one page per peer thread setting
    (onnxruntime-web reads it once per page)."""
    groups: dict[int | None, list[Side]] = {}
    for _, ours, peer in rows:
        group = groups.setdefault(peer.threads, [])
        for side in ([ours] if ours else []) + [peer]:
            if side not in group:
                group.append(side)
    return list(groups.values())


def table_rows(rows: list[Row], results: Results, *, reference: np.ndarray, sizes: dict[str, int]) -> list[dict]:
    out = []
    for label, ours, theirs in rows:
        ox, peer = (ours.name if ours else None), theirs.name
        variant = _chosen_variant(ours, results) if ours else None
        dtype = PEER_DEFAULT_DTYPE if theirs.dtype == DEFAULT else theirs.dtype
        row: dict = {
            "pair": label,
            "onnxport": variant,
            "peer": dtype,
            "bytes": {
                "onnxport": sizes.get(f"onnxport/{variant}") if variant else None,
                "peer": sizes.get(f"peer/{dtype}"),
            },
            # The threads each side ran on: per warm round, and per cold start at its first embedding
            # and once its own choice settled (onnxport's trial done).
            "threads": _both(
                ox,
                peer,
                lambda n: {
                    "warm": results.threads.get(n, []),
                    "cold": [c["info"].get("threads") for c in results.cold.get(n, [])],
                    "cold_settled": [(c.get("settled") or {}).get("threads") for c in results.cold.get(n, [])],
                },
            ),
        }
        for batch in ("1", "8"):
            row[f"warm_b{batch}_ms"] = _both(ox, peer, lambda n, b=batch: _median(results.warm.get(n, {}).get(b)))
            # The best call too: another program's burst slows a call, nothing makes one faster (threads.js's rule).
            row[f"best_b{batch}_ms"] = _both(ox, peer, lambda n, b=batch: min(results.warm.get(n, {}).get(b) or [None]))
        row["cold_ms"] = _both(ox, peer, lambda n: _median([c["ms"] for c in results.cold.get(n, [])]))
        row["cold_load_ms"] = (
            _median([c["ms"] for c in results.cold_load.get(ours.dtype, [])])
            if ours and ours.threads is not None
            else None
        )
        row["min_cosine"] = _both(ox, peer, lambda n: _min_cosine(results.embeddings.get(n), reference))
        # The cold start's one embedding (TEXTS[0] alone) against the reference's first row: a check it is right.
        row["cold_cosine"] = _both(
            ox,
            peer,
            lambda n: _min_cosine(
                [c["embedding"] for c in results.cold.get(n, [])], reference[:1].repeat(len(results.cold.get(n, [])), 0)
            ),
        )
        for key in ("warm_b1_ms", "warm_b8_ms", "best_b1_ms", "best_b8_ms", "cold_ms"):
            a, b = row[key]["onnxport"], row[key]["peer"]
            row[key]["ratio"] = a / b if a is not None and b else None
        out.append(row)
    return out


def printed(rows: list[dict], header: list[str]) -> str:
    cells = [
        [
            "pair",
            "size MB ox / peer",
            "warm b1 ms ox / peer (x)",
            "warm b8 ms ox / peer (x)",
            "best b1 / b8 (x)",
            "cold ms ox / peer (x)",
            "cold load() ox",
            "min cos ox / peer",
            "threads warm ox / peer",
        ]
    ]
    for row in rows:
        size = row["bytes"]
        cells.append(
            [
                f"{row['pair']}: {row['onnxport'] or '-'} vs {row['peer']}",
                f"{_num(size['onnxport'], MB, 1)} / {_num(size['peer'], MB, 1)}",
                *(_timed(row[k]) for k in ("warm_b1_ms", "warm_b8_ms")),
                " / ".join(_ratio(row[k]) for k in ("best_b1_ms", "best_b8_ms")),
                _timed(row["cold_ms"]),
                _num(row["cold_load_ms"], 1, 0),
                f"{_num(row['min_cosine']['onnxport'], 1, 5)} / {_num(row['min_cosine']['peer'], 1, 5)}",
                " / ".join(
                    ",".join(str(t) for t in (row["threads"][s] or {}).get("warm", [])) or "-"
                    for s in ("onnxport", "peer")
                ),
            ]
        )
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join([*header, *lines])


def _chosen_variant(side: Side, results: Results) -> str | None:
    """onnxport's variant: the side's, or for its default the one its plan chose (the same on every load here)."""
    if side.dtype != DEFAULT:
        return side.dtype
    info = results.infos.get(side.name) or next((c["info"] for c in results.cold.get(side.name, [])), {})
    return info.get("variant")


def _both(ox, peer, measure) -> dict:
    return {"onnxport": measure(ox) if ox else None, "peer": measure(peer)}


def _median(values) -> float | None:
    return statistics.median(values) if values else None


def _min_cosine(embeddings, reference) -> float | None:
    if embeddings is None or len(embeddings) == 0:
        return None
    return float(cosines(np.asarray(embeddings), reference[: len(embeddings)]).min())


def _num(value, unit: float, digits: int) -> str:
    return "-" if value is None else f"{value / unit:,.{digits}f}"


def _ratio(cell: dict) -> str:
    return "-" if cell["ratio"] is None else f"{cell['ratio']:.2f}x"


def _timed(cell: dict) -> str:
    ratio = "" if cell["ratio"] is None else f" ({cell['ratio']:.2f}x)"
    return f"{_num(cell['onnxport'], 1, 1)} / {_num(cell['peer'], 1, 1)}{ratio}"
