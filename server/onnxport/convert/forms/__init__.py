"""Optimized forms of a served variant: the same model, saved so a browser starts it sooner.

A browser given the exported graph parses its protobuf and optimizes it again at every session
creation. A form does part of that once, at build time (docs/reference/manifest.md, "forms"):

- `ort`: onnxruntime's own ORT format (flatbuffers, what ONNX Runtime Mobile and onnxruntime-web
  load without protobuf parsing), saved after the extended-level optimizations;
- `basic`: a `.onnx` saved after the basic level only (constant folding, redundant nodes), which
  every execution provider still reads;
- `fused`: for a recipe that declares its transformer (`Recipe.transformer`), onnxruntime's
  transformer optimizer's fused graph (SkipLayerNormalization, BiasGelu, Attention where it
  matches), fp32 only;
- `gemm`: for a variant with tree ensembles (ai.onnx.ml TreeEnsembleClassifier/Regressor), the trees
  compiled into standard operators (convert/forms/tree_tensors.py, hummingbird-ml's GEMM strategy): the form
  WebGPU runs, whose bundle has no ai.onnx.ml kernel; it is kept whatever its start costs
  (form_gain.opens_runtimes).

Each form runs on the golden inputs natively and is judged against fp32 by its variant's budget,
like any variant; a form outside it, or one onnxruntime cannot make or load, is kept with its
reason and not served. Which form a browser uses is decided there, by measurement (web/lib/choice/plan.js).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

import onnx
import onnxruntime as ort

from onnxport import runtime
from onnxport.accuracy import browser_runtimes, budgets, measure
from onnxport.convert import lower_precision, reference
from onnxport.convert.forms import gain as form_gain
from onnxport.convert.forms import tree_tensors
from onnxport.convert.graph import graphs
from onnxport.errors import ModelFileError, one_line
from onnxport.json_boundary import JsonObject
from onnxport.recipe import Feeds
from onnxport.repository.store import Transaction
from onnxport.repository.variant_record import Form, FormHow, MadeForm
from onnxport.repository.variant_table import AUTO, FORMS

# The browser runtimes that run onnxruntime's CPU execution provider (compiled to WebAssembly).
CPU_RUNTIMES = browser_runtimes.WASM


def make_forms(
    prepared,
    name: str,
    data: bytes,
    fp32_outputs: list[Feeds],
    variant_outputs: list[Feeds],
    transaction: Transaction,
    reference_feeds: tuple[Feeds, int],
    run_all: Callable,
    arithmetic: str,
) -> dict[str, Form]:
    """Every form of one served variant (its bytes `data`), made, measured and staged.
    run_all(bytes, inputs, label) -> (session, outputs), the variant maker's; arithmetic: what the
    variant's file computes (convert/arithmetic.py), whose budget judges its forms too (optimizing
    changes how it computes, not in what precision)."""
    budget = budgets.budget(arithmetic)
    forms: dict[str, Form] = {}
    by_gain = prepared.forms == AUTO  # the default: a form is kept only if it starts sooner (gain.py)
    for form in FORMS if by_gain else prepared.forms:
        try:
            made = _make(form, prepared, name, data)
        except Exception as exc:  # a failed form costs the form, never the variant
            forms[form] = {
                "status": "rejected",
                "reason": f"could not be made: {type(exc).__name__}: {_first_line(exc)}",
            }
            continue
        if made is None:
            continue  # does not apply to this variant
        form_bytes, how = made
        label = f"{prepared.name} {name} ({form} form)"
        try:
            # a form that runs where the variant cannot is kept whatever it gains at the start (gain.py)
            opens = form_gain.opens_runtimes(data, form_bytes, how["format"])
            short = form_gain.short_of(data, form_bytes, form, label) if by_gain and not opens else None
            if short:
                forms[form] = {"status": "rejected", "reason": short, **how}
                continue
            session, outputs = run_all(form_bytes, prepared.golden_inputs, label)
            reference_record = reference.stage(transaction, prepared.name, name, session, *reference_feeds, form=form)
        except ModelFileError as exc:
            forms[form] = {"status": "rejected", "reason": str(exc), **how}
            continue
        vs_fp32 = measure.against(fp32_outputs, outputs, prepared.task, prepared.metric_output)
        reason = measure.verdict(arithmetic, budget, prepared.task, vs_fp32)
        rejection = measure.rejection(arithmetic, budget, prepared.task, vs_fp32) if reason else None
        record: MadeForm = {
            **transaction.put_file(form_bytes, "ort" if how["format"] == "ort" else "onnx"),
            "status": "rejected" if reason else "ok",
            "reason": reason,
            **how,
            "size_ratio": round(len(form_bytes) / len(data), 4),
            "vs_fp32": vs_fp32,
            "vs_variant": measure.against(variant_outputs, outputs, prepared.task, prepared.metric_output),
            "reference": reference_record,
        }
        if rejection is not None:
            record["reason_data"] = rejection
        if how["format"] == "onnx":
            record["operators"] = lower_precision.operator_histogram(onnx.load_from_string(form_bytes))
        forms[form] = record
    return forms


def _make(form: str, prepared, name: str, data: bytes) -> tuple[bytes, FormHow] | None:
    tool = f"onnxruntime {ort.__version__}"
    if form == "ort":
        if _holds_4bit_tensors(data):
            return None  # the ORT format has no 4-bit tensor type: "Unsupported tensor data type" (onnxruntime 1.30)
        # The extended level's fused nodes are the CPU provider's kernels: onnxruntime-web's WebGPU
        # provider refuses some and fails running others (seen by `onnxport check`), so it is for
        # WebAssembly, which is that CPU provider.
        return _saved(data, "extended", ort_format=True), {
            "format": "ort",
            "optimization": "extended",
            "tool": tool,
            "runtimes": list(CPU_RUNTIMES),
        }
    if form == "basic":
        return _saved(data, "basic", ort_format=False), {
            "format": "onnx",
            "optimization": "basic",
            "tool": tool,
            "runtimes": None,
        }
    if form == "gemm":
        model = onnx.load_from_string(data)
        if not tree_tensors.has_trees(model):
            return None
        # every runtime: the point is the ones the variant as built cannot run (WebGPU, WebNN's bundle)
        return tree_tensors.rewrite(model).SerializeToString(), {
            "format": "onnx",
            "optimization": "tree-gemm",
            "tool": "onnxport tree_tensors",
            "runtimes": None,
        }
    if form != "fused":
        raise ValueError(f"unknown form {form!r}")
    if prepared.transformer is None or name != "fp32":
        return None
    fused, fusions = _fused(data, prepared.transformer)
    return fused, {
        "format": "onnx",
        "optimization": "transformer",
        "tool": f"onnxruntime.transformers {ort.__version__}",
        "fusions": fusions,
        "runtimes": None,
    }


FOUR_BIT_TYPES = frozenset({onnx.TensorProto.INT4, onnx.TensorProto.UINT4})


def _holds_4bit_tensors(data: bytes) -> bool:
    """An int4 variant's embedding tables (GatherBlockQuantized) are int4 tensors; its MatMulNBits weights are
    packed in uint8."""
    model = onnx.load_from_string(data)
    return any(t.data_type in FOUR_BIT_TYPES for g in graphs(model.graph) for t in g.initializer)


def _saved(data: bytes, level: str, *, ort_format: bool) -> bytes:
    """The model as onnxruntime's CPU provider optimizes it at `level`, saved (runtime.save_optimized):
    what a browser would otherwise redo at every session creation."""
    with tempfile.TemporaryDirectory(prefix="onnxport-form-") as folder:
        target = Path(folder) / ("model.ort" if ort_format else "model.onnx")
        runtime.save_optimized(data, target, level, ort_format=ort_format)
        return target.read_bytes()


def _fused(data: bytes, transformer: JsonObject) -> tuple[bytes, dict[str, int]]:
    """The fused graph and how many of each fused operator it has."""
    from onnxruntime.transformers.optimizer import optimize_model  # heavy: imported for recipes that ask

    with tempfile.TemporaryDirectory(prefix="onnxport-form-") as folder:
        source = Path(folder) / "model.onnx"
        source.write_bytes(data)
        # opt_level 0: the transformer fusions only; onnxruntime's own passes still run in the browser.
        model = optimize_model(
            str(source),
            model_type=transformer["model_type"],
            num_heads=transformer["num_heads"],
            hidden_size=transformer["hidden_size"],
            opt_level=0,
        )
        counts = {op: n for op, n in model.get_fused_operator_statistics().items() if n}
        if not counts:
            raise ValueError(f"the {transformer['model_type']} transformer optimizer fused nothing in this graph")
        return model.model.SerializeToString(), counts


def _first_line(exc: Exception) -> str:
    """The whole message on one line (errors.one_line): its first line alone ended mid-sentence."""
    return one_line(str(exc))
