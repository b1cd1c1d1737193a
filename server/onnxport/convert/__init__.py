"""Build: turn a recipe or an ONNX file into verified fp32, fp16 and int8 artifacts.

build_transaction.py builds several models in one transaction, model_build.py one model (fp32 export ->
variants -> manifest entry), variant_maker.py one variant (convert, judge, rescue). The families, each in its folder:
- intake/: a recipe or an ONNX file made into a Prepared model (prepared.py);
- fp16/ and int8/: the lower-precision variants, behind lower_precision.py;
- rescue/: a variant outside its budget brought back within it;
- forms/: a served variant's optimized forms.
graph.py, node_order.py and segments.py walk, sort and cut graphs for all of them. The order is a layers
contract in pyproject.toml: a module imports only from the lines below its own.
"""
