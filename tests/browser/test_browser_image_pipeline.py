"""Image pipelines in a real Chromium: the browser decodes each corpus image itself (PNG, JPEG with an EXIF
rotation, alpha, palette, 16-bit), and the library's pixels must match Pillow's (server/onnxport/pipelines/
image.py) within the stated tolerance; digits' model.pipeline(image file) gives the answer Python gives, in
WebAssembly and on the server, which gets the file itself."""

from __future__ import annotations

import base64

import numpy as np
import onnxruntime as ort

from onnxport.accuracy.browser_tolerances import PIPELINE_PIXEL_LEVELS
from onnxport.pipelines import answers, corpus, image

SCRIPT = """async ([images, spec]) => {
  const { decodeImage, pixelsOf } = await import("/web/lib/pipelines/image.js");
  const { connect } = await import("/web/lib/index.js");
  const blob = (b64, type) => new Blob([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], { type });
  const pixels = {};
  for (const [name, b64] of Object.entries(images)) {
    const p = pixelsOf(spec, await decodeImage(blob(b64, name.includes("JPEG") ? "image/jpeg" : "image/png")));
    pixels[name] = { shape: [p.height, p.width, p.channels], data: Array.from(p.data) };
  }
  const model = await connect().load("digits", { variant: "fp32", runtime: "wasm" });
  const answered = {};
  for (const [name, b64] of Object.entries(images)) {
    const { answer, timings } = await model.pipeline(blob(b64, name.includes("JPEG") ? "image/jpeg" : "image/png"));
    answered[name] = { answer, timings };
  }
  const server = await connect().load("digits", { variant: "fp32", runtime: "server" });
  const onServer = {};
  for (const [name, b64] of Object.entries(images)) {
    onServer[name] = (await server.pipeline(blob(b64, name.includes("JPEG") ? "image/jpeg" : "image/png"))).answer;
  }
  return { pixels, answered, onServer, runtime: model.choice.runtime };
}"""


def test_the_browser_decodes_and_preprocesses_images_as_pillow_does(open_tab, demo_repository, demo_manifest):
    entry = demo_manifest["models"]["digits"]
    spec = entry["pipeline"]["image"]
    images = corpus.images()
    page = open_tab().goto("#/")
    result = page.evaluate(SCRIPT, [{k: base64.b64encode(v).decode() for k, v in images.items()}, spec])
    session = ort.InferenceSession(
        str(demo_repository / entry["variants"]["fp32"]["file"]), providers=["CPUExecutionProvider"]
    )
    worst = {}
    for name, data in images.items():
        expected = image.pixels_of(spec, data)
        got = np.array(result["pixels"][name]["data"], np.int64).reshape(result["pixels"][name]["shape"])
        assert got.shape == expected.shape, name
        worst[name] = int(np.abs(got - expected.astype(np.int64)).max())
        where = np.unravel_index(np.abs(got - expected).argmax(), got.shape)
        assert worst[name] <= PIPELINE_PIXEL_LEVELS, f"{name}: a pixel is {worst[name]} levels of 255 off at {where}"
        feeds = image.ImagePipeline(spec).encode([data])
        [want] = answers.answers(entry["pipeline"]["answer"], session.run(["logits"], feeds)[0])
        browser = result["answered"][name]["answer"]
        assert browser[0]["label"] == want[0]["label"], f"{name}: browser says {browser[0]}, Python {want[0]}"
        assert abs(browser[0]["score"] - want[0]["score"]) < 1e-3, (name, browser[0], want[0])
        served = result["onServer"][name]  # the raw file sent to the server's pipeline
        assert [a["label"] for a in served] == [a["label"] for a in want], (name, served, want)
    print("\nlargest pixel difference per image (levels of 255):", worst)
    timings = [r["timings"] for r in result["answered"].values()]
    print(
        "preprocessing ms:",
        [round(t["preprocessMs"], 2) for t in timings],
        "run ms:",
        [round(t["runMs"], 2) for t in timings],
    )


def test_the_digits_playground_takes_an_image_file(open_tab, tmp_path, demo_repository, demo_manifest):
    """The playground's file input feeds the file itself through the pipeline; the browser's answer is Python's."""
    from fixtures.playground import by_testid, expect_ran_on, result_values

    entry = demo_manifest["models"]["digits"]
    name = "37x53 RGB PNG (odd sizes)"
    path = tmp_path / "digit.png"
    path.write_bytes(corpus.images()[name])
    page = open_tab("#/play/digits?runtime=wasm&variant=fp32").page
    by_testid(page, "digit-file").set_input_files(str(path))
    expect_ran_on(page, "wasm", "fp32")
    browser_value, server_value = result_values(page)
    session = ort.InferenceSession(
        str(demo_repository / entry["variants"]["fp32"]["file"]), providers=["CPUExecutionProvider"]
    )
    logits = session.run(["logits"], image.ImagePipeline(entry["pipeline"]["image"]).encode([path.read_bytes()]))[0]
    assert browser_value == server_value == str(int(np.argmax(logits))), (browser_value, server_value)
