"""What recipes and imported ONNX files become before the build: a `Prepared` model.

A checked fp32 graph, golden inputs with the source's outputs, calibration inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import onnx

from onnxport.json_boundary import JsonObject
from onnxport.recipe import Feeds, Tolerance
from onnxport.repository.manifest import Provenance
from onnxport.repository.variant_table import FORMS, NAMES

Progress = Callable[[str], None]


@dataclass
class Prepared:
    name: str
    task: str
    kind: str  # pytorch | sklearn | onnx
    description: str
    fp32: onnx.ModelProto
    golden_inputs: list[Feeds]
    source_outputs: list[Feeds]  # what the source framework (or the test data) says
    calibration: list[Feeds]
    tolerance: Tolerance
    metric_output: str | None
    build_key: str
    labels: np.ndarray | None = None
    facts: JsonObject = field(default_factory=dict)
    provenance: Provenance = field(default_factory=lambda: Provenance())  # importer.py, sources.py build it
    assets: dict[str, Path] = field(default_factory=dict)
    int8_static_keep_float: tuple[str, ...] = ()
    playground: str = "generic"  # the playground's input widget (recipe.PLAYGROUNDS)
    bench_inputs: Feeds | None = None  # what `onnxport bench` measures with; None = golden row 0
    transformer: JsonObject | None = None  # the recipe's, for the fused form (convert/forms/)
    pipeline: JsonObject | None = None  # raw input -> tensors -> answer (pipelines/spec.py), or none
    # True when whoever made this checked `pipeline` against fp32 already (the importer, naming --pipeline and the
    # --asset files, before the golden data runs); else the build checks it (a recipe's) before any work.
    pipeline_checked: bool = False
    forms: tuple[str, ...] = FORMS  # the optimized forms to make of each served variant (`--forms`)
    variants: tuple[str, ...] = NAMES  # the variants to make (`--variants`); the others are skipped, saying so
    # Where the golden (evaluation) and calibration inputs come from: "real" (a recipe's data, a test
    # directory, --inputs, --calibration) or "synthetic" (seeded random inputs made from the signature).
    golden_data: str = "real"
    calibration_data: str = "real"
