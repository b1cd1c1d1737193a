"""Demo model recipes: one module per model. See server/recipe.py for the contract."""
