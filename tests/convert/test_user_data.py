"""`onnxport import --inputs/--calibration`: the user's data, read and checked against the model before
anything is built; the synthetic-input warning; unsorted graphs; 1-D sequence inputs that are not rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from graph_helpers import make_model, rng, tensor
from onnx import TensorProto, helper, numpy_helper

from onnxport import cli, tensor_json
from onnxport.convert.intake import user_data
from onnxport.convert.intake.export import check_and_infer
from onnxport.convert.node_order import sort_nodes
from onnxport.errors import ModelFileError, UsageError
from onnxport.repository import testdata
from onnxport.repository.batch_axis import batch_axis


@pytest.fixture(autouse=True)
def _work_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # onnxruntime's shape inference writes temporary files into the working folder


def _cli(capsys, *args) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _import(capsys, repository: Path, model_path: Path, *extra) -> tuple[int, str, str]:
    return _cli(
        capsys, "--repository", repository, "import", model_path, "--name", "mine", "--quiet", "--forms", "none", *extra
    )


def _entry(repository: Path) -> dict:
    return json.loads((repository / "manifest.json").read_text())["models"]["mine"]


def _files(repository: Path) -> list[str]:
    return (
        sorted(str(p.relative_to(repository)) for p in repository.rglob("*") if p.is_file() and p.name != ".lock")
        if repository.exists()
        else []
    )


def _add_model() -> onnx.ModelProto:
    """z = x + y * W over [batch, 3]: two inputs whose named first dimension must agree."""
    return make_model(
        [
            helper.make_node("Mul", ["y", "W"], ["yw"], name="mul"),
            helper.make_node("Add", ["x", "yw"], ["z"], name="add"),
        ],
        {"W": np.full(3, 2.0, np.float32)},
        [tensor("x", "batch", 3), tensor("y", "batch", 3)],
        [tensor("z", "batch", 3)],
    )


def _one_input_model() -> onnx.ModelProto:
    return make_model(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="matmul")],
        {"W": rng().standard_normal((3, 2)).astype(np.float32)},
        [tensor("x", "batch", 3)],
        [tensor("y", "batch", 2)],
    )


def _save(model: onnx.ModelProto, folder: Path, name: str = "model.onnx") -> Path:
    path = folder / name
    onnx.save(model, path)
    return path


def _golden_inputs(repository: Path, entry: dict) -> list[dict[str, np.ndarray]]:
    return [inputs for inputs, _ in testdata.read_golden(repository, entry)]


# --------------------------------------------------------------------------- accepted forms


def test_an_npz_is_one_golden_set_of_real_data(capsys, tmp_path):
    model_path = _save(_add_model(), tmp_path)
    x, y = (rng(k).standard_normal((5, 3)).astype(np.float32) for k in (1, 2))
    np.savez(tmp_path / "inputs.npz", y=y, x=x)  # key order does not matter
    code, _, err = _import(capsys, tmp_path / "repo", model_path, "--inputs", tmp_path / "inputs.npz")
    assert code == 0, err
    assert "synthetic" not in err
    entry = _entry(tmp_path / "repo")
    assert entry["golden_data"] == "real" and entry["golden"]["sets"] == 1
    assert entry["provenance"]["calibration_data"] == "real" and "--inputs" in entry["facts"]["golden_data"]
    assert entry["batch_axis"] is True
    [golden] = _golden_inputs(tmp_path / "repo", entry)
    np.testing.assert_array_equal(golden["x"], x)
    np.testing.assert_array_equal(golden["y"], y)


def test_an_npy_is_the_one_input_of_a_one_input_model(capsys, tmp_path):
    model_path = _save(_one_input_model(), tmp_path)
    x = rng(3).standard_normal((4, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code, _, err = _import(capsys, tmp_path / "repo", model_path, "--inputs", tmp_path / "x.npy")
    assert code == 0, err
    entry = _entry(tmp_path / "repo")
    assert entry["golden_data"] == "real" and entry["golden"]["sets"] == 1
    np.testing.assert_array_equal(_golden_inputs(tmp_path / "repo", entry)[0]["x"], x)


@pytest.mark.parametrize("layout", ["npz-files", "test-sets", "npz-set-keys"])
def test_a_folder_or_set_keys_give_several_sets_in_order(capsys, tmp_path, layout):
    model_path = _save(_one_input_model(), tmp_path)
    sets = [np.full((k + 1, 3), k, np.float32) for k in range(3)]
    data = tmp_path / "data"
    data.mkdir()
    if layout == "npz-files":
        for k, x in enumerate(sets):
            np.savez(data / f"set{k}.npz", x=x)
    elif layout == "test-sets":
        for k, x in enumerate(sets):
            testdata.write_set(data, k, {"x": x}, {})
    else:
        data = data / "sets.npz"
        np.savez(data, **{f"{k}/x": x for k, x in enumerate(sets)})
    code, _, err = _import(capsys, tmp_path / "repo", model_path, "--inputs", data)
    assert code == 0, err
    entry = _entry(tmp_path / "repo")
    assert entry["golden"]["sets"] == 3 and entry["golden_data"] == "real"
    assert [g["x"].shape[0] for g in _golden_inputs(tmp_path / "repo", entry)] == [1, 2, 3]


# --------------------------------------------------------------------------- refused up front, exit 2


def _refused(
    capsys,
    tmp_path,
    model: onnx.ModelProto,
    arrays: dict | np.ndarray | None,
    *fragments: str,
    option: str = "--inputs",
    extra: tuple = (),
    suffix: str = ".npz",
) -> str:
    model_path = _save(model, tmp_path)
    args = list(extra)
    if arrays is not None:
        data = tmp_path / f"data{suffix}"
        if suffix == ".npy":
            np.save(data, arrays)
        else:
            np.savez(data, **arrays)
        args += [option, data]
    code, _, err = _import(capsys, tmp_path / "repo", model_path, *args)
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("onnxport: error:"), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert _files(tmp_path / "repo") == [] and not (tmp_path / "repo" / ".staging").exists()
    return lines[0]


F32 = np.float32


@pytest.mark.parametrize(
    ("arrays", "fragments"),
    [
        pytest.param(
            {"x": np.ones((2, 4), F32), "y": np.ones((2, 3), F32)},
            ["data.npz", "input 'x' has shape [2, 4]", "expects float32 [batch, 3] (dimension 1 is 3)"],
            id="shape",
        ),
        pytest.param(
            {"x": np.ones((2, 3), np.float64), "y": np.ones((2, 3), F32)},
            ["input 'x' is float64 [2, 3]", "expects float32 [batch, 3]", "astype(np.float32)"],
            id="dtype",
        ),
        pytest.param(
            {"x": np.ones((2, 3), F32)}, ["no array for input 'y' (float32 [batch, 3])", "given: 'x'"], id="missing"
        ),
        pytest.param(
            {"x": np.ones((2, 3), F32), "y": np.ones((2, 3), F32), "mask": np.ones(3, F32)},
            ["key 'mask' is not an input of the model", "its inputs are 'x' (float32 [batch, 3]), 'y'"],
            id="extra",
        ),
        pytest.param(
            {"x": np.ones((2, 3, 1), F32), "y": np.ones((2, 3), F32)},
            ["input 'x' has shape [2, 3, 1] (rank 3)", "expects rank 2: float32 [batch, 3]"],
            id="rank",
        ),
        pytest.param(
            {"x": np.ones((2, 3), F32), "y": np.ones((5, 3), F32)},
            ["dimension 'batch' is 2 in input 'x' dimension 0 but 5 in input 'y' dimension 0"],
            id="named-dims",
        ),
    ],
)
def test_inputs_that_do_not_fit_the_model_are_refused_naming_what_and_why(capsys, tmp_path, arrays, fragments):
    message = _refused(capsys, tmp_path, _add_model(), arrays, "--inputs", *fragments)
    if "mask" in arrays:  # the extra key is named, never an input that fits
        assert "'x' is" not in message and "key 'x'" not in message


def test_an_npy_for_a_two_input_model_is_refused(capsys, tmp_path):
    _refused(
        capsys,
        tmp_path,
        _add_model(),
        np.ones((2, 3), F32),
        "data.npy",
        "a .npy holds one array",
        "the model has 2 inputs (x, y)",
        "give a .npz",
        suffix=".npy",
    )


def test_a_metric_output_that_is_not_an_output_is_refused_listing_the_outputs(capsys, tmp_path):
    _refused(
        capsys,
        tmp_path,
        _add_model(),
        None,
        "--metric-output 'nope' is not an output",
        "its outputs are 'z'",
        extra=("--metric-output", "nope"),
    )


def test_a_wrong_shaped_calibration_file_is_refused_before_any_variant(capsys, tmp_path):
    arrays = {"x": np.ones((2, 3), F32), "y": np.ones((2, 5), F32)}
    _refused(
        capsys,
        tmp_path,
        _add_model(),
        arrays,
        "--calibration",
        "data.npz",
        "input 'y' has shape [2, 5]",
        "(dimension 1 is 3)",
        option="--calibration",
    )


def test_inputs_onnxruntime_cannot_run_name_the_set(capsys, tmp_path):
    model_path = _save(_sequence_model(), tmp_path)
    np.savez(tmp_path / "data.npz", table=np.arange(5, dtype=F32), idx=np.array([7], np.int64))  # past the table
    code, _, err = _import(capsys, tmp_path / "repo", model_path, "--inputs", tmp_path / "data.npz")
    assert code == 2 and "--inputs" in err and "data.npz" in err and "fp32 onnxruntime cannot run" in err, err
    assert _files(tmp_path / "repo") == []


def test_the_checks_name_the_file_of_a_folder_set(tmp_path):
    specs = user_data.signature(_one_input_model())
    for k in range(2):
        np.savez(tmp_path / f"s{k}.npz", x=np.ones((1, 3 + k), F32))
    with pytest.raises(UsageError, match=r"--inputs .*s1\.npz: input 'x' has shape \[1, 4\]"):
        user_data.load(tmp_path, "--inputs", specs)


def test_placeholder_dimension_names_need_not_agree():
    # paddle2onnx writes "?" for every unknown dimension: a placeholder, not a name shared by all of them.
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        {},
        [tensor("x", "?", 3, "?", "?")],
        [tensor("y", "?", 3, "?", "?")],
    )
    [spec] = user_data.signature(model)
    assert spec.shape == (None, 3, None, None)
    assert user_data.check({"x": np.ones((1, 3, 48, 192), F32)}, "x.npz", [spec])["x"].shape == (1, 3, 48, 192)


def test_inputs_beside_a_test_directory_are_refused(capsys, tmp_path):
    folder = tmp_path / "testdir"
    folder.mkdir()
    _save(_one_input_model(), folder)
    testdata.write_set(folder, 0, {"x": np.ones((1, 3), F32)}, {})
    np.save(tmp_path / "x.npy", np.ones((2, 3), F32))
    code, _, err = _import(capsys, tmp_path / "repo", folder, "--inputs", tmp_path / "x.npy")
    assert code == 2 and "is a test directory with its own test_data_set_* golden sets" in err, err


@pytest.mark.parametrize("name", ["empty-folder", "c.txt", "broken.npz", "nowhere.npz"])
def test_anything_else_is_refused_naming_the_file(tmp_path, name):
    path = tmp_path / name
    if name == "empty-folder":
        path.mkdir()
    elif name != "nowhere.npz":
        path.write_text("not input data")
    with pytest.raises(UsageError, match=f"--calibration {path}"):
        user_data.load(path, "--calibration", user_data.signature(_one_input_model()))


def test_the_digest_changes_with_the_data(tmp_path):
    path = tmp_path / "c.npz"
    np.savez(path, x=np.ones(3))
    first = user_data.digest(path)
    np.savez(path, x=np.zeros(3))
    assert user_data.digest(path) != first and user_data.digest(None) is None


# --------------------------------------------------------------------------- honest without data


def test_without_data_the_import_warns_and_the_manifest_says_synthetic(capsys, tmp_path):
    model_path = _save(_add_model(), tmp_path)
    # Not --quiet, which prints nothing but errors (the manifest and `info` still say it).
    code, _, err = _cli(
        capsys, "--repository", tmp_path / "repo", "import", model_path, "--name", "mine", "--forms", "none"
    )
    assert code == 0, err
    paragraph = " ".join(err.split())
    assert "warning: mine is judged on synthetic inputs" in paragraph and "--inputs FILE.npz" in paragraph, err
    entry = _entry(tmp_path / "repo")
    assert entry["golden_data"] == "synthetic" and entry["provenance"]["calibration_data"] == "synthetic"
    code, out, _ = _cli(capsys, "--repository", tmp_path / "repo", "info", "mine")
    assert code == 0 and "golden     synthetic: seeded random inputs" in out, out


# --------------------------------------------------------------------------- graphs onnxruntime runs


def _reversed_model() -> onnx.ModelProto:
    """x -> Relu (unnamed) -> Mul -> Add -> y, its nodes listed last first."""
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Mul", ["a", "W"], ["b"], name="mul"),
        helper.make_node("Add", ["b", "C"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes[::-1],
        "reversed",
        [tensor("x", "batch", 3)],
        [tensor("y", "batch", 3)],
        [numpy_helper.from_array(np.full(3, v, F32), n) for n, v in (("W", 2.0), ("C", 1.0))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_a_graph_with_unsorted_nodes_is_sorted_and_imported(capsys, tmp_path):
    model = _reversed_model()
    with pytest.raises(onnx.checker.ValidationError, match="topologically sorted"):
        onnx.checker.check_model(model, full_check=True)
    code, _, err = _import(capsys, tmp_path / "repo", _save(model, tmp_path))
    assert code == 0, err
    entry = _entry(tmp_path / "repo")
    assert entry["facts"]["nodes_sorted"] == 2  # Relu and Add change places; Mul stays in the middle
    stored = onnx.load(str(tmp_path / "repo" / entry["variants"]["fp32"]["file"]))
    assert [n.op_type for n in stored.graph.node] == ["Relu", "Mul", "Add"]
    assert entry["validation"]["within_tolerance"] is True


def test_sorting_reaches_subgraphs_and_their_outer_scope_inputs():
    # The If reads `a` (made after it in the list) from its branch: that is a dependency too.
    branch = helper.make_graph(
        [
            helper.make_node("Identity", ["b"], ["out"], name="inner_id"),
            helper.make_node("Neg", ["a"], ["b"], name="inner_neg"),
        ],
        "then",
        [],
        [tensor("out", 3)],
    )
    other = helper.make_graph(
        [helper.make_node("Identity", ["a"], ["out2"], name="else_id")], "else", [], [tensor("out2", 3)]
    )
    graph = helper.make_graph(
        [
            helper.make_node("If", ["cond"], ["y"], then_branch=branch, else_branch=other, name="if"),
            helper.make_node("Relu", ["x"], ["a"], name="relu"),
        ],
        "outer",
        [tensor("x", 3), tensor("cond", elem=TensorProto.BOOL)],
        [tensor("y", 3)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert sort_nodes(model.graph) == 4  # two in the branch, two outside
    assert [n.name for n in model.graph.node] == ["relu", "if"]
    then_branch = next(a.g for a in model.graph.node[1].attribute if a.name == "then_branch")
    assert [n.name for n in then_branch.node] == ["inner_neg", "inner_id"]
    onnx.checker.check_model(model, full_check=True)
    assert sort_nodes(model.graph) == 0


def test_any_other_checker_objection_is_one_line_naming_the_unnamed_node():
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="first")], {}, [tensor("x", 3)], [tensor("y", 3)])
    model.graph.node.append(helper.make_node("Relu", ["y"], ["z"], bogus=3))
    model.graph.output.append(tensor("z", 3))
    with pytest.raises(ModelFileError) as caught:
        check_and_infer(model, "m.onnx")
    message = str(caught.value)
    assert "\n" not in message, message
    assert "Unrecognized attribute: bogus" in message and "Relu #1 (unnamed)" in message, message


def test_an_import_refused_by_the_checker_says_so_on_one_line(capsys, tmp_path):
    model = _reversed_model()
    model.graph.node[0].attribute.append(helper.make_attribute("bogus", 3))  # the Add, listed first
    code, _, err = _import(capsys, tmp_path / "repo", _save(model, tmp_path))
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1 and "Unrecognized attribute: bogus" in lines[0] and "add" in lines[0], err


def _sequence_model() -> onnx.ModelProto:
    """y = table[idx]: two 1-D inputs with dynamic lengths; their first dimension is not a batch."""
    return make_model(
        [helper.make_node("Gather", ["table", "idx"], ["y"], name="gather", axis=0)],
        {},
        [tensor("table", "length"), tensor("idx", None, elem=TensorProto.INT64)],
        [tensor("y", None)],
    )


def test_one_dimensional_sequence_inputs_are_never_cut(capsys, tmp_path):
    table, idx = np.arange(50, dtype=F32), np.array([49, 0, 17, 3], np.int64)  # cut to 2 rows, 49 leaves the table
    np.savez(tmp_path / "data.npz", table=table, idx=idx)
    source = _save(_sequence_model(), tmp_path)
    code, _, err = _import(capsys, tmp_path / "repo", source, "--inputs", tmp_path / "data.npz")
    assert code == 0, err
    entry = _entry(tmp_path / "repo")
    assert entry["batch_axis"] is False and entry["variants"]["fp32"]["status"] == "ok"
    record = entry["variants"]["fp32"]["reference"]
    document = json.loads((tmp_path / "repo" / record["file"]).read_text())
    inputs, outputs = tensor_json.decode(document["inputs"]), tensor_json.decode(document["outputs"])
    assert record["rows"] == 1
    np.testing.assert_array_equal(inputs["table"], table)
    np.testing.assert_array_equal(outputs["y"], table[idx])


@pytest.mark.parametrize(
    ("inputs", "outputs", "expected"),
    [
        ([["batch", 3]], [["batch", 2]], True),
        ([[-1, 3], ["n", 4]], [["n"]], True),  # unnamed and named agree; a 1-D output (labels) is fine
        ([["length"]], [["length"]], False),  # a 1-D input is a sequence
        ([[1, 3]], [[1, 2]], False),  # fixed
        ([["batch", 3]], [[4, 2]], False),  # an output with a fixed first dimension
        ([["batch", 3], ["n", 3]], [["batch", 3]], False),  # names that disagree
        ([["batch", 4]], [["unk__0"], ["batch", 3]], True),  # outputs' names are shape inference's own
        ([["batch", 4], ["unk__3", 2]], [["batch"]], True),  # a placeholder input name agrees with any
        ([["batch", 4], ["?", 2]], [["batch"]], True),
        ([[]], [["batch"]], False),  # a scalar input
        ([None], [["batch", 2]], False),  # no shape
        ([], [["batch", 2]], False),  # no inputs
    ],
)
def test_the_batch_axis_rule(inputs, outputs, expected):
    values = lambda shapes: [{"name": f"v{k}", "shape": s} for k, s in enumerate(shapes)]  # noqa: E731
    assert batch_axis(values(inputs), values(outputs)) is expected


def test_string_inputs_come_as_texts_in_an_npz(capsys, tmp_path):
    # A .npz holds texts as fixed-width str or bytes; an object array would need pickle, which is refused.
    phs = helper.make_tensor_value_info("phs", TensorProto.STRING, ["n"])
    code = helper.make_tensor_value_info("code", TensorProto.FLOAT, ["n"])
    encoder = helper.make_node(
        "LabelEncoder",
        ["phs"],
        ["code"],
        domain="ai.onnx.ml",
        keys_strings=["a", "b", "sil"],
        values_floats=[1.0, 2.0, 0.0],
        default_float=-1.0,
    )
    model = helper.make_model(
        helper.make_graph([encoder], "phonemes", [phs], [code]),
        ir_version=8,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 2)],
    )
    model_path = _save(model, tmp_path)
    for texts in (np.array(["a", "sil", "b", "zz"]), np.array([b"a", b"sil", b"b", b"zz"])):
        np.savez(tmp_path / "inputs.npz", phs=texts)
        repository = tmp_path / f"repo-{texts.dtype.kind}"
        exit_code, _, err = _import(capsys, repository, model_path, "--inputs", tmp_path / "inputs.npz")
        assert exit_code == 0, err
        [golden] = _golden_inputs(repository, _entry(repository))
        assert golden["phs"].tolist() == ["a", "sil", "b", "zz"]
