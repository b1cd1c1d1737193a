// The words the models, model and playground pages print (issue 44): a float32 at its shortest, a variant's precision
// from what its file stores, and a reason cut to its first clause (the whole text stays on demand).
import assert from "node:assert/strict";
import { test } from "node:test";

import { float32Text } from "../../../web/app/ui.js";
import { precisionText, shortReason } from "../../../web/app/variant-text.js";

test("a float32 is printed with the fewest digits that read back as the same float32", () => {
  const widened = Math.fround(13.4); // what a Float32Array gives: 13.399999618530273
  assert.equal(String(widened), "13.399999618530273");
  assert.equal(float32Text(widened), "13.4");
  for (const value of [0.1106, 0.08172, 556.7, 1e-7, -3.25, 16777217, 3.4028234663852886e38, 1.401298464324817e-45]) {
    const f = Math.fround(value);
    const text = float32Text(f);
    assert.equal(Math.fround(Number(text)), f, `${text} does not read back as ${f}`);
    assert.ok(text.replace(/^-|e.*$|\./g, "").replace(/^0+/, "").length <= 9, `${text} is longer than 9 digits`);
  }
  assert.equal(float32Text(7), "7");
  assert.equal(float32Text(NaN), "NaN");
});

test("a variant's precision is the 4 bits its file holds, else what it computes; no file, no precision", () => {
  const int4 = {
    precision: "int8",
    arithmetic: "int8",
    file: "a.onnx",
    settings: { weights_4bit: 33, weights_8bit: 5 },
  };
  assert.equal(precisionText(int4), "int4");
  assert.equal(precisionText({ ...int4, settings: { weights_4bit: 0, weights_8bit: 12 } }), "int8");
  assert.equal(
    precisionText({ precision: "fp32", arithmetic: "int8", file: "q.onnx", label: "original (int8)" }),
    "int8",
  );
  assert.equal(precisionText({ precision: "int8", status: "skipped", reason: "nothing to store in 4 bits" }), "-");
});

test("a reason is cut to its first clause, outside brackets, without its model and variant", () => {
  assert.equal(
    shortReason(
      "nothing to quantize: no operator that onnxruntime quantizes (dynamic int8: Attention, Conv); " +
        "the model has 1 operator types: ai.onnx.ml/TreeEnsembleClassifier",
    ),
    "nothing to quantize",
  );
  const refused =
    "cubic fp16: onnxruntime 1.30.0 cannot load it: [ONNXRuntimeError] : 1 : FAIL : Non-zero status code " +
    "returned while running Resize node. Name:'resize' Status Message: ScalesValidation 'Cubic' mode only supports: * 2-D inputs";
  assert.equal(shortReason(refused, "cubic fp16: "), "onnxruntime 1.30.0 cannot load it");
  assert.equal(
    shortReason("[ONNXRuntimeError] : 10 : INVALID_GRAPH : This is an invalid model."),
    "onnxruntime INVALID_GRAPH",
  );
  assert.equal(shortReason("first line\nsecond line"), "first line");
  const long = "word ".repeat(40).trim();
  const cut = shortReason(long);
  assert.ok(cut.length <= 90 && cut.endsWith("…"), cut);
  assert.equal(
    shortReason("min cosine similarity to fp32 0.95000 < the budget 0.98"),
    "min cosine similarity to fp32 0.95000 < the budget 0.98",
  );
});
