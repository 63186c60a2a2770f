"""Giving memory that an unloaded model version used back to the OS.

glibc's `malloc` keeps freed memory in its arenas, where memory freed below
blocks still in use (the next version, loaded after it) stays in the RSS.
`release_free_memory()` runs the garbage collector and calls glibc's
`malloc_trim(0)`, which returns the free pages of every arena.

TensorFlow's eager kernel cache is left alone although it also holds the
unloaded version's kernels: clearing it destroys the resources that cached
resource-op kernels own (an eagerly created SentencePiece tokenizer then
fails with "Resource ... does not exist"), in this process and for every
model still loaded.
`ModelManager` calls it after unloading a version, so the RSS of a server
that hot-swaps versions stays flat (docs/benchmarks.md, "Serving under faults"). With
another C library the last step is skipped.
"""

import ctypes
import ctypes.util
import gc


def _find_malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    trim = getattr(libc, "malloc_trim", None)  # glibc only
    if trim is not None:
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_MALLOC_TRIM = _find_malloc_trim()


def can_release_memory() -> bool:
    """Whether `release_free_memory` can return memory (glibc)."""
    return _MALLOC_TRIM is not None


def release_free_memory() -> bool:
    """Collect garbage and return free heap pages to the OS; True if some
    pages were returned."""
    gc.collect()
    return bool(_MALLOC_TRIM(0)) if _MALLOC_TRIM is not None else False
