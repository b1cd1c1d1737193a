"""What an imported ONNX model and its data files declare is held to budgets before anything is unpacked or
copied: .npz members by their declared sizes, long doc_strings cut, an external-data file larger than its
tensors refused. Each hostile file is made here, small; on the code before these checks each one took GBs
(or a traceback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnx
from graph_helpers import make_model, tensor
from onnx import helper, numpy_helper

from onnxport.project import PROJECT_ROOT


def _model() -> onnx.ModelProto:
    """y = x + w, x [n, 4]."""
    return make_model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        {"w": np.ones(4, np.float32)},
        [tensor("x", "n", 4)],
        [tensor("y", "n", 4)],
    )


def onnxport(tmp_path: Path, *args: object, **settings: str) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONNXPORT_")}
    env.update({f"ONNXPORT_{k.upper()}": v for k, v in settings.items()})
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "onnxport",
            "--repository",
            str(tmp_path / "repository"),
            "import",
            *map(str, args),
            "--name",
            "mine",
            "--forms",
            "none",
            "--quiet",
        ],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stderr


def test_an_npz_bomb_is_refused_by_its_declared_size(tmp_path, assert_one_line_error):
    onnx.save(_model(), tmp_path / "m.onnx")
    bomb = tmp_path / "bomb.npz"
    # 64 MiB of zeros deflate to about 64 KB; under a 1 MiB budget it is refused before it is unpacked.
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("x.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(
                member, {"descr": "<f4", "fortran_order": False, "shape": (1 << 22, 4)}
            )
            for _ in range(64):
                member.write(bytes(1 << 20))
    assert bomb.stat().st_size < 1 << 20
    code, err = onnxport(tmp_path, tmp_path / "m.onnx", "--inputs", bomb, import_max_data_bytes=str(1 << 20))
    assert code == 2, err
    assert_one_line_error(
        err,
        f"--inputs {bomb} member 'x.npy'",
        "67,108,",
        "1,048,576",
        "import_max_data_bytes",
        "nothing was decompressed",
    )
    assert not (tmp_path / "repository" / "manifest.json").exists()


def test_an_npy_header_declaring_more_than_its_member_holds_is_refused(tmp_path, assert_one_line_error):
    onnx.save(_model(), tmp_path / "m.onnx")
    liar = tmp_path / "liar.npz"
    with zipfile.ZipFile(liar, "w") as archive:
        with archive.open("x.npy", "w") as member:  # 8 GiB declared, 16 bytes stored
            np.lib.format.write_array_header_1_0(
                member, {"descr": "<f4", "fortran_order": False, "shape": (1 << 29, 4)}
            )
            member.write(bytes(16))
    code, err = onnxport(tmp_path, tmp_path / "m.onnx", "--inputs", liar)
    assert code == 2, err
    assert_one_line_error(err, "member 'x.npy'", "shape [536870912, 4]", "8,589,934,592 bytes", "import_max_data_bytes")
    good = tmp_path / "good.npz"
    np.savez(good, x=np.ones((3, 4), np.float32))
    code, err = onnxport(tmp_path, tmp_path / "m.onnx", "--inputs", good)
    assert code == 0, err


def test_a_long_doc_string_is_cut_on_import_with_a_note(tmp_path):
    model = _model()
    model.doc_string = "d" * 1_000_000
    model.graph.node[0].doc_string = "n" * 100_000
    helper.set_model_props(model, {"card": "m" * 200_000})
    onnx.save(model, tmp_path / "m.onnx")
    code, err = onnxport(tmp_path, tmp_path / "m.onnx")
    assert code == 0, err
    entry = json.loads((tmp_path / "repository" / "manifest.json").read_text())["models"]["mine"]
    notes = entry["facts"]["texts_cut"]
    assert "the model's doc_string was 1,000,000 bytes, cut to 65,536 (setting import_max_text_bytes)" in notes
    assert any(n.startswith("metadata_props 'card' was 200,000 bytes") for n in notes), notes
    assert any(n.startswith("node 'add' doc_string was 100,000 bytes") for n in notes), notes
    stored = onnx.load(tmp_path / "repository" / entry["variants"]["fp32"]["file"])
    assert len(stored.doc_string) == 65_536 and len(stored.graph.node[0].doc_string) == 65_536


def test_an_external_data_file_larger_than_its_tensors_is_refused(tmp_path, assert_one_line_error):
    folder = tmp_path / "model"
    folder.mkdir()
    model = _model()
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.ones(4, np.float32), "w"))
    onnx.save(
        model,
        folder / "m.onnx",
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="weights.bin",
        size_threshold=0,
    )
    code, err = onnxport(tmp_path / "first", folder / "m.onnx")
    assert code == 0, err
    os.truncate(folder / "weights.bin", 64 << 30)  # sparse: 64 GiB declared by the file system, no disk used
    code, err = onnxport(tmp_path / "second", folder / "m.onnx")
    assert code == 1, err
    assert_one_line_error(
        err, "external data file 'weights.bin' is 68,719,476,736 bytes", "declare 16 (their offsets plus lengths)"
    )
