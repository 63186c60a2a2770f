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
- ``auto`` (the default): ``tflite`` for a model directory that carries
  its own export (the shipped models, `tflite_cache.shipped`; measured
  2.6x faster than ``xla`` at batch 1 and 1.1x at batch 32, keys
  ``ours_*`` and ``ours_xla_default_*`` of
  `benchmarks/results/task_space_decode_speed.json`), for what the host
  search runs (beam or greedy, GNMT's early stopping, float32);
  `gnmt-tf translate` also uses any cached export. Else ``xla`` in
  process where the search can compile (beam or greedy, no shortlist, no
  UNK replacement, float32, a model that compiles), and the ``graph``
  search for the rest.

`GNMT_TF_ENGINE` sets the default for a process (e.g. ``graph`` to rule
XLA out); an explicit argument or flag always wins. This module imports
no TensorFlow.
"""

import os

from gnmt_tf import tflite_cache

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


def check_engine(engine=None) -> str:
    """`engine`, or `default_engine()` for None.

    Raises:
      ValueError: not one of `ENGINES`.
    """
    engine = engine or default_engine()
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose one of "
                         f"{', '.join(ENGINES)}")
    return engine


def host_export(model_dir, engine=None, precision="float32"):
    """The float32 TFLite file `Translator.from_model_dir` sends what the
    host search runs to under `engine` (None: `default_engine`), or None:
    under ``auto`` the export `model_dir` carries itself (unpacked into
    the cache), under ``tflite`` that or a cached one. Deciding by what the
    directory holds, not by what earlier runs cached, keeps a process's
    results independent of its history.

    Raises:
      ValueError: ``tflite`` for a model with no export at hand, or with
        a precision other than float32.
    """
    engine = check_engine(engine)
    if engine not in ("auto", "tflite"):
        return None
    if precision != "float32":
        if engine == "tflite":
            raise ValueError(f"the tflite engine computes in float32, not "
                             f"{precision}")
        return None
    path = tflite_cache.cached(model_dir, own_only=engine == "auto")
    if path is None and engine == "tflite":
        raise ValueError(
            f"{model_dir} has no float32 TFLite export at hand: "
            f"`gnmt-tf translate --model {model_dir} --engine tflite` "
            "converts it into the cache once")
    return path


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
