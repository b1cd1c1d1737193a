// The library's tensor types and their names elsewhere. Generated from server/onnxport/dtypes.py by
// scripts/generate/js_dtypes.py: edit the table there and run the script; a test fails when this file differs.

/**
 * An element type, as onnxruntime-web names it (bool values are 0/1 in a Uint8Array, float16 values
 * are raw halves in a Uint16Array).
 * @typedef {"bool"|"uint8"|"uint16"|"uint32"|"uint64"|"int8"|"int16"|"int32"|"int64"|"float16"|"float32"|"float64"} TensorType
 */
/**
 * A tensor's values, flat, in row-major order: the typed array of its type (BigInt64Array for int64).
 * @typedef {Uint8Array|Uint16Array|Uint32Array|BigUint64Array|Int8Array|Int16Array|Int32Array|BigInt64Array|Float32Array|Float64Array} TensorData
 */

// The manifest's dtypes (numpy names) -> onnxruntime-web tensor types.
export const TENSOR_TYPES = Object.freeze({
  bool: "bool",
  uint8: "uint8",
  uint16: "uint16",
  uint32: "uint32",
  uint64: "uint64",
  int8: "int8",
  int16: "int16",
  int32: "int32",
  int64: "int64",
  float16: "float16",
  float32: "float32",
  float64: "float64",
});

// The typed array of each tensor type whose values the library reads as numbers.
export const ARRAYS = Object.freeze({
  bool: Uint8Array,
  uint8: Uint8Array,
  uint16: Uint16Array,
  uint32: Uint32Array,
  uint64: BigUint64Array,
  int8: Int8Array,
  int16: Int16Array,
  int32: Int32Array,
  int64: BigInt64Array,
  float32: Float32Array,
  float64: Float64Array,
});

// Tensor types -> V2 datatypes: what the server's JSON protocol carries.
export const DATATYPES = Object.freeze({
  bool: "BOOL",
  uint8: "UINT8",
  uint16: "UINT16",
  uint32: "UINT32",
  uint64: "UINT64",
  int8: "INT8",
  int16: "INT16",
  int32: "INT32",
  int64: "INT64",
  float32: "FP32",
  float64: "FP64",
});

// numpy's type codes in a .npy header (kind and item size) -> tensor types.
export const NPY_TYPES = Object.freeze({
  b1: "bool",
  u1: "uint8",
  u2: "uint16",
  u4: "uint32",
  u8: "uint64",
  i1: "int8",
  i2: "int16",
  i4: "int32",
  i8: "int64",
  f4: "float32",
  f8: "float64",
});
