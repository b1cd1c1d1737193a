"""Write tests/vectors/runtime_vectors.json: the browser runtimes as the Python side names them.

accuracy/browser_runtimes.py's rows (key, provider, checked, gpu) in their order, then runtimes.js's `server` row
(no provider: the reference, not a browser runtime), the browser runtimes' names and the checked ones in the order
`onnxport check` runs them. tests/accuracy/test_browser_runtimes.py fails when the file is not what this script
writes now; tests/js/lib/choice/test_runtime_vectors.mjs holds web/lib/choice/runtimes.js to it.
Run: .venv/bin/python tests/vectors/make_runtime_vectors.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from onnxport.accuracy import browser_runtimes

OUT = Path(__file__).with_name("runtime_vectors.json")
SERVER = {"key": "server", "provider": None, "checked": False, "gpu": False}


def build() -> dict[str, Any]:
    rows = [
        {"key": r.key, "provider": r.provider, "checked": r.checked, "gpu": r.gpu} for r in browser_runtimes.RUNTIMES
    ]
    return {
        "about": "Written by tests/vectors/make_runtime_vectors.py from accuracy/browser_runtimes.py.",
        "rows": [*rows, SERVER],
        "browser": list(browser_runtimes.NAMES),
        "checked": list(browser_runtimes.CHECKED),
    }


def main() -> None:
    OUT.write_text(json.dumps(build(), indent=2) + "\n")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
