"""TensorFlow CPU settings chosen from measurements, not assumed.

`benchmarks/thread_settings.py` (`benchmarks/results/thread_settings.json`:
`transformer_small`, beam 4, in-graph search, a quiet 2-core AVX-512
machine, one fresh process per setting) found:

- **oneDNN on** beats off by 1.42x at batch 1 and 1.55x at batch 32.
  TensorFlow turns it on by itself only on some CPUs (not, for example, on
  AMD Zen 3), so `gnmt_tf` asks for it (`TF_ENABLE_ONEDNN_OPTS=1`, set in
  `gnmt_tf/__init__.py` before TensorFlow loads) unless the user set the
  variable.
- **One intra-op thread at batch 1** is 1.26x faster than TensorFlow's
  default of one thread per core: the ops of a single sentence are too
  small to pay for splitting. At batch 32 the default is best (the best
  other setting was within 2.4%), so it is kept.

- **TFLite: every core.** LiteRT's `Interpreter` runs one thread unless it
  is told otherwise (ai-edge-litert 2.3: `num_threads or 1`). With two
  threads the shipped Transformer's float32 export translated 1.05-1.32x
  faster at batch 32 in two runs (`benchmarks/tflite_search_parts.py
  --threads 1,2`, session 21; at batch 1 the runs disagreed: 1.01-1.26x
  faster in one, 1.23-1.72x slower in the other), so `tflite_threads()`
  gives the cores this process may use, up to `MAX_TFLITE_THREADS` (more
  were not measured).

- **TFLite at batch 32: one single-threaded interpreter per core**, each
  searching its share of the batch side by side (`tflite_workers()`,
  `gnmt_tf.host_workers`), beat one interpreter of two threads for the
  float32 and the int8 export (`benchmarks/task_space_decode_speed.py`,
  keys ``ours_tflite_*_workers``).

`apply(batch_size)` sets the intra-op pool for a process that translates
with one batch size (the `gnmt-tf translate` CLI); it must run before
TensorFlow runs its first op.
"""

import os
from typing import Optional

# At or below this batch size, one intra-op thread (see the module docstring).
SINGLE_THREAD_MAX_BATCH = 1


def intra_op_threads(batch_size: int,
                     threads: Optional[int] = None) -> Optional[int]:
    """The intra-op thread count for translating in batches of
    `batch_size`: `threads` when given, 1 for batch size 1, else None
    (TensorFlow's default)."""
    if threads is not None:
        return int(threads)
    return 1 if batch_size <= SINGLE_THREAD_MAX_BATCH else None


# `tflite_threads`: the most interpreter threads chosen by default.
MAX_TFLITE_THREADS = 4


def tflite_threads(threads: Optional[int] = None) -> int:
    """LiteRT interpreter threads: `threads` when given, else the cores this
    process may run on, at most `MAX_TFLITE_THREADS` (see the module
    docstring)."""
    if threads is not None:
        return int(threads)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_TFLITE_THREADS))


def tflite_workers(threads: Optional[int] = None) -> int:
    """Single-threaded interpreters a TFLite translator splits a batch
    between (`gnmt_tf.host_workers`): 1 (none) when `threads` is given,
    else one per core, as `tflite_threads()` counts them."""
    return 1 if threads is not None else tflite_threads()


def apply(batch_size: int, threads: Optional[int] = None) -> Optional[int]:
    """Sets TensorFlow's intra-op pool for `batch_size` (see
    `intra_op_threads`); returns the count set, or None when it keeps
    TensorFlow's default or TensorFlow has already started (its pools can
    no longer change)."""
    count = intra_op_threads(batch_size, threads)
    if count is None:
        return None
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(count)
    except RuntimeError:  # the runtime is initialised: its pools are fixed
        return None
    return count
