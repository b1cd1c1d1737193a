"""The third-party corpus's rows: one real model imported by `onnxport import` in a measured subprocess,
and its manifest entry read back as the row tests/data/corpus_table.json records.

Shared by scripts/corpus/corpus_table.py, which records the table, and tests/convert/test_corpus.py, which
holds every later import to it: both must import a model the same way and read the same figures.
The corpus itself (tests/data/third-party/, `make testdata`) lives in the checkout, not the package.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx

from onnxport.project import PROJECT_ROOT
from onnxport.repository import testdata
from onnxport.repository.testdata import Feeds
from onnxport.repository.variant_table import NAMES as VARIANTS

CORPUS = PROJECT_ROOT / "tests" / "data" / "third-party"
TABLE = PROJECT_ROOT / "tests" / "data" / "corpus_table.json"
REWRITE = "python scripts/corpus/corpus_table.py --write"
KINDS = VARIANTS[1:]  # every variant but fp32: the table's columns (the raw tools' rows have the first three)
TIMEOUT = 600  # seconds per model and approach


def data_sha256(folder: Path) -> str:
    """Hash of the model and the inputs an import reads: model.onnx and test_data_set_0's inputs (a new corpus
    invalidates the rows). Not its outputs: onnxruntime computed them on the machine that fetched the corpus, and
    they differ in the last bits between an AVX2 and an AVX-512 CPU."""
    digest = hashlib.sha256()
    for path in [folder / "model.onnx", *sorted((folder / "test_data_set_0").glob("input_*.pb"))]:
        digest.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def node_count(folder: Path) -> int:
    return len(onnx.load(folder / "model.onnx", load_external_data=False).graph.node)


def inputs_of(folder: Path) -> tuple[onnx.ModelProto, Feeds]:
    """model.onnx and test_data_set_0's inputs, keyed by the graph's inputs (initializers listed as inputs left out)."""
    model = onnx.load(folder / "model.onnx")
    initializers = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    return model, testdata.read_sets(folder, names, [])[0][0]


def machine() -> dict:
    cpu, flags = "unknown", set()
    try:
        text = Path("/proc/cpuinfo").read_text()
        cpu = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE).group(1).strip()
        flags = set(re.search(r"^flags\s*:\s*(.+)$", text, re.MULTILINE).group(1).split())
    except (OSError, AttributeError):
        pass
    isa = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8") if f in flags]
    return {"cpu": cpu, "cores": os.cpu_count(), "isa": isa}


def significant(value: float | None, digits: int = 3) -> float | str | None:
    """A figure to `digits` significant digits; inf/NaN as text (JSON has no literal for them)."""
    if value is None:
        return None
    if not math.isfinite(value):
        return str(value)
    return float(f"{value:.{digits}g}")


# --------------------------------------------------------------------------- a variant's row


# The class of a rejection, from its reason (first match): the test compares the class, not the wording.
REJECTION_KINDS = (
    ("conversion failed", r"conversion failed"),
    ("onnxruntime cannot load", r"cannot load"),
    ("onnxruntime cannot run", r"failed to run|cannot run"),
    ("non-finite", r"inf/NaN"),
    ("shape", r"has shape"),
    ("over budget", r"budget"),
)


def reason_kind(status: str | None, reason: str | None) -> str | None:
    """None for a served variant; a skip is "not smaller" (int8 that does not compress) or "nothing to
    convert" (whatever the wording: no operator, already quantized, weights out of reach...)."""
    if status == "ok":
        return None
    if status == "skipped":
        return "not smaller" if re.search(r"size of fp32|smaller", reason or "") else "nothing to convert"
    return next((kind for kind, pattern in REJECTION_KINDS if re.search(pattern, reason or "")), "other")


def _first_line(text: str | None) -> str | None:
    lines = [line.strip() for line in (text or "").strip().splitlines() if line.strip()]
    return lines[0] if lines else None


# The task metrics a budget judges (accuracy/budgets.py), the one a task uses first; generic imports
# have scaled_max_abs only. The first three are agreements: 1 is perfect.
METRICS = ("top1_agreement", "cosine_min", "step_agreement", "scaled_mean_abs", "scaled_max_abs")
AGREEMENTS = METRICS[:3]


def _error_figure(record: dict) -> tuple[str | None, float | None]:
    """The vs_fp32 task metric (what the budget judges) as (name, value)."""
    measured = record.get("vs_fp32") or {}
    metric = measured.get("metric") or {}
    for name in METRICS:
        if name in metric:
            return name, metric[name]
    outputs = measured.get("outputs") or {}
    if not outputs:
        return None, None
    # No metric output: the verdict takes the worst float output's scaled error (accuracy/measure.py).
    worst = max((e.get("max_abs", 0.0) / max(e.get("scale", 1.0), 1e-12) for e in outputs.values()), default=0.0)
    return "scaled_max_abs", worst


def variant_row(record: dict, fp32_bytes: int | None) -> dict:
    metric, error = _error_figure(record)
    size = record.get("size_ratio")
    if size is None and "bytes" in record and fp32_bytes:
        size = record["bytes"] / fp32_bytes
    fallback = record.get("fallback")
    reason = _first_line(record.get("reason")) if record.get("status") != "ok" else None
    return {
        "status": record.get("status"),
        "size_ratio": None if size is None else round(size, 2),
        "metric": metric,
        "error": significant(error),
        # None: no fallback search ran; else how many nodes it kept in float (0: none got it within budget).
        "fallback_kept_float": None if fallback is None else len(fallback.get("kept_float", [])),
        "reason": reason,
        "reason_kind": reason_kind(record.get("status"), reason),
    }


def served(rows: dict[str, dict]) -> dict[str, int]:
    """{kind: how many models serve it} of rows {model: {kind: row}}."""
    return {kind: sum(1 for r in rows.values() if r.get(kind, {}).get("status") == "ok") for kind in KINDS}


# --------------------------------------------------------------------------- the measured import


class Finished:
    """A finished subprocess: exit code (None: timed out and killed), stderr, wall and CPU seconds, and
    its peak resident memory in MB (the largest VmHWM seen while it ran)."""

    def __init__(self, returncode: int | None, stderr: str, wall: float, cpu: float, peak_rss_mb: float = 0.0):
        self.returncode, self.stderr, self.wall, self.cpu = returncode, stderr, wall, cpu
        self.peak_rss_mb = peak_rss_mb


def run_measured(command: list[str], cwd: str, timeout: float, env: dict | None = None) -> Finished:
    """Run command; its CPU time (user + system, its waited-for children included, from wait4: it stays
    meaningful when other work shares the cores and wall time does not) and its peak RSS, the largest
    VmHWM read from /proc while it runs. Not wait4's ru_maxrss: Python starts children with vfork, and
    Linux carries the parent's high-water mark across the exec, so a large parent (a pytest session
    holding demo models: 2.5 GB) is every child's "peak"."""
    start = time.perf_counter()
    with tempfile.TemporaryFile(mode="w+") as stderr:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
        peak_kb = 0
        while True:
            peak_kb = max(peak_kb, _high_water_kb(process.pid))  # before wait4 reaps it
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                code: int | None = os.waitstatus_to_exitcode(status)
                break
            if time.perf_counter() - start > timeout:
                process.kill()
                _, status, usage = os.wait4(process.pid, 0)
                code = None
                break
            time.sleep(0.05)
        process.returncode = code if code is not None else -9  # reaped here, not by Popen
        stderr.seek(0)
        text = stderr.read()
    return Finished(code, text, time.perf_counter() - start, usage.ru_utime + usage.ru_stime, peak_kb / 1024)


def _high_water_kb(pid: int) -> int:
    """The process's peak resident set so far (VmHWM, kB), or 0 once it has exited."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return next((int(line.split()[1]) for line in status if line.startswith("VmHWM:")), 0)
    except (OSError, ValueError):
        return 0


def failure(done: Finished, timeout: float) -> str:
    """onnxport's one-line error, else the last line on stderr (a traceback's), else the exit code."""
    if done.returncode is None:
        return f"timed out after {timeout:.0f} s"
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    ours = [line for line in lines if line.startswith("onnxport: error:")]
    return (ours or lines or [f"exit code {done.returncode}"])[-1]


def import_model(folder: Path, name: str, repository: Path, task: str, timeout: float = TIMEOUT) -> dict:
    """`onnxport import` of one test directory into repository, with `--task task` (the table records
    each model's); the model's row (with seconds, cpu_seconds and peak_rss_mb)."""
    command = [sys.executable, "-m", "onnxport", "--repository", str(repository), "import", str(folder),
               "--name", name, "--task", task, "--forms", "none", "--quiet"]
    # No optimized forms: the table records variants, not forms, and forms were a third of an import's time.
    env = {k: v for k, v in os.environ.items() if k != "ONNXPORT_REPOSITORY"}
    with tempfile.TemporaryDirectory(prefix="corpus-import-") as cwd:  # scratch files of shape inference
        done = run_measured(command, cwd, timeout, env)
    error = None if done.returncode == 0 else failure(done, timeout)
    row: dict = {"data_sha256": data_sha256(folder), "import_error": error, "variants": {}}
    if error is None:
        entry = json.loads((repository / "manifest.json").read_text())["models"][name]
        records = entry["variants"]
        fp32_bytes = records.get("fp32", {}).get("bytes")
        row["variants"] = {v: variant_row(records[v], fp32_bytes) for v in VARIANTS if v in records}
        row["_artifacts"] = {v: str(repository / r["file"]) for v, r in records.items() if "file" in r}
    row["seconds"], row["cpu_seconds"] = round(done.wall, 1), round(done.cpu, 1)
    row["peak_rss_mb"] = round(done.peak_rss_mb)
    return row
