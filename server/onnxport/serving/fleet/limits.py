"""Report rates per token and per address, in memory only: a token bucket per key, in a bounded dict.

Keys are hashes of the token and of the address, salted with random bytes made per process, so neither a token
nor an address is ever held as such, and nothing of either outlives the process.
"""

from __future__ import annotations

import hashlib
import math
import secrets
import threading
import time
from collections import OrderedDict
from typing import Callable

MAX_KEYS = 100_000  # past it the least recently seen key is forgotten (it starts again with a full bucket)
_SALT = secrets.token_bytes(16)


def key(text: str) -> bytes:
    """A token's or an address's key in the rate tables: salted with this process's random bytes, hashed."""
    return hashlib.sha256(_SALT + text.encode()).digest()[:16]


class RateLimit:
    """At most `per_minute` reports a minute per key, with bursts up to `per_minute`."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic, max_keys: int = MAX_KEYS):
        self.capacity, self.refill = float(per_minute), per_minute / 60.0
        self.clock, self.max_keys = clock, max_keys
        self._buckets: OrderedDict[bytes, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, key: bytes) -> int | None:
        """None: allowed (and counted); else the whole seconds to wait (Retry-After)."""
        with self._lock:
            now = self.clock()
            tokens, at = self._buckets.pop(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - at) * self.refill)
            allowed = tokens >= 1
            self._buckets[key] = (tokens - 1 if allowed else tokens, now)
            while len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
            return None if allowed else max(1, math.ceil((1 - tokens) / self.refill))
