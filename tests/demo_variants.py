"""Which variants the demo build serves: the one list the tests of the demo models parametrize over.

iris has 2.3 KB of weights: int8's scales and zero points make its file 1.8x (dynamic) and 2.0x
(static) the size of fp32, so both int8 variants are skipped (convert/variant_maker.py
INT8_MIN_SHRINK); no weight reaches int8-weights' 1,024 elements, and int4's file would be 1.11x fp32.
Every other demo variant is served; tests/convert/test_build.py holds the build to this.
"""

from __future__ import annotations

from onnxport.repository.variant_table import NAMES as VARIANTS

MODELS = ("iris", "digits", "minilm")
SKIPPED = {"iris": ("int8-dynamic", "int8-static", "int8-weights", "int4")}
SERVED = {model: tuple(v for v in VARIANTS if v not in SKIPPED.get(model, ())) for model in MODELS}
MODEL_VARIANTS = [(model, variant) for model in MODELS for variant in SERVED[model]]
