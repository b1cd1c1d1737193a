"""check/locate.py on the demo artifacts: their debug models, write_debug_model's file, a divergence in digits."""

from __future__ import annotations

import hashlib

import numpy as np
import onnx
import pytest
from locate_helpers import TOL, node_outputs, run_onnxruntime

from demo_variants import MODEL_VARIANTS
from onnxport import tensor_json
from onnxport.check import locate


@pytest.mark.parametrize(("model", "variant"), MODEL_VARIANTS)
def test_debug_model_of_each_demo_artifact_exposes_every_node_output(
    demo_repository, demo_manifest, served, model, variant
):
    served(model, variant)
    record = demo_manifest["models"][model]["variants"][variant]
    artifact = onnx.load(str(demo_repository / record["file"]))
    debug = locate.debug_model(artifact)
    exposed = {o.name for o in debug.graph.output}
    missing = [name for name in node_outputs(artifact) if name not in exposed]
    assert not missing, f"{len(missing)} node outputs not exposed, e.g. {missing[:5]}"
    assert [o.name for o in debug.graph.output][: len(artifact.graph.output)] == [o.name for o in artifact.graph.output]


def test_digits_debug_model_runs_and_keeps_the_models_outputs(demo_repository, demo_manifest, golden_inputs):
    record = demo_manifest["models"]["digits"]["variants"]["fp32"]
    artifact = onnx.load(str(demo_repository / record["file"]))
    feeds = {k: v[:16] for k, v in golden_inputs("digits").items()}
    debug_values = run_onnxruntime(locate.debug_model(artifact), feeds)
    plain = run_onnxruntime(artifact, feeds)
    assert set(node_outputs(artifact)) <= set(debug_values)
    np.testing.assert_allclose(debug_values["logits"], plain["logits"], rtol=1e-6, atol=1e-6)


def test_write_debug_model_names_the_file_by_its_sha256(demo_repository, demo_manifest, tmp_path):
    record = demo_manifest["models"]["digits"]["variants"]["fp32"]
    root = tmp_path / "not-yet" / "debug"
    name = locate.write_debug_model(demo_repository / record["file"], root)
    data = (root / name).read_bytes()
    assert name == f"{hashlib.sha256(data).hexdigest()}.onnx"
    assert [p.name for p in root.iterdir()] == [name]
    written = onnx.load_from_string(data)
    assert {o.name for o in written.graph.output} >= set(node_outputs(written))
    # The same artifact gives the same file.
    assert locate.write_debug_model(demo_repository / record["file"], root) == name


def test_a_perturbed_intermediate_of_a_real_artifact_is_found(demo_repository, demo_manifest, golden_inputs, tmp_path):
    """The --locate pipeline without the browser: reference values of the debug model, a 'browser' that
    differs at one Gemm, and the answer names that Gemm, not the later nodes it feeds."""
    record = demo_manifest["models"]["digits"]["variants"]["fp32"]
    name = locate.write_debug_model(demo_repository / record["file"], tmp_path)
    debug = onnx.load(str(tmp_path / name))
    feeds = {k: v[:8] for k, v in golden_inputs("digits").items()}
    reference = locate.reference_outputs(tmp_path / name, feeds)
    browser = tensor_json.decode(tensor_json.encode(reference))  # the page's format, unchanged values
    assert locate.first_divergence(debug, reference, browser, TOL) is None

    index, gemm = next((i, n) for i, n in enumerate(debug.graph.node) if n.op_type == "Gemm")
    browser = {k: v.copy() for k, v in browser.items()}
    browser[gemm.output[0]][3, 1] += np.float32(0.5)
    later = debug.graph.node[-1].output[0]
    browser[later] = browser[later] + np.float32(1.0)
    found = locate.first_divergence(debug, reference, browser, TOL)
    assert found["node_index"] == index and found["op_type"] == "Gemm" and found["node"] == gemm.name
    assert found["output"] == gemm.output[0] and found["index"] == [3, 1]
    assert found["got"] - found["expected"] == pytest.approx(0.5, abs=1e-5)
