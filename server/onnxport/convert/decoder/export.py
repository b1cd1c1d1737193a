"""Export a transformers causal language model to ONNX with a key/value cache (cache_names.py's convention).

The TorchScript exporter (opset 17, standard ONNX ops) traces a wrapper that takes the past keys and values as
flat tensors, builds a transformers DynamicCache from them, and returns the logits and the grown cache as flat
tensors again. The trace runs with a past of a few tokens and a prompt of a few, so that neither length is
taken for a constant; batch, sequence and past length are dynamic axes of the file.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from onnxport.convert.decoder import cache_names
from onnxport.convert.decoder.tied_embedding import share_tied_embedding

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

OPSET = 17
# The trace's lengths: any past and prompt above 1 keeps the exporter from folding either into a constant.
TRACE_PAST, TRACE_SEQUENCE = 3, 2


@dataclass(frozen=True)
class CacheShape:
    """What the past and present tensors' fixed axes are: [batch, kv_heads, length, head_dim] per layer."""

    layers: int
    kv_heads: int
    head_dim: int
    vocab: int


def cache_shape(model: PreTrainedModel) -> CacheShape:
    config = model.config.get_text_config(decoder=True)
    heads = int(config.num_attention_heads)
    head_dim = getattr(config, "head_dim", None) or int(config.hidden_size) // heads
    return CacheShape(
        layers=int(config.num_hidden_layers),
        kv_heads=int(getattr(config, "num_key_value_heads", None) or heads),
        head_dim=int(head_dim),
        vocab=int(config.vocab_size),
    )


def _wrapper(model: PreTrainedModel, layers: int) -> torch.nn.Module:
    import torch
    from transformers import DynamicCache

    class CachedDecoder(torch.nn.Module):
        """One decoder step: flat past tensors in, logits and flat present tensors out."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(
            self,
            input_ids: torch.Tensor,
            attention_mask: torch.Tensor,
            position_ids: torch.Tensor,
            *past: torch.Tensor,
        ) -> tuple[torch.Tensor, ...]:
            cache = DynamicCache(ddp_cache_data=[(past[2 * i], past[2 * i + 1]) for i in range(layers)])
            feeds = {"input_ids": input_ids, "attention_mask": attention_mask, "position_ids": position_ids}
            logits = self.model(**feeds, cache=cache, use_cache=True).logits
            presents: list[torch.Tensor] = []
            for keys, values, _sliding in cache:  # the past grown by this step, layer by layer
                presents += [keys, values]
            return (logits, *presents)

    return CachedDecoder().eval()


def trace_inputs(shape: CacheShape, past: int, sequence: int, batch: int = 1) -> tuple[torch.Tensor, ...]:
    """Feeds for one step of `sequence` new tokens after `past` cached ones (random past, ids below the vocab)."""
    import torch

    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, shape.vocab, (batch, sequence), generator=generator)
    mask = torch.ones(batch, past + sequence, dtype=torch.int64)
    positions = torch.arange(past, past + sequence, dtype=torch.int64).expand(batch, sequence).contiguous()
    cache = [
        torch.randn(batch, shape.kv_heads, past, shape.head_dim, generator=generator) for _ in range(2 * shape.layers)
    ]
    return (ids, mask, positions, *cache)


def export_decoder(model: PreTrainedModel, path: Path) -> CacheShape:
    """Writes `model` (eval mode, float32) to `path` as a decoder file with a KV cache; returns its cache shape."""
    import onnx
    import torch

    shape = cache_shape(model)
    model = model.eval()
    if any(parameter.dtype != torch.float32 for parameter in model.parameters()):
        # Only then: a model loaded from GGUF is dequantized to float32 already and refuses .float().
        model = model.float()
    wrapper = _wrapper(model, shape.layers)
    args = trace_inputs(shape, TRACE_PAST, TRACE_SEQUENCE)
    with torch.no_grad(), warnings.catch_warnings():
        # The TorchScript exporter warns about its own deprecation and transformers' tracer warns about
        # Python conditions on shapes; the step-by-step check (steps.py) is what proves the trace right.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            wrapper,
            args,
            str(path),
            input_names=cache_names.input_names(shape.layers),
            output_names=cache_names.output_names(shape.layers),
            dynamic_axes=cache_names.dynamic_axes(shape.layers),
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    exported = onnx.load(str(path))
    if share_tied_embedding(exported):
        onnx.save(exported, str(path))
    return shape
