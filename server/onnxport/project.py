"""The checkout onnxport runs from: the default homes of the recipes, the repository and the web app."""

from pathlib import Path

# server/onnxport/project.py -> the folder that holds server/, web/, models/ and node_modules/.
PROJECT_ROOT = Path(__file__).resolve().parents[2]
