"""Build: turn a recipe or an ONNX file into verified fp32, fp16 and int8 artifacts."""
