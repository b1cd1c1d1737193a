"""A LightGBM classifier in Chromium: its `gemm` form (tree ensembles as tensor operators,
convert/forms/tree_tensors.py) runs on WebGPU, which has no ai.onnx.ml kernel, and on WebAssembly, each passing
`onnxport check` against the server; the plan takes WebGPU only through the form and chooses runtime and file by
what it measured.

One repository for the module: a LightGBM binary classifier on the breast-cancer data, converted by onnxmltools
and imported with its own held-back rows as `--inputs` and `--forms gemm`. WebGPU here is SwiftShader, a software
adapter: correct, and slower than WebAssembly, which the plan measures and says.
"""

from __future__ import annotations

import json
import time

import numpy as np
import onnx
import pytest

from fixtures.check import assert_report_consistent, result
from onnxport import cli

pytestmark = pytest.mark.browser

MODEL = "trees"
PAGE_TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def trees_repository(tmp_path_factory):
    lightgbm = pytest.importorskip("lightgbm")
    onnxmltools = pytest.importorskip("onnxmltools")
    from onnxmltools.convert.common.data_types import FloatTensorType
    from sklearn.datasets import load_breast_cancer

    folder = tmp_path_factory.mktemp("trees")
    x, y = load_breast_cancer(return_X_y=True)
    x = x.astype(np.float32)
    classifier = lightgbm.LGBMClassifier(n_estimators=20, num_leaves=15, verbose=-1).fit(x[:-40], y[:-40])
    model = onnxmltools.convert_lightgbm(
        classifier, initial_types=[("input", FloatTensorType([None, x.shape[1]]))], zipmap=False, target_opset=15
    )
    onnx.save(model, folder / "lightgbm.onnx")
    np.savez(folder / "inputs.npz", input=x[-40:])
    code = cli.main(
        [
            str(a)
            for a in (
                "--repository",
                folder / "repo",
                "import",
                folder / "lightgbm.onnx",
                "--name",
                MODEL,
                "--task",
                "classification",
                "--metric-output",
                "probabilities",
                "--inputs",
                folder / "inputs.npz",
                "--forms",
                "gemm",
                "--quiet",
            )
        ]
    )
    assert code == 0
    manifest = json.loads((folder / "repo" / "manifest.json").read_text())
    gemm = manifest["models"][MODEL]["variants"]["fp32"]["forms"]["gemm"]
    assert gemm["status"] == "ok", gemm
    assert not any(op.startswith("ai.onnx.ml.") for op in gemm["operators"]), gemm["operators"]
    return folder / "repo"


def test_the_gemm_form_passes_on_webgpu_and_wasm_where_the_ml_file_runs_on_wasm_only(
    check_cli, trees_repository, tmp_path
):
    report_path = tmp_path / "report.json"
    started = time.perf_counter()
    code, out, err = check_cli(
        "--repository", trees_repository, "check", "--runtimes", "wasm,webgpu", "--full-webgpu", "--json", report_path
    )  # the gemm form's WebGPU row too
    print(f"\ncheck of a LightGBM classifier and its gemm form: {time.perf_counter() - started:.1f} s\n{out}")
    assert code == 0, f"exit {code}\n{out}\n{err}"
    report = json.loads(report_path.read_text())
    assert_report_consistent(report, out)
    for runtime in ("wasm", "webgpu"):
        row = result(report, MODEL, "fp32", runtime, form="gemm")
        assert row["status"] == "pass", row
    assert result(report, MODEL, "fp32", "wasm")["status"] == "pass"
    refused = result(report, MODEL, "fp32", "webgpu")
    assert refused["status"] == "unsupported" and "TreeEnsembleClassifier" in refused["reason"], refused


LOADS = """async ([model]) => {
  const { connect } = await import('/web/lib/index.js');
  const client = connect();
  const entry = await client.model(model);
  const reference = await client.reference(entry.variants.fp32);
  const loads = [];
  // each pinned load runs twice (first and warm runs are what this browser measures), then the plan's own choice
  const pins = [{ runtime: 'webgpu' }, { runtime: 'wasm' }, { runtime: 'wasm', variant: 'fp32', form: 'gemm' }, {}];
  for (const pin of pins) {
    const loaded = await client.load(model, pin);
    const first = await loaded.run(reference.inputs);
    await loaded.run(reference.inputs);
    const { choice } = loaded;
    loads.push({
      pin, runtime: choice.runtime, form: choice.form, why: choice.why, verification: choice.verification.status,
      label: Array.from(first.outputs.label.data, Number),
      steps: choice.plan.steps.map((s) => ({ runtime: s.runtime, form: s.form, why: s.why })),
      skipped: choice.plan.skipped,
    });
    await loaded.dispose();
  }
  return loads;
}"""


def test_the_plan_runs_webgpu_through_the_gemm_form_and_chooses_by_measurement(
    chromium_webgpu, serve_repository, trees_repository
):
    from onnxport import tensor_json

    base = serve_repository(trees_repository)
    manifest = json.loads((trees_repository / "manifest.json").read_text())
    record = manifest["models"][MODEL]["variants"]["fp32"]
    reference = json.loads((trees_repository / record["reference"]["file"]).read_text())
    labels = tensor_json.decode(reference["outputs"])["label"].tolist()

    context = chromium_webgpu.new_context()
    try:
        page = context.new_page()
        page.goto(f"{base}/#/", timeout=PAGE_TIMEOUT_MS)
        webgpu, wasm, wasm_gemm, chosen = page.evaluate(LOADS, [MODEL])
    finally:
        context.close()

    # WebGPU: the gemm form alone (no fallback to the ai.onnx.ml file), verified on first use, the server's labels
    assert (webgpu["runtime"], webgpu["form"], webgpu["verification"]) == ("webgpu", "gemm", "passed"), webgpu
    assert "as the variant as built cannot run here" in webgpu["why"], webgpu["why"]
    assert [s["form"] for s in webgpu["steps"] if s["runtime"] == "webgpu"] == ["gemm"], webgpu["steps"]
    assert webgpu["label"] == labels
    for load in (wasm, wasm_gemm):
        assert (load["runtime"], load["verification"]) == ("wasm", "passed"), load
        assert load["label"] == labels
    assert wasm_gemm["form"] == "gemm"

    # Unpinned, after those runs: every browser step is ranked by what this browser measured, and the
    # software adapter's WebGPU ranks after WebAssembly (it was measured slower here)
    assert chosen["runtime"] == "wasm", chosen
    assert "measured in this browser" in chosen["why"], chosen["why"]
    gpu = [s for s in chosen["steps"] if s["runtime"] == "webgpu"]
    assert [s["form"] for s in gpu] == ["gemm"] and "measured in this browser" in gpu[0]["why"], gpu
    # between the two files of WebAssembly: the form only when verified and measured 10% faster, and then said
    assert chosen["form"] is None or chosen["form"] == "gemm" and "gemm form (tree-gemm, onnx):" in chosen["why"]
    print(f"\nchoice: {chosen['runtime']} {chosen['form'] or 'as built'}: {chosen['why']}\nWebGPU: {gpu[0]['why']}")
    for load in (webgpu, wasm, wasm_gemm):
        print(f"pinned {load['pin']}: {load['runtime']} {load['form'] or 'as built'}: {load['why']}")
