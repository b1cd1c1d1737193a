"""The user's data files (`--inputs`, `--calibration`) held to a budget by the sizes they declare, before
anything is decompressed or allocated.

A .npz is a zip: 4 MB of deflated zeros unpack to 4 GiB, and numpy allocates an array by the shape its .npy
header declares, before reading the data. So each member's size in the zip's central directory and its .npy
header (shape x dtype) are read first (the header is the member's first bytes), and their sum is held to the
budget (setting import_max_data_bytes); a header that declares more data than its member holds is refused too.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import IO

import numpy as np
from numpy.lib import format as npy_format

from onnxport.errors import UsageError

DATA_BUDGET = 1 << 30  # 1 GiB: ~1,300 images of 224 x 224 x 3 float32; held in memory with the outputs on them
SETTING = "import_max_data_bytes"


class DataBudget:
    """What one option's files may unpack to, spent as each file or member is declared."""

    def __init__(self, option: str, limit: int = DATA_BUDGET):
        self.option, self.limit, self.spent = option, limit, 0

    def spend(self, what: str, size: int) -> None:
        self.spent += size
        if self.spent > self.limit:
            so_far = f" ({self.spent:,} bytes with the files before it)" if self.spent > size else ""
            raise UsageError(
                f"{self.option} {what}: declares {size:,} bytes of data{so_far}, more than the import's "
                f"data budget of {self.limit:,} bytes (setting {SETTING}); nothing was decompressed"
            )

    def npz(self, path: Path) -> None:
        """Each member of the .npz by its declared sizes, before np.load decompresses any."""
        try:
            with zipfile.ZipFile(path) as archive:
                for member in archive.infolist():
                    what = f"{path} member {member.filename!r}"
                    self.spend(what, member.file_size)
                    if member.filename.endswith(".npy"):
                        with archive.open(member) as handle:
                            _check_header(handle, what, member.file_size, self.limit)
        except (OSError, ValueError, zipfile.BadZipFile) as exc:
            raise UsageError(f"{self.option} {path}: not a readable .npz file: {exc}") from exc

    def npy(self, path: Path) -> None:
        size = path.stat().st_size
        self.spend(str(path), size)
        try:
            with path.open("rb") as handle:
                _check_header(handle, str(path), size, self.limit)
        except (OSError, ValueError) as exc:
            raise UsageError(f"{self.option} {path}: not a readable .npy file: {exc}") from exc

    def files(self, paths: list[Path]) -> None:
        """Files read whole (test_data_set_*/input_K.pb): their sizes on disk."""
        for path in paths:
            self.spend(str(path), path.stat().st_size)


def _check_header(handle: IO[bytes], what: str, stored: int, limit: int) -> None:
    """The .npy header's shape x dtype against the budget and against the bytes its member holds."""
    version = npy_format.read_magic(handle)
    read_header = npy_format.read_array_header_1_0 if version == (1, 0) else npy_format.read_array_header_2_0
    shape, _, dtype = read_header(handle)  # numpy's own reader of the header alone
    header = handle.tell() if hasattr(handle, "tell") else 0
    declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if declared > limit:
        raise UsageError(
            f"{what}: its header declares a {dtype} array of shape {list(shape)}, {declared:,} bytes, "
            f"more than the import's data budget of {limit:,} bytes (setting {SETTING}); "
            "nothing was decompressed"
        )
    if dtype.itemsize and header + declared > stored:
        raise UsageError(
            f"{what}: its header declares a {dtype} array of shape {list(shape)}, {declared:,} bytes, "
            f"but it holds {max(stored - header, 0):,}; the file is truncated or damaged"
        )
