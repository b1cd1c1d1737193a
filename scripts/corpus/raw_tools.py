"""The raw tools with their documented defaults, on one ONNX test directory, judged by onnxport's budgets.

What a user gets without onnxport, for the comparison in scripts/corpus/corpus_table.py:

- fp16: onnxconverter-common `float16.convert_float_to_float16(model, keep_io_types=True)`;
- int8-dynamic: onnxruntime `quant_pre_process`, then `quantize_dynamic` (every other argument
  its default: QInt8 weights, per tensor, every op type it knows);
- int8-static: `quant_pre_process`, then `quantize_static` with its defaults (QDQ format, QInt8
  activations and weights, per tensor, MinMax), calibrated on the test inputs.

Each output is judged the way onnxport judges an import with the same `--task`
(server/onnxport/accuracy): run with onnxruntime (CPU) on test_data_set_0 and compared with the
unconverted model on the same inputs; no output may change shape or turn inf/NaN where fp32 is
finite; the task metric must be within the budget (METRICS below); an int8 file must also be at
least 1.5x smaller than the fp32 one. A tool that raises, or whose output onnxruntime cannot load or
run, is `failed`, with the first line of the error.

Independent of the onnxport package on purpose (only onnx, onnxruntime, onnxconverter-common and
numpy), so the comparison does not go through the code it is compared with.

    python scripts/corpus/raw_tools.py tests/data/third-party/opennsfw [--json OUT]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

# The budgets of server/onnxport/repository/variant_table.py, per task: (metric, fp16's bound, int8's bound,
# "min" for an agreement that must reach the bound, "max" for an error that must stay under it).
METRICS = {
    "generic": ("scaled_max_abs", 0.01, 0.1, "max"),
    "detection-map": ("scaled_mean_abs", 1e-3, 1e-2, "max"),
    "classification": ("top1_agreement", 0.99, 0.97, "min"),
    "sequence": ("step_agreement", 0.99, 0.97, "min"),
}
KINDS = ("fp16", "int8-dynamic", "int8-static")
INT8_MIN_SHRINK = 1.5  # server/onnxport/convert/variant_maker.py
TOOLS = {
    "fp16": "onnxconverter_common.float16.convert_float_to_float16(model, keep_io_types=True)",
    "int8-dynamic": "onnxruntime.quantization quant_pre_process + quantize_dynamic (defaults)",
    "int8-static": "onnxruntime.quantization quant_pre_process + quantize_static (defaults: QDQ, QInt8, "
    "MinMax), calibrated on test_data_set_0",
}

Feeds = dict[str, np.ndarray]


def first_line(exc: BaseException) -> str:
    """The error's type and first line; for a bare assert, where it failed (file:line)."""
    text = str(exc).strip()
    line = text.splitlines()[0].strip() if text else ""
    if line:
        return f"{type(exc).__name__}: {line}"
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return type(exc).__name__
    return f"{type(exc).__name__} at {Path(frames[-1].filename).name}:{frames[-1].lineno}"


def read_test_directory(folder: Path) -> tuple[Path, Feeds]:
    """model.onnx and test_data_set_0's inputs, input_K.pb in the order of the graph's inputs
    (initializers listed as inputs left out), as ONNX's backend test runner reads them."""
    model_path = folder / "model.onnx"
    model = onnx.load(model_path, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    set_dir = folder / "test_data_set_0"
    files = sorted(set_dir.glob("input_*.pb"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    if len(files) != len(names):
        raise ValueError(f"{set_dir}: {len(files)} input files for {len(names)} model inputs")
    feeds = {}
    for name, path in zip(names, files):
        tensor = onnx.TensorProto()
        tensor.ParseFromString(path.read_bytes())
        feeds[name] = numpy_helper.to_array(tensor)
    return model_path, feeds


def session(model: bytes | str):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def run(sess, feeds: Feeds) -> dict[str, np.ndarray]:
    wanted = {i.name for i in sess.get_inputs()}
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, {k: v for k, v in feeds.items() if k in wanted})))


def scaled_max_abs(expected: np.ndarray, got: np.ndarray) -> float:
    """Largest absolute error over the reference's largest finite magnitude; inf if any error is not
    finite (a NaN or infinity that fp32 has too is no error)."""
    return _scaled(expected, got, np.max, same_nonfinite_is_exact=True)


def scaled_mean_abs(expected: np.ndarray, got: np.ndarray) -> float:
    """Mean absolute error over the reference's largest finite magnitude; inf if any error is not finite."""
    return _scaled(expected, got, np.mean, same_nonfinite_is_exact=False)


def _scaled(expected: np.ndarray, got: np.ndarray, reduce, *, same_nonfinite_is_exact: bool) -> float:
    exp = expected.astype(np.float64)
    finite = np.isfinite(exp)
    scale = float(np.abs(exp[finite]).max()) if finite.any() else 0.0
    with np.errstate(invalid="ignore"):
        diff = np.abs(exp - got.astype(np.float64))
    if same_nonfinite_is_exact:
        same = (np.isnan(exp) & np.isnan(got)) | (np.isinf(exp) & (exp == got))
        diff = np.where(same, 0.0, diff)
    if not np.isfinite(diff).all():
        return float("inf")
    return float(reduce(diff) / max(scale, 1e-12)) if diff.size else 0.0


# --------------------------------------------------------------------------- the tools


class _quiet:
    """The tools' warnings and log lines say nothing the verdict does not."""

    def __enter__(self):
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("ignore")
        self._level = logging.root.manager.disable
        logging.disable(logging.WARNING)

    def __exit__(self, *exc):
        logging.disable(self._level)
        self._warnings.__exit__(*exc)


class ToolFailed(Exception):
    """A tool raised: the message names the step and the error's first line."""


def _step(name: str, call, *args):
    try:
        return call(*args)
    except Exception as exc:
        raise ToolFailed(f"{name} failed: {first_line(exc)}") from exc


def fp16(model_path: Path, feeds: Feeds, tmp: Path) -> Path:
    from onnxconverter_common import float16

    target = tmp / "fp16.onnx"
    converted = _step(
        "convert_float_to_float16", lambda: float16.convert_float_to_float16(onnx.load(model_path), keep_io_types=True)
    )
    _step("onnx.save", onnx.save, converted, target)
    return target


def _pre_processed(model_path: Path, tmp: Path) -> Path:
    from onnxruntime.quantization.shape_inference import quant_pre_process

    target = tmp / "preprocessed.onnx"
    _step("quant_pre_process", quant_pre_process, str(model_path), str(target))
    return target


def int8_dynamic(model_path: Path, feeds: Feeds, tmp: Path) -> Path:
    from onnxruntime.quantization import quantize_dynamic

    target = tmp / "int8-dynamic.onnx"
    _step("quantize_dynamic", quantize_dynamic, _pre_processed(model_path, tmp), target)
    return target


class _Reader:
    """CalibrationDataReader over the test inputs (one batch)."""

    def __init__(self, feeds: list[Feeds]):
        self._feeds = iter(feeds)

    def get_next(self):
        return next(self._feeds, None)


def int8_static(model_path: Path, feeds: Feeds, tmp: Path) -> Path:
    from onnxruntime.quantization import quantize_static

    target = tmp / "int8-static.onnx"
    _step("quantize_static", quantize_static, _pre_processed(model_path, tmp), target, _Reader([feeds]))
    return target


CONVERT = {"fp16": fp16, "int8-dynamic": int8_dynamic, "int8-static": int8_static}


# --------------------------------------------------------------------------- the verdict


def metric_output(reference: dict[str, np.ndarray]) -> str | None:
    """The first float output, as an import without --metric-output chooses it."""
    return next((name for name, value in reference.items() if value.dtype.kind == "f"), None)


def task_error(task: str, reference: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> float | None:
    """The task metric: on every float output for detection maps (the worst), else on the first."""
    first = metric_output(reference)
    names = [n for n, v in reference.items() if v.dtype.kind == "f"] if task == "detection-map" else [first]
    names = [n for n in names if n is not None and n in outputs and outputs[n].shape == reference[n].shape]
    if not names:
        return None
    if task in ("classification", "sequence"):  # the top class along the last axis, per row or step
        return min(float((reference[n].argmax(-1) == outputs[n].argmax(-1)).mean()) for n in names)
    error = scaled_mean_abs if task == "detection-map" else scaled_max_abs
    return max(error(reference[n], outputs[n]) for n in names)


def judge(
    kind: str, data: bytes, feeds: Feeds, reference: dict[str, np.ndarray], fp32_bytes: int, task: str = "generic"
) -> dict:
    """{status: ok | rejected | failed, size_ratio, error, reason} of one converted model."""
    row: dict = {"status": "ok", "size_ratio": round(len(data) / fp32_bytes, 2), "error": None, "reason": None}
    try:
        sess = session(data)
    except Exception as exc:  # onnxruntime raises several unrelated types
        return {**row, "status": "failed", "reason": f"onnxruntime cannot load it: {first_line(exc)}"}
    try:
        outputs = run(sess, feeds)
    except Exception as exc:  # the same: any failure is the verdict
        return {**row, "status": "failed", "reason": f"onnxruntime cannot run it: {first_line(exc)}"}
    problems = []
    for name, expected in reference.items():
        got = outputs.get(name)
        if got is None:
            problems.append(f"output {name!r} is missing")
        elif got.shape != expected.shape:
            problems.append(f"output {name!r} has shape {list(got.shape)}, fp32 has {list(expected.shape)}")
        elif expected.dtype.kind == "f" and got.dtype.kind == "f":
            new = int((~np.isfinite(got) & np.isfinite(expected)).sum())
            if new:
                problems.append(f"output {name!r} has {new} inf/NaN values where fp32 is finite")
    metric, fp16_bound, int8_bound, sense = METRICS[task]
    bound = fp16_bound if kind == "fp16" else int8_bound
    error = task_error(task, reference, outputs)
    if error is not None:
        row["error"] = float(f"{error:.3g}")
        if not (row["error"] >= bound if sense == "min" else row["error"] <= bound):  # NaN fails
            problems.append(f"{metric} {row['error']:.3g} {'<' if sense == 'min' else '>'} budget {bound}")
    if kind.startswith("int8") and len(data) * INT8_MIN_SHRINK > fp32_bytes:
        problems.append(f"int8 is {len(data) / fp32_bytes:.2f}x the size of fp32, not {INT8_MIN_SHRINK}x smaller")
    if problems:
        row.update(status="rejected", reason="; ".join(problems))
    return row


def evaluate(folder: Path, kinds: tuple[str, ...] = KINDS, task: str = "generic") -> dict[str, dict]:
    """Every raw tool on one test directory: {kind: row (with seconds)}."""
    model_path, feeds = read_test_directory(folder)
    fp32_bytes = model_path.stat().st_size
    reference = run(session(str(model_path)), feeds)
    rows = {}
    for kind in kinds:
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix=f"raw-{kind}-") as tmp, contextlib.chdir(tmp), _quiet():
            # quant_pre_process and calibration write scratch files into the working folder: tmp.
            try:
                target = CONVERT[kind](model_path, feeds, Path(tmp))
                row = judge(kind, target.read_bytes(), feeds, reference, fp32_bytes, task)
            except ToolFailed as exc:
                row = {"status": "failed", "size_ratio": None, "error": None, "reason": str(exc)}
        row["seconds"] = round(time.perf_counter() - start, 2)
        rows[kind] = row
    return rows


def tool_versions() -> dict[str, str]:
    from importlib.metadata import version

    return {package: version(package) for package in ("onnx", "onnxruntime", "onnxconverter-common", "numpy")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="an ONNX test directory (model.onnx + test_data_set_0)")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here (default: stdout)")
    parser.add_argument("--task", choices=sorted(METRICS), default="generic", help="as `onnxport import --task`")
    args = parser.parse_args(argv)
    os.environ.setdefault("ORT_LOGGING_LEVEL", "3")
    import onnxruntime

    onnxruntime.set_default_logger_severity(3)
    rows = evaluate(args.folder.resolve(), task=args.task)
    text = json.dumps(rows, indent=2)
    if args.json:
        args.json.write_text(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
