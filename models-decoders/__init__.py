"""Decoder recipes: one module per decoder for generation (`onnxport build --recipes models-decoders`).
See server/onnxport/recipe.py (DecoderRecipe) for the contract."""
