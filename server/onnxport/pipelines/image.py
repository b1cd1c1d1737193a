"""The Python side of an image pipeline: an image file made into one input tensor with Pillow, step by step as
the spec says (docs/reference/manifest.md `pipeline.image`). web/lib/pipelines/image.js does the same steps in
the browser: the alpha composite and the grey conversion with the same integer formulas, and the resize with
Pillow's own fixed-point convolution, so the two agree to the pixel wherever the decoders do.

Image files come from clients, so they are untrusted: only the decoders browsers have too are used (none of
Pillow's plugins that call a program, such as EPS's Ghostscript), the size is checked on the header before any
pixel is decoded, only the first frame of an animation is read, the arithmetic is done in uint8/uint16/uint32
by blocks of rows (never an int64 or float64 copy of a full-size image), and every decoder failure, whatever
its exception class, is an ImageError that says why.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from onnxport.pipelines.raw import Limits, OverLimit, RawInputError
from onnxport.pipelines.spec import ImageSpec, SpecError

if TYPE_CHECKING:
    from PIL import Image

# Pillow's names of the decoders used; a JPEG with a multi-picture index opens as MPO (its first picture is read).
ACCEPTED = ("PNG", "JPEG", "WEBP", "GIF", "BMP")
_OPENED = {*ACCEPTED, "MPO"}
_NAMES = "PNG, JPEG, WebP, GIF, BMP"
# Pixels per image, checked on the header (the server passes its setting raw_max_image_pixels instead).
MAX_PIXELS = 16_777_216  # 4096 x 4096
# A side longer than a browser's canvas takes (Chromium's limit) is refused too: a 1 x 16M image costs Pillow
# a line pointer per row, far more than its pixels.
MAX_SIDE = 32_767
# A JPEG's decoder makes a pass over the whole image per scan, and a progressive scan can be 33 bytes: 1,000 of
# them took 4.5 s at 16 M pixels here, 100 take about 1 s. Real files have 1 to about 10 (an EXIF thumbnail's
# count too, as they are counted as start-of-scan markers); nvImageCodec refuses above 256 by default, after the
# Cure53 audit of libjpeg-turbo.
MAX_JPEG_SCANS = 100
# The arithmetic goes by blocks of rows of about this many pixels, so its temporaries stay a few megabytes.
_BLOCK = 1 << 20


class ImageError(ValueError):
    """An input that is not an image this pipeline can read: says what came."""


class ImageTooLarge(ImageError):
    """Over a pixel limit the caller set: `per` is "image" or "request" (the batch), so it can name its setting."""

    def __init__(self, message: str, per: str):
        super().__init__(message)
        self.per = per


def _reason(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


@contextlib.contextmanager
def _reading() -> Iterator[None]:
    """Any exception of a decoder (Pillow raises OSError, ValueError, IndexError, RuntimeError, struct.error,
    EOFError, MemoryError... on bad files) becomes an ImageError."""
    try:
        yield
    except ImageError:
        raise
    except Exception as exc:
        raise ImageError(f"the image cannot be decoded ({_reason(exc)})") from None


def _looks_like(prefix: bytes) -> str | None:
    """The format Pillow's own signature checks see in the first bytes (no file is opened), if any."""
    from PIL import Image

    Image.init()
    for name in Image.ID:
        factory, accept = Image.OPEN[name]
        try:
            if accept is not None and accept(prefix):
                description = getattr(factory, "format_description", None)
                return f"{name} ({description})" if description and name not in ACCEPTED else name
        except Exception:  # a signature check that trips on a short prefix says nothing
            continue
    return None


def _unaccepted(data: bytes) -> str:
    start = f"{len(data):,} bytes starting {data[:8]!r}"
    seen = _looks_like(data[:16])
    if seen in _OPENED:
        return f"not an image Pillow can read ({start}): a {seen} signature, but no readable {seen} header"
    return f"not an image of an accepted format ({_NAMES}): " + (f"it looks like {seen}, " if seen else "") + start


def open_image(data: bytes, max_pixels: int = MAX_PIXELS) -> Image.Image:
    """The image file's header read by an accepted decoder and its size checked; no pixel is decoded yet."""
    from PIL import Image, UnidentifiedImageError

    with _reading():
        try:
            image = Image.open(io.BytesIO(data), formats=ACCEPTED)
        except UnidentifiedImageError:
            raise ImageError(_unaccepted(data)) from None
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            # Pillow's own bomb check (a warning above 89 M pixels, an error above twice that), before ours
            raise ImageError(
                f"the image is too large ({_reason(exc)}); the limit is {max_pixels:,} pixels per image"
            ) from None
    if image.format not in _OPENED:  # the allow-list above is the guard; this says so if Pillow ever differs
        raise ImageError(f"not an image of an accepted format ({_NAMES}): Pillow read it as {image.format}")
    width, height = image.size
    if width * height > max_pixels:
        raise ImageTooLarge(
            f"the image is {width}x{height} ({width * height:,} pixels); the limit is {max_pixels:,} pixels per image",
            "image",
        )
    if min(width, height) < 1 or max(width, height) > MAX_SIDE:
        raise ImageError(f"the image is {width}x{height}; each side must be 1 to {MAX_SIDE:,} pixels")
    if image.format in ("JPEG", "MPO") and (scans := data.count(b"\xff\xda")) > MAX_JPEG_SCANS:
        raise ImageError(
            f"the JPEG has {scans:,} scans; at most {MAX_JPEG_SCANS} are read (each is a pass over the whole image)"
        )
    return image


def size(data: bytes, max_pixels: int = MAX_PIXELS) -> tuple[int, int]:
    """(width, height) from the header, checked as decode() checks it: for a budget over several images."""
    width, height = open_image(data, max_pixels).size
    return width, height


def _upright(data: bytes, max_pixels: int) -> Image.Image:
    from PIL import ImageOps

    image = open_image(data, max_pixels)
    image.load()  # the first frame only: an animation's other frames are never decoded
    ImageOps.exif_transpose(image, in_place=True)
    return image


def _rgba_blocks(image: Image.Image) -> Iterator[tuple[slice, Image.Image | np.ndarray]]:
    """(rows, the block as an RGBA Pillow image, or as [rows, width] uint8 grey for 16-bit grey) by blocks of
    rows. Pillow's conversions are per pixel, so converting a block gives what converting the whole would."""
    width, height = image.size
    step = max(1, _BLOCK // width)
    for top in range(0, height, step):
        part = image.crop((0, top, width, min(height, top + step)))
        if part.mode.startswith("I"):  # 16-bit grey: to 8 bits as browsers do, round(value / 257)
            # (no ties: value / 257 is never k + 0.5, so (value + 128) // 257 rounds as rint does)
            values = (np.clip(np.asarray(part), 0, 65535).astype(np.uint32) + 128) // 257
            yield slice(top, top + part.height), values.astype(np.uint8)
        else:
            yield slice(top, top + part.height), part.convert("RGBA")


def decode(data: bytes, max_pixels: int = MAX_PIXELS) -> np.ndarray:
    """The image's pixels upright (EXIF orientation applied) as [height, width, 4] uint8 RGBA."""
    with _reading():
        image = _upright(data, max_pixels)
        rgba = np.empty((image.height, image.width, 4), np.uint8)
        for rows, block in _rgba_blocks(image):
            if isinstance(block, np.ndarray):
                rgba[rows, :, :3], rgba[rows, :, 3] = block[..., None], 255
            else:
                rgba[rows] = np.asarray(block)
    return rgba


def composited(data: bytes, max_pixels: int = MAX_PIXELS) -> list[np.ndarray]:
    """The image upright and over white as three [height, width] uint8 planes, red, green, blue: the layout
    the arithmetic and Pillow's per-channel resize run fastest on, with no full-size RGBA copy."""
    with _reading():
        image = _upright(data, max_pixels)
        planes = [np.empty((image.height, image.width), np.uint8) for _ in range(3)]
        for rows, block in _rgba_blocks(image):
            if isinstance(block, np.ndarray):
                for plane in planes:
                    plane[rows] = block
                continue
            *colours, alpha = (np.asarray(band) for band in block.split())
            for plane, colour in zip(planes, colours):
                plane[rows] = over_white(colour, alpha)
    return planes


def over_white(colour: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """A colour channel composited over white, c' = (c * a + 255 * (255 - a) + 127) // 255, as uint8 (any
    shape; give it blocks). In uint16: c * a + 255 * (255 - a) + 127 = 65152 - a * (255 - c) <= 65152."""
    if (alpha == 255).all():  # opaque: c' = c
        return colour
    a = alpha.astype(np.uint16)
    value = colour.astype(np.uint16)
    value *= a
    a ^= 255  # 255 - a
    a *= 255
    value += a
    value += 127
    value //= 255
    return value.astype(np.uint8)


def grey(red: np.ndarray, green: np.ndarray, blue: np.ndarray) -> np.ndarray:
    """[h, w] uint8 by Pillow's own "L" conversion (ITU-R 601-2 luma in 16-bit fixed point), in uint32 by
    blocks of rows: 255 * (19595 + 38470 + 7471) + 0x8000 < 2 ** 24."""
    out = np.empty(red.shape, np.uint8)
    step = max(1, _BLOCK // max(1, red.shape[-1]))
    for top in range(0, red.shape[0], step):
        rows = slice(top, top + step)
        value = red[rows].astype(np.uint32) * 19595
        value += green[rows].astype(np.uint32) * 38470
        value += blue[rows].astype(np.uint32) * 7471
        value += 0x8000
        value >>= 16
        out[rows] = value
    return out


FILTERS = {"nearest": 0, "box": 4, "bilinear": 2, "bicubic": 3, "lanczos": 1}  # Pillow's Resampling numbers


def resize(planes: list[np.ndarray], width: int, height: int, filter_name: str) -> np.ndarray:
    """[height, width, channels] uint8: each [h, w] uint8 plane resized by Pillow itself, as an "L" image."""
    from PIL import Image

    if planes[0].shape != (height, width):
        planes = [np.asarray(Image.fromarray(plane).resize((width, height), FILTERS[filter_name])) for plane in planes]
    return np.stack(planes, axis=-1)


def center_crop(pixels: np.ndarray, width: int, height: int) -> np.ndarray:
    top = max(0, (pixels.shape[0] - height) // 2)
    left = max(0, (pixels.shape[1] - width) // 2)
    return pixels[top : top + height, left : left + width]


def pixels_of(spec: ImageSpec, data: bytes, max_pixels: int = MAX_PIXELS) -> np.ndarray:
    """The spec's pixels before normalization: [height, width, channels] uint8 (what the check compares)."""
    red, green, blue = composited(data, max_pixels)
    planes = (
        [grey(red, green, blue)]
        if spec["mode"] == "L"
        else [blue, green, red]
        if spec["mode"] == "BGR"
        else [red, green, blue]
    )
    del red, green, blue  # grey's inputs are not kept while it is resized
    size = spec["resize"]
    pixels = resize(planes, size["width"], size["height"], size["filter"])
    if spec["crop"] is not None:
        pixels = center_crop(pixels, spec["crop"]["width"], spec["crop"]["height"])
    return pixels


def tensor_of(spec: ImageSpec, pixels: np.ndarray) -> np.ndarray:
    """The model's input for one image: [1, ...] laid out as the spec says."""
    unit = pixels.astype(np.float32) / np.float32(255)
    if spec["invert"]:
        unit = np.float32(1) - unit
    values: np.ndarray = (unit * np.float32(spec["scale"]) - np.asarray(spec["mean"], np.float32)) / np.asarray(
        spec["std"], np.float32
    )
    if spec["layout"] == "NCHW":
        values = values.transpose(2, 0, 1)
    elif spec["layout"] == "flat":
        values = values.reshape(-1)
    return values[None].astype(np.float32)


class ImagePipeline:
    def __init__(self, spec: ImageSpec):
        self.spec = spec

    def encode(
        self, images: list[bytes], max_pixels: int = MAX_PIXELS, max_total_pixels: int | None = None
    ) -> dict[str, np.ndarray]:
        """The model's feeds for a batch of image files (PNG, JPEG, WebP, GIF, BMP bytes), stacked on the first
        axis. Every header is checked (max_pixels per image, max_total_pixels over the batch) before any image
        is decoded; an ImageError names the row that cannot be read."""
        if not images:
            raise ImageError("no images to encode (a batch of 0 rows)")
        total = 0
        for index, data in enumerate(images):
            with _row(index):
                width, height = size(data, max_pixels)
            total += width * height
            if max_total_pixels is not None and total > max_total_pixels:
                raise ImageTooLarge(
                    f"row {index}: rows 0 to {index} have {total:,} pixels; the limit is "
                    f"{max_total_pixels:,} pixels per request",
                    "request",
                )
        rows = []
        for index, data in enumerate(images):
            with _row(index):
                rows.append(tensor_of(self.spec, pixels_of(self.spec, data, max_pixels)))
        return {self.spec["input"]: np.concatenate(rows, axis=0)}


@contextlib.contextmanager
def _row(index: int) -> Iterator[None]:
    try:
        yield
    except ImageTooLarge as exc:
        raise ImageTooLarge(f"row {index}: {exc}", exc.per) from None
    except ImageError as exc:
        raise ImageError(f"row {index}: {exc}") from None


def check_spec(spec: ImageSpec, where: str, assets: list[str]) -> dict[str, str]:
    """An image spec's values (kinds.py); the graph input it names, by spec key."""
    channels = 1 if spec["mode"] == "L" else 3
    for key, values in (("mean", spec["mean"]), ("std", spec["std"])):
        if len(values) != channels:
            raise SpecError(
                f"{where}: pipeline.image.{key} has {len(values)} values; mode "
                f"{spec['mode']} has {channels} channel{'s' * (channels > 1)}"
            )
    if 0 in spec["std"]:
        raise SpecError(f"{where}: pipeline.image.std has a 0: every value would be infinite")
    return {"image.input": spec["input"]}


# Magic numbers of image files, TIFF's included so that the decoder names the format it refuses.
_MAGIC = (b"\x89PNG", b"\xff\xd8", b"GIF8", b"RIFF", b"BM", b"II*\x00", b"MM\x00*")


def request_feeds(
    spec: ImageSpec, value: np.ndarray, limits: Limits, asset: Callable[[str], Path]
) -> dict[str, np.ndarray]:
    """A V2 request's `image` (BYTES, [n]: each row an image file's bytes, or its base64 text in JSON) as the
    model's feeds (kinds.py)."""
    if value.ndim != 1:
        raise RawInputError(f"input 'image': shape {list(value.shape)}; it takes [n], one image file per row")
    limits.check_rows("image", value)
    files = []
    for index, item in enumerate(value.tolist()):
        data = item if isinstance(item, bytes) else str(item).encode()
        if not data.startswith(_MAGIC):
            try:  # JSON carries an image as base64 text
                data = base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                raise RawInputError(
                    f"input 'image' row {index}: neither an image file nor base64 text of "
                    f"one ({len(data)} bytes starting {data[:12]!r})"
                ) from None
        files.append(data)
    try:
        return ImagePipeline(spec).encode(files, limits.image_pixels, limits.request_pixels)
    except ImageTooLarge as exc:
        setting = "raw_max_image_pixels" if exc.per == "image" else "raw_max_request_pixels"
        raise OverLimit(f"input 'image' {exc} (setting {setting})") from None
    except ImageError as exc:
        raise RawInputError(f"input 'image' {exc}") from None
