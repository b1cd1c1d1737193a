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
    """Each row's greedy tokens against onnxport fp32's greedy path: equal, or where they part and whether that
    was a near tie of fp32 (its two best logits within near_tie.MARGIN), which the rule counts as equal."""
    lines = []
    for row in rows:
        if row["same_as_fp32"] is None or (row["runtime"] == OURS and row["variant"] == "fp32"):
            continue
        count, parted, gap = len(row["token_ids"]), row["parted_at"], row["fp32_gap"]
        if parted is None:
            verdict = f"equal, all {count} tokens"
        else:
            tie = "a near tie, so equal by the near-tie rule" if row["same_as_fp32"] else "so they diverge"
            verdict = f"part at token {parted} of {count}, where fp32's two best logits are {gap:.3f} apart: {tie}"
        lines.append(f"greedy tokens of {_label(row)} ({row['threads']} thr.) against {OURS} fp32's: {verdict}")
    return lines
