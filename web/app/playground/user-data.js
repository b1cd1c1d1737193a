// A user's own inputs for any model, checked against the model's inputs (the manifest's
// name, dtype, shape) before anything runs, so that a mistake gets a message naming the input,
// what the model expects and what came, not an error from deep inside onnxruntime.
//
// Pasted JSON: an object with one key per model input; each value is a nested array (its
// nesting gives the shape) or {"dims": [...], "data": [...]} (data flat, row-major). Numbers for
// float and integer inputs (int64 may also be a string of digits, for values beyond 2^53),
// true/false (or 0/1) for bool inputs. A model with one input also takes the bare array.
//   {"features": [[5.1, 3.5, 1.4, 0.2]]}
//   {"input_ids": {"dims": [1, 3], "data": [101, 2023, 102]}, "attention_mask": [[1, 1, 1]]}
// Files: an .npz with one key per input (np.savez(f, input_ids=..., attention_mask=...)), or an
// .npy for a model with one input. Arrays must have the input's dtype: nothing is cast silently.
import { tensor } from "../../lib/index.js";
import { ARRAYS, readNpy, readNpz, tensorType } from "../../lib/internal.js";

export class UserDataError extends Error {}

const shapeText = (shape) => `[${shape.map((d) => (d === -1 || d === null ? "?" : d)).join(", ")}]`;

// Checks feeds ({name: tensor}) against model.inputs; returns them in the model's input order.
export function checkFeeds(feeds, model, source) {
  const names = model.inputs.map((i) => i.name);
  const extra = Object.keys(feeds).filter((k) => !names.includes(k));
  if (extra.length)
    throw new UserDataError(
      `${source}: ${extra.map((k) => JSON.stringify(k)).join(", ")} ${extra.length === 1 ? "is not an input" : "are not inputs"} of ${model.name}; its inputs: ${names.join(", ")}`,
    );
  const missing = names.filter((n) => !(n in feeds));
  if (missing.length)
    throw new UserDataError(
      `${source}: no value for input ${missing.map((k) => JSON.stringify(k)).join(", ")} of ${model.name}; its inputs: ${names.join(", ")}`,
    );
  const named = new Map(); // dimension name -> [size, where it was set]
  const checked = {};
  for (const input of model.inputs) {
    const t = feeds[input.name];
    const where = `${source}: input ${JSON.stringify(input.name)}`;
    const expected = tensorType(input.dtype);
    if (t.type !== expected)
      throw new UserDataError(
        `${where}: expected dtype ${expected}, got ${t.type}${t.type.startsWith("float") && expected.startsWith("float") ? ` (save it with .astype(np.${expected}))` : ""}`,
      );
    if (input.shape) {
      if (t.dims.length !== input.shape.length) {
        throw new UserDataError(
          `${where}: expected ${input.shape.length} dimensions ${shapeText(input.shape)}, got ${t.dims.length}: ${shapeText(t.dims)}`,
        );
      }
      input.shape.forEach((d, axis) => {
        const got = t.dims[axis];
        if (typeof d === "number" && d > 0 && got !== d) {
          throw new UserDataError(
            `${where}: dimension ${axis} must be ${d} (shape ${shapeText(input.shape)}), got ${got}: ${shapeText(t.dims)}`,
          );
        }
        if (typeof d === "string") {
          const seen = named.get(d);
          if (seen && seen[0] !== got) {
            throw new UserDataError(
              `${where}: dimension ${axis} (${d}) is ${got}, but ${d} is ${seen[0]} in ${seen[1]}: inputs sharing a named dimension must agree`,
            );
          }
          named.set(d, [got, `input ${JSON.stringify(input.name)}`]);
        }
      });
    }
    checked[input.name] = t;
  }
  return checked;
}

// A nested array -> [dims, flat values]; ragged nesting is an error naming where.
function flatten(value, where) {
  const dims = [];
  for (let v = value; Array.isArray(v); v = v[0]) dims.push(v.length);
  const flat = [];
  const walk = (v, depth, path) => {
    if (depth === dims.length) {
      if (Array.isArray(v))
        throw new UserDataError(`${where}: ragged nesting at [${path.join(", ")}]: expected a value, got a list`);
      flat.push(v);
      return;
    }
    if (!Array.isArray(v) || v.length !== dims[depth]) {
      throw new UserDataError(
        `${where}: ragged nesting at [${path.join(", ")}]: expected a list of ${dims[depth]}, got ${Array.isArray(v) ? `a list of ${v.length}` : JSON.stringify(v)}`,
      );
    }
    v.forEach((item, i) => walk(item, depth + 1, [...path, i]));
  };
  walk(value, 0, []);
  return [dims, flat];
}

// One value of the JSON -> the element for a tensor of `type`, or an error naming its index.
function element(type, v, where, index) {
  const bad = (what) => new UserDataError(`${where}: element ${index} is ${JSON.stringify(v)}; ${what}`);
  if (type === "bool") {
    if (v === true || v === 1) return 1;
    if (v === false || v === 0) return 0;
    throw bad("a bool input takes true/false (or 0/1)");
  }
  if (type.endsWith("int64")) {
    if ((typeof v === "number" && Number.isSafeInteger(v)) || (typeof v === "string" && /^-?\d+$/.test(v)))
      return BigInt(v);
    throw bad(`an ${type} input takes integers (a string of digits beyond 2^53)`);
  }
  if (type.startsWith("float")) {
    if (typeof v === "number") return v;
    throw bad(`a ${type} input takes numbers`);
  }
  if (typeof v === "number" && Number.isInteger(v)) {
    const probe = new ARRAYS[type](1);
    probe[0] = v;
    if (probe[0] === v) return v;
    throw bad(`out of range for ${type}`);
  }
  throw bad(`a ${type} input takes integers`);
}

function jsonTensor(value, input, source) {
  const where = `${source}: input ${JSON.stringify(input.name)}`;
  const type = tensorType(input.dtype);
  let dims, flat;
  if (value && !Array.isArray(value) && typeof value === "object") {
    if (!Array.isArray(value.dims) || !Array.isArray(value.data))
      throw new UserDataError(
        `${where}: expected a nested array or {"dims": [...], "data": [...]}, got an object with keys ${Object.keys(value).join(", ") || "none"}`,
      );
    dims = value.dims;
    if (dims.some((d) => !Number.isInteger(d) || d < 0))
      throw new UserDataError(`${where}: dims must be non-negative integers, got ${JSON.stringify(dims)}`);
    flat = value.data;
    const count = dims.reduce((a, b) => a * b, 1);
    if (flat.length !== count)
      throw new UserDataError(`${where}: dims ${shapeText(dims)} hold ${count} values, data has ${flat.length}`);
  } else if (Array.isArray(value)) {
    [dims, flat] = flatten(value, where);
  } else {
    flat = [value];
    dims = [];
  }
  const data = new ARRAYS[type](flat.length);
  flat.forEach((v, i) => {
    data[i] = element(type, v, where, i);
  });
  return tensor(type, dims, data);
}

// Pasted JSON text -> checked feeds.
export function feedsFromJson(text, model) {
  const source = "the pasted JSON";
  let body;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new UserDataError(`${source} is not JSON: ${error.message}`);
  }
  if (Array.isArray(body) && model.inputs.length === 1) body = { [model.inputs[0].name]: body };
  if (!body || typeof body !== "object" || Array.isArray(body)) {
    throw new UserDataError(
      `${source}: expected an object with one key per input (${model.inputs.map((i) => i.name).join(", ")}), got ${Array.isArray(body) ? "a list" : JSON.stringify(body)}`,
    );
  }
  const feeds = {};
  for (const [name, value] of Object.entries(body)) {
    const input = model.inputs.find((i) => i.name === name);
    feeds[name] = input ? jsonTensor(value, input, source) : null;
  }
  return checkFeeds(feeds, model, source);
}

// An uploaded .npy or .npz (its name and bytes) -> checked feeds.
export async function feedsFromFile(name, bytes, model) {
  const source = name;
  if (/\.npz$/i.test(name)) return checkFeeds(await readNpz(bytes, source), model, source);
  if (/\.npy$/i.test(name)) {
    if (model.inputs.length !== 1) {
      throw new UserDataError(
        `${source}: ${model.name} has ${model.inputs.length} inputs (${model.inputs.map((i) => i.name).join(", ")}): give an .npz with one key per input`,
      );
    }
    return checkFeeds({ [model.inputs[0].name]: readNpy(bytes, source) }, model, source);
  }
  throw new UserDataError(`${source}: expected an .npy or .npz file (numpy's np.save / np.savez)`);
}
