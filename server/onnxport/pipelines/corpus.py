"""Raw inputs that find where two preprocessing implementations part ways: the texts `onnxport check` runs
through a model's pipeline in the browser and in Python, and compares token by token. Each has a name, so a
mismatch says which input and why it is there."""

from __future__ import annotations

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
    "punctuation": "Wait... what?! (Really) -- \"yes\" [no] {maybe} <tag> a/b\\c #1 @user 50% $3.50",
    "numbers and units": "3.14159 1,000,000 2026-12-02 10:30am 5km/h -273.15°C",
    "url and code": "See https://example.com/a?b=c&d=e#f or run `pip install onnxport==1.0`",
    "greek and cyrillic": "Καλημέρα κόσμε, Привет мир",
    "math symbols": "∀x ∈ ℝ: x² ≥ 0 ⇒ √x² = |x|",
    "repeated punctuation": "!!!!!!!!!!!!!!!!!!!!????????????????........",
    "mixed scripts": "Hello世界Привет🌍مرحبا",
}
