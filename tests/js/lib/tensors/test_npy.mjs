// web/lib/tensors/npy.js on files numpy itself writes (np.save, np.savez, np.savez_compressed, made here
// by the project's Python), and on broken ones: each refusal names the file or key and why.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { NpyError, readNpy, readNpz } from "../../../../web/lib/tensors/npy.js";

const PYTHON = new URL("../../../../.venv/bin/python", import.meta.url).pathname;
const folder = mkdtempSync(join(tmpdir(), "onnxport-npy-"));
after(() => rmSync(folder, { recursive: true, force: true }));

execFileSync(existsSync(PYTHON) ? PYTHON : "python3", [
  "-c",
  `
import numpy as np, sys
out = sys.argv[1]
np.save(f"{out}/f32.npy", np.arange(6, dtype=np.float32).reshape(2, 3) / 4)
np.save(f"{out}/i64.npy", np.array([2**60 + 1, -3], dtype=np.int64))
np.save(f"{out}/bool.npy", np.array([[True, False], [False, True]]))
np.save(f"{out}/scalar.npy", np.float64(2.5))
np.save(f"{out}/u8.npy", np.arange(5, dtype=np.uint8))
np.save(f"{out}/f16.npy", np.zeros(2, dtype=np.float16))
np.save(f"{out}/big.npy", np.zeros(2, dtype=">f4"))
np.save(f"{out}/fortran.npy", np.asfortranarray(np.zeros((2, 3), dtype=np.float32)))
np.savez(f"{out}/stored.npz", x=np.ones((1, 4), dtype=np.float32), mask=np.array([True, False]))
np.savez_compressed(f"{out}/deflated.npz", ids=np.arange(100, dtype=np.int64).reshape(4, 25), x=np.linspace(0, 1, 50, dtype=np.float32))
`,
  folder,
]);
const file = (name) => readFileSync(join(folder, name));

test("np.save of float32, int64 (beyond 2^53), bool, a scalar and uint8", () => {
  const f = readNpy(file("f32.npy"));
  assert.deepEqual([f.type, f.dims, [...f.data]], ["float32", [2, 3], [0, 0.25, 0.5, 0.75, 1, 1.25]]);
  const i = readNpy(file("i64.npy"));
  assert.deepEqual([i.type, [...i.data]], ["int64", [2n ** 60n + 1n, -3n]]);
  const b = readNpy(file("bool.npy"));
  assert.deepEqual([b.type, b.dims, [...b.data]], ["bool", [2, 2], [1, 0, 0, 1]]);
  const s = readNpy(file("scalar.npy"));
  assert.deepEqual([s.type, s.dims, [...s.data]], ["float64", [], [2.5]]);
  assert.deepEqual([...readNpy(file("u8.npy")).data], [0, 1, 2, 3, 4]);
});

test("np.savez (stored) and np.savez_compressed (deflated, zip64 headers) give every key", async () => {
  const stored = await readNpz(file("stored.npz"));
  assert.deepEqual(Object.keys(stored).sort(), ["mask", "x"]);
  assert.deepEqual(
    [stored.x.dims, [...stored.x.data]],
    [
      [1, 4],
      [1, 1, 1, 1],
    ],
  );
  assert.deepEqual([stored.mask.type, [...stored.mask.data]], ["bool", [1, 0]]);
  const deflated = await readNpz(file("deflated.npz"));
  assert.deepEqual(deflated.ids.dims, [4, 25]);
  assert.equal(deflated.ids.data[99], 99n);
  assert.equal(deflated.x.data.length, 50);
  assert.ok(Math.abs(deflated.x.data[49] - 1) < 1e-7);
});

test("unsupported dtypes and layouts are refused with what to do", () => {
  assert.throws(
    () => readNpy(file("f16.npy"), "h.npy"),
    (e) =>
      e instanceof NpyError && /h\.npy: dtype "<f2" is not supported \(float16: save it as float32\)/.test(e.message),
  );
  assert.throws(() => readNpy(file("big.npy")), /dtype ">f4" is not supported \(big-endian/);
  assert.throws(() => readNpy(file("fortran.npy")), /Fortran order; save np\.ascontiguousarray/);
});

test("a file that is not numpy's, or is cut short, is named in the message", async () => {
  assert.throws(() => readNpy(new TextEncoder().encode("hello, world"), "x.npy"), /x\.npy: not a \.npy file/);
  const cut = file("f32.npy").subarray(0, file("f32.npy").length - 4);
  assert.throws(
    () => readNpy(cut, "cut.npy"),
    /cut\.npy: shape \[2, 3\] of <f4 needs 24 bytes of data, the file has 20/,
  );
  await assert.rejects(readNpz(file("f32.npy"), "a.npz"), /a\.npz: not an \.npz file/);
});
