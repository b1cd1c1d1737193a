"""Plain-text tables for the terminal: build summary, model list, model info, disk use."""

from __future__ import annotations

import textwrap
from typing import Any, Iterable, Mapping

from onnxport.repository import decoder_record
from onnxport.repository.decoder_record import DecoderEntry
from onnxport.repository.manifest import Manifest, ModelEntry
from onnxport.repository.variant_table import FORMS
from onnxport.repository.variant_table import order as variant_order

# A reason in a table is summarized past this many characters; `onnxport info NAME` prints it whole.
REASON_WIDTH = 100
# Where a summary may end, best first: a sentence, then a clause (outside brackets: never inside "(a, b)").
_SENTENCE_ENDS = (". ", "; ")
_CLAUSE_ENDS = (", ", ": ", " - ")


def table(headers: list[str], rows: Iterable[list[str]]) -> str:
    rows = [list(map(str, r)) for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    # The last column is not padded: a long status would otherwise pad every row with spaces.
    return "\n".join(line.rstrip() for line in lines)


def summary(text: str, more: str, width: int = REASON_WIDTH) -> str:
    """`text` whole if it fits in `width`, else its first sentences or clauses ending at a boundary,
    never mid-clause, then "… (more)". A first clause longer than `width` is kept whole."""
    if len(text) <= width:
        return text
    ends = _boundaries(text)
    cut = (
        max((i for i, kind in ends if kind == "sentence" and width // 2 <= i <= width), default=None)
        or max((i for i, _ in ends if i <= width), default=None)
        or min((i for i, _ in ends), default=None)
    )
    if cut is None or cut >= len(text.rstrip(" .")):
        return text
    return f"{text[:cut].rstrip(' .;:,-')} … ({more})"


def _boundaries(text: str) -> list[tuple[int, str]]:
    """(index, "sentence" | "clause") where a summary may end: the punctuation's index, outside brackets."""
    found, depth = [], 0
    for index, char in enumerate(text):
        depth += (char in "([{") - (char in ")]}")
        if depth > 0:
            continue
        if text.startswith(_SENTENCE_ENDS, index):
            found.append((index, "sentence"))
        elif text.startswith(_CLAUSE_ENDS, index):
            found.append((index, "clause"))
    return found


def quantity(count: int, word: str, words: str | None = None) -> str:
    """ "1 set", "3 sets": a count with its noun in the number it takes (words: an irregular plural)."""
    return f"{count} {word if count == 1 else (words or word + 's')}"


def human_bytes(count: int | None) -> str:
    if count is None:
        return "-"
    size = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


def metric_text(metric: dict[str, float] | None) -> str:
    if not metric:
        return "-"
    if "top1_agreement" in metric:
        return f"top1 {metric['top1_agreement']:.4f}"
    if "cosine_min" in metric:
        return f"cos min {metric['cosine_min']:.5f}"
    if "step_agreement" in metric:
        return f"steps {metric['step_agreement']:.4f}"
    if "greedy_equal" in metric:  # a generation row: prompts whose greedy text is fp32's
        return f"greedy {metric['greedy_equal']}/{metric['prompts']}"
    if "scaled_mean_abs" in metric:
        return f"mean err {metric['scaled_mean_abs']:.2g}"
    if "scaled_max_abs" in metric:
        return f"scaled err {metric['scaled_max_abs']:.2g}"
    return "-"


def _variants(entry: ModelEntry) -> list[tuple[str, Mapping[str, Any]]]:
    """The entry's variant records in build order, each read as the table reads it: whatever keys its outcome
    has (a served variant's forms, a failed one's detail), a missing one shown as "-"."""
    return sorted(entry["variants"].items(), key=lambda kv: variant_order(kv[0]))


# An int4 file must be at least this much smaller than int8-weights' for its 4 bits to have gained anything:
# both keep the same weights, int4 in half the bits, so a file barely smaller holds its weights in 8 bits or float.
INT4_MIN_GAIN = 0.9


def variant_rows(name: str, entry: ModelEntry, more: str | None = None) -> list[list[str]]:
    """The variant table's rows; a long reason is summarized, ending "(more)": by default where it is whole."""
    more = more or f"onnxport info {name} has it all"
    rows = []
    for variant, record in _variants(entry):
        vs = record.get("vs_fp32") or {}
        max_abs = max((o.get("max_abs", 0.0) for o in vs.get("outputs", {}).values()), default=None)
        reason = record.get("reason") or (int4_gain_note(entry) if variant == "int4" else None)
        status = record["status"] + (f": {summary(reason, more)}" if reason else "")
        rows.append(
            [
                name,
                record.get("label", variant),
                human_bytes(record.get("bytes")),  # variant_table.label
                f"{record['size_ratio']:.3f}" if "size_ratio" in record else "-",
                f"{max_abs:.2e}" if max_abs is not None else "-",
                metric_text(vs.get("metric")),
                f"{record['accuracy']:.4f}" if "accuracy" in record else "-",
                status,
            ]
        )
    return rows


def int4_gain_note(entry: ModelEntry) -> str | None:
    """For a served int4 beside a served int8-weights: a word when the 4-bit file is not meaningfully smaller
    (a model whose weights int4's quantizer leaves in 8 bits or float, e.g. too few columns for its blocks)."""
    variants: Mapping[str, Mapping[str, Any]] = entry["variants"]  # read as the table reads them (_variants)
    int4, int8 = variants.get("int4") or {}, variants.get("int8-weights") or {}
    if int4.get("status") != "ok" or int8.get("status") != "ok" or not int4.get("bytes") or not int8.get("bytes"):
        return None
    if int4["bytes"] < INT4_MIN_GAIN * int8["bytes"]:
        return None
    return (
        f"4 bits gained nothing: {human_bytes(int4['bytes'])} against int8-weights' "
        f"{human_bytes(int8['bytes'])} ({int4['bytes'] / int8['bytes']:.2f}x)"
    )


VARIANT_HEADERS = ["model", "variant", "size", "x fp32", "max err vs fp32", "task metric vs fp32", "accuracy", "status"]


def build_summary(outcomes) -> str:
    rows = []
    for outcome in outcomes:
        for row in variant_rows(outcome.name, outcome.entry):
            if outcome.skipped:
                row[-1] += " (unchanged, not rebuilt)"
            rows.append(row)
    return table(VARIANT_HEADERS, rows)


def disk_use(entries: list[ModelEntry], command: str) -> str:
    """What the served variants and their optimized forms take on disk, per variant and form, the total,
    and how to skip forms. A file two records share (the same sha256) is counted once."""
    forms = [f for f in FORMS if any(f in (r.get("forms") or {}) for e in entries for _, r in _variants(e))]
    rows, counted, form_bytes, not_kept = [], {}, 0, 0
    for entry in entries:
        for variant, record in _variants(entry):
            if "sha256" not in record:
                continue  # not served: no file
            counted[record["sha256"]] = record["bytes"]
            cells, row_files = [], {record["sha256"]: record["bytes"]}
            for form in forms:
                made = (record.get("forms") or {}).get(form)
                if made is None:
                    cells.append("-")
                elif "sha256" not in made:
                    cells.append("not kept")  # its reason is in `onnxport info`
                    not_kept += 1
                elif made["sha256"] in row_files:
                    cells.append("same file")
                else:
                    cells.append(human_bytes(made["bytes"]))
                    row_files[made["sha256"]] = made["bytes"]
                    if made["sha256"] not in counted:
                        form_bytes += made["bytes"]
                    counted[made["sha256"]] = made["bytes"]
            rows.append(
                [
                    entry["name"],
                    record.get("label", variant),
                    human_bytes(record["bytes"]),
                    *cells,
                    human_bytes(sum(row_files.values())),
                ]
            )
    if not rows:
        return "on disk: no served variants"
    total = sum(counted.values())
    lines = [
        table(["model", "variant", "as built", *(f"{f} form" for f in forms), "total"], rows),
        f"on disk: {human_bytes(total)} for {quantity(len(rows), 'served variant')}",
    ]
    if form_bytes:
        lines[-1] += f", {human_bytes(form_bytes)} of it ({form_bytes / total:.0%}) their optimized forms"
        lines.append(f"forms let browsers start sooner; `onnxport {command} --forms none` makes none")
    if not_kept:
        lines.append(
            f"{quantity(not_kept, 'form')} not kept: not made, or starting no sooner than "
            "the variant as built (`onnxport info NAME` says why, with the figures)"
        )
    return "\n".join(lines)


def synthetic_warning(entry: ModelEntry) -> str | None:
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


def model_list(manifest: Manifest) -> str:
    rows = []
    for name, entry in sorted(manifest["models"].items()):
        served = [r.get("label", v) for v, r in entry["variants"].items() if r["status"] == "ok"]
        rows.append([name, entry["kind"], entry["task"], f"opset {entry['opset']}", ", ".join(served)])
    for name, decoder in sorted(manifest.get("decoders", {}).items()):
        served = [v for v, r in decoder["variants"].items() if r["status"] == "ok"]
        rows.append([name, decoder["kind"], decoder["task"], "-", ", ".join(served)])
    if not rows:
        return "no models (run `onnxport build`)"
    return table(["model", "source", "task", "opset", "served variants"], rows)


DECODER_HEADERS = ["variant", "size", "greedy equal", "1st divergence", "top-1", "NLL change", "status"]


def decoder_variants(entry: DecoderEntry) -> str:
    """A decoder's variants, each with its generation metrics against fp32 and what became of it."""
    rows = []
    for name, variant in sorted(entry["variants"].items(), key=lambda item: variant_order(item[0])):
        outcome = decoder_record.outcome(variant)
        status = "served" if outcome == "served" else f"{outcome.replace('_', ' ')}: {variant['reason']}"
        if name == entry["default_variant"]:
            status += " (default)"
        if not decoder_record.made(variant):
            rows.append([name, "-", "-", "-", "-", "-", status])
            continue
        size = f"{human_bytes(variant['bytes'])} ({variant['size_ratio']:.3f}x)"
        metrics = variant.get("generation")
        if metrics is None:  # fp32: the reference
            rows.append([name, size, "reference", "-", "-", "-", status])
            continue
        divergence = metrics["mean_first_divergence"]
        rows.append(
            [
                name,
                size,
                f"{metrics['greedy_equal_share']:.3f}",
                "-" if divergence is None else f"{divergence:.1f}",
                f"{metrics['top1_agreement']:.4f}",
                f"{metrics['nll_change']:+.4f}",
                status,
            ]
        )
    return table(DECODER_HEADERS, rows)


def decoder_info(entry: DecoderEntry) -> str:
    judged, budget = entry["judged_on"], entry["budget"]
    lines = [
        f"{entry['name']}: {entry['description']}",
        f"  source     {entry['provenance']['gguf']} (GGUF), task {entry['task']}",
        f"  export     checked against the GGUF over {entry['check']['steps']} cached steps: max abs "
        f"{entry['check']['max_abs']:.2e} (tolerance {entry['check']['tolerance']:g})",
        f"  judged on  {len(judged['prompts'])} prompts x {judged['new_tokens']} greedy tokens"
        f"{' (chat template)' if judged['chat'] else ''}, held-out text of {judged['text_tokens']} tokens",
        f"  budget     top-1 agreement >= {budget['top1_min']:g}, NLL change <= {budget['nll_change_max']:g} "
        "nats/token",
        f"  assets     {', '.join(a['name'] for a in entry['assets'].values())}",
        "",
        decoder_variants(entry),
    ]
    return "\n".join(line.rstrip() for line in lines)


def model_info(entry: ModelEntry) -> str:
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
        *data_origin(entry),
    ]
    for key, value in entry.get("facts", {}).items():
        if not isinstance(value, list) and key != "golden_data":
            lines.append(f"  {key:<10} {value}")
    validation = entry.get("validation", {})
    for output, errors in validation.get("outputs", {}).items():
        lines.append(
            f"  export vs source, {output}: max abs {errors.get('max_abs', 0):.2e}, "
            f"max rel {errors.get('max_rel', 0):.2e}"
        )
    lines += ["", table(VARIANT_HEADERS, variant_rows(entry["name"], entry, "in full below"))]
    reasons = full_reasons(entry)
    if reasons:
        lines += ["", "why, in full:", *reasons]
    lines += ["", disk_use([entry], "import ..." if entry["kind"] == "onnx" else "build")]
    return "\n".join(line.rstrip() for line in lines)


def data_origin(entry: ModelEntry) -> list[str]:
    """Where the golden inputs (every verdict's basis) and static int8's calibration inputs came from."""
    facts, provenance = entry.get("facts", {}), entry.get("provenance") or {}
    if "golden_data" not in entry:
        return []
    recipe = f"the recipe {provenance['recipe']}'s" if provenance.get("recipe") else "the recipe's"
    golden = entry.get("golden") or {}
    if facts.get("golden_data"):  # an import says it in words
        origin = facts["golden_data"]
    else:
        sets = golden.get("sets")
        origin = (
            f"{recipe} golden inputs"
            + (f" ({quantity(sets, 'set')})" if sets else "")
            + (f"; expected outputs from the {golden['outputs_from']}" if golden.get("outputs_from") else "")
        )
    lines = [
        f"  golden     {entry['golden_data']}: {origin}"
        + (
            "; verdicts hold on these inputs only (give real ones: import --inputs)"
            if entry["golden_data"] == "synthetic"
            else ""
        )
    ]
    if provenance.get("calibration"):  # an import's, in words
        kind = provenance.get("calibration_data")
        lines.append(f"  calibration {kind + ': ' if kind else ''}{provenance['calibration']}")
    elif provenance.get("calibration_sha256"):
        variants: Mapping[str, Mapping[str, Any]] = entry["variants"]  # read as the table reads them (_variants)
        settings = (variants.get("int8-static") or {}).get("settings") or {}
        batches = settings.get("calibration_batches")
        detail = (f"{batches} batches, " if batches else "") + f"sha256 {provenance['calibration_sha256'][:12]}…"
        lines.append(f"  calibration real: {recipe} calibration inputs ({detail})")
    return lines


def full_reasons(entry: ModelEntry) -> list[str]:
    """Every reason of the entry's variants and forms, whole, one line each."""
    lines = []
    for variant, record in _variants(entry):
        shown = record.get("label", variant)  # variant_table.label
        reason = record.get("reason") or (int4_gain_note(entry) if variant == "int4" else None)
        if reason:
            lines.append(f"  {shown} {record['status']}: {reason}")
        if record.get("detail"):
            lines.append(f"  {shown} onnxruntime said: {record['detail']}")
        for form, made in sorted((record.get("forms") or {}).items()):
            if made.get("reason"):
                lines.append(f"  {shown} {form} form {made['status']}: {made['reason']}")
    return lines
