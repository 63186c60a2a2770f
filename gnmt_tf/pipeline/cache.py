"""A cache of translations, least recently used out first, bounded in MB.

Built on cachetools' `LRUCache` (maintained, with a `getsizeof` hook for a
size limit); an entry's size is the UTF-8 length of its key text and its
translation plus `ENTRY_OVERHEAD` bytes, an estimate of the Python objects
around them. A translation may be a `SentenceResult` (so that a cache hit
keeps the alignment that markup and entity restoration use); its pieces
and alignment matrix count too.
"""

import dataclasses
import threading
from typing import Optional, Tuple, Union

try:
    import cachetools
except ImportError:  # the gateway extra
    raise ModuleNotFoundError(
        "the result cache needs cachetools: "
        "pip install 'gnmt-tf[gateway]'",
        name="cachetools") from None
import numpy as np

from gnmt_tf.pipeline.results import SentenceResult

ENTRY_OVERHEAD = 200


@dataclasses.dataclass(frozen=True)
class Task:
    """What a translation depends on besides the text and the model."""

    src_lang: str
    tgt_lang: str
    tags: Tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "tags", tuple(sorted(set(self.tags))))


class TranslationCache:
    """LRU cache keyed by (normalised text, task, model version).

    The text must already be normalised (`gnmt_tf.pipeline.normalize.normalize`), so
    that inputs differing only in whitespace or quotes share an entry; the
    model version keeps entries of a replaced model from being served.
    Thread-safe.

    Args:
      max_mb: float. Size limit in MB (10**6 bytes), > 0.

    Example:
      >>> cache = TranslationCache(max_mb=1)
      >>> cache.put("Hallo.", Task("de", "en"), "v1", "Hello.")
      >>> cache.get("Hallo.", Task("de", "en"), "v1")
      'Hello.'
    """

    def __init__(self, max_mb: float):
        if not max_mb > 0:
            raise ValueError(f"max_mb must be > 0, got {max_mb}")
        self.max_bytes = int(max_mb * 1_000_000)
        self._cache = cachetools.LRUCache(maxsize=self.max_bytes,
                                          getsizeof=self._size)
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    @staticmethod
    def _size(value: Tuple[str, int]) -> int:
        return value[1]

    def get(self, text: str, task: Task, model_version: str
            ) -> Optional[Union[str, SentenceResult]]:
        """The cached translation, or None."""
        with self._lock:
            entry = self._cache.get((text, task, model_version))
            if entry is None:
                self.misses += 1
                return None
            self.hits += 1
            return entry[0]

    def put(self, text: str, task: Task, model_version: str,
            translation: Union[str, SentenceResult]) -> None:
        """Stores a translation; one larger than the whole cache is not
        stored."""
        size = len(text.encode()) + _size_of(translation) + ENTRY_OVERHEAD
        if size > self.max_bytes:
            return
        with self._lock:
            self._cache[(text, task, model_version)] = (translation, size)

    @property
    def size_bytes(self) -> int:
        """The estimated bytes held now."""
        return int(self._cache.currsize)

    def __len__(self) -> int:
        return len(self._cache)


def _size_of(translation: Union[str, SentenceResult]) -> int:
    """Estimated bytes of a cached translation."""
    if isinstance(translation, str):
        return len(translation.encode())
    size = len(translation.text.encode())
    for pieces in (translation.source_pieces, translation.target_pieces):
        size += sum(len(p.encode()) + 50 for p in pieces or ())
    if translation.alignment is not None:
        size += int(np.asarray(translation.alignment).nbytes)
    return size
