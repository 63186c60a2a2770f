"""Giving memory that an unloaded model version used back to the OS.

Two things keep it after the version's Python objects are gone: TensorFlow's
eager kernel cache, which holds the instantiated kernels of every function
that ran, including the unloaded version's (about 10 MB per hot swap of a
`gnmt_small` export), and glibc's `malloc`, which keeps freed memory in its
arenas, where memory freed below blocks still in use (the next version,
loaded after it) stays in the RSS. `release_free_memory()` runs the garbage
collector, clears the kernel cache (if TensorFlow is loaded; live functions
instantiate their kernels again on their next call) and calls glibc's
`malloc_trim(0)`, which returns the free pages of every arena.
`ModelManager` calls it after unloading a version, so the RSS of a server
that hot-swaps versions stays flat (README, "Serving under faults"). With
another C library the last step is skipped.
"""

import ctypes
import ctypes.util
import gc
import sys


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


def _clear_tensorflow_kernel_cache():
    if "tensorflow" not in sys.modules:  # never import it here
        return
    from tensorflow.python.eager import context

    context.context().clear_kernel_cache()


def release_free_memory() -> bool:
    """Collect garbage, clear TensorFlow's kernel cache and return free heap
    pages to the OS; True if some pages were returned."""
    gc.collect()
    _clear_tensorflow_kernel_cache()
    return bool(_MALLOC_TRIM(0)) if _MALLOC_TRIM is not None else False
