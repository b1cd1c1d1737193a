"""The tensor element types onnxport handles: the one table of their names in every system they cross.

A manifest names a tensor's type as numpy does (`float32`); the V2 protocol, ONNX, onnxruntime,
Triton's config.pbtxt and the browser library each have their own name for it. Every name table of
the server is derived from DTYPES, and the browser library's (web/lib/tensors/dtypes.js) is generated from it by
scripts/generate/js_dtypes.py (a test fails when the two differ), so a new type is one row here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    numpy: str  # numpy's dtype name, as the manifest writes it
    onnx: str  # ONNX TensorProto.DataType name
    onnx_number: int  # its number in onnx.proto
    v2: str  # the Open Inference Protocol (V2) datatype
    triton: str  # Triton's config.pbtxt data_type
    # onnxruntime-web's tensor type, None where the browser library has no tensor of this type.
    js_type: str | None
    # The typed array that holds its values in the browser library, None where the library does not handle
    # them as numbers (float16's raw halves in a Uint16Array cannot be sent as JSON or compared as values).
    js_array: str | None
    numpy_aliases: tuple[str, ...] = ()  # other numpy names that mean the same type here

    @property
    def ort(self) -> str:
        """onnxruntime's name of a tensor of this type (NodeArg.type): ONNX's name in lower case."""
        return f"tensor({self.onnx.lower()})"

    @property
    def numpy_dtype(self) -> np.dtype:
        return np.dtype(self.numpy)


DTYPES: tuple[DType, ...] = (
    DType("bool", "BOOL", 9, "BOOL", "TYPE_BOOL", "bool", "Uint8Array"),  # 0/1 in the browser, as ORT returns it
    DType("uint8", "UINT8", 2, "UINT8", "TYPE_UINT8", "uint8", "Uint8Array"),
    DType("uint16", "UINT16", 4, "UINT16", "TYPE_UINT16", "uint16", "Uint16Array"),
    DType("uint32", "UINT32", 12, "UINT32", "TYPE_UINT32", "uint32", "Uint32Array"),
    DType("uint64", "UINT64", 13, "UINT64", "TYPE_UINT64", "uint64", "BigUint64Array"),
    DType("int8", "INT8", 3, "INT8", "TYPE_INT8", "int8", "Int8Array"),
    DType("int16", "INT16", 5, "INT16", "TYPE_INT16", "int16", "Int16Array"),
    DType("int32", "INT32", 6, "INT32", "TYPE_INT32", "int32", "Int32Array"),
    DType("int64", "INT64", 7, "INT64", "TYPE_INT64", "int64", "BigInt64Array"),
    DType("float16", "FLOAT16", 10, "FP16", "TYPE_FP16", "float16", None),
    DType("float32", "FLOAT", 1, "FP32", "TYPE_FP32", "float32", "Float32Array"),
    DType("float64", "DOUBLE", 11, "FP64", "TYPE_FP64", "float64", "Float64Array"),
    # Strings: a numpy object array of bytes (or a str array) on the server; BYTES on the wire.
    DType("object", "STRING", 8, "BYTES", "TYPE_STRING", None, None, numpy_aliases=("str",)),
)


def by_numpy_name() -> dict[str, DType]:
    """Every numpy name (aliases too) -> its row."""
    return {name: dtype for dtype in DTYPES for name in (dtype.numpy, *dtype.numpy_aliases)}
