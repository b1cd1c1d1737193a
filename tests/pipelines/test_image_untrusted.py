"""pipelines/image.py on files an attacker sends (issue 30): formats outside the allow-list (an EPS that would
loop in Ghostscript, a TIFF) are refused before any decoder runs; the size is checked on the header; a file below
the limit is decoded in bounded memory; only the first frame of an animation and at most MAX_JPEG_SCANS scans are
decoded; whatever a decoder raises on a mutated file is an ImageError; and the pixels are still those of the old
full-size int32/int64/float64 arithmetic, bit for bit (the browser's port is held to them)."""

from __future__ import annotations

import functools
import io
import json
import os
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import pytest
from PIL import EpsImagePlugin, Image, ImageOps

from fixtures import image_attacks
from onnxport.pipelines import corpus, image

DIGITS = {
    "input": "pixels",
    "mode": "L",
    "resize": {"width": 8, "height": 8, "filter": "box"},
    "crop": None,
    "invert": True,
    "scale": 1.0,
    "mean": [0.0],
    "std": [1.0],
    "layout": "NCHW",
    "dtype": "float32",
}
PHOTO = {
    **DIGITS,
    "mode": "RGB",
    "resize": {"width": 224, "height": 224, "filter": "bicubic"},
    "crop": {"width": 200, "height": 200, "filter": "box"},
    "invert": False,
    "mean": [0.5] * 3,
    "std": [0.25] * 3,
}


def refused(data: bytes, *fragments: str, max_pixels: int = image.MAX_PIXELS) -> float:
    """Seconds until encode refused data with an ImageError naming row 0 and every fragment."""
    start = time.perf_counter()
    with pytest.raises(image.ImageError) as caught:
        image.ImagePipeline(DIGITS).encode([data], max_pixels=max_pixels)
    seconds = time.perf_counter() - start
    message = str(caught.value)
    for fragment in ("row 0: ", *fragments):
        assert fragment in message, f"expected {fragment!r} in the error, got: {message}"
    return seconds


@pytest.fixture
def ghostscript_trap(tmp_path, monkeypatch):
    """A `gs` first on PATH that writes a marker file, then sleeps as `{} loop` would; Pillow's EPS plugin
    forgets any Ghostscript it found before. Returns the marker's path."""
    folder, marker = image_attacks.fake_ghostscript(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    monkeypatch.setattr(EpsImagePlugin, "gs_binary", None)
    return marker


def test_the_trap_catches_pillow_when_it_is_left_to_choose_the_decoder(ghostscript_trap, monkeypatch):
    monkeypatch.setenv("FAKE_GS_SLEEP", "0")  # the stand-in returns at once here
    with pytest.raises(Exception):  # whatever Pillow raises when gs writes nothing
        Image.open(io.BytesIO(image_attacks.EPS_LOOP)).load()
    assert ghostscript_trap.exists(), "Pillow did not start the `gs` on PATH: this trap would prove nothing"


@pytest.mark.parametrize("name", ["EPS_LOOP", "EPS_MALFORMED"])
def test_an_eps_is_refused_and_no_ghostscript_is_started(ghostscript_trap, name):
    seconds = refused(
        getattr(image_attacks, name),
        "not an image of an accepted format (PNG, JPEG, WebP, GIF, BMP)",
        "it looks like EPS (Encapsulated Postscript)",
    )
    print(f"{name}: refused in {seconds * 1000:.2f} ms")
    assert seconds < 1, f"{name} took {seconds:.2f} s"
    assert not ghostscript_trap.exists(), f"`gs` was started: {ghostscript_trap.read_text()}"


@functools.lru_cache(maxsize=1)
def other_formats() -> dict[str, bytes]:
    picture = image_attacks.photo(16, 16)
    out = {"TIFF 4 x 7,405,572": image_attacks.tall_tiff()}
    for fmt in ("TIFF", "ICO", "PPM", "PCX", "QOI", "SGI", "TGA", "JPEG2000", "DDS"):
        buffer = io.BytesIO()
        picture.save(buffer, fmt)
        out[fmt] = buffer.getvalue()
    return out


@pytest.mark.parametrize(
    "fmt", ["TIFF 4 x 7,405,572", "TIFF", "ICO", "PPM", "PCX", "QOI", "SGI", "TGA", "JPEG2000", "DDS"]
)
def test_formats_outside_the_allow_list_are_refused_by_name(fmt):
    data = other_formats()[fmt]
    looks = [] if fmt == "TGA" else [f"it looks like {fmt.split()[0]}"]  # TGA has no signature to tell it by
    seconds = refused(data, "not an image of an accepted format", *looks)
    assert seconds < 1, f"{fmt} took {seconds:.2f} s"


def test_a_broken_file_of_an_accepted_format_says_so():
    refused(b"\x89PNG\r\n\x1a\n" + b"\0" * 40, "not an image Pillow can read (48 bytes starting", "a PNG signature")
    truncated_ihdr = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x05IHDR\x00\x00\x00\x10\x00\x00\x00\x00\x00"
    refused(truncated_ihdr, "the image cannot be decoded (ValueError: Truncated IHDR chunk)")  # was a 500


MEASURE = """
import json, sys, time
from onnxport.pipelines import image

def status(key):
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) // 1024 for line in lines if line.startswith(key))

spec = json.loads(sys.argv[2])
image.ImagePipeline(spec).encode([open(sys.argv[3], "rb").read()])  # imports and first-call buffers
data = open(sys.argv[1], "rb").read()
before = status("VmRSS:")
try:
    open("/proc/self/clear_refs", "w").write("5")  # the peak (VmHWM) starts again from here
except OSError:
    pass
start = time.perf_counter()
try:
    image.ImagePipeline(spec).encode([data])
    outcome = "result"
except image.ImageError as exc:
    outcome = str(exc)
print(json.dumps({"outcome": outcome, "seconds": time.perf_counter() - start,
                  "extra_mb": status("VmHWM:") - before}))
"""


def measured(tmp_path, data: bytes, spec: dict = PHOTO) -> dict:
    """encode([data]) in a fresh interpreter: its outcome, seconds and peak RSS above the RSS before, in MB."""
    path, warm = tmp_path / "attack", tmp_path / "warm.png"
    path.write_bytes(data)
    warm.write_bytes(image_attacks.seeds()["PNG RGBA"])
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(path), json.dumps(spec), str(warm)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="peak memory read from /proc")
def test_a_png_bomb_is_refused_on_its_header(tmp_path):
    bomb = image_attacks.png_bomb(6300)
    figures = measured(tmp_path, bomb)
    print(f"6300x6300 PNG of {len(bomb):,} bytes: {figures}")
    assert figures["outcome"].startswith(
        "row 0: the image is 6300x6300 (39,690,000 pixels); the limit is 16,777,216 pixels per image"
    ), figures
    assert figures["extra_mb"] < 20 and figures["seconds"] < 1, figures


def test_the_limits_are_the_callers():
    picture = io.BytesIO()
    image_attacks.photo(100, 100).save(picture, "PNG")
    refused(picture.getvalue(), "the image is 100x100 (10,000 pixels); the limit is 9,999", max_pixels=9_999)
    assert image.ImagePipeline(DIGITS).encode([picture.getvalue()], max_pixels=10_000)["pixels"].shape == (1, 1, 8, 8)
    with pytest.raises(image.ImageError, match=r"row 1: rows 0 to 1 have 20,000 pixels; the limit is 15,000"):
        image.ImagePipeline(DIGITS).encode([picture.getvalue()] * 2, max_total_pixels=15_000)
    with pytest.raises(image.ImageError, match=r"no images to encode \(a batch of 0 rows\)"):
        image.ImagePipeline(DIGITS).encode([])
    tall = io.BytesIO()
    Image.new("L", (1, 40_000), 255).save(tall, "PNG")  # a line pointer per row costs Pillow more than the pixels
    refused(tall.getvalue(), "the image is 1x40000; each side must be 1 to 32,767 pixels")


def big_files() -> dict[str, bytes]:
    """4000 x 4000 (16 M pixels, under the default 16,777,216) in each accepted format."""
    from PIL import ImageDraw

    picture = Image.new("RGB", (4000, 4000), (250, 248, 240))
    draw = ImageDraw.Draw(picture)
    for step in range(0, 4000, 97):
        draw.line([(step, 0), (4000 - step, 4000)], fill=(step % 256, 40, 200), width=9)
    translucent = picture.convert("RGBA")
    translucent.putalpha(160)
    files = {}
    for label, source, fmt, options in (
        ("PNG RGB", picture, "PNG", {"compress_level": 1}),
        ("PNG RGBA translucent", translucent, "PNG", {"compress_level": 1}),
        ("JPEG", picture, "JPEG", {"quality": 90}),
        ("JPEG progressive", picture, "JPEG", {"quality": 90, "progressive": True}),
        ("BMP", picture, "BMP", {}),
        ("GIF", picture.convert("P"), "GIF", {}),
        ("WEBP", picture, "WEBP", {"quality": 80, "method": 0}),
    ):
        out = io.BytesIO()
        source.save(out, fmt, **options)
        files[label] = out.getvalue()
    return files


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="peak memory read from /proc")
def test_an_image_just_below_the_limit_is_decoded_in_bounded_memory(tmp_path):
    failures = []
    for label, data in big_files().items():
        figures = measured(tmp_path, data)
        print(f"4000x4000 {label} ({len(data):,} bytes): {figures}")
        # libwebp's animation decoder, the only one Pillow has, keeps two full RGBA canvases besides the frame
        bound = 300 if label == "WEBP" else 200
        if figures["outcome"] != "result" or figures["extra_mb"] >= bound:
            failures.append(f"{label}: {figures} (bound {bound} MB)")
    assert not failures, "; ".join(failures)


def test_a_jpeg_scan_bomb_is_refused_before_decoding():
    bomb = image_attacks.jpeg_scan_bomb(1000)
    seconds = refused(bomb, "the JPEG has 1,006 scans; at most 100 are read")
    assert seconds < 1, f"{seconds:.2f} s"


def animation(fmt: str, frames: int) -> bytes:
    pictures = [image_attacks.photo(64, 48).rotate(15 * n) for n in range(frames)]
    out = io.BytesIO()
    options = {"lossless": True} if fmt == "WEBP" else {}
    pictures[0].save(out, fmt, save_all=True, append_images=pictures[1:], **options)
    return out.getvalue()


@pytest.mark.parametrize("fmt", ["GIF", "PNG", "WEBP"])
def test_only_the_first_frame_of_an_animation_is_decoded(fmt):
    full = animation(fmt, 50)
    # The last frame broken: truncated (GIF, APNG), or its bitstream overwritten (WebP's container is checked
    # whole when it is opened). A decoder that went past the first frame would fail.
    if fmt == "WEBP":
        last = full.rfind(b"VP8L")
        broken = full[: last + 16] + bytes(len(full) - last - 16)
    else:
        broken = full[: len(full) - len(full) // 100]
    first = image.decode(full)
    np.testing.assert_array_equal(image.decode(broken), first)
    one = animation(fmt, 1)
    timings = {}
    for label, data in (("1 frame", one), ("50 frames", full)):
        start = time.perf_counter()
        for _ in range(20):
            image.decode(data)
        timings[label] = f"{(time.perf_counter() - start) / 20 * 1000:.2f} ms"
    print(f"{fmt}: decode {timings}")


def test_a_mutated_corpus_gives_a_result_or_an_image_error():
    files = image_attacks.mutated(1200)
    outcomes: Counter[str] = Counter()
    other = []
    for label, data in files:
        for spec in (DIGITS, PHOTO):
            try:
                image.ImagePipeline(spec).encode([data])
                outcomes["result"] += 1
            except image.ImageError as exc:
                outcomes[str(exc).split(" (")[0].split(":")[1].strip()[:60]] += 1
            except Exception as exc:  # the point: nothing else may come out
                other.append(f"{label} ({type(exc).__name__}: {exc})")
    print(f"{len(files)} mutated files, 2 specs each: {dict(outcomes.most_common(12))}")
    assert not other, f"{len(other)} calls raised something other than ImageError, first: {other[:5]}"
    assert outcomes["result"] > 100, f"only {outcomes['result']} results: the mutations are too coarse to test"


# The formulas as they were (onnxport 0.1, full size, int32/int64/float64), which
# web/lib/pipelines/image.js ports.


def old_decode(data: bytes) -> np.ndarray:
    picture = ImageOps.exif_transpose(Image.open(io.BytesIO(data), formats=image.ACCEPTED))
    if picture.mode.startswith("I"):
        picture = Image.fromarray(np.rint(np.asarray(picture, np.float64) / 257).clip(0, 255).astype(np.uint8))
    return np.asarray(picture.convert("RGBA"), dtype=np.uint8)


def old_over_white(rgba: np.ndarray) -> np.ndarray:
    rgb, alpha = rgba[..., :3].astype(np.int32), rgba[..., 3:4].astype(np.int32)
    return ((rgb * alpha + 255 * (255 - alpha) + 127) // 255).astype(np.uint8)


def old_grey(rgb: np.ndarray) -> np.ndarray:
    return (
        (
            rgb[..., 0].astype(np.int64) * 19595
            + rgb[..., 1].astype(np.int64) * 38470
            + rgb[..., 2].astype(np.int64) * 7471
            + 0x8000
        )
        >> 16
    ).astype(np.uint8)


def old_pixels(spec: dict, data: bytes) -> np.ndarray:
    rgb = old_over_white(old_decode(data))
    planes = (
        [old_grey(rgb)]
        if spec["mode"] == "L"
        else [rgb[..., c] for c in ((2, 1, 0) if spec["mode"] == "BGR" else (0, 1, 2))]
    )
    pixels = image.resize(
        [np.ascontiguousarray(p) for p in planes],
        spec["resize"]["width"],
        spec["resize"]["height"],
        spec["resize"]["filter"],
    )
    crop = spec["crop"]
    return pixels if crop is None else image.center_crop(pixels, crop["width"], crop["height"])


def test_the_arithmetic_equals_the_old_formulas():
    colour, alpha = (a.astype(np.uint8) for a in np.meshgrid(np.arange(256), np.arange(256)))
    np.testing.assert_array_equal(
        image.over_white(colour, alpha), old_over_white(np.stack([colour] * 3 + [alpha], -1))[..., 0]
    )
    rng = np.random.default_rng(30)
    rgb = rng.integers(0, 256, (1500, 1400, 3), dtype=np.uint8)  # more than one block of rows
    rgb[0, :8] = [
        [0, 0, 0],
        [255, 255, 255],
        [255, 0, 0],
        [0, 255, 0],
        [0, 0, 255],
        [1, 1, 1],
        [254, 254, 254],
        [128, 128, 128],
    ]
    np.testing.assert_array_equal(image.grey(*(np.ascontiguousarray(rgb[..., c]) for c in range(3))), old_grey(rgb))
    every16 = io.BytesIO()  # every 16-bit grey value, through the decoder's own path
    Image.fromarray(np.arange(65536, dtype=np.uint16).reshape(256, 256)).save(every16, "PNG")
    np.testing.assert_array_equal(image.decode(every16.getvalue()), old_decode(every16.getvalue()))


def test_the_pixels_equal_the_old_pipelines():
    files = [*corpus.images().items(), *image_attacks.seeds().items(), *image_attacks.mutated(1200)]
    specs = [
        DIGITS,
        PHOTO,
        {**PHOTO, "mode": "BGR", "resize": {"width": 13, "height": 7, "filter": "lanczos"}, "crop": None},
    ]
    limits = ("pixels per image", "each side must be", "too large")
    compared, refused_now = 0, 0
    for label, data in files:
        for spec in specs:
            try:
                after = image.pixels_of(spec, data)
            except image.ImageError as exc:
                if any(limit in str(exc) for limit in limits):
                    refused_now += 1  # (the old code decoded these, at a cost: one took 53 s)
                    continue
                after = exc
            try:
                before = old_pixels(spec, data)
            except Exception as exc:  # the old code's failures, whatever they were
                before = exc
            if isinstance(after, Exception) or isinstance(before, Exception):
                assert isinstance(after, Exception) and isinstance(before, Exception), (
                    f"{label}, {spec['mode']}: before {type(before).__name__}, now {type(after).__name__}: "
                    f"{after if isinstance(after, Exception) else before}"
                )
                continue
            assert after.shape == before.shape and np.array_equal(after, before), f"{label}, {spec['mode']}: differs"
            compared += 1
    print(f"{compared} decodes equal to the old pipeline's; {refused_now} refused now by a size limit")
    assert compared > 300
