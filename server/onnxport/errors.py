"""The error types of onnxport, one per layer.

Every message is written for the person who ran the command: it names the
input (model, file, tensor), what was expected and what came.
"""


class OnnxportError(Exception):
    """Base class: anything onnxport reports to a user as a one-line error."""


class UsageError(OnnxportError):
    """What the user gave (a name, a file of inputs, an option) does not fit: the CLI exits 2."""


class RecipeError(OnnxportError):
    """A recipe is missing, cannot be loaded or declares something invalid."""


class ModelFileError(OnnxportError):
    """An ONNX file or test directory cannot be read, checked or trusted."""


class BuildError(OnnxportError):
    """A step of a build (recipe code, exporter, converter) crashed."""


class ValidationError(OnnxportError):
    """An export differs from its source beyond the declared tolerance."""


class RepositoryError(OnnxportError):
    """The model repository is missing, locked or inconsistent."""


class VariantSkipped(Exception):
    """A variant would not differ from fp32 (nothing to convert or quantize): not an error, a skip."""


def one_line(text: str) -> str:
    """text on one line, whole: its lines joined by spaces, runs of whitespace made one.

    onnxruntime's messages span lines ("ScalesValidation 'Cubic' mode only supports:" then a list of
    what it supports); keeping the first line cut them mid-sentence, in the manifest and in replies.
    """
    return " ".join(text.split())
