"""TFLite export: `encode` and `decode_step` for a host-side search.

A TFLite model cannot run the SentencePiece ops or a search with dynamic
buffers efficiently, so on devices the search runs on the host
(`export.tflite_translator.TFLiteTranslator`) and the model offers two
signatures, the same as the SavedModel's:

- ``encode``: ``source_ids`` int32 `[1, S]` (one sentence, ending in the end
  token) -> the initial decoding state (GNMT: ``memory`` `[1, S, H]`,
  ``memory_keys`` `[1, S, A]`, ``memory_mask`` bool `[1, S]`, ``h_i``,
  ``c_i`` `[1, H]`);
- ``decode_step``: ``ids`` int32 `[B]` + the state, its memory padded to
  `[B, L, ...]` with `L = max_source_length` -> ``log_probs`` `[B, V]`,
  ``attention`` `[B, L]` and the changed state (``h_i``, ``c_i`` `[B, H]`).

Those two fixed sizes (batch 1 in `encode`, memory length `L` in
`decode_step`) let the converter use builtin ops only, so any LiteRT runtime
runs the model without the Flex (Select TF ops) delegate; see `StepModule`.

Task-space Transformer model directories (model type
``task_space_transformer``) are exported by
`export.task_space_tflite.export_task_space_tflite`, which `export_tflite`
dispatches to: ``encode`` also takes the task as ids (``src_lang``,
``tgt_lang`` int32 `[1]`, ``tags`` int32 `[1, K]` multi-hot), the state is
the Transformer's (cross keys/values and ``source_mask`` padded to `L`, a KV
cache of a fixed `max_target_length` positions), and a ``task.json`` next to
the model maps language codes and tag names to those ids.

Weight formats (`QUANTIZATIONS`):

- ``float32``: as trained.
- ``dynamic_range``: int8 weights, float activations (the converter's default
  optimisation; about 4x smaller, no calibration data).
- ``float16``: float16 weights, dequantized to float32 at load time.

Quantization-aware training (tfmot) is in `export.qat`, int8 models (QAT
and post-training) in `export.tflite_int8`.

`export_tflite(model_dir, out_dir)` writes `<out_dir>/model_<format>.tflite`
and `<out_dir>/spm.model` (and for task-space models `<out_dir>/task.json`),
everything `TFLiteTranslator` needs.
"""

import pathlib
import tempfile
import types

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

from export.savedmodel import make_step_functions
from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf.io_utils import copy_file_atomic, write_bytes_atomic

QUANTIZATIONS = ("float32", "dynamic_range", "float16")
SIGNATURE_KEYS = ("encode", "decode_step")
DEFAULT_MAX_SOURCE_LENGTH = 128


class StepModule(tf.Module):
    """A model with only its `encode` and `decode_step` functions.

    Two shapes are fixed so that the converter needs only builtin ops:
    `encode` takes one sentence at a time (`source_ids` `[1, S]`; the
    encoder's `tf.scan` is lowered only when the loop's element shapes, batch
    included, are static), and `decode_step`'s attention memory has a fixed
    length `max_source_length` (its broadcasting slices are lowered only with
    at most one unknown dimension). The host pads `encode`'s outputs to that
    length; masked positions get exactly zero attention.

    Args:
      model: a model with `encode`, `initial_state` and `step`.
      max_source_length: int. Longest source, in subwords with the end token.
      encode_fn, encode_specs, cache_length: for models whose encoder takes
        more than the source ids, or whose decoder cache has a size; see
        `export.savedmodel.make_step_functions` (the specs must have batch
        size 1).
    """

    def __init__(self, model, max_source_length=DEFAULT_MAX_SOURCE_LENGTH,
                 encode_fn=None, encode_specs=None, cache_length=None):
        super().__init__(name="steps")
        # Only the weights are tracked: saving a tracked Keras model traces
        # every layer's call (slow, and it fails for models never called).
        self._untracked = types.SimpleNamespace(model=model)
        self.model_variables = list(model.variables)
        self.encode, self.decode_step = make_step_functions(
            model, encode_batch_size=1, step_source_length=max_source_length,
            encode_fn=encode_fn, encode_specs=encode_specs,
            cache_length=cache_length)

    @property
    def model(self):
        """The model (not tracked: its variables are, as `model_variables`)."""
        return self._untracked.model

    def signatures(self):
        return {"encode": self.encode, "decode_step": self.decode_step}


def convert(model, quantization="float32",
            max_source_length=DEFAULT_MAX_SOURCE_LENGTH):
    """Converts a step-function model to a two-signature TFLite flatbuffer.

    Args:
      model: a model with `encode`, `initial_state` and `step`, weights loaded.
      quantization: one of `QUANTIZATIONS`.
      max_source_length: int. Longest source the model accepts, in subwords
        with the end token (`decode_step`'s fixed memory length).

    Returns:
      The TFLite model as `bytes`.

    Raises:
      ValueError: an unknown `quantization`.
    """
    check_quantization(quantization)
    return convert_module(StepModule(model, max_source_length), quantization)


def check_quantization(quantization):
    """Raises a ValueError naming the known formats for an unknown one."""
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"unknown quantization {quantization!r}; "
                         f"known: {', '.join(QUANTIZATIONS)}")


def convert_module(module, quantization="float32"):
    """Converts a `StepModule` to a TFLite flatbuffer (`bytes`) with its two
    signatures, builtin ops only, weights in `quantization`."""
    check_quantization(quantization)
    with tempfile.TemporaryDirectory(prefix="gnmt_tf_tflite_") as tmp:
        # Going through a SavedModel gives one flatbuffer with named
        # signatures (from_concrete_functions names them by position).
        tf.saved_model.save(module, tmp, signatures=module.signatures())
        converter = tf.lite.TFLiteConverter.from_saved_model(
            tmp, signature_keys=list(SIGNATURE_KEYS))
        converter.target_spec.supported_ops = [
            tf.lite.OpsSet.TFLITE_BUILTINS]
        if quantization in ("dynamic_range", "float16"):
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantization == "float16":
            converter.target_spec.supported_types = [tf.float16]
        return converter.convert()


def export_tflite(model_dir, out_dir, quantization="float32",
                  max_source_length=None, max_target_length=None):
    """Writes a trained model directory's TFLite model and vocabulary.

    Example:
      >>> paths = export_tflite("runs/en-de", "tflite/en-de", "dynamic_range")
      >>> TFLiteTranslator(paths["model"], paths["vocabulary"]).translate(
      ...     ["A dog runs."])

    Args:
      model_dir: a trained model directory (`gnmt_tf.model_dir`).
      out_dir: directory to write to (created if missing).
      quantization: one of `QUANTIZATIONS`.
      max_source_length: int or None. Longest source, in subwords with the
        end token (default `DEFAULT_MAX_SOURCE_LENGTH`; for task-space models
        see `export_task_space_tflite`).
      max_target_length: int or None. Task-space models only: the KV-cache
        length, i.e. the longest output (see `export_task_space_tflite`).

    Returns:
      `{"model": Path of model_<quantization>.tflite, "vocabulary": Path of
      spm.model}` (task-space models: also `"task"`, the Path of task.json).

    Raises:
      ValueError: an unknown `quantization`, or `max_target_length` for a
        GNMT model (its recurrent state has no length).
    """
    from task_space import registry as task_space_registry  # no TensorFlow

    check_quantization(quantization)
    if task_space_registry.is_task_space_model_dir(model_dir):
        from export.task_space_tflite import export_task_space_tflite

        return export_task_space_tflite(model_dir, out_dir, quantization,
                                        max_source_length, max_target_length)
    if max_target_length is not None:
        raise ValueError("max_target_length is for task-space Transformer "
                         "models; a GNMT decoder state has no length")
    max_source_length = max_source_length or DEFAULT_MAX_SOURCE_LENGTH
    model, subwords, _ = model_dir_lib.load_model(model_dir)
    return write_tflite(convert(model, quantization, max_source_length),
                        subwords, out_dir, quantization)


def write_tflite(flatbuffer, subwords, out_dir, quantization):
    """Writes `model_<quantization>.tflite` and `spm.model` to `out_dir`
    (created if missing); returns `export_tflite`'s dict of paths."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model_path = out_dir / f"model_{quantization}.tflite"
    write_bytes_atomic(model_path, flatbuffer)
    vocabulary = out_dir / model_dir_lib.VOCAB_FILE
    copy_file_atomic(subwords.model_path, vocabulary)
    return {"model": model_path, "vocabulary": vocabulary}
