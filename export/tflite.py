"""TFLite export: `encode` and `decode_step` for a host-side search.

A TFLite model cannot run the SentencePiece ops or a search with dynamic
buffers efficiently, so on devices the search runs on the host
(`gnmt_tf.tflite_translator.TFLiteTranslator`) and the model offers two
signatures, the same as the SavedModel's, for any `Seq2SeqModel`:

- ``encode``: ``source_ids`` int32 `[1, S]` (one sentence, ending in the end
  token, after the model's source prefix if it has one) and the model's task
  inputs as ids (``src_lang``, ``tgt_lang`` int32 `[1]`, ``tags`` int32
  `[1, K]` multi-hot for the task-space Transformer; none for GNMT) -> the
  initial decoding state (GNMT: ``memory`` `[1, S, H]`, ``memory_keys``
  `[1, S, A]`, ``memory_mask`` bool `[1, S]`, ``h_i``, ``c_i`` `[1, H]`; the
  Transformer: ``time``, ``source_mask``, its cross keys/values and a KV
  cache of `T = max_target_length` positions);
- ``decode_step``: ``ids`` int32 `[B]` + the state, its source-length
  tensors padded to `[B, L, ...]` with `L = max_source_length` ->
  ``log_probs`` `[B, V]`, ``attention`` `[B, L]` and the changed state.

Those fixed sizes (batch 1 in `encode`, `L`, and `T` for a cache) let the
converter use builtin ops only, so any LiteRT runtime runs the model without
the Flex (Select TF ops) delegate; see `StepModule`. String lookups stay on
the host (hash tables are not builtins): ``model.json`` next to the model
describes the task inputs (`gnmt_tf.seq2seq_model.TaskInput`), the source
prefix and the two lengths.

Weight formats (`QUANTIZATIONS`):

- ``float32``: as trained.
- ``dynamic_range``: int8 weights, float activations (the converter's default
  optimisation; about 4x smaller, no calibration data).
- ``float16``: float16 weights, dequantized to float32 at load time.

Quantization-aware training (tfmot) is in `export.qat`.

- ``int8``: a QAT model's fake-quant ranges as int8 scales
  (`export.tflite_int8`).

`export_tflite(model_dir, out_dir)` writes `<out_dir>/model_<format>.tflite`,
`<out_dir>/spm.model` and `<out_dir>/model.json`, everything
`TFLiteTranslator` needs.
"""

import json
import pathlib
import tempfile
import types

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

from export import tflite_int8
from export.savedmodel import make_step_functions, task_encode_function
from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf.host_translator import METADATA_FILE
from gnmt_tf.io_utils import copy_file_atomic, write_bytes_atomic
from gnmt_tf.io_utils import write_text_atomic

QUANTIZATIONS = ("float32", "dynamic_range", "float16", "int8")
SIGNATURE_KEYS = tflite_int8.SIGNATURE_KEYS
DEFAULT_MAX_SOURCE_LENGTH = 128  # models without a length limit (GNMT)
DEFAULT_MAX_TARGET_LENGTH = 128  # cache length, at most the model's limit


class StepModule(tf.Module):
    """A model with only its `encode` and `decode_step` functions.

    Fixed shapes, so that the converter needs only builtin ops: `encode`
    takes one sentence at a time (`source_ids` `[1, S]`; GNMT's encoder
    `tf.scan` is lowered only when the loop's element shapes, batch
    included, are static), `decode_step`'s source-length state has a fixed
    length `max_source_length` (the attention's broadcasting slices are
    lowered only with at most one unknown dimension; the host pads
    `encode`'s outputs, and masked positions get exactly zero attention),
    and a cache has `max_target_length` positions.

    Args:
      model: a `gnmt_tf.seq2seq_model.Seq2SeqModel`, weights loaded.
      max_source_length: int `L`. Longest source, in subwords with the end
        token (and source prefix).
      max_target_length: int `T` or None. Cache length, for models with a
        fixed-size decoder cache (`model.max_target_length` set).
    """

    def __init__(self, model, max_source_length=DEFAULT_MAX_SOURCE_LENGTH,
                 max_target_length=None):
        super().__init__(name="steps")
        # Only the weights are tracked: saving a tracked Keras model traces
        # every layer's call (slow, and it fails for models never called).
        self._untracked = types.SimpleNamespace(model=model)
        self.model_variables = list(model.variables)
        encode, specs = task_encode_function(model, batch_size=1)
        self.encode, self.decode_step = make_step_functions(
            model, encode_batch_size=1, step_source_length=max_source_length,
            encode_fn=encode, encode_specs=specs,
            cache_length=max_target_length)

    @property
    def model(self):
        """The model (not tracked: its variables are, as `model_variables`)."""
        return self._untracked.model

    def signatures(self):
        return {"encode": self.encode, "decode_step": self.decode_step}


def default_lengths(model, max_source_length=None, max_target_length=None):
    """`(L, T)` of a model's export: the given lengths, or the defaults.

    Models with a length limit (`model.max_target_length`, the task-space
    Transformer): `L` = that limit + the end token + the source prefix (the
    longest source `Translator` accepts), `T` = at most
    `DEFAULT_MAX_TARGET_LENGTH`. Others (GNMT): `L` =
    `DEFAULT_MAX_SOURCE_LENGTH`, `T` = None.

    Raises:
      ValueError: `L < 2` (one subword and the end token), `T < 1`, or a
        `max_target_length` for a model without a cache.
    """
    limit = model.max_target_length
    if limit is None:
        if max_target_length is not None:
            raise ValueError("max_target_length is for models with a "
                             "fixed-size decoder cache (the task-space "
                             "Transformer); a GNMT decoder state has no length")
        max_source_length = max_source_length or DEFAULT_MAX_SOURCE_LENGTH
    else:
        prefix = 0 if model.source_prefix is None else 1
        max_source_length = max_source_length or limit + 1 + prefix
        max_target_length = (max_target_length
                             or min(DEFAULT_MAX_TARGET_LENGTH, limit))
        if int(max_target_length) < 1:
            raise ValueError(f"max_target_length must be >= 1, got "
                             f"{max_target_length}")
        max_target_length = int(max_target_length)
    if int(max_source_length) < 2:
        raise ValueError(f"max_source_length must be >= 2, got "
                         f"{max_source_length}")
    return int(max_source_length), max_target_length


def check_quantization(quantization):
    """Raises a ValueError naming the known formats for an unknown one."""
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"unknown quantization {quantization!r}; "
                         f"known: {', '.join(QUANTIZATIONS)}")


def convert(model, quantization="float32", max_source_length=None,
            max_target_length=None, share_table=True):
    """Converts a `Seq2SeqModel` to a two-signature TFLite flatbuffer.

    Args:
      model: the model, weights loaded (for ``int8``, a QAT model).
      quantization: one of `QUANTIZATIONS`.
      max_source_length, max_target_length: int or None; see
        `default_lengths`.
      share_table: bool. ``int8``: store a tied embedding table once
        (`export.tflite_tied_table`); False keeps the converter's copies.

    Returns:
      The TFLite model as `bytes`.

    Raises:
      ValueError: an unknown `quantization`, bad lengths, or ``int8`` for a
        model without fake quantization.
    """
    check_quantization(quantization)
    module = StepModule(model, *default_lengths(model, max_source_length,
                                                max_target_length))
    if quantization == "int8":
        if not tflite_int8.is_qat_model(model):
            raise ValueError(
                "int8 conversion needs a quantization-aware model "
                "(see export.qat.qat_finetune / gnmt-tf export qat)")
        table = tflite_int8.tied_table(model) if share_table else None
        return tflite_int8.convert_module_int8(module, table)
    return convert_module(module, quantization)


def convert_module(module, quantization="float32"):
    """Converts a `StepModule` to a TFLite flatbuffer (`bytes`) with its two
    signatures, builtin ops only, weights in a float `quantization`."""
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


def export_metadata(model, payload, max_source_length, max_target_length):
    """The `model.json` dict a host translator reads: the task inputs, the
    source prefix, a default task, the two lengths, and what the model
    directory says besides the weights' config (a GNMT model's direction,
    a task-space model's trained directions)."""
    prefix = model.source_prefix
    return {
        **{k: v for k, v in payload.items() if k not in ("model", "train")},
        "model_type": payload.get("model_type", "gnmt"),
        "task_inputs": [t.to_json() for t in model.task_inputs()],
        "source_prefix": None if prefix is None else {
            "input": prefix[0], "ids": list(prefix[1])},
        "default_task": {k: v if isinstance(v, str) else list(v)
                         for k, v in model.default_task.items()},
        "trained_tasks": model.trained_tasks,
        "fixed_task": model.fixed_task,
        "bos_id": model.config.bos_id,
        "eos_id": model.config.eos_id,
        "max_source_length": max_source_length,
        "max_target_length": max_target_length,
        # Where the host stops: the cache, or the model's own limit.
        "max_output_length": (None if max_target_length is None else
                              min(max_target_length, model.max_target_length)),
    }


def export_tflite(model_dir, out_dir, quantization="float32",
                  max_source_length=None, max_target_length=None):
    """Writes a trained model directory's TFLite model, vocabulary and
    `model.json` (any model type).

    Example:
      >>> paths = export_tflite("runs/en-de", "tflite/en-de", "dynamic_range")
      >>> TFLiteTranslator(paths["model"]).translate(["A dog runs."])
      >>> paths = export_tflite("runs/ts", "tflite/ts")
      >>> TFLiteTranslator(paths["model"]).translate(
      ...     ["A dog runs."], src_lang="en", tgt_lang="fr", tags="caption")

    Args:
      model_dir: a trained model directory (`gnmt_tf.model_dir`); for
        ``int8`` a QAT one (`gnmt-tf export qat`).
      out_dir: directory to write to (created if missing).
      quantization: one of `QUANTIZATIONS`.
      max_source_length, max_target_length: int or None; see
        `default_lengths`.

    Returns:
      `{"model": Path of model_<quantization>.tflite, "vocabulary": Path of
      spm.model, "metadata": Path of model.json}`.

    Raises:
      ValueError: an unknown `quantization`, bad lengths, or ``int8`` for a
        float model directory.
    """
    check_quantization(quantization)
    model, subwords, payload = model_dir_lib.load_model(model_dir)
    lengths = default_lengths(model, max_source_length, max_target_length)
    if quantization == "int8" and not tflite_int8.is_qat_model(model):
        raise ValueError(
            f"{model_dir} is a float model: int8 needs a QAT model directory "
            "(gnmt-tf export qat --model ... --out QAT_DIR)")
    flatbuffer = convert(model, quantization, *lengths)
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"model": out_dir / f"model_{quantization}.tflite",
             "vocabulary": out_dir / model_dir_lib.VOCAB_FILE,
             "metadata": out_dir / METADATA_FILE}
    write_bytes_atomic(paths["model"], flatbuffer)
    copy_file_atomic(subwords.model_path, paths["vocabulary"])
    metadata = export_metadata(model, payload, *lengths)
    write_text_atomic(paths["metadata"], json.dumps(metadata, indent=2) + "\n")
    return paths
