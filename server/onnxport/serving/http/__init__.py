"""HTTP layer: Flask blueprints for the web app, the artifacts and the V2 inference protocol."""
