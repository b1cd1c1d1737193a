"""Your own model and data in the playground, in a real Chromium against a real `onnxport serve`.

Two small models made here and imported through the real CLI: a bare `.onnx` with bool inputs
and a bool output (Where + Not; no data given, so it is judged on seeded random inputs), and a
scikit-learn random forest (ai.onnx.ml TreeEnsembleClassifier, which onnxruntime-web's WebGPU
bundle has no kernel for), imported with real rows through `--inputs`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from playwright.sync_api import expect

from fixtures.check import result
from fixtures.playground import (
    PAGE_TIMEOUT_MS,
    by_testid,
    choose_source,
    expect_ran_on,
    outputs_rows,
    plan_skipped,
    plan_steps,
    run,
)
from onnxport import cli

SYNTHETIC = "Judged on seeded random inputs: give real ones with onnxport import --inputs."
NO_KERNEL = "its onnxruntime-web bundle has no kernel for ai.onnx.ml/TreeEnsembleClassifier"


def _import(repository: Path, source: Path, name: str, *extra: str) -> dict:
    code = cli.main(["--repository", str(repository), "import", str(source), "--name", name, "--quiet", *extra])
    assert code == 0, f"importing {source} failed (exit {code}); see the captured stderr"
    return json.loads((repository / "manifest.json").read_text())["models"][name]


@pytest.fixture(scope="module")
def bool_model(tmp_path_factory) -> tuple[Path, str]:
    """out = Where(cond, x, y), flipped = Not(cond); every input [batch, 3]; no data: synthetic."""
    folder = tmp_path_factory.mktemp("bool-model")

    def spec(name: str, elem: int):
        return helper.make_tensor_value_info(name, elem, ["batch", 3])

    graph = helper.make_graph(
        [helper.make_node("Where", ["cond", "x", "y"], ["out"]), helper.make_node("Not", ["cond"], ["flipped"])],
        "where",
        [spec("cond", TensorProto.BOOL), spec("x", TensorProto.FLOAT), spec("y", TensorProto.FLOAT)],
        [spec("out", TensorProto.FLOAT), spec("flipped", TensorProto.BOOL)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, folder / "where.onnx")
    entry = _import(folder / "repository", folder / "where.onnx", "where")
    assert entry["golden_data"] == "synthetic", entry.get("golden_data")
    return folder / "repository", "where"


@pytest.fixture(scope="module")
def dense(tmp_path_factory) -> tuple[Path, str]:
    """y = Relu(x @ W + b), W 256x64: int8-dynamic is served (4x smaller); 16 real-ish rows given."""
    folder = tmp_path_factory.mktemp("dense")
    rng = np.random.default_rng(0)
    weights = {"W": rng.normal(0, 0.1, (256, 64)).astype(np.float32), "b": rng.normal(0, 0.1, 64).astype(np.float32)}
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["h"]),
            helper.make_node("Add", ["h", "b"], ["a"]),
            helper.make_node("Relu", ["a"], ["y"]),
        ],
        "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 64])],
        [onnx.numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, folder / "dense.onnx")
    np.savez(folder / "rows.npz", x=rng.uniform(0, 1, (16, 256)).astype(np.float32))
    entry = _import(folder / "repository", folder / "dense.onnx", "dense", "--inputs", str(folder / "rows.npz"))
    assert entry["variants"]["int8-dynamic"]["status"] == "ok", entry["variants"]["int8-dynamic"]
    assert entry["variants"]["int8-dynamic"]["arithmetic"] == "int8"
    return folder / "repository", "dense"


@pytest.fixture(scope="module")
def forest(tmp_path_factory) -> tuple[Path, str, np.ndarray, object]:
    """A 3-tree random forest on iris (skl2onnx, zipmap off), imported with 30 real rows and no optimized forms: its
    only file has ai.onnx.ml operators, which WebGPU has no kernel for (with forms, the gemm form runs there:
    tests/browser/test_browser_trees.py)."""
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier

    folder = tmp_path_factory.mktemp("forest")
    features, labels = load_iris(return_X_y=True)
    features = features.astype(np.float32)
    classifier = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(features, labels)
    model = convert_sklearn(
        classifier,
        initial_types=[("features", FloatTensorType([None, 4]))],
        options={id(classifier): {"zipmap": False}},
        target_opset={"": 17, "ai.onnx.ml": 3},
    )
    onnx.save(model, folder / "forest.onnx")
    np.savez(folder / "rows.npz", features=features[::5])
    entry = _import(
        folder / "repository",
        folder / "forest.onnx",
        "forest",
        "--inputs",
        str(folder / "rows.npz"),
        "--task",
        "classification",
        "--metric-output",
        "probabilities",
        "--forms",
        "none",
    )
    assert "ai.onnx.ml/TreeEnsembleClassifier" in entry["variants"]["fp32"]["operator_types"]
    return folder / "repository", "forest", features, classifier


def test_a_bool_model_runs_on_the_server_with_pasted_json_and_says_it_was_judged_on_noise(
    bool_model,
    serve_repository,
    open_tab,
):
    repository, name = bool_model
    base_url = serve_repository(repository)
    tab = open_tab("#/", base_url=base_url)
    page = tab.page
    note = page.locator(f'section[data-model="{name}"]').get_by_test_id("synthetic-note")
    expect(note).to_have_text(SYNTHETIC, timeout=PAGE_TIMEOUT_MS)
    tab.goto(f"#/model/{name}")
    expect(by_testid(page, "synthetic-note")).to_have_text(SYNTHETIC, timeout=PAGE_TIMEOUT_MS)
    expect(page.locator("td", has_text="(judged on synthetic inputs)").first).to_be_visible()

    # The server step of the plan, pinned: the library's V2 client sends the bool tensor.
    tab.goto(f"#/play/{name}?runtime=server")
    expect(by_testid(page, "synthetic-note")).to_have_text(SYNTHETIC, timeout=PAGE_TIMEOUT_MS)
    # The plan is folded under Run: its summary is shown, its steps are not until opened.
    assert [r for r, _ in plan_steps(page)] == ["server"]
    expect(by_testid(page, "plan")).to_be_hidden()
    expect(by_testid(page, "plan-summary")).to_have_text("Plan: 1 step, first server · fp32; 3 left out")
    by_testid(page, "plan-summary").click()
    expect(by_testid(page, "plan")).to_be_visible()

    choose_source(page, "json")
    by_testid(page, "json-input").fill(
        json.dumps({"cond": [[True, False, True]], "x": [[1, 2, 3]], "y": [[-1, -2, -3]]})
    )
    expect_ran_on(page, "server", "fp32")
    for card in ("browser-result", "server-result"):
        rows = outputs_rows(page, card)
        assert rows["out"] | {"reading": "-"} == {
            "name": "out",
            "shape": "[1, 3]",
            "dtype": "float32",
            "first": "1, -2, 3",
            "reading": "-",
        }, rows
        assert (rows["flipped"]["dtype"], rows["flipped"]["first"]) == ("bool", "false, true, false"), rows
    assert tab.artifact_requests() == [], "the server runs it: nothing is downloaded"

    # A mistake in the paste is named before anything runs.
    by_testid(page, "json-input").fill(
        json.dumps({"cond": [[1.5, False, True]], "x": [[1, 2, 3]], "y": [[-1, -2, -3]]})
    )
    expect(run(page)).to_have_text("Failed.")
    expect(by_testid(page, "results").get_by_test_id("error")).to_have_text(
        'the pasted JSON: input "cond": element 0 is 1.5; a bool input takes true/false (or 0/1)'
    )
    assert tab.console_errors == [], tab.console_errors


def test_onnxport_check_passes_on_a_bool_model(bool_model, check_cli, tmp_path):
    repository, name = bool_model
    report_path = tmp_path / "report.json"
    code, out, err = check_cli("--repository", repository, "check", name, "--runtimes", "wasm", "--json", report_path)
    assert code == 0, f"exit {code}\n{out}\n{err}"
    report = json.loads(report_path.read_text())
    assert result(report, name, "fp32", "wasm")["status"] == "pass", result(report, name, "fp32", "wasm")


def test_a_forest_leaves_webgpu_out_before_any_download_and_runs_an_uploaded_npy(
    forest,
    serve_repository,
    open_tab,
    chromium_webgpu,
    tmp_path,
):
    repository, name, features, classifier = forest
    manifest = json.loads((repository / "manifest.json").read_text())["models"][name]
    served = [v for v, record in manifest["variants"].items() if record["status"] == "ok"]
    tab = open_tab(f"#/play/{name}", base_url=serve_repository(repository), browser=chromium_webgpu)
    page = tab.page
    expect(by_testid(page, "probe-webgpu")).to_have_attribute("data-available", "true", timeout=PAGE_TIMEOUT_MS)
    assert "webgpu" not in {r for r, _ in plan_steps(page)}
    skipped = plan_skipped(page)
    for variant in served:
        assert skipped[("webgpu", variant)] == f"webgpu · {variant} skipped: {NO_KERNEL}", skipped

    rows = features[[0, 60, 120, 7, 99]]
    np.save(tmp_path / "rows.npy", rows)
    choose_source(page, "file")
    by_testid(page, "file-input").set_input_files(tmp_path / "rows.npy")
    path = expect_ran_on(page, "wasm")
    assert "after" not in path.inner_text(), "nothing was tried and failed first"
    table = outputs_rows(page, "browser-result")
    assert table["label"]["first"] == ", ".join(str(v) for v in classifier.predict(rows)), table
    probabilities = classifier.predict_proba(rows[:1])[0]
    top = int(np.argmax(probabilities))
    assert table["probabilities"]["reading"].startswith(f"top 3 of row 0: class {top} ("), table
    # An fp32 file: judged element-wise against the server's run of it, within the runtime's floor.
    verdict = by_testid(page, "verdict")
    expect(verdict).to_have_attribute("data-ok", "true")
    expect(verdict).to_have_attribute("data-basis", "floor")
    expect(verdict).to_contain_text(
        re.compile(  # wasm or wasm-1t: the threads measured to pay
            r"Verdict: pass\. fp32 file: element-wise against the server's output of this file, "
            r"within the wasm(-1t)? floor \("
        )
    )

    # A float64 array is refused by name, not cast.
    np.save(tmp_path / "wide.npy", rows.astype(np.float64))
    by_testid(page, "file-input").set_input_files(tmp_path / "wide.npy")
    expect(run(page)).to_have_text("Failed.")
    expect(by_testid(page, "results").get_by_test_id("error")).to_have_text(
        'wide.npy: input "features": expected dtype float32, got float64 (save it with .astype(np.float32))'
    )

    # Pinned to WebGPU, nothing is left to try: the page says why before any download.
    downloaded = tab.artifact_requests()
    tab.goto(f"#/play/{name}?runtime=webgpu")
    expect(by_testid(page, "plan-empty")).to_contain_text(f"webgpu · fp32: {NO_KERNEL}", timeout=PAGE_TIMEOUT_MS)
    assert tab.artifact_requests() == downloaded


def test_an_int8_variant_is_judged_by_its_budget_against_fp32_with_the_difference_as_a_diagnostic(
    dense,
    serve_repository,
    open_tab,
):
    repository, name = dense
    manifest = json.loads((repository / "manifest.json").read_text())
    budget = manifest["models"][name]["variants"]["int8-dynamic"]["budget"]
    page = open_tab(f"#/play/{name}?runtime=wasm&variant=int8-dynamic", base_url=serve_repository(repository)).page
    expect(by_testid(page, "synthetic-note")).to_have_count(0)  # real rows were given
    choose_source(page, "golden")
    expect_ran_on(page, "wasm", "int8-dynamic")
    verdict = by_testid(page, "verdict")
    expect(verdict).to_have_attribute("data-basis", "budget")
    expect(verdict).to_have_attribute("data-ok", "true")
    bound = f"scaled max error ≤ {budget['scaled_max_abs']}" if budget.get("scaled_max_abs") is not None else "budget ("
    expect(verdict).to_contain_text("int8 file: ")
    expect(verdict).to_contain_text(" against the server's fp32 on these inputs, within its budget (")
    expect(verdict).to_contain_text(bound)
    expect(by_testid(page, "diagnostic")).to_contain_text(
        "Diagnostic, not the verdict: element-wise vs the server's output of this file: max abs "
    )
