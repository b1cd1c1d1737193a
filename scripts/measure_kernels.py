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

A session that fails with onnxruntime's "No Op registered" or "Could not find an implementation"
means no kernel; any other failure is printed and stops the script (the probe, not the bundle,
would be wrong). Prints the table; --write replaces the measured block of web/lib/choice/kernels.js;
--check exits 1 when the measurement differs from it.

Usage: .venv/bin/python scripts/measure_kernels.py [--write | --check]
"""

from __future__ import annotations

import argparse
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
from onnxport.harness.isolated_files import isolated_files

ROOT = Path(__file__).resolve().parent.parent
KERNELS_JS = ROOT / "web" / "lib" / "choice" / "kernels.js"
BEGIN, END = "// BEGIN MEASURED (scripts/measure_kernels.py --write)", "// END MEASURED"
# runtime -> (bundle, execution provider)
BUNDLES = {"wasm": ("ort.wasm.min.mjs", "wasm"), "webgpu": ("ort.webgpu.min.mjs", "webgpu"),
           "webnn": ("ort.webgpu.min.mjs", "wasm")}
NO_KERNEL = re.compile(r"No Op registered|Could not find an implementation")
F, I64, U8, I8, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32
ML, MS = "ai.onnx.ml", "com.microsoft"


def const(name: str, value, dtype) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def one_node(domain: str, op: str, inputs: list[tuple[str, int, list[int]]],
             outputs: list[tuple[str, int | None, list[int] | None]],
             initializers: list[onnx.TensorProto] = (), **attributes) -> onnx.ModelProto:
    """A model of one `domain/op` node; inputs not in `initializers` are graph inputs."""
    init_names = {t.name for t in initializers}
    node = helper.make_node(op, [name for name, _, _ in inputs], [name for name, _, _ in outputs],
                            domain="" if domain == "ai.onnx" else domain, **attributes)
    graph = helper.make_graph(
        [node], f"probe_{op}",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs if n and n not in init_names],
        [helper.make_tensor_value_info(n, t, s) if t is not None else helper.make_value_info(n, onnx.TypeProto())
         for n, t, s in outputs],
        list(initializers))
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(ML, 3), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def tree(**kw) -> dict:
    """One tree of one leaf, in TreeEnsemble* attributes."""
    return dict(nodes_treeids=[0], nodes_nodeids=[0], nodes_featureids=[0], nodes_values=[0.0], nodes_modes=["LEAF"],
                nodes_truenodeids=[0], nodes_falsenodeids=[0], **kw)


X2 = [("x", F, [1, 2])]
PROBES: dict[str, Callable[[], onnx.ModelProto]] = {
    f"{ML}/ArrayFeatureExtractor": lambda: one_node(
        ML, "ArrayFeatureExtractor", [*X2, ("i", I64, [1])], [("y", F, [1, 1])], [const("i", [0], np.int64)]),
    f"{ML}/Binarizer": lambda: one_node(ML, "Binarizer", X2, [("y", F, [1, 2])], threshold=0.0),
    f"{ML}/FeatureVectorizer": lambda: one_node(ML, "FeatureVectorizer", X2, [("y", F, [1, 2])], inputdimensions=[2]),
    f"{ML}/Imputer": lambda: one_node(ML, "Imputer", X2, [("y", F, [1, 2])], imputed_value_floats=[0.0, 0.0],
                                      replaced_value_float=float("nan")),
    f"{ML}/LabelEncoder": lambda: one_node(ML, "LabelEncoder", [("x", I64, [1])], [("y", I64, [1])],
                                           keys_int64s=[0, 1], values_int64s=[5, 6]),
    f"{ML}/LinearClassifier": lambda: one_node(
        ML, "LinearClassifier", X2, [("label", I64, [1]), ("scores", F, [1, 2])],
        coefficients=[1.0, 0.0, 0.0, 1.0], intercepts=[0.0, 0.0], classlabels_ints=[0, 1]),
    f"{ML}/LinearRegressor": lambda: one_node(
        ML, "LinearRegressor", X2, [("y", F, [1, 1])], coefficients=[1.0, 1.0], targets=1),
    f"{ML}/Normalizer": lambda: one_node(ML, "Normalizer", X2, [("y", F, [1, 2])], norm="L2"),
    f"{ML}/OneHotEncoder": lambda: one_node(
        ML, "OneHotEncoder", [("x", I64, [1])], [("y", F, [1, 2])], cats_int64s=[0, 1]),
    f"{ML}/Scaler": lambda: one_node(ML, "Scaler", X2, [("y", F, [1, 2])], offset=[0.0, 0.0], scale=[1.0, 1.0]),
    f"{ML}/SVMClassifier": lambda: one_node(
        ML, "SVMClassifier", X2, [("label", I64, [1]), ("scores", F, [1, 2])],
        kernel_type="LINEAR", kernel_params=[0.0, 0.0, 0.0], vectors_per_class=[1, 1],
        support_vectors=[1.0, 0.0, 0.0, 1.0], coefficients=[1.0, -1.0], rho=[0.0], classlabels_ints=[0, 1]),
    f"{ML}/SVMRegressor": lambda: one_node(
        ML, "SVMRegressor", X2, [("y", F, [1, 1])], kernel_type="LINEAR", kernel_params=[0.0, 0.0, 0.0], n_supports=1,
        support_vectors=[1.0, 1.0], coefficients=[1.0], rho=[0.0]),
    f"{ML}/TreeEnsembleClassifier": lambda: one_node(
        ML, "TreeEnsembleClassifier", X2, [("label", I64, [1]), ("scores", F, [1, 2])],
        **tree(class_treeids=[0, 0], class_nodeids=[0, 0], class_ids=[0, 1],
               class_weights=[0.3, 0.7], classlabels_int64s=[0, 1])),
    f"{ML}/TreeEnsembleRegressor": lambda: one_node(
        ML, "TreeEnsembleRegressor", X2, [("y", F, [1, 1])],
        **tree(target_treeids=[0], target_nodeids=[0], target_ids=[0], target_weights=[1.0], n_targets=1)),
    f"{ML}/ZipMap": lambda: one_node(ML, "ZipMap", X2, [("y", None, None)], classlabels_int64s=[0, 1]),
    "ai.onnx/ConvInteger": lambda: one_node(
        "ai.onnx", "ConvInteger", [("x", U8, [1, 1, 3, 3]), ("w", U8, [1, 1, 1, 1])],
        [("y", I32, [1, 1, 3, 3])], [const("w", [[[[2]]]], np.uint8)]),
    "ai.onnx/DequantizeLinear": lambda: one_node(
        "ai.onnx", "DequantizeLinear", [("x", U8, [2]), ("s", F, []), ("z", U8, [])],
        [("y", F, [2])], [const("s", 0.5, np.float32), const("z", 1, np.uint8)]),
    "ai.onnx/DynamicQuantizeLinear": lambda: one_node(
        "ai.onnx", "DynamicQuantizeLinear", [("x", F, [4])], [("y", U8, [4]), ("s", F, []), ("z", U8, [])]),
    "ai.onnx/MatMulInteger": lambda: one_node(
        "ai.onnx", "MatMulInteger", [("a", U8, [1, 2]), ("b", U8, [2, 2])],
        [("y", I32, [1, 2])], [const("b", [[1, 2], [3, 4]], np.uint8)]),
    "ai.onnx/QLinearConv": lambda: one_node(
        "ai.onnx", "QLinearConv",
        [("x", U8, [1, 1, 3, 3]), ("xs", F, []), ("xz", U8, []), ("w", U8, [1, 1, 1, 1]), ("ws", F, []), ("wz", U8, []),
         ("ys", F, []), ("yz", U8, [])],
        [("y", U8, [1, 1, 3, 3])],
        [const("xs", 0.1, np.float32), const("xz", 0, np.uint8), const("w", [[[[2]]]], np.uint8),
         const("ws", 0.1, np.float32), const("wz", 0, np.uint8), const("ys", 0.1, np.float32),
         const("yz", 0, np.uint8)]),
    "ai.onnx/QLinearMatMul": lambda: one_node(
        "ai.onnx", "QLinearMatMul",
        [("a", U8, [1, 2]), ("as", F, []), ("az", U8, []), ("b", U8, [2, 2]), ("bs", F, []), ("bz", U8, []),
         ("ys", F, []), ("yz", U8, [])],
        [("y", U8, [1, 2])],
        [const("as", 0.1, np.float32), const("az", 0, np.uint8), const("b", [[1, 2], [3, 4]], np.uint8),
         const("bs", 0.1, np.float32), const("bz", 0, np.uint8), const("ys", 0.1, np.float32),
         const("yz", 0, np.uint8)]),
    "ai.onnx/QuantizeLinear": lambda: one_node(
        "ai.onnx", "QuantizeLinear", [("x", F, [2]), ("s", F, []), ("z", U8, [])],
        [("y", U8, [2])], [const("s", 0.5, np.float32), const("z", 1, np.uint8)]),
    f"{MS}/BiasGelu": lambda: one_node(
        MS, "BiasGelu", [*X2, ("b", F, [2])], [("y", F, [1, 2])], [const("b", [0, 0], np.float32)]),
    f"{MS}/DequantizeLinear": lambda: one_node(
        MS, "DequantizeLinear", [("x", U8, [2]), ("s", F, []), ("z", U8, [])],
        [("y", F, [2])], [const("s", 0.5, np.float32), const("z", 1, np.uint8)]),
    f"{MS}/DynamicQuantizeLSTM": lambda: dynamic_quantize_lstm(),
    f"{MS}/DynamicQuantizeMatMul": lambda: one_node(
        MS, "DynamicQuantizeMatMul", [*X2, ("b", I8, [2, 2]), ("bs", F, [])],
        [("y", F, [1, 2])],
        [const("b", [[1, 2], [3, 4]], np.int8), const("bs", 0.1, np.float32)]),
    f"{MS}/FastGelu": lambda: one_node(MS, "FastGelu", X2, [("y", F, [1, 2])]),
    f"{MS}/Gelu": lambda: one_node(MS, "Gelu", X2, [("y", F, [1, 2])]),
    f"{MS}/MatMulIntegerToFloat": lambda: one_node(
        MS, "MatMulIntegerToFloat", [("a", U8, [1, 2]), ("b", U8, [2, 2]), ("as", F, []), ("bs", F, [])],
        [("y", F, [1, 2])],
        [const("b", [[1, 2], [3, 4]], np.uint8), const("as", 0.1, np.float32), const("bs", 0.1, np.float32)]),
    f"{MS}/QLinearAdd": lambda: one_node(
        MS, "QLinearAdd",
        [("a", U8, [2]), ("as", F, []), ("az", U8, []), ("b", U8, [2]), ("bs", F, []), ("bz", U8, []),
         ("ys", F, []), ("yz", U8, [])],
        [("y", U8, [2])],
        [const("as", 0.1, np.float32), const("az", 0, np.uint8), const("b", [1, 2], np.uint8),
         const("bs", 0.1, np.float32), const("bz", 0, np.uint8), const("ys", 0.1, np.float32),
         const("yz", 0, np.uint8)]),
    f"{MS}/QLinearGlobalAveragePool": lambda: one_node(
        MS, "QLinearGlobalAveragePool",
        [("x", U8, [1, 1, 2, 2]), ("xs", F, []), ("xz", U8, []), ("ys", F, []), ("yz", U8, [])],
        [("y", U8, [1, 1, 1, 1])],
        [const("xs", 0.1, np.float32), const("xz", 0, np.uint8), const("ys", 0.1, np.float32),
         const("yz", 0, np.uint8)],
        channels_last=0),
    f"{MS}/QLinearSigmoid": lambda: one_node(
        MS, "QLinearSigmoid", [("x", U8, [2]), ("xs", F, []), ("xz", U8, []), ("ys", F, []), ("yz", U8, [])],
        [("y", U8, [2])],
        [const("xs", 0.1, np.float32), const("xz", 0, np.uint8), const("ys", 0.1, np.float32),
         const("yz", 0, np.uint8)]),
    f"{MS}/QuantizeLinear": lambda: one_node(
        MS, "QuantizeLinear", [("x", F, [2]), ("s", F, []), ("z", U8, [])],
        [("y", U8, [2])], [const("s", 0.5, np.float32), const("z", 1, np.uint8)]),
    f"{MS}/SkipLayerNormalization": lambda: one_node(
        MS, "SkipLayerNormalization", [("x", F, [1, 1, 2]), ("skip", F, [1, 1, 2]), ("g", F, [2]), ("b", F, [2])],
        [("y", F, [1, 1, 2])],
        [const("skip", [[[0, 0]]], np.float32), const("g", [1, 1], np.float32), const("b", [0, 0], np.float32)]),
}


def dynamic_quantize_lstm() -> onnx.ModelProto:
    """com.microsoft DynamicQuantizeLSTM: sequence 1, batch 1, input 2, hidden 1, one direction."""
    hidden = 1
    names = ["x", "W", "R", "B", "", "", "", "", "ws", "wz", "rs", "rz"]
    inits = [const("W", np.ones((1, 2, 4 * hidden)), np.int8), const("R", np.ones((1, hidden, 4 * hidden)), np.int8),
             const("B", np.zeros((1, 8 * hidden)), np.float32), const("ws", [0.1], np.float32),
             const("wz", [0], np.int8), const("rs", [0.1], np.float32), const("rz", [0], np.int8)]
    node = helper.make_node("DynamicQuantizeLSTM", names, ["y"], domain=MS, hidden_size=hidden)
    graph = helper.make_graph([node], "probe_DynamicQuantizeLSTM", [helper.make_tensor_value_info("x", F, [1, 1, 2])],
                              [helper.make_tensor_value_info("y", F, [1, 1, 1, hidden])], inits)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


PAGE = """<!doctype html><script type="module">
window.probe = async (bundle, provider, files) => {
  const ort = await import(`./ort/${bundle}`);
  ort.env.wasm.wasmPaths = new URL("./ort/", location.href).href;
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = "error";
  const out = {};
  for (const file of files) {
    try {
      const bytes = new Uint8Array(await (await fetch(file)).arrayBuffer());
      const session = await ort.InferenceSession.create(bytes, { executionProviders: [provider] });
      await session.release();
      out[file] = "ok";
    } catch (error) {
      out[file] = String(error?.message ?? error);
    }
  }
  return out;
};
window.ready = true;
</script>"""


def write_probes(folder: Path) -> dict[str, str]:
    """operator type -> file name, each model checked by native onnxruntime first."""
    files = {}
    for index, (op_type, build) in enumerate(PROBES.items()):
        path = folder / f"probe{index}.onnx"
        path.write_bytes(build().SerializeToString())
        try:
            ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        except Exception as exc:  # any failure: the probe is wrong, not a bundle
            sys.exit(f"the probe model of {op_type} is invalid for native onnxruntime {ort.__version__}: {exc}")
        files[op_type] = path.name
    return files


def measure() -> dict[str, list[str]]:
    folder = Path(tempfile.mkdtemp(prefix="onnxport-kernels-"))
    (folder / "ort").symlink_to(ROOT / "node_modules" / "onnxruntime-web" / "dist")
    (folder / "index.html").write_text(PAGE)
    files = write_probes(folder)
    missing: dict[str, list[str]] = {}
    with isolated_files(folder) as url, sync_playwright() as playwright:
        browser = chromium_driver.launch(playwright, webgpu=True)
        for runtime, (bundle, provider) in BUNDLES.items():
            page = browser.new_page()  # one bundle per page
            page.goto(f"{url}index.html")
            page.wait_for_function("window.ready === true")
            results = page.evaluate("([b, p, f]) => probe(b, p, f)", [bundle, provider, list(files.values())])
            page.close()
            missing[runtime] = []
            for op_type, file in files.items():
                outcome = results[file]
                if outcome == "ok":
                    continue
                if not NO_KERNEL.search(outcome):
                    sys.exit(f"{runtime} ({bundle}, {provider}): {op_type} failed for another reason: {outcome}")
                missing[runtime].append(op_type)
        browser.close()
    return missing


def block(missing: dict[str, list[str]]) -> str:
    lines = [BEGIN, "export const PROBED = Object.freeze([", *(f"  {json.dumps(op)}," for op in sorted(PROBES)), "]);",
             "export const MISSING = Object.freeze({"]
    for runtime in sorted(missing):
        lines += [f"  {runtime}: Object.freeze([", *(f"    {json.dumps(op)}," for op in missing[runtime]), "  ]),"]
    lines += ["});", END]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="replace the measured block of web/lib/choice/kernels.js")
    action.add_argument("--check", action="store_true",
                        help="exit 1 when the measurement differs from web/lib/choice/kernels.js")
    args = parser.parse_args()
    missing = measure()
    for runtime, ops in missing.items():
        bundle = " / ".join(BUNDLES[runtime])
        print(f"{runtime} ({bundle}): no kernel for {len(ops)} of {len(PROBES)} probed: {', '.join(ops) or '-'}")
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
