"""The generation bench as text: a row per runtime and variant, prefill ms and decode tokens/s per thread count, each
with its ratio to onnxport's fp32 at the same thread count; then whose greedy tokens match onnxport fp32's."""

from __future__ import annotations

from onnxport.bench.generation_bench import OURS
from onnxport.bench.report_types import GenerationReport, GenerationRow


def text(report: GenerationReport) -> str:
    rows = report["rows"]
    threads = sorted({r["threads"] for r in rows})
    labels = list(dict.fromkeys(_label(r) for r in rows))
    by = {(_label(r), r["threads"]): r for r in rows}
    machine = report["machine"]
    lines = [
        f"generation: {report['folder']}, a {report['prompt_tokens']}-token chat prompt, {report['tokens']} greedy "
        f"tokens, median of {report['rounds']} rounds",
        f"{machine['cpu'] or 'CPU unknown'}, {machine['cores']} cores; onnxport on onnxruntime {machine['onnxruntime']}"
        + "".join(f"; {name}: {about}" for name, about in report["peers"].items()),
        "",
    ]
    width = max(len(label) for label in labels)
    head = "".join(f" | {f'prefill ms, {n} thr.':>17}    {f'tok/s, {n} thr.':>15}" for n in threads)
    lines.append(f"{'':{width}}{head}")
    for label in labels:
        cells = []
        for n in threads:
            row, base = by.get((label, n)), by.get((f"{OURS} fp32", n))
            cells.append(_cells(row, base))
        lines.append(f"{label:{width}}" + "".join(cells))
    lines.append("(ratios: to onnxport fp32 at the same thread count; prefill lower is better, tok/s higher)")
    lines.append("")
    lines.extend(_agreement(rows))
    if report["peer_note"]:
        lines.append(report["peer_note"])
    return "\n".join(lines)


def _label(row: GenerationRow) -> str:
    return f"{row['runtime']} {row['variant']}"


def _cells(row: GenerationRow | None, base: GenerationRow | None) -> str:
    if row is None:
        return f" | {'-':>22}  {'-':>12}"
    prefill, speed = row["prefill_ms"], row["tokens_per_s"]
    prefill_ratio = f"({prefill / base['prefill_ms']:.2f}x)" if base and base["prefill_ms"] else ""
    speed_ratio = f"({speed / base['tokens_per_s']:.2f}x)" if base and base["tokens_per_s"] else ""
    return f" | {prefill:>8.1f} {prefill_ratio:>8}    {speed:>6.1f} {speed_ratio:>8}"


def _agreement(rows: list[GenerationRow]) -> list[str]:
    """Each row's greedy tokens against onnxport fp32's at the same thread count: equal, or where they part."""
    lines = []
    reference = {r["threads"]: r["token_ids"] for r in rows if r["runtime"] == OURS and r["variant"] == "fp32"}
    for row in rows:
        ours = reference.get(row["threads"])
        if ours is None or (row["runtime"] == OURS and row["variant"] == "fp32"):
            continue
        theirs = row["token_ids"]
        parted = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
        if parted is None and len(ours) == len(theirs):
            verdict = f"equal, all {len(ours)} tokens"
        else:
            same = parted if parted is not None else min(len(ours), len(theirs))
            verdict = f"equal for the first {same} of {len(ours)} tokens, then different"
        lines.append(f"greedy tokens of {_label(row)} against {OURS} fp32's, {row['threads']} thr.: {verdict}")
    return lines
