"""The variants a build makes: one row each, the one table of what every layer knows of them, like dtypes.py.

A row names the variant, the arithmetic it means to make (whose budget judges it: accuracy/budgets.py), its
module in convert/variants/ (which makes it, and names its rescue's candidates when the row says the module
does), what its fallback search may keep, and the calibration inputs it needs. Adding a variant is its row here
and its module there (docs/development.md "Adding one"). The table sits at the bottom of the package so that
every layer may read it: the manifest's types, the browser tolerances, the CLI, the generated browser twin
(web/lib/files/variants.js, scripts/generate/js_variants.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# What a variant's fallback search (convert/rescue/fallback.py) may keep in float when its file is outside budget:
#   nothing              fp32 is the model itself
#   any node             every named node but a Constant (fp16)
#   quantized operators  the nodes of the operator types the int8 quantizers quantize (variant_maker.INT8_OPS)
#   weight readers       the nodes whose weights the variant stores: its module's candidates(model)
Rescue = Literal["nothing", "any node", "quantized operators", "weight readers"]

# The inputs the making needs besides the fp32 model:
#   none    the model alone
#   inputs  the golden and calibration inputs, real or synthetic (fp16's overflow search)
#   real    real calibration inputs: on seeded random ones it is skipped, with the reason why (static int8
#           fixes every activation's range from them); its module's require_work(model) is asked first
Calibration = Literal["none", "inputs", "real"]


@dataclass(frozen=True)
class Variant:
    name: str  # the manifest's key, the V2 API's version, `--variants`
    precision: str  # fp32 | fp16 | int8: the arithmetic the build means to make, and so the budget it is judged by
    maker: str  # its module in convert/variants/: make(prepared, keep_float) -> (model, settings)
    rescue: Rescue = "nothing"
    # The share of its candidates the search may keep, when not the search's own (fallback.LIMIT_SHARE).
    rescue_share: float | None = None
    calibration: Calibration = "none"
    # What a size refusal calls its file, when not its precision.
    file_words: str | None = None


# In the order people read them (the manifest's JSON is key-sorted).
VARIANTS: tuple[Variant, ...] = (
    Variant("fp32", "fp32", maker="fp32"),
    Variant("fp16", "fp16", maker="fp16", rescue="any node", calibration="inputs"),
    Variant("int8-dynamic", "int8", maker="int8_dynamic", rescue="quantized operators"),
    Variant("int8-static", "int8", maker="int8_static", rescue="quantized operators", calibration="real"),
    # Weights only (convert/variants/int8_weights.py, int4.py): the arithmetic stays float, so any operator's
    # weights shrink; judged by the int8 budget, as a file with DequantizeLinear or MatMulNBits computes.
    Variant("int8-weights", "int8", maker="int8_weights", rescue="weight readers"),
    # A kept node costs 2x its 4-bit bytes, not 8x as in float (it is kept in 8-bit blocks, not in float):
    # minilm's 11 kept MatMuls of 36 grow its file 1.07x.
    Variant("int4", "int8", maker="int4", rescue="weight readers", rescue_share=0.5, file_words="4-bit (int4)"),
)
