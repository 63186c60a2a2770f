"""Which engine runs a search when the caller names none.

Engines:

- ``graph``: the search as a TensorFlow graph (`tf.function`), with a KV
  cache that grows a position a step; every option and every model.
- ``xla``: the same search compiled whole by XLA (`Translator(...,
  jit_compile_search=True)`): fixed shapes, the source width padded up to
  a bucket, one compilation per batch shape, kept on disk by
  `gnmt_tf.xla_cache` so that the next process loads it.
- ``tflite``: the model's float32 TFLite export driven by the NumPy host
  search (`gnmt_tf.host_translator`), converted once per model and kept by
  `gnmt_tf.tflite_cache`: no TensorFlow import at all, so a command
  answers in a fraction of a second.
- ``auto`` (the default): ``xla`` in process where the search can compile
  (beam or greedy, no shortlist, no UNK replacement, float32, a model that
  compiles); `gnmt-tf translate` first uses ``tflite`` when the model's
  cached export exists, and the in-process ``graph`` search otherwise.

`GNMT_TF_ENGINE` sets the default for a process (e.g. ``graph`` to rule
XLA out); an explicit argument or flag always wins. This module imports
no TensorFlow.
"""

import os

ENGINES = ("auto", "graph", "xla", "tflite")
ENGINE_ENV = "GNMT_TF_ENGINE"


def default_engine() -> str:
    """`$GNMT_TF_ENGINE`, else ``auto``.

    Raises:
      ValueError: the variable names no engine.
    """
    value = os.environ.get(ENGINE_ENV, "").strip() or "auto"
    if value not in ENGINES:
        raise ValueError(f"{ENGINE_ENV}={value!r}: not an engine; choose "
                         f"one of {', '.join(ENGINES)}")
    return value


def compiles_by_default(model, shortlist=None, jit_compile_step=False,
                        growing_cache=None) -> bool:
    """Whether a `Translator` given no `jit_compile_search` compiles its
    searches: under ``auto`` or ``xla``, for a model that compiles
    (`supports_compiled_search`), computing in float32 (XLA's bfloat16
    rounds differently from TensorFlow's kernels), without a shortlist, a
    compiled step or a growing cache asked for."""
    return (default_engine() in ("auto", "xla")
            and model.supports_compiled_search
            and model.compute_dtype == "float32"
            and shortlist is None and not jit_compile_step
            and not growing_cache)
