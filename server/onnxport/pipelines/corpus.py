"""Raw inputs that find where two preprocessing implementations part ways: the texts `onnxport check` runs
through a model's pipeline in the browser and in Python, and compares token by token. Each has a name, so a
mismatch says which input and why it is there."""

from __future__ import annotations

import numpy as np

LONG_WORDS = " ".join(["The committee reviewed the proposal carefully before voting."] * 60)  # ~540 tokens

TEXTS: dict[str, str] = {
    "short": "A man is playing a guitar on the street.",
    "past max length": LONG_WORDS,
    "one long word": "antidisestablishmentarianism" * 40,
    "empty": "",
    "spaces only": "   ",
    "whitespace runs": "tabs\t\tand  spaces   and\nnew\n\nlines\r\nend",
    "accents, composed": "Crème brûlée, naïve façade, São Paulo, Ångström",
    "accents, decomposed": "Cre\u0300me bru\u0302le\u0301e, nai\u0308ve fac\u0327ade",
    "upper case": "THE QUICK BROWN FOX Jumps Over The LAZY DOG",
    "chinese": "我爱北京天安门，天安门上太阳升。",
    "japanese": "東京は日本の首都です。ひらがなとカタカナ。",
    "korean": "안녕하세요, 만나서 반갑습니다.",
    "arabic": "مرحبا بالعالم، هذا نص عربي.",
    "emoji": "I love it 😍👍🏽 and the family 👨‍👩‍👧 too 🇫🇷",
    "zero-width and controls": "zero\u200bwidth\u200djoiner\u00adsoft\u0007bell\ufeffbom",
    "punctuation": 'Wait... what?! (Really) -- "yes" [no] {maybe} <tag> a/b\\c #1 @user 50% $3.50',
    "numbers and units": "3.14159 1,000,000 2026-12-02 10:30am 5km/h -273.15°C",
    "url and code": "See https://example.com/a?b=c&d=e#f or run `pip install onnxport==1.0`",
    "greek and cyrillic": "Καλημέρα κόσμε, Привет мир",
    "math symbols": "∀x ∈ ℝ: x² ≥ 0 ⇒ √x² = |x|",
    "repeated punctuation": "!!!!!!!!!!!!!!!!!!!!????????????????........",
    "mixed scripts": "Hello世界Привет🌍مرحبا",
}


def images() -> dict[str, bytes]:
    """Image files that find where two image pipelines part ways: odd sizes, an EXIF rotation, alpha, grey,
    palette and 16-bit files, a JPEG, one far larger than a model's input. Made here with Pillow, the same
    bytes every time: a dark digit-like stroke on a light ground."""
    import io

    from PIL import Image, ImageDraw

    def drawing(width: int, height: int, mode: str = "RGB", ink=(20, 20, 20), paper=(250, 248, 240)) -> Image.Image:
        image = Image.new(mode, (width, height), paper if mode != "L" else paper[0])
        draw = ImageDraw.Draw(image)
        w, h = width - 1, height - 1
        stroke = max(1, min(width, height) // 7)
        colour = ink if mode != "L" else ink[0]
        draw.line([(w * 0.2, h * 0.15), (w * 0.8, h * 0.15), (w * 0.45, h * 0.9)], fill=colour, width=stroke)
        draw.ellipse([w * 0.55, h * 0.55, w * 0.75, h * 0.75], outline=colour, width=max(1, stroke // 2))
        return image

    def save(image: Image.Image, fmt: str, **options) -> bytes:
        out = io.BytesIO()
        image.save(out, fmt, **options)
        return out.getvalue()

    transparent = drawing(40, 40, "RGBA", ink=(0, 0, 0, 255), paper=(255, 255, 255, 0))
    half = drawing(24, 24, "RGBA", ink=(10, 40, 200, 160), paper=(0, 120, 0, 60))
    sideways = drawing(48, 32)
    exif = sideways.getexif()
    exif[0x0112] = 6  # orientation: the camera was turned; upright means rotated 90 degrees clockwise
    grey16 = Image.fromarray(np.asarray(drawing(30, 30, "L"), dtype=np.uint16) * 257)
    return {
        "8x8 grey PNG (no resize)": save(drawing(8, 8, "L"), "PNG"),
        "37x53 RGB PNG (odd sizes)": save(drawing(37, 53), "PNG"),
        "640x480 RGB PNG (large)": save(drawing(640, 480), "PNG"),
        "3x5 RGB PNG (smaller than the model's input)": save(drawing(3, 5), "PNG"),
        "40x40 PNG with transparent paper": save(transparent, "PNG"),
        "24x24 PNG with half-transparent colours": save(half, "PNG"),
        "30x30 palette PNG": save(drawing(30, 30).convert("P", palette=Image.Palette.ADAPTIVE, colors=16), "PNG"),
        "30x30 16-bit grey PNG": save(grey16, "PNG"),
        "64x64 RGB JPEG": save(drawing(64, 64), "JPEG", quality=90),
        "48x32 JPEG with EXIF orientation 6": save(sideways, "JPEG", quality=90, exif=exif),
    }
