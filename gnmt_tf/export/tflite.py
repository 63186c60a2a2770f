"""TFLite export of any `Seq2SeqModel`: `encode` + `decode_step` for a
host-side search (`gnmt_tf.tflite_translator.TFLiteTranslator`).

The SentencePiece ops and a search with dynamic buffers do not run well in
TFLite, so the model offers the SavedModel's two step signatures
(`gnmt_tf.export.savedmodel`), with the task inputs as ids and shapes the converter
lowers with builtin ops only (no Flex delegate; see `StepModule`): by
default a step takes any source length and the task-space Transformer's
cache grows by a position per step; `fixed_shapes` fixes both. A third
signature can hold one sentence's whole beam search, its buffers sized per
call (`gnmt_tf.export.search_signature`). `model.json` next to the model
tells the host the task inputs' names, the source prefix and the lengths.

Formats (`QUANTIZATIONS`): ``float32``; ``dynamic_range`` (int8 weights,
float activations, no calibration data); ``float16`` weights; ``int8``
weights and activations from a QAT model (`gnmt_tf.export.qat`), whose fake-quant
ranges become the int8 scales (the converter's post-training full-integer
calibration crashes on this two-signature model with TF 2.21). What runs
int8 is listed in `gnmt_tf.models.gnmt.qat` and `gnmt_tf.models.task_space.qat`;
`int8_report` lists a converted model's tensor types.
"""

import contextlib
import json
import pathlib
import tempfile

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import numpy as np
import tensorflow as tf

from gnmt_tf.export.host_metadata import (DEFAULT_MAX_SOURCE_LENGTH, export_lengths,
                                          export_metadata, growing_cache)
from gnmt_tf.export.search_signature import search_function
from gnmt_tf.export.step_functions import (WeightsModule, make_step_functions,
                                           task_encode_function)
from gnmt_tf.export.tflite_tied_table import dedupe_buffers, share_tied_table
from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf.host_translator import METADATA_FILE
from gnmt_tf.io_utils import copy_file_atomic, write_bytes_atomic
from gnmt_tf.io_utils import write_text_atomic
from gnmt_tf.search_signatures import (check_search_beam_size,
                                       search_signature_name)

QUANTIZATIONS = ("float32", "dynamic_range", "float16", "int8")


class StepModule(WeightsModule):
    """A model with only its `encode` and `decode_step` functions.

    Shapes the converter lowers with builtin ops only: `encode` takes one
    sentence at a time (`source_ids` `[1, S]`; GNMT's encoder `tf.scan` is
    lowered only when the loop's element shapes, batch included, are
    static), or any number of sentences of one length for models whose
    encoder has no loop (`exports_encode_at_any_batch`, the task-space
    Transformer). `decode_step` takes its state at any batch size and, by
    default, at any source length: the host stacks a batch's states padded
    to its longest source (masked positions get exactly zero attention), so
    a step reads and attends to only those positions. A model with a
    growing cache (`supports_growing_cache`, the task-space Transformer)
    gets one by default: empty from `encode`, one position longer after
    each `decode_step`. The host resizes the interpreter's inputs as the
    shapes change (`gnmt_tf.tflite_runtime`).

    `cache_block` (a model with a growing cache) keeps the interpreter
    from reallocating its tensors at every step, which at a batch of one
    sentence costs as much as a fifth of an int8 step: the cache has the
    fixed-size layout (written at each row's position, later positions
    masked) but grows `cache_block` positions at a time, on the host
    (`gnmt_tf.tflite_runtime`), so shapes change once every `cache_block`
    steps. Each step then attends to up to `cache_block - 1` unused
    positions too, which costs more than the reallocations save at large
    batches (`benchmarks/tflite_cache_block.py`): for latency, one
    sentence at a time.

    `search_beam_sizes` adds a signature per beam size K, the whole beam
    search of one sentence with K beams (`gnmt_tf.export.search_signature`):
    the runtime then translates one sentence at a time in one call.

    `fixed_shapes` gives runtimes that cannot resize inputs a
    `decode_step` whose source-length state is `max_source_length` long
    (the host zero-pads `encode`'s outputs to it) and whose cache holds
    `max_target_length` positions. It costs speed: every step then reads
    and attends to `L` source and `T` cache positions. A fixed cache is
    also what a model without a growing one gets, and what a given
    `max_target_length` asks for.

    Args:
      model: a `gnmt_tf.seq2seq_model.Seq2SeqModel`, weights loaded.
      max_source_length: int `L`. Longest source, in subwords with the end
        token (and source prefix).
      max_target_length: int `T` or None. Cache length, for models with a
        fixed-size decoder cache (`model.max_target_length` set); None
        for a growing cache.
      fixed_shapes: bool. See above.
      batched_encode: bool. False keeps `encode` at one sentence.
      log_softmax: callable or None. See `make_step_functions`.
      cache_block: int or None. See above (`make_step_functions`).
      search_beam_sizes: ints. See above.
    """

    def __init__(self, model, max_source_length=DEFAULT_MAX_SOURCE_LENGTH,
                 max_target_length=None, fixed_shapes=False,
                 batched_encode=True, log_softmax=None, cache_block=None,
                 search_beam_sizes=()):
        super().__init__(model, "steps")
        batch = (None if batched_encode
                 and model.exports_encode_at_any_batch
                 else 1)
        encode, specs = task_encode_function(model, batch_size=batch)
        growing = growing_cache(model, fixed_shapes, max_target_length,
                                cache_block)
        self.encode, self.decode_step = make_step_functions(
            model, encode_batch_size=batch,
            step_source_length=max_source_length if fixed_shapes else None,
            encode_fn=encode, encode_specs=specs,
            cache_length=(None if growing or cache_block is not None
                          else max_target_length),
            growing_cache=growing, log_softmax=log_softmax,
            cache_block=cache_block)
        self.searches = {}  # signature name -> a beam size's whole search
        if search_beam_sizes:  # (the batch-1 encoder only where needed)
            one_encode, one_specs = task_encode_function(model, batch_size=1)
            self.searches = {
                search_signature_name(k): search_function(
                    model, k, one_encode, one_specs, log_softmax)
                for k in sorted(set(search_beam_sizes))}

    def signatures(self):
        return {"encode": self.encode, "decode_step": self.decode_step,
                **self.searches}


def log_softmax_through_softmax(logits):
    """`tf.nn.log_softmax(logits)` (last axis) from ops XNNPACK runs:
    `logits - (max - log(largest softmax entry))`, that entry being
    `1 / sum(exp(logits - max))`, at least `1 / V`, so its log is finite.

    Why: TFLite's LOG_SOFTMAX is not delegated to XNNPACK: its Eigen
    kernel runs on one thread, 9 % of the shipped Transformer's
    `decode_step` at 128 rows, where XNNPACK's SOFTMAX is vectorised and
    threaded (`Invoke` at 128 rows 1.06x faster with 1 thread, 1.12x
    with 2: `benchmarks/tflite_step_invoke.py`). Equal
    to `tf.nn.log_softmax` to float rounding. Float exports only: an int8
    SOFTMAX would round the largest entry to a multiple of 1/256.
    """
    top = tf.reduce_max(logits, axis=-1, keepdims=True)
    top_probability = tf.reduce_max(tf.nn.softmax(logits), axis=-1,
                                    keepdims=True)
    return logits - (top - tf.math.log(top_probability))


def check_cache_block(cache_block, fixed_shapes=False,
                      max_target_length=None):
    """Raises a ValueError for a `cache_block` with a fixed shape or
    length (`make_step_functions` refuses the rest: a block below 1, a
    model without a growing cache)."""
    if cache_block is not None and (fixed_shapes
                                    or max_target_length is not None):
        raise ValueError("cache_block is for the default shapes: not with "
                         "fixed_shapes or max_target_length")


def check_search_beams(search_beam_sizes, quantization="float32",
                       fixed_shapes=False):
    """Raises a ValueError for a search beam size below 2, or any with
    ``int8`` (the QAT graph's search is not converted) or `fixed_shapes`
    (whose runtimes cannot resize the search's inputs either)."""
    for beam_size in search_beam_sizes:
        check_search_beam_size(beam_size)
    if search_beam_sizes and (quantization == "int8" or fixed_shapes):
        raise ValueError("a search signature is for float32, float16 and "
                         "dynamic_range exports with the default shapes")


def _is_qat_dir(model_dir):
    from gnmt_tf import model_types

    name = model_dir_lib.read_config(model_dir).get("model_type", "gnmt")
    return bool(model_types.get_model_type(name).quantized_from)


def check_quantization(quantization):
    """Raises a ValueError naming the known formats for an unknown one."""
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"unknown quantization {quantization!r}; "
                         f"known: {', '.join(QUANTIZATIONS)}")


def convert(model, quantization="float32", max_source_length=None,
            max_target_length=None, share_table=True, fixed_shapes=False,
            attention_products=True, cache_block=None, search_beam_sizes=()):
    """Converts a `Seq2SeqModel` to a two-signature TFLite flatbuffer
    (and one per search beam size).

    Args:
      model: the model, weights loaded (for ``int8``, a QAT model).
      quantization: one of `QUANTIZATIONS`.
      max_source_length, max_target_length: int or None; see
        `default_lengths`.
      share_table: bool. ``int8``: store a tied embedding table once
        (`gnmt_tf.export.tflite_tied_table`); False keeps the converter's copies.
      fixed_shapes: bool. See `StepModule`.
      attention_products: bool. Trace `decode_step` in the model's
        `compiled_step_context()` (False: its plain step). The Transformer
        then attends with broadcast products and sums instead of einsums:
        1.21x faster translation at batch 32 and 1.10x at batch 1 on the
        shipped model, same outputs (`benchmarks/one_query_attention.py`).
      cache_block: int or None. See `StepModule`.
      search_beam_sizes: ints. See `StepModule`.

    Returns:
      The TFLite model as `bytes`.

    Raises:
      ValueError: an unknown `quantization`, bad lengths, a `cache_block`
        that cannot apply (`check_cache_block`, `make_step_functions`),
        ``int8`` for a model without fake quantization, or a bad
        search beam size (`check_search_beams`).
    """
    check_quantization(quantization)
    check_cache_block(cache_block, fixed_shapes, max_target_length)
    check_search_beams(search_beam_sizes, quantization, fixed_shapes)
    table = None
    if quantization == "int8":
        from gnmt_tf.quantization import qat_layers  # tfmot: int8 only

        if not qat_layers(model):
            raise ValueError(
                "int8 needs a quantization-aware model: a QAT model "
                "directory (gnmt-tf export qat --model ... --out QAT_DIR)")
        if share_table and getattr(model.config, "tie_embeddings", True):
            table = model.embedding.embeddings.numpy()
    # An int8 `encode` of several sentences gives each slightly different
    # states than encoding it alone (the shipped Transformer: 37.77 against
    # 38.09 BLEU, in chunks of 32 test sentences), so int8 keeps batch 1.
    context = (model.compiled_step_context() if attention_products
               else contextlib.nullcontext())
    with context:  # read as the steps trace
        module = StepModule(
            model, *export_lengths(model, max_source_length,
                                   max_target_length, fixed_shapes,
                                   cache_block),
            fixed_shapes=fixed_shapes, batched_encode=quantization != "int8",
            log_softmax=(None if quantization == "int8"
                         else log_softmax_through_softmax),
            cache_block=cache_block, search_beam_sizes=search_beam_sizes)
        return convert_module(module, quantization, table)


def convert_module(module, quantization="float32", table=None):
    """Converts a `StepModule` to TFLite `bytes` with its signatures,
    builtin ops only; for ``int8`` (a QAT model) a tied embedding `table`
    (float `[vocabulary_size, hidden_dim]`) is stored once."""
    check_quantization(quantization)
    with tempfile.TemporaryDirectory(prefix="gnmt_tf_tflite_") as tmp:
        # Going through a SavedModel gives one flatbuffer with named
        # signatures (from_concrete_functions names them by position).
        signatures = module.signatures()
        tf.saved_model.save(module, tmp, signatures=signatures)
        converter = tf.lite.TFLiteConverter.from_saved_model(
            tmp, signature_keys=list(signatures))
        converter.target_spec.supported_ops = [
            tf.lite.OpsSet.TFLITE_BUILTINS]
        if quantization != "float32":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantization == "float16":
            converter.target_spec.supported_types = [tf.float16]
        if quantization == "int8":
            # Per-tensor scales, as trained (per-channel would re-quantize
            # the FullyConnected weights and store the tied table once more).
            converter._experimental_disable_per_channel = True
        flatbuffer = converter.convert()
    if quantization != "int8":
        return flatbuffer
    if table is not None:
        flatbuffer = share_tied_table(flatbuffer, table)
    return dedupe_buffers(flatbuffer)


def int8_report(model_path):
    """Tensor types of a TFLite model, all subgraphs (signatures and loop
    bodies): `{"int8": [tensor names], "float32": [...], ...}`. Weight
    tensors carry their fake-quant op's name (`LastValueQuant`)."""
    from gnmt_tf.tflite_translator import interpreter_class

    interpreter = interpreter_class()(model_path=str(model_path))
    count = interpreter.num_subgraphs()
    report = {}
    for index in range(count if isinstance(count, int) else count()):
        for detail in interpreter.get_tensor_details(index):
            dtype = np.dtype(detail["dtype"]).name
            report.setdefault(dtype, []).append(detail["name"])
    return report


def export_tflite(model_dir, out_dir, quantization="float32",
                  max_source_length=None, max_target_length=None,
                  fixed_shapes=False, attention_products=True,
                  cache_block=None, search_beam_sizes=()):
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
        ``int8`` a QAT one (`gnmt-tf export qat`). A QAT directory with
        another `quantization` exports its fine-tuned weights as a float
        model (fake quantization dropped): ``dynamic_range`` then stores
        int8 weights that were trained for quantization.
      out_dir: directory to write to (created if missing).
      quantization: one of `QUANTIZATIONS`.
      max_source_length, max_target_length: int or None; see
        `default_lengths` (a `max_target_length` gives a fixed cache).
      fixed_shapes: bool. See `StepModule`.
      attention_products: bool. See `convert`.
      cache_block: int or None. See `StepModule`.
      search_beam_sizes: ints. See `StepModule`.

    Returns:
      `{"model": Path of model_<quantization>.tflite, "vocabulary": Path of
      spm.model, "metadata": Path of model.json}`.

    Raises:
      ValueError: an unknown `quantization`, bad lengths, a `cache_block`
        that cannot apply, or ``int8`` for a float model directory.
    """
    check_quantization(quantization)
    if quantization != "int8" and _is_qat_dir(model_dir):
        from gnmt_tf.export.qat import load_float_from_qat  # tfmot: QAT dirs only

        model, subwords, payload = load_float_from_qat(model_dir)
    else:
        model, subwords, payload = model_dir_lib.load_model(model_dir)
    # Before export_lengths, which drops a cache length given with a block.
    check_cache_block(cache_block, fixed_shapes, max_target_length)
    check_search_beams(search_beam_sizes, quantization, fixed_shapes)
    lengths = export_lengths(model, max_source_length, max_target_length,
                             fixed_shapes, cache_block)
    flatbuffer = convert(model, quantization, *lengths,
                         fixed_shapes=fixed_shapes,
                         attention_products=attention_products,
                         cache_block=cache_block,
                         search_beam_sizes=search_beam_sizes)
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"model": out_dir / f"model_{quantization}.tflite",
             "vocabulary": out_dir / model_dir_lib.VOCAB_FILE,
             "metadata": out_dir / METADATA_FILE}
    write_bytes_atomic(paths["model"], flatbuffer)
    copy_file_atomic(subwords.model_path, paths["vocabulary"])
    metadata = export_metadata(model, payload, *lengths, fixed_shapes,
                               cache_block)
    metadata["search_beam_sizes"] = sorted(set(search_beam_sizes))
    write_text_atomic(paths["metadata"], json.dumps(metadata, indent=2) + "\n")
    return paths
