"""Every file name of the repository layout, and which command writes it.

<repository>/
  manifest.json       build and import (the contract; written last, atomically)
  artifacts/<sha256>.<ext>   build and import: models and assets, content-addressed, immutable
  testdata/<model>/   build and import: golden sets and per-variant reference data
  bench.json          `onnxport bench`: the latest figures (read by the batching policy and the app)
  conformance.json    `onnxport check`: browser verdicts per device kind (read by the browser's plan)
  .staging/           a running build's, import's or remove's files until its commit; a killed writer's are
                      removed by the next writer to take the lock (atomic.lock)
  .lock               held by whoever writes (repository/atomic.py): build, import and remove for their whole
                      run, check and bench while they write their file, a replica's sync for its whole run
Every file is written through atomic.py: a temporary name beside it, then a rename.
"""

MANIFEST_FILE = "manifest.json"
ARTIFACTS_DIR = "artifacts"
TESTDATA_DIR = "testdata"
BENCH_FILE = "bench.json"
VERDICTS_FILE = "conformance.json"
LOCK_FILE = ".lock"
STAGING_DIR = ".staging"
