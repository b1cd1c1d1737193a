"""Intake: a recipe or an ONNX file made into a Prepared model (prepared.py) before the build.

The source exported or the file imported, checked, with its golden and calibration inputs.
"""
