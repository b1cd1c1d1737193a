"""serving/http/memory.py: what a worker thread frees after a large body goes back to the system.

The slow fuzz test (test_fuzz.py) measures it on a real server under hostile traffic; this checks the
mechanism in a fresh interpreter in a second: once a large block has been freed, glibc's default raises
its mmap threshold, and a thread's later 24 MB buffer stays in the thread's arena after it is freed.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys, threading
from onnxport.serving.http import memory

def rss():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmRSS:"))

if sys.argv[1] == "fixed":
    assert memory.fix_mmap_threshold()
big = bytearray(30 << 20)  # freed: glibc's default threshold rises to its size (at most 32 MiB)
del big
before = rss()

def request():  # a worker thread's body, grown as a decoded gzip body is
    body = bytearray()
    for _ in range(24):
        body += bytes(1 << 20)
    del body

thread = threading.Thread(target=request)
thread.start()
thread.join()
print(rss() - before)
"""


def kept_mb(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator, read from /proc")
def test_a_threads_large_buffer_is_given_back():
    default, fixed = kept_mb("default"), kept_mb("fixed")
    assert fixed < 4, f"a freed 24 MB buffer kept {fixed} MB with the fixed threshold (glibc's default: {default} MB)"
