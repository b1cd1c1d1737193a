"""Which operators each onnxruntime-web bundle has no kernel for, measured in this machine's Chromium.

For every operator probed (ai.onnx.ml, the quantized and fused operators of ai.onnx and
com.microsoft), writes a one-node model, checks that native onnxruntime creates a session from it
(so the model itself is valid), then creates a session from it in Chromium on each bundle the
library loads (web/lib/worker/ort-runtime.js):

  wasm    ort.wasm.min.mjs, execution provider "wasm"
  webgpu  ort.webgpu.min.mjs, execution provider "webgpu" (SwiftShader; nodes without a WebGPU
          kernel fall back to the bundle's CPU kernels, so only a kernel missing from both fails)
  webnn   ort.webgpu.min.mjs, execution provider "wasm": the CPU kernels WebNN falls back to, per
          node, in that bundle (this Chromium has no WebNN context to try WebNN itself)

An operator may have several probes, one per form ("com.microsoft/MatMulNBits (bits=8, block_size=32)"):
the table stays per "domain/OpType", since that is all a manifest's operator_types say. An operator is
MISSING when none of its forms has a kernel; one with a kernel for some forms only is not, and
MISSING_FORMS names the forms that have none.

A session that fails with onnxruntime's "No Op registered" or "Could not find an implementation"
means no kernel; any other failure is printed and stops the script (the probe, not the bundle,
would be wrong). Where a session is created, the probe also runs once on feeds made here and its
outputs are compared with native onnxruntime's: a run that fails or differs is printed (a kernel that
is there but cannot run here, such as fp16 without shader-f16), not written, since the plan's table
is about session creation. A probe whose outputs are not tensors (ZipMap) is not run. Prints the
table; --write replaces the measured block of web/lib/choice/kernels.js; --check exits 1 when the
measurement differs from it.

Usage: .venv/bin/python scripts/generate/measure_kernels.py [--write | --check]
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from playwright.sync_api import sync_playwright

from onnxport.harness import chromium as chromium_driver

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # the tests' cross-origin isolated file server

from fixtures.isolated_files import isolated_files  # noqa: E402

KERNELS_JS = ROOT / "web" / "lib" / "choice" / "kernels.js"
BEGIN, END = "// BEGIN MEASURED (scripts/generate/measure_kernels.py --write)", "// END MEASURED"
# runtime -> (bundle, execution provider)
BUNDLES = {
    "wasm": ("ort.wasm.min.mjs", "wasm"),
    "webgpu": ("ort.webgpu.min.mjs", "webgpu"),
    "webnn": ("ort.webgpu.min.mjs", "wasm"),
}
NO_KERNEL = re.compile(r"No Op registered|Could not find an implementation")
F, I64, U8, I8, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32
F16, I4 = TensorProto.FLOAT16, TensorProto.INT4
ML, MS = "ai.onnx.ml", "com.microsoft"


def const(name: str, value, dtype) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def one_node(
    domain: str,
    op: str,
    inputs: list[tuple[str, int, list[int]]],
    outputs: list[tuple[str, int | None, list[int] | None]],
    initializers: list[onnx.TensorProto] = (),
    **attributes,
) -> onnx.ModelProto:
    """A model of one `domain/op` node; inputs not in `initializers` are graph inputs."""
    init_names = {t.name for t in initializers}
    node = helper.make_node(
        op,
        [name for name, _, _ in inputs],
        [name for name, _, _ in outputs],
        domain="" if domain == "ai.onnx" else domain,
        **attributes,
    )
    graph = helper.make_graph(
        [node],
        f"probe_{op}",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs if n and n not in init_names],
        [
            helper.make_tensor_value_info(n, t, s) if t is not None else helper.make_value_info(n, onnx.TypeProto())
            for n, t, s in outputs
        ],
        list(initializers),
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(ML, 3), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def tree(**kw) -> dict:
    """One tree of one leaf, in TreeEnsemble* attributes."""
    return dict(
        nodes_treeids=[0],
        nodes_nodeids=[0],
        nodes_featureids=[0],
        nodes_values=[0.0],
        nodes_modes=["LEAF"],
        nodes_truenodeids=[0],
        nodes_falsenodeids=[0],
        **kw,
    )


X2 = [("x", F, [1, 2])]
PROBES: dict[str, Callable[[], onnx.ModelProto]] = {
    f"{ML}/ArrayFeatureExtractor": lambda: one_node(
        ML, "ArrayFeatureExtractor", [*X2, ("i", I64, [1])], [("y", F, [1, 1])], [const("i", [0], np.int64)]
    ),
    f"{ML}/Binarizer": lambda: one_node(ML, "Binarizer", X2, [("y", F, [1, 2])], threshold=0.0),
    f"{ML}/FeatureVectorizer": lambda: one_node(ML, "FeatureVectorizer", X2, [("y", F, [1, 2])], inputdimensions=[2]),
    f"{ML}/Imputer": lambda: one_node(
        ML, "Imputer", X2, [("y", F, [1, 2])], imputed_value_floats=[0.0, 0.0], replaced_value_float=float("nan")
    ),
    f"{ML}/LabelEncoder": lambda: one_node(
        ML, "LabelEncoder", [("x", I64, [1])], [("y", I64, [1])], keys_int64s=[0, 1], values_int64s=[5, 6]
    ),
    f"{ML}/LinearClassifier": lambda: one_node(
        ML,
        "LinearClassifier",
        X2,
        [("label", I64, [1]), ("scores", F, [1, 2])],
        coefficients=[1.0, 0.0, 0.0, 1.0],
        intercepts=[0.0, 0.0],
        classlabels_ints=[0, 1],
    ),
    f"{ML}/LinearRegressor": lambda: one_node(
        ML, "LinearRegressor", X2, [("y", F, [1, 1])], coefficients=[1.0, 1.0], targets=1
    ),
    f"{ML}/Normalizer": lambda: one_node(ML, "Normalizer", X2, [("y", F, [1, 2])], norm="L2"),
    f"{ML}/OneHotEncoder": lambda: one_node(
        ML, "OneHotEncoder", [("x", I64, [1])], [("y", F, [1, 2])], cats_int64s=[0, 1]
    ),
    f"{ML}/Scaler": lambda: one_node(ML, "Scaler", X2, [("y", F, [1, 2])], offset=[0.0, 0.0], scale=[1.0, 1.0]),
    f"{ML}/SVMClassifier": lambda: one_node(
        ML,
        "SVMClassifier",
        X2,
        [("label", I64, [1]), ("scores", F, [1, 2])],
        kernel_type="LINEAR",
        kernel_params=[0.0, 0.0, 0.0],
        vectors_per_class=[1, 1],
        support_vectors=[1.0, 0.0, 0.0, 1.0],
        coefficients=[1.0, -1.0],
        rho=[0.0],
        classlabels_ints=[0, 1],
    ),
    f"{ML}/SVMRegressor": lambda: one_node(
        ML,
        "SVMRegressor",
        X2,
        [("y", F, [1, 1])],
        kernel_type="LINEAR",
        kernel_params=[0.0, 0.0, 0.0],
        n_supports=1,
        support_vectors=[1.0, 1.0],
        coefficients=[1.0],
        rho=[0.0],
    ),
    f"{ML}/TreeEnsembleClassifier": lambda: one_node(
        ML,
        "TreeEnsembleClassifier",
        X2,
        [("label", I64, [1]), ("scores", F, [1, 2])],
        **tree(
            class_treeids=[0, 0],
            class_nodeids=[0, 0],
            class_ids=[0, 1],
            class_weights=[0.3, 0.7],
            classlabels_int64s=[0, 1],
        ),
    ),
    f"{ML}/TreeEnsembleRegressor": lambda: one_node(
        ML,
        "TreeEnsembleRegressor",
        X2,
        [("y", F, [1, 1])],
        **tree(target_treeids=[0], target_nodeids=[0], target_ids=[0], target_weights=[1.0], n_targets=1),
    ),
    f"{ML}/ZipMap": lambda: one_node(ML, "ZipMap", X2, [("y", None, None)], classlabels_int64s=[0, 1]),
    "ai.onnx/ConvInteger": lambda: one_node(
        "ai.onnx",
        "ConvInteger",
        [("x", U8, [1, 1, 3, 3]), ("w", U8, [1, 1, 1, 1])],
        [("y", I32, [1, 1, 3, 3])],
        [const("w", [[[[2]]]], np.uint8)],
    ),
    "ai.onnx/DequantizeLinear": lambda: one_node(
        "ai.onnx",
        "DequantizeLinear",
        [("x", U8, [2]), ("s", F, []), ("z", U8, [])],
        [("y", F, [2])],
        [const("s", 0.5, np.float32), const("z", 1, np.uint8)],
    ),
    "ai.onnx/DynamicQuantizeLinear": lambda: one_node(
        "ai.onnx", "DynamicQuantizeLinear", [("x", F, [4])], [("y", U8, [4]), ("s", F, []), ("z", U8, [])]
    ),
    "ai.onnx/MatMulInteger": lambda: one_node(
        "ai.onnx",
        "MatMulInteger",
        [("a", U8, [1, 2]), ("b", U8, [2, 2])],
        [("y", I32, [1, 2])],
        [const("b", [[1, 2], [3, 4]], np.uint8)],
    ),
    "ai.onnx/QLinearConv": lambda: one_node(
        "ai.onnx",
        "QLinearConv",
        [
            ("x", U8, [1, 1, 3, 3]),
            ("xs", F, []),
            ("xz", U8, []),
            ("w", U8, [1, 1, 1, 1]),
            ("ws", F, []),
            ("wz", U8, []),
            ("ys", F, []),
            ("yz", U8, []),
        ],
        [("y", U8, [1, 1, 3, 3])],
        [
            const("xs", 0.1, np.float32),
            const("xz", 0, np.uint8),
            const("w", [[[[2]]]], np.uint8),
            const("ws", 0.1, np.float32),
            const("wz", 0, np.uint8),
            const("ys", 0.1, np.float32),
            const("yz", 0, np.uint8),
        ],
    ),
    "ai.onnx/QLinearMatMul": lambda: one_node(
        "ai.onnx",
        "QLinearMatMul",
        [
            ("a", U8, [1, 2]),
            ("as", F, []),
            ("az", U8, []),
            ("b", U8, [2, 2]),
            ("bs", F, []),
            ("bz", U8, []),
            ("ys", F, []),
            ("yz", U8, []),
        ],
        [("y", U8, [1, 2])],
        [
            const("as", 0.1, np.float32),
            const("az", 0, np.uint8),
            const("b", [[1, 2], [3, 4]], np.uint8),
            const("bs", 0.1, np.float32),
            const("bz", 0, np.uint8),
            const("ys", 0.1, np.float32),
            const("yz", 0, np.uint8),
        ],
    ),
    "ai.onnx/QuantizeLinear": lambda: one_node(
        "ai.onnx",
        "QuantizeLinear",
        [("x", F, [2]), ("s", F, []), ("z", U8, [])],
        [("y", U8, [2])],
        [const("s", 0.5, np.float32), const("z", 1, np.uint8)],
    ),
    f"{MS}/BiasGelu": lambda: one_node(
        MS, "BiasGelu", [*X2, ("b", F, [2])], [("y", F, [1, 2])], [const("b", [0, 0], np.float32)]
    ),
    f"{MS}/DequantizeLinear": lambda: one_node(
        MS,
        "DequantizeLinear",
        [("x", U8, [2]), ("s", F, []), ("z", U8, [])],
        [("y", F, [2])],
        [const("s", 0.5, np.float32), const("z", 1, np.uint8)],
    ),
    f"{MS}/DynamicQuantizeLSTM": lambda: dynamic_quantize_lstm(),
    f"{MS}/DynamicQuantizeMatMul": lambda: one_node(
        MS,
        "DynamicQuantizeMatMul",
        [*X2, ("b", I8, [2, 2]), ("bs", F, [])],
        [("y", F, [1, 2])],
        [const("b", [[1, 2], [3, 4]], np.int8), const("bs", 0.1, np.float32)],
    ),
    f"{MS}/FastGelu": lambda: one_node(MS, "FastGelu", X2, [("y", F, [1, 2])]),
    f"{MS}/Gelu": lambda: one_node(MS, "Gelu", X2, [("y", F, [1, 2])]),
    f"{MS}/MatMulIntegerToFloat": lambda: one_node(
        MS,
        "MatMulIntegerToFloat",
        [("a", U8, [1, 2]), ("b", U8, [2, 2]), ("as", F, []), ("bs", F, [])],
        [("y", F, [1, 2])],
        [const("b", [[1, 2], [3, 4]], np.uint8), const("as", 0.1, np.float32), const("bs", 0.1, np.float32)],
    ),
    f"{MS}/QLinearAdd": lambda: one_node(
        MS,
        "QLinearAdd",
        [
            ("a", U8, [2]),
            ("as", F, []),
            ("az", U8, []),
            ("b", U8, [2]),
            ("bs", F, []),
            ("bz", U8, []),
            ("ys", F, []),
            ("yz", U8, []),
        ],
        [("y", U8, [2])],
        [
            const("as", 0.1, np.float32),
            const("az", 0, np.uint8),
            const("b", [1, 2], np.uint8),
            const("bs", 0.1, np.float32),
            const("bz", 0, np.uint8),
            const("ys", 0.1, np.float32),
            const("yz", 0, np.uint8),
        ],
    ),
    f"{MS}/QLinearGlobalAveragePool": lambda: one_node(
        MS,
        "QLinearGlobalAveragePool",
        [("x", U8, [1, 1, 2, 2]), ("xs", F, []), ("xz", U8, []), ("ys", F, []), ("yz", U8, [])],
        [("y", U8, [1, 1, 1, 1])],
        [
            const("xs", 0.1, np.float32),
            const("xz", 0, np.uint8),
            const("ys", 0.1, np.float32),
            const("yz", 0, np.uint8),
        ],
        channels_last=0,
    ),
    f"{MS}/QLinearSigmoid": lambda: one_node(
        MS,
        "QLinearSigmoid",
        [("x", U8, [2]), ("xs", F, []), ("xz", U8, []), ("ys", F, []), ("yz", U8, [])],
        [("y", U8, [2])],
        [
            const("xs", 0.1, np.float32),
            const("xz", 0, np.uint8),
            const("ys", 0.1, np.float32),
            const("yz", 0, np.uint8),
        ],
    ),
    f"{MS}/QuantizeLinear": lambda: one_node(
        MS,
        "QuantizeLinear",
        [("x", F, [2]), ("s", F, []), ("z", U8, [])],
        [("y", U8, [2])],
        [const("s", 0.5, np.float32), const("z", 1, np.uint8)],
    ),
    **{
        f"{MS}/MatMulNBits (bits={bits}, block_size={block}{', accuracy_level=4' if level else ''})": (
            lambda bits=bits, block=block, level=level: matmul_nbits(bits, block, level)
        )
        for bits in (4, 8)
        for block in (32, 128)
        for level in (False, True)
    },
    f"{MS}/MatMulNBits (bits=4, block_size=32, float16)": lambda: matmul_nbits(4, 32, False, F16),
    f"{MS}/GatherBlockQuantized (4-bit packed in uint8)": lambda: gather_block_quantized(U8),
    f"{MS}/GatherBlockQuantized (int4)": lambda: gather_block_quantized(I4),
    "ai.onnx/DequantizeLinear (int8, per axis)": lambda: one_node(
        "ai.onnx",
        "DequantizeLinear",
        [("x", I8, [2, 3]), ("s", F, [3]), ("z", I8, [3])],
        [("y", F, [2, 3])],
        [const("s", [0.5, 0.25, 0.125], np.float32), const("z", [0, 1, -1], np.int8)],
        axis=1,
    ),
    "ai.onnx/DequantizeLinear (opset 21, int8, blocked)": lambda: blocked_dequantize(I8),
    "ai.onnx/DequantizeLinear (opset 21, int4, blocked)": lambda: blocked_dequantize(I4),
    f"{MS}/SkipLayerNormalization": lambda: one_node(
        MS,
        "SkipLayerNormalization",
        [("x", F, [1, 1, 2]), ("skip", F, [1, 1, 2]), ("g", F, [2]), ("b", F, [2])],
        [("y", F, [1, 1, 2])],
        [const("skip", [[[0, 0]]], np.float32), const("g", [1, 1], np.float32), const("b", [0, 0], np.float32)],
    ),
}


def at_opset(model: onnx.ModelProto, opset: int, ir_version: int) -> onnx.ModelProto:
    """The model with ai.onnx at `opset` and its IR at `ir_version` (int4 needs IR 10, blocked scales opset 21)."""
    for entry in model.opset_import:
        if entry.domain == "":
            entry.version = opset
    model.ir_version = ir_version
    return model


def matmul_nbits(bits: int, block: int, accuracy_level: bool, dtype: int = F) -> onnx.ModelProto:
    """com.microsoft MatMulNBits: A [1, K] times a constant B of N x K `bits`-bit weights in blocks of `block`
    along K (packed in uint8, [N, K / block, block * bits / 8]), one scale per block, no zero points."""
    k, n = 2 * block, 3
    rng = np.random.default_rng(bits * block)
    packed = rng.integers(0, 256, size=(n, k // block, block * bits // 8), dtype=np.uint8)
    scales = rng.uniform(0.01, 0.1, size=n * (k // block)).astype(np.float16 if dtype == F16 else np.float32)
    extra = {"accuracy_level": 4} if accuracy_level else {}
    inputs = [("a", dtype, [1, k]), ("b", U8, list(packed.shape)), ("s", dtype, [scales.size])]
    weights = [numpy_helper.from_array(packed, "b"), numpy_helper.from_array(scales, "s")]
    return one_node(
        MS, "MatMulNBits", inputs, [("y", dtype, [1, n])], weights, K=k, N=n, bits=bits, block_size=block, **extra
    )


def gather_block_quantized(data_type: int) -> onnx.ModelProto:
    """com.microsoft GatherBlockQuantized: rows of a 4 x 32 table of 4-bit values (int4, or two to a uint8),
    one scale per block of 16 along the row, as a 4-bit embedding is stored."""
    rows, width, block = 4, 32, 16
    rng = np.random.default_rng(4)
    if data_type == U8:
        data = numpy_helper.from_array(rng.integers(0, 256, size=(rows, width // 2), dtype=np.uint8), "d")
        shape = [rows, width // 2]
    else:
        values = rng.integers(-8, 8, size=rows * width).tolist()
        data = helper.make_tensor("d", I4, [rows, width], values)
        shape = [rows, width]
    scales = const("s", rng.uniform(0.01, 0.1, size=(rows, width // block)), np.float32)
    inputs = [("d", data_type, shape), ("i", I64, [1]), ("s", F, [rows, width // block])]
    model = one_node(
        MS,
        "GatherBlockQuantized",
        inputs,
        [("y", F, [1, width])],
        [data, scales],
        gather_axis=0,
        quantize_axis=1,
        block_size=block,
        **({"bits": 4} if data_type == U8 else {}),
    )
    return at_opset(model, 17, 10) if data_type == I4 else model


def blocked_dequantize(data_type: int) -> onnx.ModelProto:
    """ai.onnx DequantizeLinear at opset 21: x [2, 4] with one scale (and zero point) per block of 2 along axis 1."""
    zero = helper.make_tensor("z", data_type, [2, 2], [0, 1, -1, 2])
    inputs = [("x", data_type, [2, 4]), ("s", F, [2, 2]), ("z", data_type, [2, 2])]
    scales = const("s", [[0.5, 0.25], [0.125, 1.0]], np.float32)
    model = one_node("ai.onnx", "DequantizeLinear", inputs, [("y", F, [2, 4])], [scales, zero], axis=1, block_size=2)
    return at_opset(model, 21, 10)


def dynamic_quantize_lstm() -> onnx.ModelProto:
    """com.microsoft DynamicQuantizeLSTM: sequence 1, batch 1, input 2, hidden 1, one direction."""
    hidden = 1
    names = ["x", "W", "R", "B", "", "", "", "", "ws", "wz", "rs", "rz"]
    inits = [
        const("W", np.ones((1, 2, 4 * hidden)), np.int8),
        const("R", np.ones((1, hidden, 4 * hidden)), np.int8),
        const("B", np.zeros((1, 8 * hidden)), np.float32),
        const("ws", [0.1], np.float32),
        const("wz", [0], np.int8),
        const("rs", [0.1], np.float32),
        const("rz", [0], np.int8),
    ]
    node = helper.make_node("DynamicQuantizeLSTM", names, ["y"], domain=MS, hidden_size=hidden)
    graph = helper.make_graph(
        [node],
        "probe_DynamicQuantizeLSTM",
        [helper.make_tensor_value_info("x", F, [1, 1, 2])],
        [helper.make_tensor_value_info("y", F, [1, 1, 1, hidden])],
        inits,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


PAGE = """<!doctype html><script type="module">
const bytesOf = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
const ARRAYS = { float32: Float32Array, float16: Uint16Array, int64: BigInt64Array, int32: Int32Array, int8: Int8Array,
                 uint8: Uint8Array, int4: Uint8Array, bool: Uint8Array };
const tensorOf = (ort, { type, dims, data }) => {
  const bytes = bytesOf(data), Kind = ARRAYS[type];
  return new ort.Tensor(type, new Kind(bytes.buffer, 0, bytes.byteLength / Kind.BYTES_PER_ELEMENT), dims);
};
const encode = (data) => {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text);
};
// Each probe: create a session; then, when the script sent feeds, one run of its tensor outputs, returned as bytes.
window.probe = async (bundle, provider, probes) => {
  const ort = await import(`./ort/${bundle}`);
  ort.env.wasm.wasmPaths = new URL("./ort/", location.href).href;
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = "error";
  const out = {};
  for (const { file, feeds, outputs } of probes) {
    let session;
    try {
      const bytes = new Uint8Array(await (await fetch(file)).arrayBuffer());
      session = await ort.InferenceSession.create(bytes, { executionProviders: [provider] });
    } catch (error) {
      out[file] = { created: String(error?.message ?? error) };
      continue;
    }
    out[file] = { created: "ok" };
    if (feeds) {
      try {
        const inputs = Object.fromEntries(Object.entries(feeds).map(([name, t]) => [name, tensorOf(ort, t)]));
        const results = await session.run(inputs, outputs);
        out[file].outputs = Object.fromEntries(Object.entries(results)
          .map(([name, t]) => [name, { type: t.type, data: encode(t.data) }]));
      } catch (error) {
        out[file].run = String(error?.message ?? error);
      }
    }
    await session.release();
  }
  return out;
};
window.ready = true;
</script>"""
# onnx element type -> (numpy dtype, onnxruntime-web tensor type) of the feeds the run check can make
FEED_TYPES = {
    F: (np.float32, "float32"),
    F16: (np.float16, "float16"),
    I64: (np.int64, "int64"),
    I8: (np.int8, "int8"),
    U8: (np.uint8, "uint8"),
}
OUTPUT_DTYPES = {
    "float32": np.float32,
    "float16": np.float16,
    "int64": np.int64,
    "int32": np.int32,
    "int8": np.int8,
    "uint8": np.uint8,
    "bool": np.bool_,
}


def op_type(probe: str) -> str:
    """The "domain/OpType" a probe is of: "com.microsoft/MatMulNBits (bits=8, ...)" -> "com.microsoft/MatMulNBits"."""
    return probe.split(" ", 1)[0]


def feeds_of(model: onnx.ModelProto) -> dict[str, np.ndarray] | None:
    """Deterministic feeds for the model's graph inputs (small integers: valid indices and labels; an int4
    input's values as int8, -8 to 7), or None when an input's type has no feed here."""
    rng = np.random.default_rng(0)
    feeds = {}
    for value in model.graph.input:
        kind = value.type.tensor_type.elem_type
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        if kind == I4:
            feeds[value.name] = rng.integers(-8, 8, size=shape).astype(np.int8)
            continue
        if kind not in FEED_TYPES:
            return None
        dtype = FEED_TYPES[kind][0]
        feeds[value.name] = (
            rng.standard_normal(shape).astype(dtype)
            if kind in (F, F16)
            else rng.integers(0, 2, size=shape).astype(dtype)
        )
    return feeds


def packed_int4(values: np.ndarray) -> np.ndarray:
    """int4 values (-8 to 7) two to a byte, the first in the low nibble, as ONNX and onnxruntime-web store them."""
    flat = np.append(values.reshape(-1), [0] * (values.size % 2)).astype(np.int16)
    return ((flat[0::2] & 0xF) | ((flat[1::2] & 0xF) << 4)).astype(np.uint8)


def native_run(session: ort.InferenceSession, feeds: dict[str, np.ndarray], int4: set[str]) -> list:
    """The session's outputs on `feeds`. An int4 feed goes in as an OrtValue: ortvalue_from_numpy_with_onnx_type
    takes the array's shape and reads the packed bytes from the start of its buffer, so it is given a uint8
    array of the logical shape whose first bytes are the packed values."""
    if not int4:
        return session.run(None, feeds)
    values = {}
    for name, array in feeds.items():
        if name in int4:
            buffer = np.zeros(array.shape, np.uint8)
            packed = packed_int4(array)
            buffer.reshape(-1)[: packed.size] = packed
            values[name] = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(buffer, I4)
        else:
            values[name] = ort.OrtValue.ortvalue_from_numpy(array)
    return [v.numpy() for v in session.run_with_ort_values([o.name for o in session.get_outputs()], values)]


def write_probes(folder: Path) -> dict[str, dict]:
    """probe -> {file, feeds (native arrays or None), expected (native outputs)}, each model checked by native
    onnxruntime first: a session, and a run when feeds can be made."""
    probes = {}
    for index, (name, build) in enumerate(PROBES.items()):
        path = folder / f"probe{index}.onnx"
        model = build()
        path.write_bytes(model.SerializeToString())
        feeds = feeds_of(model)
        int4 = {v.name for v in model.graph.input if v.type.tensor_type.elem_type == I4}
        try:
            session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            expected = None
            if feeds is not None:
                names = [o.name for o in session.get_outputs()]
                ran = zip(names, native_run(session, feeds, int4), strict=True)
                expected = {n: v for n, v in ran if isinstance(v, np.ndarray)}
                if not expected:  # no tensor output to compare (ZipMap's is a sequence of maps)
                    feeds = expected = None
        except Exception as exc:  # any failure: the probe is wrong, not a bundle
            sys.exit(f"the probe model of {name} is invalid for native onnxruntime {ort.__version__}: {exc}")
        probes[name] = {"file": path.name, "feeds": feeds, "expected": expected, "int4": int4}
    return probes


def encoded(feeds: dict[str, np.ndarray] | None, int4: set[str]) -> dict | None:
    """The feeds as the page makes tensors of them: type, dims and the bytes in base64 (int4: packed)."""
    if feeds is None:
        return None
    kinds = {np.dtype(d): t for d, t in FEED_TYPES.values()}
    return {
        n: {
            "type": "int4" if n in int4 else kinds[v.dtype],
            "dims": list(v.shape),
            "data": base64.b64encode((packed_int4(v) if n in int4 else v).tobytes()).decode(),
        }
        for n, v in feeds.items()
    }


def run_outcome(outcome: dict, expected: dict[str, np.ndarray] | None) -> str:
    """ "ok", "not run" (no feeds, or no tensor output), or what went wrong with the run: its error, or
    the outputs that differ from native onnxruntime's beyond 1e-3 + 1e-2 x the output's largest magnitude
    (a loose bound: it catches garbage, not rounding; accuracy_level 4 quantizes the activations to int8)."""
    if expected is None:
        return "not run"
    if "run" in outcome:
        return f"run fails: {' '.join(outcome['run'].split())[:400]}"
    wrong = []
    for name, want in expected.items():
        got_entry = outcome.get("outputs", {}).get(name)
        if got_entry is None:
            wrong.append(f"{name} missing")
            continue
        got = np.frombuffer(base64.b64decode(got_entry["data"]), dtype=OUTPUT_DTYPES[got_entry["type"]])
        want = np.asarray(want).reshape(-1)
        if got.size != want.size:
            wrong.append(f"{name} has {got.size} values, native {want.size}")
            continue
        diff = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)), initial=0.0))
        scale = float(np.max(np.abs(want.astype(np.float64)), initial=0.0))
        if not diff <= 1e-3 + 1e-2 * scale:
            wrong.append(f"{name} max abs diff {diff:.3g} (native's largest {scale:.3g})")
    return "ok" if not wrong else "wrong: " + "; ".join(wrong)


def measure() -> tuple[dict[str, list[str]], dict[str, dict[str, str]]]:
    """(runtime -> probes with no kernel, runtime -> probe -> what its run did where it did not match native)."""
    folder = Path(tempfile.mkdtemp(prefix="onnxport-kernels-"))
    (folder / "ort").symlink_to(ROOT / "node_modules" / "onnxruntime-web" / "dist")
    (folder / "index.html").write_text(PAGE)
    probes = write_probes(folder)
    sent = [
        {"file": p["file"], "feeds": encoded(p["feeds"], p["int4"]), "outputs": list(p["expected"] or [])}
        for p in probes.values()
    ]
    missing: dict[str, list[str]] = {}
    runs: dict[str, dict[str, str]] = {}
    with isolated_files(folder) as url, sync_playwright() as playwright:
        browser = chromium_driver.launch(playwright, webgpu=True)
        for runtime, (bundle, provider) in BUNDLES.items():
            page = browser.new_page()  # one bundle per page
            page.goto(f"{url}index.html")
            page.wait_for_function("window.ready === true")
            results = page.evaluate("([b, p, f]) => probe(b, p, f)", [bundle, provider, sent])
            page.close()
            missing[runtime], runs[runtime] = [], {}
            for name, probe in probes.items():
                outcome = results[probe["file"]]
                if outcome["created"] != "ok":
                    if not NO_KERNEL.search(outcome["created"]):
                        sys.exit(
                            f"{runtime} ({bundle}, {provider}): {name} failed for another reason: {outcome['created']}"
                        )
                    missing[runtime].append(name)
                    continue
                ran = run_outcome(outcome, probe["expected"])
                if ran != "ok":
                    runs[runtime][name] = ran
        browser.close()
    return missing, runs


def by_op_type(missing: dict[str, list[str]]) -> tuple[dict[str, list[str]], dict[str, dict[str, list[str]]]]:
    """The table per "domain/OpType": an operator is missing when none of its probes has a kernel; the
    operators some of whose probes have one and some not, with the forms that have none, apart."""
    whole: dict[str, list[str]] = {}
    partly: dict[str, dict[str, list[str]]] = {}
    for runtime, names in missing.items():
        absent = set(names)
        whole[runtime], partly[runtime] = [], {}
        for op in dict.fromkeys(op_type(name) for name in PROBES):
            forms = [name for name in PROBES if op_type(name) == op]
            lacking = [name for name in forms if name in absent]
            if lacking and len(lacking) == len(forms):
                whole[runtime].append(op)
            elif lacking:
                partly[runtime][op] = [name[len(op) :].strip(" ()") or "(plain)" for name in lacking]
    return whole, partly


def block(missing: dict[str, list[str]]) -> str:
    whole, partly = by_op_type(missing)
    lines = [
        BEGIN,
        "export const PROBED = Object.freeze([",
        *(f"  {json.dumps(op)}," for op in sorted({op_type(name) for name in PROBES})),
        "]);",
        "export const MISSING = Object.freeze({",
    ]
    for runtime in sorted(whole):
        lines += [f"  {runtime}: Object.freeze([", *(f"    {json.dumps(op)}," for op in whole[runtime]), "  ]),"]
    lines += [
        "});",
        "// Operators with a kernel for some of their probed forms only (which forms have none): not in MISSING.",
        "export const MISSING_FORMS = Object.freeze({",
    ]
    for runtime in sorted(partly):
        if not partly[runtime]:
            lines.append(f"  {runtime}: Object.freeze({{}}),")
            continue
        lines += [
            f"  {runtime}: Object.freeze({{",
            *(f"    {json.dumps(op)}: Object.freeze({json.dumps(forms)})," for op, forms in partly[runtime].items()),
            "  }),",
        ]
    lines += ["});", END]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="replace the measured block of web/lib/choice/kernels.js")
    action.add_argument(
        "--check", action="store_true", help="exit 1 when the measurement differs from web/lib/choice/kernels.js"
    )
    args = parser.parse_args()
    missing, runs = measure()
    for runtime, ops in missing.items():
        bundle = " / ".join(BUNDLES[runtime])
        print(f"{runtime} ({bundle}): no kernel for {len(ops)} of {len(PROBES)} probes: {', '.join(ops) or '-'}")
        for name, outcome in runs[runtime].items():
            print(f"  {name}: session created; {outcome}")
    text = KERNELS_JS.read_text()
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        sys.exit(f"{KERNELS_JS} has no measured block ({BEGIN} ... {END})")
    updated = pattern.sub(lambda _: block(missing), text)
    if args.write:
        KERNELS_JS.write_text(updated)
        print(f"wrote {KERNELS_JS.relative_to(ROOT)}")
    elif args.check and updated != text:
        sys.exit(f"{KERNELS_JS.relative_to(ROOT)} differs from this measurement: run with --write")


if __name__ == "__main__":
    main()
