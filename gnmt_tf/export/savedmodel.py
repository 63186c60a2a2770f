"""SavedModel export: text in, text out, for `tensorflow_model_server`.

`export_savedmodel` writes a model directory (any model type) as the
versioned SavedModel `BASE/NAME/VERSION` the model server polls, with
tokenisation (TF Text SentencePiece), search and detokenisation in the
graph. Signatures (`B` batch, `S` source subwords, `V` vocabulary):

- ``serving_default``: ``text`` string `[B]` -> ``translations`` string
  `[B]`, ``scores`` float32 `[B]` (plus ``nbest_translations`` /
  ``nbest_scores`` `[B, N]` when the export's `SearchOptions` ask for N > 1
  hypotheses).
- ``translate_with_options``: the same with scalar ``beam_size`` (one of the
  sizes compiled in, `beam_sizes`; 1 is greedy search), ``length_penalty``
  and ``coverage_penalty``; scalars have no batch dimension, so the
  server's request batching cannot merge these requests.
- ``translate_with_alignment`` (unless exported without it): ``text`` (and
  the task inputs) -> ``translations``, ``scores`` (log-probability per
  output subword, end token included), ``source_pieces`` /
  ``target_pieces`` string `[B, S]` / `[B, T]` with ``source_lengths`` /
  ``target_lengths`` int32 `[B]`, and ``alignment`` float32 `[B, T, S]`
  (alignment-head probabilities, else mean cross-attention, from a
  teacher-forced pass over the output), with `serving_default`'s search
  (see `gnmt_tf.aligned_search`); for a document pipeline that puts markup
  back and estimates quality.
- ``encode``: ``source_ids`` int32 `[B, S]` (0-padded, each row ending in
  the end token) -> the initial decoding state, one output per state tensor
  (GNMT: attention memory, keys, mask, ``h_i`` / ``c_i``; the task-space
  Transformer's holds a KV cache of `max_target_length` positions, so a
  host loop stops before ``time`` reaches it).
- ``decode_step``: ``ids`` int32 `[B]` plus the state -> ``log_probs``
  `[B, V]`, ``attention`` `[B, S]` and the state tensors the step changes,
  for a host-run search (the TFLite and ONNX exports convert these two).

A model's task inputs (`Seq2SeqModel.task_inputs`, e.g. ``src_lang``,
``tgt_lang``, ``tags``) are extra string `[B]` inputs of all but
``decode_step`` (see `TranslationModule`). Bad input (invalid UTF-8, a
sentence over `max_source_length` subwords, an unknown task value) fails
the request with INVALID_ARGUMENT; blank sentences translate to "" with
score 0. ``assets.extra`` holds the model server's warm-up requests and
``gnmt_tf_export.json`` (search options, signature names).

Loading it elsewhere needs the TF Text ops registered first::

    import tensorflow_text  # noqa: F401  (registers the SentencePiece ops)
    translate = tf.saved_model.load(export_dir).signatures["serving_default"]
"""

import contextlib
import dataclasses
import json
import os
import pathlib
import shutil
import sys
import tempfile

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

from gnmt_tf.alignment import head_files
from gnmt_tf.export.step_functions import (WeightsModule, directory_metadata,
                                           make_step_functions)
from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf.aligned_search import search_with_alignment
from gnmt_tf.translator import SearchOptions, Translator

WARMUP_FILE = "tf_serving_warmup_requests"
METADATA_FILE = "gnmt_tf_export.json"
DEFAULT_BEAM_SIZES = (1, 2, 4)
ALIGNMENT_SIGNATURE = "translate_with_alignment"
DEFAULT_WARMUP_SENTENCES = (
    "Hello.",
    "A man in a blue shirt is standing on a ladder cleaning windows.",
)
# Python's `str.isspace` characters, as an RE2 class: blank inputs are not sent
# through the model (as `Translator.translate` does).
_BLANK_PATTERN = r"[\s\p{Z}\x{1c}-\x{1f}\x{85}]*"


OPTION_SPECS = (tf.TensorSpec([], tf.int32, name="beam_size"),
                tf.TensorSpec([], tf.float32, name="length_penalty"),
                tf.TensorSpec([], tf.float32, name="coverage_penalty"))
TEXT_SPEC = tf.TensorSpec([None], tf.string, name="text")


def _index_table(keys):
    """A string -> int32 index `StaticHashTable` (-1 for unknown keys)."""
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(list(keys), tf.string),
            tf.range(len(keys), dtype=tf.int32)),
        default_value=-1)


class TranslationModule(WeightsModule):
    """What the SavedModel holds: a model, its tokenizer and the signatures.

    The signatures take the model's task inputs (`model.task_inputs()`) as
    string `[B]` inputs after ``text``: one value per row (a language code),
    or comma-separated names for multi-hot inputs (``"news,formal"``, ``""``
    for none; spaces around names are ignored). Rows are independent, so one
    request may mix directions and scenes. The strings become ids in the
    graph through `tf.lookup.StaticHashTable`s (core TF ops), and bad values
    fail the request with INVALID_ARGUMENT naming the known ones.

    Args:
      model: a `gnmt_tf.seq2seq_model.Seq2SeqModel`, its weights restored.
      subwords: the model's `gnmt_tf.text.subword.Subwords`.
      search_options: `SearchOptions` of `serving_default`.
      beam_sizes: iterable of int. Beam sizes `translate_with_options` accepts;
        the default beam size is always added.
      max_source_length: int or None. Longer inputs (in subwords) are
        rejected; default and bound as `Translator`'s.
      alignment_signature: bool. Also save ``translate_with_alignment``
        (one more search to trace and save).
      shortlist: a `gnmt_tf.decoding.shortlist.Shortlist` or None. Both
        translation signatures search each request's batch over its
        shortlist (the table is a constant of the graph).
      jit_compile_search: bool. The searches compiled with XLA
        (`Translator`'s option of that name); `tensorflow_model_server`
        then needs `--xla_cpu_compilation_enabled=true`.
    """

    def __init__(self, model, subwords, search_options=SearchOptions(),
                 beam_sizes=DEFAULT_BEAM_SIZES, max_source_length=None,
                 alignment_signature=True, shortlist=None,
                 jit_compile_search=False):
        super().__init__(model, "translation")
        self.translator = Translator(model, subwords, max_source_length,
                                     shortlist=shortlist,
                                     jit_compile_search=jit_compile_search)
        # Tracked so that the SentencePiece resource is saved with the graph.
        self.tokenizer = self.translator.tokenizer
        self.vocabulary = tf.saved_model.Asset(str(subwords.model_path))
        self.search_options = search_options
        self.beam_sizes = tuple(sorted(
            {int(k) for k in beam_sizes} | {search_options.beam_size}))
        if min(self.beam_sizes) < 1:
            raise ValueError(f"beam sizes must be >= 1, got {self.beam_sizes}")
        self.max_source_length = self.translator.max_source_length
        self.task_tables = [_index_table(t.values)
                            for t in self.translator.task_inputs]
        task_specs = [tf.TensorSpec([None], tf.string, name=t.name)
                      for t in self.translator.task_inputs]
        self.serve = tf.function(self._serve, autograph=False,
                                 input_signature=[TEXT_SPEC, *task_specs])
        self.translate_with_options = tf.function(
            self._translate_with_options, autograph=False,
            input_signature=[TEXT_SPEC, *task_specs, *OPTION_SPECS])
        self.translate_with_alignment = None
        if alignment_signature:
            self.translate_with_alignment = tf.function(
                self._translate_with_alignment, autograph=False,
                input_signature=[TEXT_SPEC, *task_specs])
        self.encode, self.decode_step = make_step_functions(
            model, encode_fn=self._encode,
            encode_specs=[tf.TensorSpec([None, None], tf.int32,
                                        name="source_ids"), *task_specs])

    def signatures(self):
        """The `{name: concrete_function}` map to save."""
        signatures = {
            "serving_default": self.serve.get_concrete_function(),
            "translate_with_options":
                self.translate_with_options.get_concrete_function(),
            "encode": self.encode,
            "decode_step": self.decode_step,
        }
        if self.translate_with_alignment is not None:
            signatures[ALIGNMENT_SIGNATURE] = (
                self.translate_with_alignment.get_concrete_function())
        return signatures

    # --- task strings -> model inputs -----------------------------------------

    def _lookup(self, task_input, table, names):
        """Names `[N]` -> int32 ids `[N]`; unknown names fail the request
        (blank ones too, unless `task_input` is multi-hot: -1, no column)."""
        ids = table.lookup(names)
        unknown = ids < 0
        if task_input.multi_hot:
            unknown = tf.logical_and(unknown, tf.not_equal(names, ""))
            what = f"{task_input.label or task_input.name} in {task_input.name}"
        else:
            what = task_input.name
        check = tf.debugging.Assert(
            tf.logical_not(tf.reduce_any(unknown)),
            [f"unknown {what}: known {task_input.label or task_input.name}s "
             f"are {', '.join(task_input.values)}; got",
             tf.boolean_mask(names, unknown)])
        with tf.control_dependencies([check]):
            return tf.identity(ids)

    def _task_ids(self, rows, strings):
        """The task strings of `rows` requests -> `{name: ids}` for the
        model, checked (sizes, known values, the model's own rules)."""
        inputs = self.translator.task_inputs
        if not inputs:
            return {}
        names_list = [t.name for t in inputs]
        names = ", ".join(names_list)
        sizes = tf.stack([rows] + [tf.size(s) for s in strings])
        check = tf.debugging.Assert(
            tf.reduce_all(tf.equal(sizes, rows)),
            [f"{names} need one entry per row; got rows, {names} sizes",
             sizes])
        ids = {}
        with tf.control_dependencies([check]):
            for task_input, table, values in zip(inputs, self.task_tables,
                                                 strings):
                if task_input.multi_hot:
                    parts = tf.strings.split(values, sep=",")
                    index = self._lookup(task_input, table,
                                         tf.strings.strip(parts.flat_values))
                    hot = tf.one_hot(index, len(task_input.values),
                                     dtype=tf.int32)  # -1: all zeros
                    ids[task_input.name] = tf.minimum(
                        tf.math.unsorted_segment_sum(
                            hot, parts.value_rowids(), parts.nrows()), 1)
                else:
                    ids[task_input.name] = self._lookup(task_input, table,
                                                        values)
        checks = []
        for t in inputs:
            if t.differs_from:
                same = tf.equal(ids[t.name], ids[t.differs_from])
                checks.append(tf.debugging.Assert(
                    tf.logical_not(tf.reduce_any(same)),
                    [f"{t.differs_from} and {t.name} must differ; got both",
                     tf.boolean_mask(strings[names_list.index(t.name)],
                                     same)]))
        with tf.control_dependencies(checks):
            return {name: tf.identity(value) for name, value in ids.items()}

    # --- graph bodies -----------------------------------------------------

    def _check_text(self, text):
        """Asserts valid UTF-8 and the length limit; returns `text`."""
        checked = tf.strings.unicode_transcode(
            text, "UTF-8", "UTF-8", errors="strict")
        _, lengths = self.translator.tokenize(checked)
        # Lengths count the end token the tokenizer appends.
        longest = tf.reduce_max(tf.concat([lengths - 1, [0]], 0))
        check = tf.debugging.Assert(
            longest <= self.max_source_length,
            [f"input too long: the limit is {self.max_source_length} subwords, "
             "got", longest, "(split it into sentences)"])
        with tf.control_dependencies([check]):
            return tf.identity(text)

    def _search(self, text, options, task):
        """`text [B]` -> (translations [B, N], scores [B, N]), blanks -> ""."""
        task = self._task_ids(tf.size(text), task)
        text = self._check_text(text)
        result = self.translator.search(text, options, **task)
        translations, scores = result["translations"], result["scores"]
        blank = tf.strings.regex_full_match(text, _BLANK_PATTERN)[:, tf.newaxis]
        blank = tf.broadcast_to(blank, tf.shape(scores))
        translations = tf.where(blank, tf.constant(""), translations)
        scores = tf.where(blank, tf.constant(0.0), tf.cast(scores, tf.float32))
        return translations, scores

    def _serve(self, text, *task):
        translations, scores = self._search(text, self.search_options, task)
        outputs = {"translations": translations[:, 0], "scores": scores[:, 0]}
        if self.search_options.num_hypotheses > 1:
            outputs["nbest_translations"] = translations
            outputs["nbest_scores"] = scores
        return outputs

    def _translate_with_options(self, text, *task_and_options):
        """`translate_with_options`: the search for the requested beam size
        (one of `beam_sizes`, else INVALID_ARGUMENT) and penalties."""
        *task, beam_size, length_penalty, coverage_penalty = task_and_options
        sizes = tf.constant(self.beam_sizes, tf.int32)
        matches = tf.equal(sizes, beam_size)
        check = tf.debugging.Assert(
            tf.reduce_any(matches),
            ["beam_size must be one of", sizes, "got", beam_size],
            summarize=len(self.beam_sizes))  # name every size, not "1 2 4..."
        with tf.control_dependencies([check]):
            index = tf.argmax(tf.cast(matches, tf.int32), output_type=tf.int32)

        def branch(k):
            options = dataclasses.replace(
                self.search_options, beam_size=k, num_hypotheses=1,
                length_penalty=length_penalty,
                coverage_penalty=coverage_penalty,
                early_stopping=("gnmt" if self.search_options.early_stopping
                                == "exact" else
                                self.search_options.early_stopping))
            return lambda: self._search(text, options, task)

        translations, scores = tf.switch_case(
            index, [branch(k) for k in self.beam_sizes])
        return {"translations": translations[:, 0], "scores": scores[:, 0]}

    def _translate_with_alignment(self, text, *task):
        """`translate_with_alignment`: `serving_default`'s search (best
        hypothesis) with scores, pieces and alignment; blanks -> "" with
        score 0 and no pieces."""
        task = self._task_ids(tf.size(text), task)
        text = self._check_text(text)
        options = dataclasses.replace(self.search_options, num_hypotheses=1)
        out = search_with_alignment(self.translator, text, options, **task)
        blank = tf.strings.regex_full_match(text, _BLANK_PATTERN)
        zero = tf.zeros_like(out["target_lengths"])
        out["translations"] = tf.where(blank, tf.constant(""),
                                       out["translations"])
        out["scores"] = tf.where(blank, tf.constant(0.0), out["scores"])
        out["source_lengths"] = tf.where(blank, zero, out["source_lengths"])
        out["target_lengths"] = tf.where(blank, zero, out["target_lengths"])
        return out

    def _encode(self, source_ids, *task):
        ids = self._task_ids(tf.shape(source_ids)[0], task)
        return self.model.encode(source_ids, **ids)


def check_export_dir(export_dir):
    """Validates a `BASE/NAME/VERSION` path; returns it as a `pathlib.Path`.

    Raises:
      ValueError: the last component is not a positive integer version (the
        model server ignores such directories), or the directory exists and is
        not empty.
    """
    export_dir = pathlib.Path(export_dir)
    if not export_dir.name.isdigit() or int(export_dir.name) < 1:
        raise ValueError(
            f"export directory must be BASE/NAME/VERSION with VERSION a "
            f"positive integer (what tensorflow_model_server polls), "
            f"got {export_dir}")
    if export_dir.exists() and any(export_dir.iterdir()):
        raise ValueError(f"{export_dir} already exists and is not empty; "
                         "export to a new version number")
    return export_dir


def write_prediction_logs(path, model_name, requests):
    """Writes model-server warm-up requests to `path` (a TFRecord file).

    Args:
      path: the file to write (`assets.extra/tf_serving_warmup_requests`).
      model_name: the model name the requests carry.
      requests: list of `(signature_name, {input_name: value})`, each value
        anything `tf.make_tensor_proto` takes.
    """
    from tensorflow_serving.apis import model_pb2
    from tensorflow_serving.apis import predict_pb2
    from tensorflow_serving.apis import prediction_log_pb2

    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for signature, inputs in requests:
            request = predict_pb2.PredictRequest(
                model_spec=model_pb2.ModelSpec(name=model_name,
                                               signature_name=signature))
            for key, value in inputs.items():
                request.inputs[key].CopyFrom(tf.make_tensor_proto(value))
            entry = prediction_log_pb2.PredictionLog(
                predict_log=prediction_log_pb2.PredictLog(request=request))
            writer.write(entry.SerializeToString())


def warmup_requests(inputs, beam_size=None):
    """Warm-up requests for the request `inputs` (`{name: value}`): one for
    `serving_default` and, when `beam_size` is given, one for
    `translate_with_options` with that beam size."""
    requests = [("serving_default", dict(inputs))]
    if beam_size is not None:
        requests.append(("translate_with_options", dict(
            inputs, beam_size=tf.constant(beam_size, tf.int32),
            length_penalty=tf.constant(0.6, tf.float32),
            coverage_penalty=tf.constant(0.0, tf.float32))))
    return requests


def usable_warmup_sentences(module, sentences):
    """The warm-up sentences `module` accepts, the over-long ones dropped
    with a note: one failing warm-up request makes the model server refuse
    to load the whole version."""
    sentences = list(sentences)
    lengths = [len(ids) for ids in module.translator.subwords.encode(sentences)]
    kept = [s for s, n in zip(sentences, lengths)
            if n <= module.max_source_length]
    if len(kept) < len(sentences):
        print(f"note: left out {len(sentences) - len(kept)} warm-up "
              f"sentence(s) longer than {module.max_source_length} subwords",
              file=sys.stderr)
    return kept


def save_module(module, export_dir, requests=(), metadata=None):
    """Saves a `TranslationModule` as the SavedModel `export_dir`.

    The SavedModel is written to a hidden temporary directory next to
    `export_dir` and renamed into place, so a polling model server never sees
    a half-written version.

    Args:
      module: a `TranslationModule` (or subclass).
      export_dir: a path checked by `check_export_dir`.
      requests: warm-up requests (see `write_prediction_logs`); none: no file.
      metadata: dict for `assets.extra/gnmt_tf_export.json`; the signature
        names are added under "signatures".

    Returns:
      `export_dir` as a `pathlib.Path`.
    """
    export_dir = pathlib.Path(export_dir)
    signatures = module.signatures()
    export_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = pathlib.Path(tempfile.mkdtemp(
        prefix=f".{export_dir.name}.tmp-", dir=export_dir.parent))
    try:
        tf.saved_model.save(module, str(staging), signatures=signatures)
        extra = staging / "assets.extra"
        if requests:
            write_prediction_logs(extra / WARMUP_FILE, export_dir.parent.name,
                                  list(requests))
        metadata = dict(metadata or {}, signatures=sorted(signatures))
        extra.mkdir(exist_ok=True)
        (extra / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n")
        if export_dir.exists():  # empty, checked by check_export_dir
            export_dir.rmdir()
        os.replace(staging, export_dir)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return export_dir


def _load(model_dir, predictors, weights, ensemble_mode):
    """`(model, subwords, payload, ensemble metadata or None)` of one model
    directory, or of a `PredictorModel` when several directories (or any
    predictor setting) are given.

    Raises:
      ValueError: an `lm` predictor (kenlm runs in Python: not servable),
        or a bad combination (see `load_predictors`).
    """
    from gnmt_tf.predictor_model import load_predictors

    model_dirs = ([model_dir] if isinstance(model_dir, (str, os.PathLike))
                  else [str(d) for d in model_dir])
    if (len(model_dirs) == 1 and predictors is None and weights is None
            and ensemble_mode == "loglinear"):
        # With its alignment head, if it has one: the alignment signature
        # then returns the head's alignment (`gnmt_tf.aligned_search`).
        model, subwords, payload = head_files.load_model(model_dirs[0])
        return model, subwords, payload, None
    if predictors is not None and "lm" in predictors:
        raise ValueError(
            "the lm predictor cannot be exported: it runs kenlm in Python "
            "(tf.numpy_function), which tensorflow_model_server cannot run; "
            "export the models (and wc) only, and add the LM with gnmt-tf "
            "translate --model ... --predictors ...,lm")
    model, subwords = load_predictors(model_dirs, predictors, weights,
                                      None, ensemble_mode)
    if not model.servable:
        raise ValueError("this predictor combination cannot be served")
    payload = model_dir_lib.read_config(model_dirs[0])
    ensemble = {"models": model_dirs,
                "predictors": list(predictors or ["nmt"] * len(model_dirs)),
                "weights": model.weights, "ensemble_mode": ensemble_mode}
    return model, subwords, payload, ensemble


def export_savedmodel(model_dir, export_dir, search_options=None,
                      warmup_sentences=None, beam_sizes=DEFAULT_BEAM_SIZES,
                      max_source_length=None, warmup_task=None,
                      alignment_signature=True, predictors=None,
                      weights=None, ensemble_mode="loglinear", shortlist=None,
                      jit_compile_search=False, attention_products=True):
    """Exports a trained model directory (any model type) as a servable
    SavedModel (written in full before it appears: see `save_module`).

    Example:
      >>> export_savedmodel("runs/en-de", "exports/en_de/1",
      ...                   SearchOptions(beam_size=4, length_penalty=0.6))
      >>> # tensorflow_model_server --model_base_path=$PWD/exports/en_de ...
      >>> export_savedmodel("runs/ts", "exports/ts/1")
      >>> # serving_default(text=["A dog runs."], src_lang=["en"],
      >>> #                 tgt_lang=["de"], tags=["caption"])

    Args:
      model_dir: a trained model directory (`gnmt_tf.model_dir`), or a
        list of them: an ensemble (`gnmt_tf.predictor_model`) exported as
        one SavedModel with the same signatures (the `decode_step` state
        holds every member's, names prefixed `p0__`, `p1__`, ...).
      export_dir: `BASE/NAME/VERSION` to create (VERSION a positive integer).
      search_options: `SearchOptions` of `serving_default` (default: the
        `SearchOptions()` defaults, beam 5, alpha 0.6).
      warmup_sentences: list of str for the warm-up requests (default: two
        short English sentences); an empty list writes none. Those over
        `max_source_length` are left out (they would fail the model server's
        warm-up).
      beam_sizes: beam sizes `translate_with_options` accepts (plus the
        default one).
      max_source_length: int or None. Longer inputs, in subwords, are
        rejected (default 250, capped by the model's `max_target_length`).
      warmup_task: dict of the warm-up requests' task strings (default: the
        model's `default_task`, e.g. its first trained direction out of
        English).
      alignment_signature: bool. Also save ``translate_with_alignment``
        (single models only: an ensemble has no one alignment).
      predictors, weights, ensemble_mode: the predictor combination (see
        `gnmt_tf.predictor_model.load_predictors`; ``nmt`` and ``wc``
        only: an ``lm`` predictor runs in Python and cannot be served).
      shortlist: `(table_path, top_k, frequent)` or None: search over a
        per-batch vocabulary shortlist (`gnmt_tf.decoding.shortlist`).
      jit_compile_search: bool. Compile the searches with XLA (single
        models without a shortlist; see `TranslationModule`).
      attention_products: bool. Trace the signatures in the model's
        `compiled_step_context()` (False: its plain step), as the TFLite
        export does: the Transformer's decoding steps then attend with
        broadcast products and sums instead of einsums, which TensorFlow's
        graph executor runs as many tiny matrix products (the shipped
        Transformer's SavedModel: 1.18x faster at batch 32, 1.10x at 16,
        1.07x at 1, the same translations).

    Returns:
      The export directory as a `pathlib.Path`.

    Raises:
      FileNotFoundError / ValueError: a bad model directory or export path,
        or a bad warm-up task.
    """
    search_options = search_options or SearchOptions()
    export_dir = check_export_dir(export_dir)
    model, subwords, payload, ensemble = _load(model_dir, predictors,
                                               weights, ensemble_mode)
    if jit_compile_search and ensemble is not None:
        raise ValueError("an XLA-compiled search exports single models, "
                         "not ensembles")
    if shortlist is not None:
        from gnmt_tf.decoding.shortlist import Shortlist
        from gnmt_tf.text.lexical_table import read_lexical_table

        path, top_k, frequent = shortlist
        shortlist = Shortlist.from_table(read_lexical_table(path), subwords,
                                         top_k=top_k, frequent=frequent)
    module = TranslationModule(model, subwords, search_options, beam_sizes,
                               max_source_length,
                               alignment_signature and ensemble is None,
                               shortlist, jit_compile_search)
    task = dict(model.default_task if warmup_task is None else warmup_task)
    module.translator.task_ids(**task)  # a bad warm-up task fails here
    if warmup_sentences is None:
        warmup_sentences = DEFAULT_WARMUP_SENTENCES
    warmup_sentences = usable_warmup_sentences(module, warmup_sentences)
    requests = ()
    if warmup_sentences:
        n = len(warmup_sentences)
        inputs = {"text": [s.encode("utf-8") for s in warmup_sentences]}
        for t in module.translator.task_inputs:
            value = task.get(t.name, "")
            if t.multi_hot and not isinstance(value, str):
                value = ",".join(value)
            inputs[t.name] = [value.encode("utf-8")] * n
        requests = warmup_requests(inputs, beam_size=search_options.beam_size)
    metadata = {
        **directory_metadata(payload),
        "task_inputs": {t.name: list(t.values)
                        for t in module.translator.task_inputs},
        "max_target_length": model.max_target_length,
        "search_options": dataclasses.asdict(search_options),
        "beam_sizes": list(module.beam_sizes),
        "max_source_length": module.max_source_length,
        "bos_id": module.translator.bos_id,
        "eos_id": module.translator.eos_id,
        "jit_compile_search": module.translator.jit_compile_search,
        "attention_products": bool(attention_products),
    }
    if ensemble is not None:
        metadata["ensemble"] = ensemble
    # The signatures are traced while saving.
    context = (model.compiled_step_context() if attention_products
               else contextlib.nullcontext())
    with context:
        return save_module(module, export_dir, requests, metadata)
