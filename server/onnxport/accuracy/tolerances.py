"""How far a browser runtime may be from the server's onnxruntime, per (variant, runtime).

The one table of them; the browser reads it from /api/tolerances. A float value
passes when |a - b| <= abs, or when both a/b and b/a are below rel (the ratio
rule of onnxruntime-web's own test runner). Integer and bool outputs must be
equal; NaN equals NaN; inf or NaN where the reference is finite always fails.
The task metric must also hold: top-1 agreement with the reference for
classifiers, worst cosine similarity for embeddings.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from onnxport.errors import OnnxportError


@dataclass(frozen=True)
class Tolerance:
    abs: float
    rel: float
    top1_min: float
    cosine_min: float
    why: str


# onnxruntime-web's test runner floors (js/web/test/test-runner.ts).
WASM_FLOOR = Tolerance(1e-4, 1.000001, 1.0, 0.99999, "onnxruntime-web's own floor for its CPU (wasm) backend")
WEBGPU_FLOOR = Tolerance(1e-3, 1.00001, 1.0, 0.9999, "onnxruntime-web's own floor for its WebGPU backend (GPU float math)")

TOLERANCES: dict[tuple[str, str], Tolerance] = {
    ("fp32", "wasm"): WASM_FLOOR,
    ("fp32", "wasm-1t"): WASM_FLOOR,
    ("fp32", "webgpu"): WEBGPU_FLOOR,
    # WebNN runs on a GPU or an NPU: GPU float math, like WebGPU.
    ("fp32", "webnn"): WEBGPU_FLOOR,
    # fp16 keeps ~3 significant digits: accumulation order alone moves the last one.
    ("fp16", "wasm"): Tolerance(1e-2, 1.01, 0.99, 0.999, "fp16 arithmetic: ~1e-3 relative per op, summed over a layer"),
    ("fp16", "wasm-1t"): Tolerance(1e-2, 1.01, 0.99, 0.999, "fp16 arithmetic, one thread"),
    ("fp16", "webgpu"): Tolerance(2e-2, 1.02, 0.99, 0.999, "fp16 on the GPU (or CPU fallback nodes), different kernels"),
    ("fp16", "webnn"): Tolerance(2e-2, 1.02, 0.99, 0.999, "fp16 on the GPU or NPU, different kernels"),
    # int8: the browser's integer kernels differ from the server's (no VNNI, other
    # rounding of the dynamic activation scale), so values move by about one quantization step.
    ("int8-dynamic", "wasm"): Tolerance(5e-2, 1.05, 0.98, 0.99, "int8 kernels differ between builds: about one quantization step"),
    ("int8-dynamic", "wasm-1t"): Tolerance(5e-2, 1.05, 0.98, 0.99, "int8 kernels differ between builds, one thread"),
    ("int8-dynamic", "webgpu"): Tolerance(5e-2, 1.05, 0.98, 0.99, "int8 ops mostly run on the CPU backend under WebGPU"),
    ("int8-dynamic", "webnn"): Tolerance(5e-2, 1.05, 0.98, 0.99, "int8 kernels of the WebNN backend"),
    ("int8-static", "wasm"): Tolerance(5e-2, 1.05, 0.98, 0.99, "QDQ fused differently by each build's optimizer"),
    ("int8-static", "wasm-1t"): Tolerance(5e-2, 1.05, 0.98, 0.99, "QDQ fused differently, one thread"),
    ("int8-static", "webgpu"): Tolerance(5e-2, 1.05, 0.98, 0.99, "QDQ on WebGPU: dequantized float math on the GPU"),
    ("int8-static", "webnn"): Tolerance(5e-2, 1.05, 0.98, 0.99, "QDQ on WebNN: dequantized float math"),
}


def table(overrides_file: Path | None = None) -> dict[str, dict]:
    """The table as JSON: {"variant/runtime": {...}}, with a user's overrides merged in."""
    merged = {f"{variant}/{runtime}": asdict(t) for (variant, runtime), t in TOLERANCES.items()}
    for key, values in load_overrides(overrides_file).items():
        merged[key] = {**merged[key], **values, "why": values.get("why", "overridden by " + str(overrides_file))}
    return merged


def lookup(variant: str, runtime: str, overrides_file: Path | None = None) -> Tolerance:
    return Tolerance(**table(overrides_file)[f"{variant}/{runtime}"])


def load_overrides(path: Path | None) -> dict[str, dict]:
    """{"fp32/wasm": {"abs": 1e-6}, ...}: tighter (or looser) budgets for one's own models."""
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise OnnxportError(f"tolerances file {path}: {exc}") from exc
    known = {f"{v}/{r}" for v, r in TOLERANCES}
    fields = set(Tolerance.__dataclass_fields__)
    for key, values in data.items() if isinstance(data, dict) else [(None, None)]:
        if key not in known:
            raise OnnxportError(f"tolerances file {path}: unknown entry {key!r}; entries look like 'fp32/wasm'")
        if not isinstance(values, dict) or set(values) - fields:
            raise OnnxportError(f"tolerances file {path}: {key!r} must be an object with some of {', '.join(sorted(fields))}")
        for field_name, value in values.items():
            wanted_text = field_name == "why"
            if (wanted_text and not isinstance(value, str)) or (
                not wanted_text and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0)
            ):
                kind = "a string" if wanted_text else "a non-negative number"
                raise OnnxportError(f"tolerances file {path}: {key}.{field_name} must be {kind}, got {value!r}")
    return data
