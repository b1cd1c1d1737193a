"""Write web/lib/tensors/dtypes.js, the browser library's tensor types, from the server's table (onnxport/dtypes.py).

    python scripts/generate/js_dtypes.py          rewrite web/lib/tensors/dtypes.js
    python scripts/generate/js_dtypes.py --check  exit 1 if it differs from what the table gives (tests/test_dtypes.py)

The JavaScript is committed, so the library (also an npm package) needs no build step; the check keeps the
two languages from drifting.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from generated_file import write_or_check

from onnxport.dtypes import DTYPES

OUT = Path(__file__).resolve().parents[2] / "web" / "lib" / "tensors" / "dtypes.js"


def _object(pairs: list[tuple[str, str]], *, quoted: bool = True) -> str:
    values = [f"{key}: " + (f'"{value}"' if quoted else value) for key, value in pairs]
    return "Object.freeze({\n" + "".join(f"  {value},\n" for value in values) + "})"


def render() -> str:
    browser = [d for d in DTYPES if d.js_type]  # the types onnxruntime-web gives the library
    numeric = [d for d in browser if d.js_array]  # those whose values the library reads as numbers
    types = "|".join(f'"{d.js_type}"' for d in browser)
    arrays = "|".join(dict.fromkeys(d.js_array for d in numeric if d.js_array))
    # numpy's type code in a .npy header without its byte order ('<f4' -> f4, '|b1' -> b1).
    npy_codes = [(np.dtype(d.numpy).str[1:], d.js_type or "") for d in numeric]
    return f"""\
// The library's tensor types and their names elsewhere. Generated from server/onnxport/dtypes.py by
// scripts/generate/js_dtypes.py: edit the table there and run the script; a test fails when this file differs.

/**
 * An element type, as onnxruntime-web names it (bool values are 0/1 in a Uint8Array, float16 values
 * are raw halves in a Uint16Array).
 * @typedef {{{types}}} TensorType
 */
/**
 * A tensor's values, flat, in row-major order: the typed array of its type (BigInt64Array for int64).
 * @typedef {{{arrays}}} TensorData
 */

// The manifest's dtypes (numpy names) -> onnxruntime-web tensor types.
export const TENSOR_TYPES = {_object([(d.numpy, d.js_type or "") for d in browser])};

// The typed array of each tensor type whose values the library reads as numbers.
export const ARRAYS = {_object([(d.js_type or "", d.js_array or "") for d in numeric], quoted=False)};

// Tensor types -> V2 datatypes: what the server's JSON protocol carries.
export const DATATYPES = {_object([(d.js_type or "", d.v2) for d in numeric])};

// numpy's type codes in a .npy header (kind and item size) -> tensor types.
export const NPY_TYPES = {_object(npy_codes)};
"""


def main(argv: list[str]) -> int:
    return write_or_check(
        argv, OUT, render(), source="server/onnxport/dtypes.py", script="scripts/generate/js_dtypes.py", usage=__doc__
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
