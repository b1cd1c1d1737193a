"""Plain-text tables for the terminal: build summary, model list, model info."""

from __future__ import annotations

import textwrap
from typing import Any, Iterable

from onnxport.repository.variant_table import order as variant_order


def table(headers: list[str], rows: Iterable[list[str]]) -> str:
    rows = [list(map(str, r)) for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def human_bytes(count: int | None) -> str:
    if count is None:
        return "-"
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return str(count)


def metric_text(metric: dict[str, float] | None) -> str:
    if not metric:
        return "-"
    if "top1_agreement" in metric:
        return f"top1 {metric['top1_agreement']:.4f}"
    if "cosine_min" in metric:
        return f"cos min {metric['cosine_min']:.5f}"
    if "step_agreement" in metric:
        return f"steps {metric['step_agreement']:.4f}"
    if "scaled_mean_abs" in metric:
        return f"mean err {metric['scaled_mean_abs']:.2g}"
    if "scaled_max_abs" in metric:
        return f"scaled err {metric['scaled_max_abs']:.2g}"
    return "-"


def variant_rows(name: str, entry: dict[str, Any]) -> list[list[str]]:
    rows = []
    for variant, record in sorted(entry["variants"].items(), key=lambda kv: variant_order(kv[0])):
        vs = record.get("vs_fp32") or {}
        max_abs = max((o.get("max_abs", 0.0) for o in vs.get("outputs", {}).values()), default=None)
        status = record["status"] + (f": {record['reason']}" if record.get("reason") else "")
        rows.append([
            name, record.get("label", variant), human_bytes(record.get("bytes")),  # variant_table.label
            f"{record['size_ratio']:.3f}" if "size_ratio" in record else "-",
            f"{max_abs:.2e}" if max_abs is not None else "-",
            metric_text(vs.get("metric")),
            f"{record['accuracy']:.4f}" if "accuracy" in record else "-",
            status,
        ])
    return rows


VARIANT_HEADERS = ["model", "variant", "size", "x fp32", "max err vs fp32", "task metric vs fp32", "accuracy", "status"]


def build_summary(outcomes) -> str:
    rows = []
    for outcome in outcomes:
        for row in variant_rows(outcome.name, outcome.entry):
            if outcome.skipped:
                row[-1] += " (unchanged, skipped)"
            rows.append(row)
    return table(VARIANT_HEADERS, rows)


def synthetic_warning(entry: dict[str, Any]) -> str | None:
    """The paragraph `onnxport import` prints on stderr when a model is judged on synthetic inputs."""
    if entry.get("golden_data") != "synthetic":
        return None
    text = (
        f"onnxport: warning: {entry['name']} is judged on synthetic inputs: no --inputs and no test_data_set_* "
        "folders were given, so its golden inputs are seeded random values made from its input signature "
        "(standard normal floats, integers 0 to 3, random booleans). Every verdict above (fp32 against the "
        "source, each variant against fp32) holds on that noise only: a model whose real inputs look "
        "different (pixels in 0..255, token ids, audio) can pass here and be far off on real data, and a "
        "static int8 variant calibrated on noise is not meaningful. Give real inputs with "
        "`onnxport import MODEL.onnx --inputs FILE.npz` (one array per input name), a .npy (one-input models) "
        "or a folder of .npz files or test_data_set_* folders, and calibration data with --calibration "
        "(same forms)."
    )
    return textwrap.fill(text, width=100, break_on_hyphens=False, break_long_words=False)


def model_list(manifest: dict[str, Any]) -> str:
    rows = []
    for name, entry in sorted(manifest["models"].items()):
        served = [r.get("label", v) for v, r in entry["variants"].items() if r["status"] == "ok"]
        rows.append([name, entry["kind"], entry["task"], f"opset {entry['opset']}", ", ".join(served)])
    if not rows:
        return "no models (run `onnxport build`)"
    return table(["model", "source", "task", "opset", "served variants"], rows)


def model_info(entry: dict[str, Any]) -> str:
    def shapes(values):
        return "; ".join(f"{v['name']} {v['dtype']}{v['shape']}" for v in values)

    lines = [
        f"{entry['name']}: {entry['description']}",
        f"  source     {entry['kind']}, task {entry['task']}, metric on {entry.get('metric_output') or '-'}",
        f"  onnx       opset {entry['opset']}, IR {entry['ir_version']}, "
        f"producer {entry['producer']['name']} {entry['producer']['version']}",
        f"  inputs     {shapes(entry['inputs'])}",
        f"  outputs    {shapes(entry['outputs'])}",
        f"  operators  {', '.join(f'{k} x{v}' for k, v in entry['operators'].items())}",
    ]
    facts = entry.get("facts", {})
    if "golden_data" in entry:
        origin = facts.get("golden_data") or ("the recipe's" if entry["kind"] != "onnx" else "")
        lines.append(f"  golden     {entry['golden_data']}" + (f": {origin}" if origin else "")
                     + ("; verdicts hold on these inputs only (give real ones: import --inputs)"
                        if entry["golden_data"] == "synthetic" else ""))
    for key, value in facts.items():
        if not isinstance(value, list) and key != "golden_data":
            lines.append(f"  {key:<10} {value}")
    validation = entry.get("validation", {})
    for output, errors in validation.get("outputs", {}).items():
        lines.append(f"  export vs source, {output}: max abs {errors.get('max_abs', 0):.2e}, "
                     f"max rel {errors.get('max_rel', 0):.2e}")
    lines += ["", table(VARIANT_HEADERS, variant_rows(entry["name"], entry))]
    return "\n".join(lines)
