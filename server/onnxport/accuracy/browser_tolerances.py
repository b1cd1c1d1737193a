"""How far a browser runtime may be from the server's onnxruntime, element by element, per (variant, runtime).

The one table of them; the browser reads it from /api/tolerances. Its runtimes are the browser
runtimes of accuracy/browser_runtimes.py (web/lib/choice/runtimes.js's keys), each with a row for every
variant (tests/accuracy/test_browser_runtimes.py): a new runtime is its rows here. A float value
passes by the element rule of accuracy/tolerance.py: |a - b| <= abs, or both
a/b and b/a at most 1 + rel (onnxruntime-web's own test runner's ratio rule,
with rel as a relative error). Integer and bool outputs must be equal; NaN
equals NaN; inf or NaN where the reference is finite always fails.

What decides a verdict (accuracy/judgement.py, web/lib/verification/judgement.js): the "fp32/<runtime>" rows are the
floor a file that computes in fp32 is judged by, element by element against the server's run of it,
with their top1_min / cosine_min for its task metric. A file that computes in fp16 or int8 is judged
by its task metric against fp32 within its budget (repository/variant_table.py), as the import judges it;
the fp16 and int8 rows stay as the figures its element-wise difference is shown against, and as the
rule first-use verification falls back to when no fp32 reference on the same inputs exists.
"""

from __future__ import annotations

import json
from dataclasses import fields as _fields
from pathlib import Path

from onnxport.accuracy.tolerance import Tolerance
from onnxport.errors import UsageError

# Pipelines: token ids and masks must be equal. Image pixels (0..255, after the spec's resize and crop, before
# normalization) may differ by this many levels: the library ports Pillow's resampling and integer formulas
# exactly (tests/vectors/image_vectors.json: 0 levels on the same decoded pixels), so what is left is
# the decoders. Chromium's matched Pillow's to 0 levels on every corpus image, JPEGs and an EXIF rotation
# included; 1 leaves room for another libjpeg build rounding a JPEG's pixels differently.
PIPELINE_PIXEL_LEVELS = 1


def _t(abs: float, rel: float, top1_min: float, cosine_min: float, why: str) -> Tolerance:
    return Tolerance(abs=abs, rel=rel, top1_min=top1_min, cosine_min=cosine_min, why=why)


# onnxruntime-web's test runner floors (js/web/test/test-runner.ts: abs 1e-4 and ratio 1.000001 on
# wasm, abs 1e-3 and ratio 1.00001 on WebGPU), with the ratio written as a relative error.
WASM_FLOOR = _t(1e-4, 1e-6, 1.0, 0.99999, "onnxruntime-web's own floor for its CPU (wasm) backend")
WEBGPU_FLOOR = _t(1e-3, 1e-5, 1.0, 0.9999, "onnxruntime-web's own floor for its WebGPU backend (GPU float math)")

TOLERANCES: dict[tuple[str, str], Tolerance] = {
    ("fp32", "wasm"): WASM_FLOOR,
    ("fp32", "wasm-1t"): WASM_FLOOR,
    ("fp32", "webgpu"): WEBGPU_FLOOR,
    # WebNN runs on a GPU or an NPU: GPU float math, like WebGPU.
    ("fp32", "webnn"): WEBGPU_FLOOR,
    # fp16 keeps ~3 significant digits: accumulation order alone moves the last one.
    ("fp16", "wasm"): _t(1e-2, 0.01, 0.99, 0.999, "fp16 arithmetic: ~1e-3 relative per op, summed over a layer"),
    ("fp16", "wasm-1t"): _t(1e-2, 0.01, 0.99, 0.999, "fp16 arithmetic, one thread"),
    ("fp16", "webgpu"): _t(2e-2, 0.02, 0.99, 0.999, "fp16 on the GPU (or CPU fallback nodes), different kernels"),
    ("fp16", "webnn"): _t(2e-2, 0.02, 0.99, 0.999, "fp16 on the GPU or NPU, different kernels"),
    # int8: the browser's integer kernels differ from the server's (no VNNI, other
    # rounding of the dynamic activation scale), so values move by about one quantization step.
    ("int8-dynamic", "wasm"): _t(
        5e-2, 0.05, 0.98, 0.99, "int8 kernels differ between builds: about one quantization step"
    ),
    ("int8-dynamic", "wasm-1t"): _t(5e-2, 0.05, 0.98, 0.99, "int8 kernels differ between builds, one thread"),
    ("int8-dynamic", "webgpu"): _t(5e-2, 0.05, 0.98, 0.99, "int8 ops mostly run on the CPU backend under WebGPU"),
    ("int8-dynamic", "webnn"): _t(5e-2, 0.05, 0.98, 0.99, "int8 kernels of the WebNN backend"),
    ("int8-static", "wasm"): _t(5e-2, 0.05, 0.98, 0.99, "QDQ fused differently by each build's optimizer"),
    ("int8-static", "wasm-1t"): _t(5e-2, 0.05, 0.98, 0.99, "QDQ fused differently, one thread"),
    ("int8-static", "webgpu"): _t(5e-2, 0.05, 0.98, 0.99, "QDQ on WebGPU: dequantized float math on the GPU"),
    ("int8-static", "webnn"): _t(5e-2, 0.05, 0.98, 0.99, "QDQ on WebNN: dequantized float math"),
    # Weights only: the browser dequantizes the same int8 weights, or fuses them into its own MatMulNBits.
    ("int8-weights", "wasm"): _t(5e-2, 0.05, 0.98, 0.99, "dequantized weights, or fused into 8-bit MatMulNBits"),
    ("int8-weights", "wasm-1t"): _t(5e-2, 0.05, 0.98, 0.99, "dequantized weights, one thread"),
    ("int8-weights", "webgpu"): _t(5e-2, 0.05, 0.98, 0.99, "dequantized weights, float math on the GPU"),
    ("int8-weights", "webnn"): _t(5e-2, 0.05, 0.98, 0.99, "dequantized weights, float math"),
    # MatMulNBits kernels differ between builds (block order, unpacking; at accuracy level 4, int4's level until
    # issue 44, native onnxruntime also rounds the activations to int8, per block, like dynamic int8).
    ("int4", "wasm"): _t(5e-2, 0.05, 0.98, 0.99, "MatMulNBits kernels differ between builds"),
    ("int4", "wasm-1t"): _t(5e-2, 0.05, 0.98, 0.99, "MatMulNBits kernels differ between builds, one thread"),
    ("int4", "webgpu"): _t(5e-2, 0.05, 0.98, 0.99, "MatMulNBits on the GPU: float math on unpacked weights"),
    ("int4", "webnn"): _t(5e-2, 0.05, 0.98, 0.99, "MatMulNBits on the WebNN backend's fallback"),
}


def table(overrides_file: Path | None = None) -> dict[str, dict]:
    """The table as JSON: {"variant/runtime": {...}}, with a user's overrides merged in."""
    merged = {f"{variant}/{runtime}": _published(t) for (variant, runtime), t in TOLERANCES.items()}
    for key, values in load_overrides(overrides_file).items():
        # "overridden": the user's own bound, which the fp32 floor keeps as given (judgement.fp32_floor).
        merged[key] = {
            **merged[key],
            **values,
            "why": values.get("why", "overridden by " + str(overrides_file)),
            "overridden": True,
        }
    return merged


def _published(tolerance: Tolerance) -> dict:
    # The scaled errors judge variants against fp32 at build time, not browsers against the server.
    return {k: v for k, v in tolerance.as_json().items() if k not in ("scaled_max_abs", "scaled_mean_abs")}


def lookup(variant: str, runtime: str, overrides_file: Path | None = None) -> Tolerance:
    entry = table(overrides_file)[f"{variant}/{runtime}"]
    return Tolerance(**{k: v for k, v in entry.items() if k != "overridden"})


def load_overrides(path: Path | None) -> dict[str, dict]:
    """{"fp32/wasm": {"abs": 1e-6}, ...}: tighter (or looser) budgets for one's own models."""
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"tolerances file {path}: {exc}") from exc
    known = {f"{v}/{r}" for v, r in TOLERANCES}
    fields = {f.name for f in _fields(Tolerance)} - {"scaled_max_abs", "scaled_mean_abs"}
    for key, values in data.items() if isinstance(data, dict) else [(None, None)]:
        if key not in known:
            raise UsageError(f"tolerances file {path}: unknown entry {key!r}; entries look like 'fp32/wasm'")
        if not isinstance(values, dict) or set(values) - fields:
            raise UsageError(
                f"tolerances file {path}: {key!r} must be an object with some of {', '.join(sorted(fields))}"
            )
        for field_name, value in values.items():
            wanted_text = field_name == "why"
            if (wanted_text and not isinstance(value, str)) or (
                not wanted_text and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0)
            ):
                kind = "a string" if wanted_text else "a non-negative number"
                raise UsageError(f"tolerances file {path}: {key}.{field_name} must be {kind}, got {value!r}")
            if field_name == "rel" and value >= 1:
                # The ratio form of onnxruntime-web's runner (1.000001) would allow 100% error here.
                raise UsageError(
                    f"tolerances file {path}: {key}.rel is a relative error (1e-6 is one part in "
                    f"a million), got {value!r}; write the ratio 1.000001 as 1e-6"
                )
    return data
