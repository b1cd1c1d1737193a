// numpy's .npy and .npz files read into plain tensors ({type, dims, data}), in the browser and in
// Node: the playground takes a user's own arrays as numpy saves them (np.save, np.savez,
// np.savez_compressed). Format: numpy.lib.format (version 1.0 to 3.0); .npz is a zip of .npy
// files, stored or deflated (read with DecompressionStream, which both have).
import { ARRAYS, NPY_TYPES } from "./dtypes.js";
import { tensor } from "./tensors.js";

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY

export class NpyError extends Error {}

function bytesOf(input) {
  if (input instanceof ArrayBuffer) return new Uint8Array(input);
  // A plain view even of a Node Buffer, whose slice() shares memory where Uint8Array's copies.
  if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  throw new NpyError("expected the file's bytes (an ArrayBuffer or a Uint8Array)");
}

// The header's Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
function parseHeader(text, label) {
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(text);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(text);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(text);
  if (!descr || !fortran || !shape)
    throw new NpyError(`${label}: its .npy header is not numpy's (descr, fortran_order, shape): ${text.trim()}`);
  const dims = shape[1]
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map(Number);
  if (dims.some((d) => !Number.isInteger(d) || d < 0))
    throw new NpyError(`${label}: bad shape (${shape[1]}) in its .npy header`);
  return { descr: descr[1], fortranOrder: fortran[1] === "True", dims };
}

function typeOf(descr, label) {
  const order = descr[0];
  const code = descr.slice(1);
  const type = NPY_TYPES[code];
  if (!type || !"<|=".includes(order)) {
    const hint =
      code === "f2"
        ? " (float16: save it as float32)"
        : order === ">"
          ? " (big-endian: save it little-endian, e.g. x.astype(x.dtype.newbyteorder('<')))"
          : "";
    throw new NpyError(
      `${label}: dtype ${JSON.stringify(descr)} is not supported${hint}; supported: ${Object.values(NPY_TYPES).join(", ")}`,
    );
  }
  return type;
}

// One .npy file -> {type, dims, data}; label names it in errors (a file or an .npz key).
export function readNpy(input, label = "the .npy file") {
  const bytes = bytesOf(input);
  if (bytes.length < 10 || MAGIC.some((b, i) => bytes[i] !== b))
    throw new NpyError(`${label}: not a .npy file (it does not start with \\x93NUMPY)`);
  const major = bytes[6];
  if (![1, 2, 3].includes(major))
    throw new NpyError(`${label}: .npy format version ${major}.${bytes[7]} is not supported (1.0 to 3.0 are)`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const start = major === 1 ? 10 : 12;
  if (start + headerLength > bytes.length) throw new NpyError(`${label}: truncated .npy header`);
  const decoder = new TextDecoder(major === 3 ? "utf-8" : "latin1");
  const header = parseHeader(decoder.decode(bytes.subarray(start, start + headerLength)), label);
  if (header.fortranOrder)
    throw new NpyError(`${label}: the array is in Fortran order; save np.ascontiguousarray(x) instead`);
  const type = typeOf(header.descr, label);
  const Array_ = ARRAYS[type];
  const count = header.dims.reduce((a, b) => a * b, 1);
  const offset = start + headerLength;
  const size = count * Array_.BYTES_PER_ELEMENT;
  if (bytes.length - offset !== size) {
    throw new NpyError(
      `${label}: shape [${header.dims.join(", ")}] of ${header.descr} needs ${size} bytes of data, the file has ${bytes.length - offset}`,
    );
  }
  // A copy: the data's offset in the file need not be aligned for its typed array.
  const data = new Array_(bytes.slice(offset, offset + size).buffer);
  return tensor(type, header.dims, data);
}

// The zip's entries: [{name, method, compressedSize, offset}] from its central directory.
function zipEntries(bytes, label) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let end = -1;
  for (let i = bytes.length - 22; i >= Math.max(0, bytes.length - 22 - 0xffff); i--) {
    if (view.getUint32(i, true) === 0x06054b50) {
      end = i;
      break;
    }
  }
  if (end < 0) throw new NpyError(`${label}: not an .npz file (no zip directory at its end)`);
  let count = view.getUint16(end + 10, true);
  let at = view.getUint32(end + 16, true);
  if (count === 0xffff || at === 0xffffffff) {
    // zip64: the end-of-directory locator sits just before the end record.
    const locator = end - 20;
    if (locator < 0 || view.getUint32(locator, true) !== 0x07064b50)
      throw new NpyError(`${label}: zip64 directory without its locator`);
    const record = Number(view.getBigUint64(locator + 8, true));
    count = Number(view.getBigUint64(record + 32, true));
    at = Number(view.getBigUint64(record + 48, true));
  }
  const decoder = new TextDecoder();
  const entries = [];
  for (let k = 0; k < count; k++) {
    if (view.getUint32(at, true) !== 0x02014b50) throw new NpyError(`${label}: damaged zip directory (entry ${k})`);
    const method = view.getUint16(at + 10, true);
    let compressedSize = view.getUint32(at + 20, true);
    let size = view.getUint32(at + 24, true);
    const nameLength = view.getUint16(at + 28, true);
    const extraLength = view.getUint16(at + 30, true);
    const commentLength = view.getUint16(at + 32, true);
    let offset = view.getUint32(at + 42, true);
    const name = decoder.decode(bytes.subarray(at + 46, at + 46 + nameLength));
    // zip64 extra field (id 1): the 8-byte values of the fields set to 0xffffffff, in order.
    for (let e = at + 46 + nameLength; e < at + 46 + nameLength + extraLength; ) {
      const id = view.getUint16(e, true);
      const length = view.getUint16(e + 2, true);
      if (id === 1) {
        let p = e + 4;
        if (size === 0xffffffff) {
          size = Number(view.getBigUint64(p, true));
          p += 8;
        }
        if (compressedSize === 0xffffffff) {
          compressedSize = Number(view.getBigUint64(p, true));
          p += 8;
        }
        if (offset === 0xffffffff) offset = Number(view.getBigUint64(p, true));
      }
      e += 4 + length;
    }
    entries.push({ name, method, compressedSize, size, offset });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

async function inflate(data) {
  const stream = new Blob([data]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

// An .npz file -> {key: tensor}, keys as np.savez names them (without ".npy").
export async function readNpz(input, label = "the .npz file") {
  const bytes = bytesOf(input);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const arrays = {};
  for (const entry of zipEntries(bytes, label)) {
    if (!entry.name.endsWith(".npy"))
      throw new NpyError(`${label}: entry ${JSON.stringify(entry.name)} is not an .npy array`);
    const key = entry.name.slice(0, -4);
    const where = `${label}, key ${JSON.stringify(key)}`;
    if (view.getUint32(entry.offset, true) !== 0x04034b50) throw new NpyError(`${where}: damaged zip entry`);
    const start = entry.offset + 30 + view.getUint16(entry.offset + 26, true) + view.getUint16(entry.offset + 28, true);
    const raw = bytes.subarray(start, start + entry.compressedSize);
    let data;
    if (entry.method === 0) data = raw;
    else if (entry.method === 8) data = await inflate(raw);
    else
      throw new NpyError(
        `${where}: zip compression method ${entry.method} is not supported (stored and deflate are: np.savez, np.savez_compressed)`,
      );
    arrays[key] = readNpy(data, where);
  }
  return arrays;
}
