"""The check's pipeline rows: each model's pipeline run in the browser (web/lib) and in Python (onnxport/pipelines)
on the corpus of raw inputs (pipelines/corpus.py), then end to end.

- `preprocessing`: the tensors. Token ids, masks and type ids must be equal; image pixels (after resize and
  crop, before normalization) within PIPELINE_PIXEL_LEVELS. A mismatch names the input and its first
  differing position.
- `answers`: model.pipeline(input) in the browser on WebAssembly (fp32) against the server's answer to the same
  raw input (serving/v2/raw_input.py): top-1 labels equal, embeddings within the fp32 floor's cosine.
"""

from __future__ import annotations

import base64
import hashlib
import json
import tempfile
import urllib.request
from pathlib import Path
from typing import Any, cast

import numpy as np

from onnxport.accuracy import browser_tolerances
from onnxport.check.report_types import CheckRow
from onnxport.pipelines import corpus, image, kinds
from onnxport.pipelines.text import TextPipeline
from onnxport.repository import variant_record, variant_table
from onnxport.repository.manifest import Manifest, ModelEntry

BROWSER_TEXT = """async ([name, texts]) => {
  const { connect } = await import("/web/lib/index.js");
  const pipeline = await connect().pipeline(name);
  const out = [];
  for (const text of texts) {
    const feeds = await pipeline.encode([text]);
    out.push(Object.fromEntries(Object.entries(feeds).map(([k, t]) => [k, Array.from(t.data, Number)])));
  }
  return out;
}"""

BROWSER_IMAGES = """async ([name, images]) => {
  const { connect } = await import("/web/lib/index.js");
  const pipeline = await connect().pipeline(name);
  const blobs = images.map((b64) => new Blob([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))]));
  const pixels = await pipeline.pixels(blobs);
  return pixels.map((p) => ({ shape: [p.height, p.width, p.channels], data: Array.from(p.data) }));
}"""

BROWSER_ANSWERS = """async ([name, inputs, kind]) => {
  const { connect } = await import("/web/lib/index.js");
  const model = await connect().load(name, { variant: "fp32", runtime: "wasm" });
  const answers = [];
  for (const input of inputs) {
    const raw = kind === "image" ? new Blob([Uint8Array.from(atob(input), (c) => c.charCodeAt(0))]) : input;
    answers.push((await model.pipeline(raw)).answer);
  }
  await model.dispose();
  return answers;
}"""


def pipeline_rows(browser, base: str, manifest: Manifest, names: list[str]) -> list[CheckRow]:
    """Two rows per model that has a pipeline: `preprocessing` and `answers`."""
    rows: list[CheckRow] = []
    page = browser.new_page()
    try:
        page.goto(f"{base}/")
        for name in names:
            entry = manifest["models"][name]
            spec = entry.get("pipeline")
            if not spec:
                continue
            kind = kinds.of(spec).name
            inputs: dict[str, str] | dict[str, bytes] = corpus.TEXTS if kind == "text" else corpus.images()
            row: CheckRow = {"model": name, "variant": "-", "task": entry["task"]}
            try:
                rows.append(
                    {
                        **row,
                        "runtime": "preprocessing",
                        **(
                            _text(page, base, name, entry, cast(dict[str, str], inputs))
                            if kind == "text"
                            else _images(page, name, spec["image"], cast(dict[str, bytes], inputs))
                        ),
                    }
                )
            except Exception as exc:  # the page or the server failed: a row that says so, not a lost check
                rows.append({**row, "runtime": "preprocessing", "status": "error", "reason": str(exc)[:500]})
            rows.append(
                {
                    **row,
                    "runtime": "answers",
                    "variant": "fp32",
                    **variant_table.label_key(entry["variants"].get("fp32"), "fp32"),
                    **_answers(page, base, name, entry, kind, inputs),
                }
            )
    finally:
        page.close()
    return rows


def _text(page, base: str, name: str, entry: ModelEntry, texts: dict[str, str]) -> CheckRow:
    spec = entry["pipeline"]["text"]
    asset = entry["assets"][spec["tokenizer"]]
    data = urllib.request.urlopen(f"{base}/repository/{asset['file']}", timeout=60).read()
    if hashlib.sha256(data).hexdigest() != asset["sha256"]:
        return {"status": "error", "reason": f"{asset['file']}: sha256 does not match the manifest's"}
    with tempfile.TemporaryDirectory(prefix="onnxport-check-") as folder:
        path = Path(folder) / "tokenizer.json"
        path.write_bytes(data)
        python = TextPipeline(spec, path)
        browser = page.evaluate(BROWSER_TEXT, [name, list(texts.values())])
        longest = 0
        for (label, text), got in zip(texts.items(), browser):
            for input_name, want in python.encode([text]).items():
                values = np.asarray(got[input_name])
                longest = max(longest, len(want[0]))
                mismatch = _first_difference(values, want[0])
                if mismatch is not None:
                    return {
                        "status": "fail",
                        "inputs": len(texts),
                        "reason": f"text {label!r} ({text[:30]!r}...): {input_name} differs first at position "
                        f"{mismatch}: browser {values[mismatch : mismatch + 3].tolist()}, Python "
                        f"{want[0][mismatch : mismatch + 3].tolist()} (lengths {len(values)} and "
                        f"{len(want[0])})",
                    }
    return {
        "status": "pass",
        "inputs": len(texts),
        "reason": f"{len(texts)} texts: {', '.join(str(n) for n in spec['inputs'].values() if n)} equal to the token "
        f"(longest {longest} of max_length {spec['max_length']})",
    }


def _images(page, name: str, spec: image.ImageSpec, images: dict[str, bytes]) -> CheckRow:
    browser = page.evaluate(BROWSER_IMAGES, [name, [base64.b64encode(v).decode() for v in images.values()]])
    worst = 0
    for (label, data), got in zip(images.items(), browser):
        want = image.pixels_of(spec, data).astype(np.int64)
        values = np.asarray(got["data"], np.int64).reshape(got["shape"])
        if values.shape != want.shape:
            return {
                "status": "fail",
                "inputs": len(images),
                "reason": f"image {label!r}: browser pixels {list(values.shape)}, Python {list(want.shape)}",
            }
        difference = np.abs(values - want)
        worst = max(worst, int(difference.max(initial=0)))
        allowed = browser_tolerances.PIPELINE_PIXEL_LEVELS
        if difference.max(initial=0) > allowed:
            at = tuple(int(i) for i in np.argwhere(difference > allowed)[0])
            return {
                "status": "fail",
                "inputs": len(images),
                "reason": f"image {label!r}: pixel (row, column, channel) {at} is {int(values[at])} in the "
                f"browser, {int(want[at])} in Python: more than {allowed} level(s) apart",
            }
    return {
        "status": "pass",
        "inputs": len(images),
        "reason": f"{len(images)} images: pixels at most {worst} level(s) apart "
        f"(tolerance {browser_tolerances.PIPELINE_PIXEL_LEVELS})",
    }


def _answers(page, base: str, name: str, entry: ModelEntry, kind: str, inputs: dict) -> CheckRow:
    if "fp32" not in entry["variants"] or not variant_record.served(entry["variants"]["fp32"]):
        return {"status": "skipped", "reason": "fp32 is not served"}
    sent = list(inputs.values()) if kind == "text" else [base64.b64encode(v).decode() for v in inputs.values()]
    try:
        browser = page.evaluate(BROWSER_ANSWERS, [name, sent, kind])
        server = _server_answers(base, name, kind, sent)
    except Exception as exc:
        return {"status": "error", "reason": str(exc)[:500]}
    floor = browser_tolerances.lookup("fp32", "wasm")
    cosine_min = floor.cosine_min if floor.cosine_min is not None else 1.0  # the fp32 row always has one
    worst = 1.0
    for label, got, want in zip(inputs, browser, server):
        if isinstance(want, list) and want and isinstance(want[0], dict):  # top-k: the best label decides
            if got[0]["label"] != want[0]["label"]:
                return {
                    "status": "fail",
                    "inputs": len(sent),
                    "reason": f"{kind} {label!r}: the browser answers "
                    f"{got[0]['label']!r}, the server {want[0]['label']!r}",
                }
        elif isinstance(want, dict) or isinstance(want, str):
            if (got.get("label") if isinstance(got, dict) else got) != (
                want.get("label") if isinstance(want, dict) else want
            ):
                return {
                    "status": "fail",
                    "inputs": len(sent),
                    "reason": f"{kind} {label!r}: the browser answers {got!r}, the server {want!r}",
                }
        else:
            a, b = np.asarray(got, np.float64), np.asarray(want, np.float64)
            cosine = float(a @ b) / max(float(np.linalg.norm(a) * np.linalg.norm(b)), 1e-30)
            worst = min(worst, cosine)
            if cosine < cosine_min:
                return {
                    "status": "fail",
                    "inputs": len(sent),
                    "reason": f"{kind} {label!r}: the browser's answer "
                    f"has cosine {cosine:.6f} with the server's (at least {cosine_min})",
                }
    detail = f", cosine at least {worst:.6f}" if worst < 1.0 else ""
    return {
        "status": "pass",
        "inputs": len(sent),
        "reason": f"{len(sent)} raw inputs: model.pipeline on wasm answers as the server's raw-input infer{detail}",
    }


def _server_answers(base: str, name: str, kind: str, sent: list[str]) -> list[Any]:
    body = json.dumps(
        {
            "inputs": [{"name": kind, "datatype": "BYTES", "shape": [len(sent)], "data": sent}],
            "outputs": [{"name": "answer"}],
        }
    ).encode()
    request = urllib.request.Request(
        f"{base}/v2/models/{name}/versions/fp32/infer", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        reply = json.loads(response.read())
    return [json.loads(text) for text in reply["outputs"][0]["data"]]


def _first_difference(got: np.ndarray, want: np.ndarray) -> int | None:
    for index, (a, b) in enumerate(zip(got.tolist(), want.tolist())):
        if a != b:
            return index
    return None if len(got) == len(want) else min(len(got), len(want))
