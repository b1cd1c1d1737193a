"""A decoder file in an onnxruntime CPU session, run one step at a time over a key/value cache.

A step feeds the new token ids, an attention mask over the past and the new positions, their position ids,
and the past keys and values; the presents it returns are the next step's past. One session serves any number
of caches at once (onnxruntime's run is thread-safe): each generation holds its own Cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import onnxruntime as ort

from onnxport import runtime
from onnxport.generation.cache import CacheSignature, read_signature


class Cache:
    """One sequence's past keys and values (batch 1); length is how many positions they hold."""

    def __init__(self, signature: CacheSignature):
        empty = np.zeros((1, signature.kv_heads, 0, signature.head_dim), dtype=signature.element)
        self._past: dict[str, np.ndarray] | None = {past: empty for past, _ in signature.pairs}
        self.length = 0

    @property
    def closed(self) -> bool:
        return self._past is None

    def close(self) -> None:
        """Drop the arrays; idempotent. A closed cache can no longer step."""
        self._past = None

    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self._past or {}).values())

    def past(self) -> dict[str, np.ndarray]:
        if self._past is None:
            raise RuntimeError("this key/value cache is closed: its generation has ended")
        return self._past

    def advance(self, presents: dict[str, np.ndarray], steps: int) -> None:
        # A cache closed while its step ran (its generation cancelled from another thread) stays closed.
        if self._past is not None:
            self._past = presents
            self.length += steps


@dataclass(frozen=True)
class DecoderSession:
    session: ort.InferenceSession
    signature: CacheSignature
    label: str = "model.onnx"

    @classmethod
    def open(
        cls,
        path: Path | str,
        threads: int | None = None,
        *,
        declared: Mapping[str, str] | None = None,
        session: runtime.SessionSettings | None = None,
    ) -> DecoderSession:
        """The decoder file at path in a CPU session; threads None lets onnxruntime choose. session, where
        given, says how it runs instead: a server's threads, spinning and providers (its SessionPool's; CPU is
        always among them). A file without a cache, or one whose cache does not fit the convention, raises
        ModelFileError."""
        path = Path(path)
        label = path.name
        made = runtime.serving_session(path, session or runtime.SessionSettings(threads=threads or 0), label=label)
        signature = read_signature(made.get_inputs(), made.get_outputs(), declared=declared, label=label)
        return cls(made, signature, label)

    @property
    def vocab_size(self) -> int | None:
        """The logits' last dimension where the file fixes it."""
        logits = next(o for o in self.session.get_outputs() if o.name == self.signature.logits)
        last = logits.shape[-1] if logits.shape else None
        return last if isinstance(last, int) else None

    def new_cache(self) -> Cache:
        """An empty cache for one sequence (batch 1)."""
        return Cache(self.signature)

    def step(self, ids: Sequence[int], cache: Cache) -> np.ndarray:
        """The logits after the last of ids (float32 [vocab]); the cache advances past all of them."""
        return self._run(ids, cache)[-1]

    def step_all(self, ids: Sequence[int], cache: Cache) -> np.ndarray:
        """The logits after each of ids (float32 [len(ids), vocab]), for scoring a text; the cache advances."""
        return self._run(ids, cache)

    def _run(self, ids: Sequence[int], cache: Cache) -> np.ndarray:
        if len(ids) == 0:
            raise ValueError("a decoder step needs at least one token id, got none")
        sig = self.signature
        past = cache.past()
        start, count = cache.length, len(ids)
        feeds: dict[str, np.ndarray] = {"input_ids": np.asarray([ids], dtype=np.int64)}
        if sig.has_attention_mask:
            feeds["attention_mask"] = np.ones((1, start + count), dtype=np.int64)
        if sig.has_position_ids:
            feeds["position_ids"] = np.arange(start, start + count, dtype=np.int64)[None, :]
        feeds.update(past)
        names = [sig.logits, *(present for _, present in sig.pairs)]
        out = runtime.run_outputs(self.session, names, feeds, label=self.label)
        cache.advance({past_name: out[present] for past_name, present in sig.pairs}, count)
        return np.asarray(out[sig.logits][0], dtype=np.float32)
