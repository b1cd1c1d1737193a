"""The check and first-use verification judge a browser result as the import judged the variant.

A small classifier imported from an ONNX test directory, checked on the conformance page in real
Chromium against a real `onnxport serve`. The browser's WebAssembly runtime is made to answer 1.0 off
at the first element of every float output (`?perturb=wasm`, the library's test hook, refused outside
automation): a stand-in for the way WebAssembly SIMD and native VNNI int8 kernels round differently,
which no small model reproduces on demand. The same browser output then fails the fp32 file (element
by element, onnxruntime-web's own floor) and passes the int8 file (its top classes still match fp32's,
within its budget), the element-wise difference to the server's int8 shown as a diagnostic.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from fixtures.doc_keys import REPORT, REPORT_MAPS, assert_documented
from onnxport import cli
from onnxport.accuracy import browser_tolerances, judgement

pytestmark = pytest.mark.slow

FEATURES, CLASSES, ROWS = 256, 16, 40
TIMEOUT_MS = 240_000


def _classifier(folder: Path) -> None:
    """logits = x @ W, each row a class prototype plus noise: wide margins, so int8 keeps every top class."""
    rng = np.random.default_rng(21)
    weight = rng.standard_normal((FEATURES, CLASSES)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["logits"], name="matmul")],
        "classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", FEATURES])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", CLASSES])],
        [numpy_helper.from_array(weight, "W")],
    )
    folder.mkdir(parents=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), folder / "model.onnx")
    classes = np.arange(ROWS) % CLASSES
    x = (weight[:, classes].T / FEATURES + 0.01 * rng.standard_normal((ROWS, FEATURES))).astype(np.float32)
    data = folder / "test_data_set_0"
    data.mkdir()
    (data / "input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    (data / "output_0.pb").write_bytes(numpy_helper.from_array(x @ weight, "logits").SerializeToString())


@pytest.fixture
def imported(tmp_path) -> tuple[Path, dict]:
    _classifier(tmp_path / "clf")
    repository = tmp_path / "repository"
    code = cli.main(
        [
            "--repository",
            str(repository),
            "import",
            str(tmp_path / "clf"),
            "--name",
            "clf",
            "--task",
            "classification",
            "--metric-output",
            "logits",
            "--forms",
            "none",
            "--quiet",
        ]
    )
    assert code == 0, "the import failed; see the captured stderr"
    manifest = json.loads((repository / "manifest.json").read_text())
    entry = manifest["models"]["clf"]
    assert entry["variants"]["int8-dynamic"]["status"] == "ok", entry["variants"]["int8-dynamic"].get("reason")
    return repository, entry


def test_one_wrong_element_fails_fp32_by_the_floor_and_int8_passes_by_its_budget(imported, serve_repository, chromium):
    repository, entry = imported
    base = serve_repository(repository)
    context = chromium.new_context()
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{base}/conformance?autorun=1&models=clf&runtimes=wasm&perturb=wasm")
        page.wait_for_function(
            "() => document.querySelector('[data-testid=conformance-status]')?.dataset.done === 'true'",
            timeout=TIMEOUT_MS,
        )
        report = page.evaluate("() => window.onnxportReport")
        assert report, page.get_by_test_id("conformance-status").get_attribute("data-error")
        rows = {r["variant"]: r for r in report["results"] if r["form"] is None}
        # docs/reference/conformance.md documents every key of these rows (basis, budget, diagnostic...).
        assert_documented(report, "the conformance page's report", REPORT, REPORT_MAPS)

        # fp32: element by element against the server's run of the same file, within the floor.
        fp32 = rows["fp32"]
        assert (fp32["status"], fp32["basis"], fp32["arithmetic"]) == ("fail", "floor", "fp32"), fp32
        assert fp32["reason"].startswith("output 'logits' at [0, 0]: expected "), fp32["reason"]
        # The wasm floor (abs 1e-4, rel 1e-6) loosened to the import's export tolerance (rel 1e-3).
        assert fp32["reason"].endswith("floor abs 0.0001, rel 0.001)"), fp32["reason"]
        assert fp32["floor"] == judgement.fp32_floor(
            browser_tolerances.table()["fp32/wasm"], {"tolerance": {"abs": 1e-5, "rel": 1e-3}}
        )

        # int8: the same wrong element, but every top class still fp32's: within budget, with a diagnostic.
        int8 = rows["int8-dynamic"]
        budget = entry["variants"]["int8-dynamic"]["budget"]
        assert (int8["status"], int8["basis"], int8["arithmetic"]) == ("pass", "budget", "int8"), int8
        assert int8["reason"] is None and int8["budget"] == budget
        assert int8["metric_vs_fp32"] == {"top1_agreement": 1.0}
        diagnostic = int8["diagnostic"]
        assert diagnostic["max_abs"] >= 0.9 and diagnostic["output"] == "logits", diagnostic
        assert diagnostic["first_outside_floor"]["index"] == [0, 0], diagnostic
        assert diagnostic["text"].startswith("element-wise vs the server's output of this file: max abs "), diagnostic
        # Judged element by element by the table's int8 row, as before, it would have failed.
        assert int8["tolerance"] == browser_tolerances.table()["int8-dynamic/wasm"]
        assert int8["outputs"]["logits"]["first_mismatch"]["index"] == [0, 0]
        assert diagnostic["max_abs"] > int8["tolerance"]["abs"]
        # Every other served file computes in fp16 or int8: the same wrong element passes each by its budget.
        others = [v for v, record in entry["variants"].items() if record["status"] == "ok" and v != "fp32"]
        assert "int8-dynamic" in others, others
        for variant in others:
            row = rows[variant]
            assert (row["status"], row["basis"]) == ("pass", "budget"), row
            record = entry["variants"][variant]
            assert row["arithmetic"] == record.get("arithmetic", record["precision"])
            assert row["diagnostic"]["max_abs"] >= 0.9, row
        # The conformance page says what decided each cell.
        cell = page.locator("td[data-cell='clf/int8-dynamic/wasm']")
        assert cell.get_attribute("data-basis") == "budget" and "vs fp32 top-1 1.000 (budget)" in cell.inner_text()
        assert page.locator("td[data-cell='clf/fp32/wasm']").get_attribute("data-basis") == "floor"

        # First-use verification in the library, same page, same wrong element: the same two verdicts.
        verified = page.evaluate(
            """async (base) => {
            const { connect } = await import(`${base}/web/lib/index.js`);
            const client = connect(`${base}/`, { testing: { perturb: "wasm" } });
            const int8 = await client.load("clf", { runtime: "wasm", variant: "int8-dynamic", verify: "always" });
            const choice = {
              runtime: int8.choice.runtime, variant: int8.choice.variant, verification: int8.choice.verification,
            };
            await int8.dispose();
            let attempts;  // the fp32 file fails verification: the plan falls back (or gives up)
            try {
              const fp32 = await client.load("clf", { runtime: "wasm", variant: "fp32", verify: "always" });
              attempts = fp32.choice.attempts;
              await fp32.dispose();
            } catch (error) { attempts = error.attempts; }
            return { choice, attempts };
        }""",
            base,
        )
        check = verified["choice"]["verification"]
        assert (verified["choice"]["runtime"], verified["choice"]["variant"]) == ("wasm", "int8-dynamic"), verified
        assert (check["status"], check["basis"], check["rule"]) == ("passed", "budget", "budget"), check
        assert check["metric"] == {"top1_agreement": 1.0} and check["budget"] == budget
        assert check["diagnostic"]["max_abs"] >= 0.9, check
        failed = verified["attempts"][0]
        assert (failed["runtime"], failed["variant"], failed["wrong"]) == ("wasm", "fp32", True), verified["attempts"]
        assert "floor abs 0.0001, rel 0.001" in failed["error"], failed
        assert errors == []
    finally:
        context.close()
