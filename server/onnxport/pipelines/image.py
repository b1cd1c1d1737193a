"""The Python side of an image pipeline: an image file made into one input tensor with Pillow, step by step as
the spec says (docs/manifest.md `pipeline.image`). web/lib/image-pipeline.js does the same steps in the browser:
the alpha composite and the grey conversion with the same integer formulas, and the resize with Pillow's own
fixed-point convolution, so the two agree to the pixel wherever the decoders do."""

from __future__ import annotations

import io

import numpy as np

from onnxport.pipelines.spec import ImageSpec

# A decoded image above this many pixels is refused before it is expanded (a small PNG can declare a huge one).
MAX_PIXELS = 40_000_000


class ImageError(ValueError):
    """An input that is not an image this pipeline can read: says what came."""


def decode(data: bytes) -> np.ndarray:
    """The image's pixels upright (EXIF orientation applied) as [height, width, 4] uint8 RGBA."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        image: Image.Image = Image.open(io.BytesIO(data))
        if image.width * image.height > MAX_PIXELS:
            raise ImageError(f"the image is {image.width}x{image.height} pixels; at most {MAX_PIXELS:,} are read")
        image = ImageOps.exif_transpose(image)
        if image.mode.startswith("I"):  # 16-bit grey: to 8 bits as browsers do (value / 257, rounded)
            image = Image.fromarray(np.rint(np.asarray(image, np.float64) / 257).clip(0, 255).astype(np.uint8))
        return np.asarray(image.convert("RGBA"), dtype=np.uint8)
    except UnidentifiedImageError:
        raise ImageError(f"not an image Pillow can read ({len(data)} bytes starting {data[:8]!r})") from None
    except (OSError, SyntaxError, Image.DecompressionBombError) as exc:
        raise ImageError(f"the image cannot be decoded: {exc}") from None


def over_white(rgba: np.ndarray) -> np.ndarray:
    """[h, w, 3] uint8: each pixel composited over white, c' = (c * a + 255 * (255 - a) + 127) // 255."""
    rgb = rgba[..., :3].astype(np.int32)
    alpha = rgba[..., 3:4].astype(np.int32)
    return ((rgb * alpha + 255 * (255 - alpha) + 127) // 255).astype(np.uint8)


def grey(rgb: np.ndarray) -> np.ndarray:
    """[h, w, 1] uint8 by Pillow's own "L" conversion (ITU-R 601-2 luma in 16-bit fixed point)."""
    weighted = (rgb[..., 0].astype(np.int64) * 19595 + rgb[..., 1].astype(np.int64) * 38470
                + rgb[..., 2].astype(np.int64) * 7471 + 0x8000) >> 16
    return weighted.astype(np.uint8)[..., None]


FILTERS = {"nearest": 0, "box": 4, "bilinear": 2, "bicubic": 3, "lanczos": 1}  # Pillow's Resampling numbers


def resize(pixels: np.ndarray, width: int, height: int, filter_name: str) -> np.ndarray:
    """[h, w, c] uint8 resized by Pillow itself, each channel as an "L" image."""
    from PIL import Image

    if pixels.shape[1] == width and pixels.shape[0] == height:
        return pixels
    channels = [np.asarray(Image.fromarray(np.ascontiguousarray(pixels[..., c]))
                           .resize((width, height), FILTERS[filter_name])) for c in range(pixels.shape[2])]
    return np.stack(channels, axis=-1)


def center_crop(pixels: np.ndarray, width: int, height: int) -> np.ndarray:
    top = max(0, (pixels.shape[0] - height) // 2)
    left = max(0, (pixels.shape[1] - width) // 2)
    return pixels[top: top + height, left: left + width]


def pixels_of(spec: ImageSpec, data: bytes) -> np.ndarray:
    """The spec's pixels before normalization: [height, width, channels] uint8 (what the check compares)."""
    rgb = over_white(decode(data))
    pixels = grey(rgb) if spec["mode"] == "L" else rgb[..., ::-1] if spec["mode"] == "BGR" else rgb
    size = spec["resize"]
    pixels = resize(pixels, size["width"], size["height"], size["filter"])
    if spec["crop"] is not None:
        pixels = center_crop(pixels, spec["crop"]["width"], spec["crop"]["height"])
    return pixels


def tensor_of(spec: ImageSpec, pixels: np.ndarray) -> np.ndarray:
    """The model's input for one image: [1, ...] laid out as the spec says."""
    unit = pixels.astype(np.float32) / np.float32(255)
    if spec["invert"]:
        unit = np.float32(1) - unit
    values: np.ndarray = (unit * np.float32(spec["scale"]) - np.asarray(spec["mean"], np.float32)) \
        / np.asarray(spec["std"], np.float32)
    if spec["layout"] == "NCHW":
        values = values.transpose(2, 0, 1)
    elif spec["layout"] == "flat":
        values = values.reshape(-1)
    return values[None].astype(np.float32)


class ImagePipeline:
    def __init__(self, spec: ImageSpec):
        self.spec = spec

    def encode(self, images: list[bytes]) -> dict[str, np.ndarray]:
        """The model's feeds for a batch of image files (PNG, JPEG, ... bytes), stacked on the first axis;
        an ImageError names the row that cannot be read."""
        if not images:
            raise ValueError("no images to encode")
        rows = []
        for index, data in enumerate(images):
            try:
                rows.append(tensor_of(self.spec, pixels_of(self.spec, data)))
            except ImageError as exc:
                raise ImageError(f"row {index}: {exc}") from None
        return {self.spec["input"]: np.concatenate(rows, axis=0)}
