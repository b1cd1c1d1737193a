// web/lib/verification/reasons.js: the browser knows every reason code Python defines (accuracy/reasons.py,
// through tests/vectors/reason_vectors.json) and renders each reason in its own words, with JavaScript's own
// number formatting; Python's words are tested in tests/accuracy/test_reasons.py.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { REASON_CODES, reasonNumber, renderReason } from "../../../../web/lib/verification/reasons.js";

const VECTORS = JSON.parse(readFileSync(new URL("../../../vectors/reason_vectors.json", import.meta.url)));

test("the browser knows the same reason codes as Python, in the same order", () => {
  assert.deepEqual([...REASON_CODES], VECTORS.codes);
});

for (const { reason, python } of VECTORS.reasons) {
  test(`renders ${reason.code}: ${python}`, () => {
    const words = renderReason(reason);
    assert.equal(typeof words, "string");
    assert.ok(words.length > 10, words);
  });
}

test("the browser's words", () => {
  const cases = [
    [
      { code: "top1_below_bound", value: 0.75, bound: 0.97, against: "fp32", limit: "budget" },
      "top-1 agreement with fp32 0.7500 < budget 0.97",
    ],
    [
      { code: "top1_below_bound", value: 0, bound: 1, against: "server_run", limit: "floor" },
      "top-1 agreement with the server 0.0000 < floor 1",
    ],
    [
      { code: "cosine_below_bound", value: "NaN", bound: 1e-5, against: "fp32", limit: "budget" },
      "min cosine similarity to fp32 NaN < budget 0.00001",
    ],
    [
      { code: "step_agreement_below_bound", value: 0.95, bound: 0.97, against: "fp32", limit: "budget" },
      "per-step top-1 agreement with fp32 0.9500 < budget 0.97",
    ],
    [
      { code: "mean_error_above_bound", value: 0.0123456, bound: 0.01, against: "fp32", limit: "budget" },
      "mean error / max |fp32| 0.0123 > budget 0.01",
    ],
    [
      {
        code: "mean_error_above_bound",
        value: 0.0095,
        bound: 0.009,
        against: "fp32",
        limit: "serving_bound",
        share: 0.9,
      },
      "mean error / max |fp32| 0.0095 > the serving bound (90% of the budget) 0.009",
    ],
    [
      { code: "max_error_above_bound", value: 1.23456e-5, bound: 0.1, against: "fp32", limit: "budget" },
      "max error / max |fp32| 0.0000123 > budget 0.1",
    ],
    [{ code: "output_missing", output: "probabilities" }, "output 'probabilities' is missing"],
    [
      { code: "shape_mismatch", output: "y", shape: [1, 3], expected_shape: [1, 2], against: "server_run" },
      "output 'y' has shape [1, 3], the server has [1, 2]",
    ],
    [
      { code: "nonfinite", output: "y", count: 1, against: "fp32" },
      "output 'y' has 1 inf/NaN values where fp32 is finite",
    ],
    [
      { code: "integer_mismatch", output: "label", count: 2, against: "server_run" },
      "integer output 'label' differs from the server in 2 elements",
    ],
    [
      {
        code: "outside_floor",
        output: "y",
        index: [0, 2],
        expected: 1,
        got: "Infinity",
        max_abs: 0.5,
        floor_abs: 1e-4,
        floor_rel: null,
      },
      "output 'y' at [0, 2]: expected 1, got Infinity (max abs 0.5; floor abs 0.0001, rel none)",
    ],
    [
      {
        code: "elementwise_diagnostic",
        max_abs: 0.5,
        output: "y",
        first_outside_floor: { output: "y", index: [0, 0], expected: 1.75, got: 2.25 },
        needed_abs: 0.5,
      },
      "element-wise vs the server's output of this file: max abs 0.5 in 'y', first outside the floor at y[0, 0]; " +
        "the element rule would have needed abs 0.5",
    ],
  ];
  for (const [reason, words] of cases) assert.equal(renderReason(reason), words, reason.code);
});

test("numbers JSON cannot hold are text; an unknown code is named", () => {
  assert.deepEqual([0.5, Infinity, -Infinity, NaN, "Infinity"].map(reasonNumber), [
    0.5,
    "Infinity",
    "-Infinity",
    "NaN",
    "Infinity",
  ]);
  assert.throws(() => renderReason({ code: "too_slow" }), /unknown reason code "too_slow"/);
});
