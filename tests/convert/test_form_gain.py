"""The default forms, chosen by what they gain on the model (server/onnxport/convert/forms/gain.py): a form is
kept only where onnxruntime creates its session at least 10% and 5 ms sooner than the variant as built;
`--forms all` or a list keeps what it names whatever it gains. Times are CPU times of the creating thread."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from name_models import manifest_of, matmul_file
from onnxport.convert.forms import gain as form_gain


def folding_file(folder, steps: int = 300, size: int = 128):
    """y = x @ C, C made at session creation by `steps` Add/Mul nodes on initializers: the work a `basic`
    or `ort` form did once at build time (constant folding), which the variant as built redoes at every
    session creation (here about 17 ms of CPU against 0.6 ms; 100 steps were 6.5 ms, too near the 5 ms bar)."""
    rng = np.random.default_rng(0)
    initializers = [
        numpy_helper.from_array(rng.standard_normal((size, size)).astype(np.float32) * 0.01, "c0"),
        numpy_helper.from_array(np.full((size, size), 0.5, np.float32), "k"),
    ]
    nodes, previous = [], "c0"
    for index in range(steps):
        nodes.append(helper.make_node("Mul" if index % 2 else "Add", [previous, "k"], [f"t{index}"], name=f"n{index}"))
        previous = f"t{index}"
    nodes.append(helper.make_node("MatMul", ["x", previous], ["y"], name="matmul"))
    values = [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", size]) for name in ("x", "y")]
    graph = helper.make_graph(nodes, "folding", values[:1], values[1:], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, folder / "folding.onnx")
    return folder / "folding.onnx"


def _forms(repository, name):
    return manifest_of(repository)["models"][name]["variants"]["fp32"]["forms"]


def test_by_default_a_form_is_kept_only_where_it_starts_sooner(run_cli, tmp_path):
    repository = tmp_path / "r"
    for name, path in (("slow-start", folding_file(tmp_path / "a")), ("quick-start", matmul_file(tmp_path / "b"))):
        code, _, err = run_cli("--repository", repository, "import", path, "--name", name, "--quiet")
        assert code == 0, err
    kept, dropped = _forms(repository, "slow-start"), _forms(repository, "quick-start")
    print("\nslow-start:", {f: r.get("reason") or "kept" for f, r in kept.items()})
    print("quick-start:", {f: r["reason"] for f, r in dropped.items()})
    assert {f: r["status"] for f, r in kept.items()} == {"ort": "ok", "basic": "ok"}, kept
    assert all((repository / r["file"]).is_file() for r in kept.values())
    # A y = x @ W graph has nothing to fold: its forms start no sooner, so they have no file.
    assert {f: r["status"] for f, r in dropped.items()} == {"ort": "rejected", "basic": "rejected"}, dropped
    for form, record in dropped.items():
        assert "file" not in record and record["format"] in ("ort", "onnx"), record
        assert record["reason"].startswith("too little gain to keep its file: onnxruntime "), record["reason"]
        assert f"`--forms {form}` or `--forms all` keeps it" in record["reason"]
        made_ms, as_built_ms = (float(ms) for ms in re.findall(r"in ([\d.]+) ms", record["reason"]))
        assert as_built_ms - made_ms < max(form_gain.MIN_GAIN * as_built_ms, form_gain.MIN_GAIN_MS), record["reason"]


def test_all_or_a_list_keeps_the_forms_whatever_they_gain(run_cli, tmp_path):
    path = matmul_file(tmp_path / "models")
    for forms, expected in (("all", ["basic", "ort"]), ("basic", ["basic"])):
        repository = tmp_path / forms
        code, _, err = run_cli("--repository", repository, "import", path, "--name", "m", "--quiet", "--forms", forms)
        assert code == 0, err
        made = _forms(repository, "m")
        assert sorted(made) == expected and all(r["status"] == "ok" and "file" in r for r in made.values()), made


def test_auto_is_another_build_key_than_all(run_cli, tmp_path):
    path = matmul_file(tmp_path / "models")
    repository = tmp_path / "r"
    assert run_cli("--repository", repository, "import", path, "--name", "m", "--quiet", "--forms", "all")[0] == 0
    code, _, err = run_cli("--repository", repository, "import", path, "--name", "m", "--quiet")
    assert code == 2 and "already in the repository" in err  # not silently "unchanged"


@pytest.mark.parametrize(
    "as_built, form, kept",
    [(20.0, 1.0, True), (60.0, 50.0, True), (4.0, 0.5, False), (100.0, 95.0, False), (1.0, 2.0, False)],
)
def test_the_bar_is_ten_percent_and_five_ms(monkeypatch, as_built, form, kept):
    monkeypatch.setattr(form_gain, "fastest", lambda *a, **k: (as_built, form))
    reason = form_gain.short_of(b"variant", b"form", "basic", "m fp32 (basic form)")
    assert (reason is None) == kept, reason
    if reason:
        assert f"{form:.1f} ms, the variant as built in {as_built:.1f} ms" in reason
        assert ("later" in reason) == (form > as_built)
