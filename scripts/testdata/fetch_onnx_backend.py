"""Extract a few of ONNX's own backend test directories for the import tests.

Recent onnx wheels no longer ship them; the onnx 1.18.0 wheel does. The wheel
is downloaded from the package index (not installed) and only these folders
are unpacked into tests/data/onnx-backend/.

    .venv/bin/python scripts/testdata/fetch_onnx_backend.py    (make onnx-testdata)
"""

import sys
import tempfile
import zipfile
from pathlib import Path

from pip_download import DownloadError, pip_download  # the fetchers' one pip download

WHEEL = "onnx==1.18.0"
WANTED = [
    "node/test_conv_with_strides_padding",
    "node/test_matmul_2d",
    "node/test_softmax_example",
    "pytorch-converted/test_Conv2d",
    "pytorch-converted/test_Linear",
]
TARGET = Path(__file__).resolve().parents[2] / "tests" / "data" / "onnx-backend"


def main() -> int:
    if all((TARGET / Path(w).name / "model.onnx").exists() for w in WANTED):
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        try:
            pip_download(WHEEL, tmp)  # a wheel for this interpreter, as the other fetchers take theirs
        except DownloadError as exc:
            print(f"fetch_onnx_backend: {exc}", file=sys.stderr)
            return 1
        wheel = next(Path(tmp).glob("onnx-1.18.0-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                for wanted in WANTED:
                    prefix = f"onnx/backend/test/data/{wanted}/"
                    if member.startswith(prefix) and not member.endswith("/"):
                        out = TARGET / Path(wanted).name / member[len(prefix) :]
                        out.parent.mkdir(parents=True, exist_ok=True)
                        out.write_bytes(archive.read(member))
    print(f"extracted {len(WANTED)} ONNX backend test directories into {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
