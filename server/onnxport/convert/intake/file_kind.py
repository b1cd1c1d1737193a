"""What a file given as a model is, when it is no ONNX model: read off its first bytes (its magic number).

Before this, a wheel or a PNG given to `onnxport import` got "protobuf parse failed: Error parsing message
with type 'onnx.ModelProto'", or worse "Wire format was corrupt": true, and no help. Saying "a PNG image" or
"a zip archive holding a PyTorch checkpoint" tells the user which file they gave and what to give instead.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

# (leading bytes, what a file that starts with them is). Checked in order; the longest prefixes first where
# they share a start.
MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"BZh", "a bzip2 archive"),
    (b"\xfd7zXZ\x00", "an xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"\x28\xb5\x2f\xfd", "a zstd archive"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file (a Keras .h5 model?)"),
    (b"\x93NUMPY", "a NumPy .npy array (give data with --inputs or --calibration)"),
    (b"\x7fELF", "an ELF executable or library"),
)
ZIP = b"PK\x03\x04"
EMPTY_ZIP = b"PK\x05\x06"


def describe(path: Path, head: bytes) -> str | None:
    """What the file is, in words, when its first bytes say it is something other than an ONNX model; None
    when they say nothing (an ONNX model, or bytes no known format starts with)."""
    for magic, what in MAGIC:
        if head.startswith(magic):
            return what
    if head.startswith((ZIP, EMPTY_ZIP)):
        return _zip(path)
    if head[4:8] == b"TFL3":
        return "a TensorFlow Lite model"
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "a Python pickle (a PyTorch or scikit-learn model saved with pickle?)"
    if _safetensors(head):
        return "a safetensors file (weights without a graph)"
    return _text(head)


def _zip(path: Path) -> str:
    """A zip archive, and what kind when its file names say: a wheel, a PyTorch checkpoint, a NumPy .npz."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError):
        return "a zip archive"
    if any(".dist-info/" in n for n in names):
        return "a Python wheel (a zip archive)"
    if any(n.endswith("data.pkl") for n in names):
        return "a PyTorch checkpoint (a zip archive; export the model with torch.onnx.export, or write a recipe)"
    if names and all(n.endswith(".npy") for n in names):
        return "a NumPy .npz archive (give data with --inputs or --calibration)"
    return "a zip archive"


def _safetensors(head: bytes) -> bool:
    """safetensors: an 8-byte little-endian header length, then the header's JSON object."""
    return len(head) > 9 and head[8:10] in (b'{"', b"{ ") and 2 <= int.from_bytes(head[:8], "little") < 100_000_000


def _text(head: bytes) -> str | None:
    """Text (JSON, XML, HTML, a script...): an ONNX model is binary protobuf, whose first bytes are not text."""
    sample = head[:512]
    for cut in range(4):  # the sample may end inside a character of several bytes
        try:
            text = sample[: len(sample) - cut].decode("utf-8")
            break
        except UnicodeDecodeError:
            continue
    else:
        return None
    if not text.strip() or any(c < " " and c not in "\t\n\r\f" for c in text):
        return None
    start = text.lstrip().lower()
    if start.startswith(("{", "[")):
        return "a JSON document"
    if start.startswith(("<!doctype html", "<html")):
        return "an HTML page (a download that saved a web page?)"
    if start.startswith("<"):
        return "an XML document"
    return "a text file"
