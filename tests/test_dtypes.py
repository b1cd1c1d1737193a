"""The dtype table (onnxport/dtypes.py) agrees with the libraries whose names it records, and the browser
library's copy (web/lib/tensors/dtypes.js) with it."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from onnxport.dtypes import DTYPES, by_numpy_name

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.numpy)
def test_each_row_names_one_type_as_numpy_and_onnx_do(dtype):
    assert onnx.TensorProto.DataType.Value(dtype.onnx) == dtype.onnx_number
    numpy_type = onnx.helper.tensor_dtype_to_np_dtype(dtype.onnx_number)
    assert numpy_type == dtype.numpy_dtype, f"{dtype.onnx} is numpy {numpy_type}, the table says {dtype.numpy}"
    assert dtype.triton == "TYPE_" + (dtype.v2 if dtype.v2 != "BYTES" else "STRING")


def test_onnxruntime_names_each_type_as_the_table_does(tmp_path):
    # A model passing one input of each type through to an output: its NodeArg types are onnxruntime's names.
    inputs = [onnx.helper.make_tensor_value_info(f"x{d.onnx_number}", d.onnx_number, [1]) for d in DTYPES]
    outputs = [onnx.helper.make_tensor_value_info(f"y{d.onnx_number}", d.onnx_number, [1]) for d in DTYPES]
    nodes = [onnx.helper.make_node("Identity", [i.name], [o.name]) for i, o in zip(inputs, outputs)]
    model = onnx.helper.make_model(
        onnx.helper.make_graph(nodes, "types", inputs, outputs), opset_imports=[onnx.helper.make_opsetid("", 17)]
    )
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert [i.type for i in session.get_inputs()] == [d.ort for d in DTYPES]


def test_every_numpy_name_is_one_row():
    names = [name for d in DTYPES for name in (d.numpy, *d.numpy_aliases)]
    assert len(names) == len(set(names)) == len(by_numpy_name())
    assert np.dtype(str).name == "str" and by_numpy_name()["str"].v2 == "BYTES"
    for column in ("onnx", "v2", "triton"):
        values = [getattr(d, column) for d in DTYPES]
        assert len(values) == len(set(values)), f"two rows share a {column} name"


def test_the_browser_librarys_table_is_generated_from_this_one():
    script = PROJECT_ROOT / "scripts" / "generate" / "js_dtypes.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
