"""Demo model recipes: one module per model. See server/onnxport/recipe.py for the contract."""
