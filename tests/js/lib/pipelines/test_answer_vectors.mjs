// web/lib/pipelines/answers.js against Python's answer steps (server/onnxport/pipelines/answers.py) on the shared
// cases (tests/vectors/answer_vectors.json, written by tests/vectors/make_answer_vectors.py): every op, chains of
// them, a mean pool over a padded batch, CTC. tests/pipelines/test_answer_vectors.py holds the file to Python's
// answers of today.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { answers } from "../../../../web/lib/pipelines/answers.js";

const VECTORS = JSON.parse(readFileSync(new URL("../../../vectors/answer_vectors.json", import.meta.url), "utf8"));

const tensor = ({ dims, data, type }) => ({
  type,
  dims,
  data: type === "int64" ? BigInt64Array.from(data.map(BigInt)) : Float32Array.from(data),
});

// numpy's assert_allclose: the same nesting, and |got - want| <= atol + rtol * |want| at every element.
function assertClose(got, want, { rtol, atol = 0 }, label) {
  if (Array.isArray(want)) {
    assert.ok(Array.isArray(got) && got.length === want.length, `${label}: ${JSON.stringify(got)} has another shape`);
    want.forEach((w, i) => assertClose(got[i], w, { rtol, atol }, label));
    return;
  }
  assert.ok(Math.abs(got - want) <= atol + rtol * Math.abs(want), `${label}: ${got}, Python ${want}`);
}

test("every answer step gives Python's answer", () => {
  for (const { spec, output, feeds, answers: want } of VECTORS) {
    const label = JSON.stringify(spec.steps);
    const got = answers(
      spec,
      tensor(output),
      Object.fromEntries(Object.entries(feeds).map(([name, t]) => [name, tensor(t)])),
    );
    assert.equal(got.length, want.length, label);
    want.forEach((w, i) => {
      const g = got[i];
      if (Array.isArray(w) && w.length && typeof w[0] === "object") {
        assert.deepEqual(
          g.map((a) => a.label),
          w.map((a) => a.label),
          label,
        );
        assertClose(
          g.map((a) => a.score),
          w.map((a) => a.score),
          { rtol: 1e-6 },
          label,
        );
      } else if (w !== null && typeof w === "object" && !Array.isArray(w)) {
        assert.equal(g.label, w.label, label);
        assertClose(g.score, w.score, { rtol: 1e-6, atol: 1e-12 }, label);
      } else if (typeof w === "string") {
        assert.equal(g, w, label);
      } else {
        assertClose(g, w, { rtol: 1e-5, atol: 1e-6 }, label);
      }
    });
  }
});
