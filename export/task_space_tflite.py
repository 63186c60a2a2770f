"""TFLite export of task-space Transformer model directories.

`export.tflite.export_tflite` hands model directories of type
``task_space_transformer`` to `export_task_space_tflite`, which converts the
model's `encode` + `decode_step` (through `export.tflite.StepModule`, builtin
ops only) and writes, next to ``model_<format>.tflite`` and ``spm.model``, a
``task.json`` that `export.task_space_tflite_translator` reads to turn
language codes and scene-tag names into the ids the model takes.

Signatures (`S` source subwords, `L` = `max_source_length`, `T` =
`max_target_length`, `B` hypotheses, `H` heads, `Dh` head width, `d` model
width, `K` scene tags, `V` vocabulary):

- ``encode``: ``source_ids`` int32 `[1, S]` (SentencePiece ids ending in the
  end token; for models trained with ``target_language_token`` starting with
  the `<2xx>` piece), ``src_lang``, ``tgt_lang`` int32 `[1]` (indices into
  ``task.json``'s ``model.languages``), ``tags`` int32 `[1, K]` (multi-hot
  over ``model.scene_tags``) -> ``time`` int32 `[1]`, ``source_mask`` bool
  `[1, S]`, ``decoder_task`` `[1, d]` and per decoder layer `i`
  ``layer_i__self_key`` / ``layer_i__self_value`` (the KV cache, zeros
  `[1, T, H, Dh]`) and ``layer_i__cross_key`` / ``layer_i__cross_value``
  `[1, S, H, Dh]`. Models trained without the task space
  (``use_task_space=False``) take ``source_ids`` only and have no
  ``decoder_task``.
- ``decode_step``: ``ids`` int32 `[B]` plus the state with ``source_mask``
  and the cross keys/values padded to `L` (False / zeros: masked positions
  get exactly zero attention) -> ``log_probs`` float32 `[B, V]`,
  ``attention`` float32 `[B, L]`, and the new ``time`` and self-attention
  caches.

Language and tag lookups stay on the host: string hash tables are not
TFLite builtins. The two fixed lengths are what the converter needs to lower
the attention's broadcasting `tf.where`s and einsums to builtins: `L` as for
GNMT, and `T` because the cache is a state tensor of `decode_step`.
`T` bounds the output: `TaskSpaceTFLiteTranslator` stops every hypothesis
after `T` subwords (its end token included), even where `max_length_ratio`
allows more.
"""

import dataclasses
import json

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

from export import tflite
from export.task_space_tflite_translator import TASK_FILE
from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf.io_utils import write_text_atomic

DEFAULT_MAX_TARGET_LENGTH = 128
TASK_OPTIONS = ("directions", "tags", "target_language_token")


def default_lengths(config, max_source_length=None, max_target_length=None,
                    target_language_token=False):
    """`(L, T)`: the given lengths, or the defaults for `config`.

    Defaults: `L = config.max_sequence_length + 1` (the longest source
    `TaskSpaceTranslator` accepts, plus its end token; + 1 more for the
    `<2xx>` token with `target_language_token`) and
    `T = min(DEFAULT_MAX_TARGET_LENGTH, config.max_sequence_length)`.

    Raises:
      ValueError: `L < 2` (one subword and the end token) or `T < 1`.
    """
    if max_source_length is None:
        max_source_length = (config.max_sequence_length + 1
                             + int(bool(target_language_token)))
    if max_target_length is None:
        max_target_length = min(DEFAULT_MAX_TARGET_LENGTH,
                                config.max_sequence_length)
    if int(max_source_length) < 2:
        raise ValueError(f"max_source_length must be >= 2, got "
                         f"{max_source_length}")
    if int(max_target_length) < 1:
        raise ValueError(f"max_target_length must be >= 1, got "
                         f"{max_target_length}")
    return int(max_source_length), int(max_target_length)


def task_space_step_module(model, max_source_length, max_target_length):
    """The `StepModule` of a `TaskSpaceTransformer` (see module docstring)."""
    config = model.config
    specs = [tf.TensorSpec([1, None], tf.int32, name="source_ids")]
    encode_fn = model.encode
    if config.use_task_space:
        specs += [tf.TensorSpec([1], tf.int32, name="src_lang"),
                  tf.TensorSpec([1], tf.int32, name="tgt_lang"),
                  tf.TensorSpec([1, config.num_tags], tf.int32, name="tags")]
    else:
        # Unused task inputs would only confuse a host (and may be pruned).
        def encode_fn(source_ids):
            return model.encode(source_ids)
    return tflite.StepModule(model, max_source_length, encode_fn=encode_fn,
                             encode_specs=specs,
                             cache_length=max_target_length)


def convert_task_space(model, quantization="float32", max_source_length=None,
                       max_target_length=None):
    """Converts a trained `TaskSpaceTransformer` to TFLite `bytes`.

    Args:
      model: the model, weights loaded.
      quantization: one of `export.tflite.QUANTIZATIONS`.
      max_source_length, max_target_length: int or None; see
        `default_lengths`.
    """
    tflite.check_quantization(quantization)
    lengths = default_lengths(model.config, max_source_length,
                              max_target_length)
    return tflite.convert_module(task_space_step_module(model, *lengths),
                                 quantization)


def convert_task_space_int8(model, max_source_length=None,
                            max_target_length=None):
    """Converts a QAT `TaskSpaceTransformer` (`export.transformer_qat`) to
    int8 TFLite `bytes`, its tied embedding table stored once (see
    `export.tflite_int8`)."""
    from export import tflite_int8

    tflite_int8._check_qat(model)
    lengths = default_lengths(model.config, max_source_length,
                              max_target_length)
    return tflite_int8.convert_module_int8(
        task_space_step_module(model, *lengths),
        model.embedding.embeddings.numpy())


def task_metadata(config, options, max_source_length, max_target_length):
    """The `task.json` dict: the model config (languages, scene tags,
    special ids), the training task options, and the two fixed lengths."""
    task_options = dataclasses.asdict(options)
    return {
        "model_type": "task_space_transformer",
        "model": config.to_dict(),
        "task_space": {key: task_options[key] for key in TASK_OPTIONS},
        "max_source_length": max_source_length,
        "max_target_length": max_target_length,
    }


def export_task_space_tflite(model_dir, out_dir, quantization="float32",
                             max_source_length=None, max_target_length=None):
    """Writes a task-space model directory's TFLite model, vocabulary and
    `task.json` to `out_dir`.

    Example:
      >>> paths = export_task_space_tflite("runs/ts", "tflite/ts")
      >>> TaskSpaceTFLiteTranslator(paths["model"]).translate(
      ...     ["A dog runs."], "en", "fr", "caption")

    Args:
      model_dir: a directory written by `task_space.training`.
      out_dir: directory to write to (created if missing).
      quantization: one of `export.tflite.QUANTIZATIONS`, or ``"int8"`` for
        a QAT model directory (`export.transformer_qat`).
      max_source_length: int or None. Longest source in subwords, end token
        (and `<2xx>` token) included; `decode_step`'s fixed memory length.
      max_target_length: int or None. KV-cache length: the longest output in
        subwords, end token included. Defaults: `default_lengths`.

    Returns:
      `{"model": ..., "vocabulary": ..., "task": ...}` Paths.
    """
    from task_space.training import read_task_space_config

    if quantization != "int8":
        tflite.check_quantization(quantization)
    config, options = read_task_space_config(model_dir)
    lengths = default_lengths(config, max_source_length, max_target_length,
                              options.target_language_token)
    model, subwords, _ = model_dir_lib.load_model(model_dir)
    if quantization == "int8":
        flatbuffer = convert_task_space_int8(model, *lengths)
    else:
        flatbuffer = convert_task_space(model, quantization, *lengths)
    paths = tflite.write_tflite(flatbuffer, subwords, out_dir, quantization)
    paths["task"] = paths["model"].parent / TASK_FILE
    write_text_atomic(paths["task"], json.dumps(
        task_metadata(config, options, *lengths), indent=2) + "\n")
    return paths
