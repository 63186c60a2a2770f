"""SavedModel export of task-space Transformer model directories.

`export.savedmodel.export_savedmodel` hands model directories of type
``task_space_transformer`` (written by `task_space.training`) to
`export_task_space_savedmodel`, which reuses that module's machinery (input
checks, blank handling, beam-size switch, step functions, staging, warm-up
and metadata files) through `TaskSpaceTranslationModule`, a
`export.savedmodel.TranslationModule` whose signatures also take the task.

Signatures (`B` batch, `S` source subwords, `V` vocabulary, `L` layers):

- ``serving_default``: ``text``, ``src_lang``, ``tgt_lang``, ``tags``, all
  string `[B]` -> ``translations`` string `[B]`, ``scores`` float32 `[B]`
  (plus ``nbest_*`` when the export's options ask for an n-best list).
  ``src_lang`` / ``tgt_lang`` are language codes of the model's config
  (e.g. ``"en"``); ``tags`` are comma-separated scene tags (``"news,formal"``,
  ``""`` for none; spaces around names are ignored, as in
  `task_space.data.parse_tags`). Rows are independent: one request may mix
  directions and scenes.
- ``translate_with_options``: the four inputs above plus ``beam_size`` int32,
  ``length_penalty`` and ``coverage_penalty`` float32 scalars, as for GNMT.
- ``encode``: ``source_ids`` int32 `[B, S]` (0-padded SentencePiece ids of
  `assets/spm.model`, each row ending in the end token, and for models
  trained with ``target_language_token`` starting with the `<2xx>` token),
  ``src_lang``, ``tgt_lang``, ``tags`` string `[B]` -> the initial decoding
  state: ``time`` int32 `[B]`, ``source_mask`` bool `[B, S]`,
  ``decoder_task`` `[B, d]` (with the task space), and per decoder layer
  ``layer_i__self_key`` / ``layer_i__self_value`` (the KV cache, zeros
  `[B, max_sequence_length, heads, head_dim]`) and ``layer_i__cross_key`` /
  ``layer_i__cross_value`` `[B, S, heads, head_dim]`.
- ``decode_step``: ``ids`` int32 `[B]` plus every state tensor -> ``log_probs``
  float32 `[B, V]`, ``attention`` float32 `[B, S]` and the state entries the
  step changes (``time`` and the self-attention caches). The cache holds
  `max_sequence_length` positions: a host loop must stop before ``time``
  reaches it.

Language codes and tag names become ids in the graph through
`tf.lookup.StaticHashTable`s (core TF ops `HashTableV2`,
`LookupTableImportV2`, `LookupTableFindV2`). Bad requests fail with
`INVALID_ARGUMENT` (`tf.debugging.Assert`) naming the problem: an unknown
language or tag (the message lists the known ones), the same source and
target language, inputs of different batch sizes, invalid UTF-8, an over-long
sentence. Blank sentences give "" with score 0, as in the GNMT export.
"""

import pathlib

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

from export import savedmodel
from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf.translator import SearchOptions, Translator

TASK_INPUTS = ("src_lang", "tgt_lang", "tags")
TASK_SPECS = tuple(tf.TensorSpec([None], tf.string, name=name)
                   for name in TASK_INPUTS)


def _table(keys):
    """A string -> int32 index `StaticHashTable` (-1 for unknown keys)."""
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(list(keys), tf.string),
            tf.range(len(keys), dtype=tf.int32)),
        default_value=-1)


class TaskSpaceTranslationModule(savedmodel.TranslationModule):
    """`TranslationModule` for `TaskSpaceTransformer` models.

    Args:
      model: a trained `task_space.TaskSpaceTransformer` (or subclass).
      subwords: its `gnmt_tf.text.subword.Subwords`.
      search_options, beam_sizes: as `TranslationModule`.
      max_source_length: int or None. Longer inputs (in subwords, a
        `<2xx>` token not counted, as `Translator`) are rejected; default
        and upper bound: the model's `max_sequence_length`.
    """

    def __init__(self, model, subwords, search_options=SearchOptions(),
                 beam_sizes=savedmodel.DEFAULT_BEAM_SIZES,
                 max_source_length=None):
        translator = Translator(model, subwords, max_source_length)
        super().__init__(model, subwords, search_options, beam_sizes,
                         translator.max_source_length, translator=translator)

    def _build_functions(self):
        config = self.model.config
        self.language_table = _table(config.languages)
        self.tag_table = _table(config.scene_tags)
        self.serve = tf.function(
            self._serve_task, autograph=False,
            input_signature=[savedmodel.TEXT_SPEC, *TASK_SPECS])
        self.translate_with_options = tf.function(
            self._translate_task_with_options, autograph=False,
            input_signature=[savedmodel.TEXT_SPEC, *TASK_SPECS,
                             *savedmodel.OPTION_SPECS])
        self.encode, self.decode_step = savedmodel.make_step_functions(
            self.model, encode_fn=self._encode_task,
            encode_specs=[tf.TensorSpec([None, None], tf.int32,
                                        name="source_ids"), *TASK_SPECS])

    # --- task inputs -> model inputs ----------------------------------------

    def _language_ids(self, codes, name):
        """Codes `[B]` -> int32 ids `[B]`; unknown codes fail the request."""
        ids = self.language_table.lookup(codes)
        unknown = ids < 0
        check = tf.debugging.Assert(
            tf.logical_not(tf.reduce_any(unknown)),
            [f"unknown {name}: known languages are "
             f"{', '.join(self.model.config.languages)}; got",
             tf.boolean_mask(codes, unknown)])
        with tf.control_dependencies([check]):
            return tf.identity(ids)

    def _tag_vectors(self, tags):
        """Comma-separated tags `[B]` -> int32 multi-hot `[B, num_tags]`."""
        config = self.model.config
        parts = tf.strings.split(tags, sep=",")
        names = tf.strings.strip(parts.flat_values)
        ids = self.tag_table.lookup(names)
        unknown = tf.logical_and(ids < 0, tf.not_equal(names, ""))
        check = tf.debugging.Assert(
            tf.logical_not(tf.reduce_any(unknown)),
            [f"unknown scene tag in tags: known tags are "
             f"{', '.join(config.scene_tags)}; got",
             tf.boolean_mask(names, unknown)])
        with tf.control_dependencies([check]):
            hot = tf.one_hot(ids, config.num_tags, dtype=tf.int32)  # -1: 0s
        counts = tf.math.unsorted_segment_sum(
            hot, parts.value_rowids(), parts.nrows())
        return tf.minimum(counts, 1)

    def _task(self, rows, src_lang, tgt_lang, tags):
        """Checks and converts the task inputs of `rows` requests; returns
        `(src_ids [B], tgt_ids [B], tags [B, K])` for the model."""
        sizes = tf.stack([rows, tf.size(src_lang), tf.size(tgt_lang),
                          tf.size(tags)])
        check = tf.debugging.Assert(
            tf.reduce_all(tf.equal(sizes, rows)),
            ["src_lang, tgt_lang and tags need one entry per row; got "
             "rows, src_lang, tgt_lang, tags sizes", sizes])
        with tf.control_dependencies([check]):
            src_ids = self._language_ids(src_lang, "src_lang")
            tgt_ids = self._language_ids(tgt_lang, "tgt_lang")
        same = tf.equal(src_ids, tgt_ids)
        check = tf.debugging.Assert(
            tf.logical_not(tf.reduce_any(same)),
            ["src_lang and tgt_lang must differ; got both",
             tf.boolean_mask(src_lang, same)])
        with tf.control_dependencies([check]):
            return (tf.identity(src_ids), tf.identity(tgt_ids),
                    self._tag_vectors(tags))

    # --- graph bodies -----------------------------------------------------

    def _run_search(self, text, options, task):
        return self.translator.search(text, options,
                                      **dict(zip(TASK_INPUTS, task)))

    def _search_task(self, text, src_lang, tgt_lang, tags, options):
        task = self._task(tf.size(text), src_lang, tgt_lang, tags)
        return self._search(text, options, task)

    def _serve_task(self, text, src_lang, tgt_lang, tags):
        return self._outputs(*self._search_task(
            text, src_lang, tgt_lang, tags, self.search_options))

    def _translate_task_with_options(self, text, src_lang, tgt_lang, tags,
                                     beam_size, length_penalty,
                                     coverage_penalty):
        return self._search_with_options(
            lambda options: self._search_task(text, src_lang, tgt_lang, tags,
                                              options),
            beam_size, length_penalty, coverage_penalty)

    def _encode_task(self, source_ids, src_lang, tgt_lang, tags):
        task = self._task(tf.shape(source_ids)[0], src_lang, tgt_lang, tags)
        return self.model.encode(source_ids, *task)


def default_warmup_task(config, options):
    """`(src_lang, tgt_lang, tags)` of the warm-up requests: the first
    trained direction out of English (the built-in warm-up sentences are
    English), else the first one, with the training tags."""
    from task_space import data as data_lib

    pairs = data_lib.parse_directions(options.directions or "all",
                                      config.languages)
    src, tgt = next((p for p in pairs if p[0] == "en"), pairs[0])
    return src, tgt, ",".join(data_lib.parse_tags(options.tags))


def export_task_space_savedmodel(model_dir, export_dir, search_options=None,
                                 warmup_sentences=None,
                                 beam_sizes=savedmodel.DEFAULT_BEAM_SIZES,
                                 max_source_length=None, warmup_task=None):
    """Exports a task-space model directory as a servable SavedModel.

    Example:
      >>> export_task_space_savedmodel("runs/ts", "exports/ts/1",
      ...                              SearchOptions(beam_size=4))
      >>> # serving_default(text=["A dog runs."], src_lang=["en"],
      >>> #                 tgt_lang=["de"], tags=["caption"])

    Args:
      model_dir: a directory written by `task_space.training.train_task_space`.
      export_dir: `BASE/NAME/VERSION` to create (VERSION a positive integer).
      search_options: `SearchOptions` of `serving_default` (default:
        `SearchOptions()`).
      warmup_sentences: list of str for the warm-up requests (default: the
        two built-in English sentences); an empty list writes none. Those
        over `max_source_length` are left out (they would fail the model
        server's warm-up).
      beam_sizes: beam sizes `translate_with_options` accepts (plus the
        default one).
      max_source_length: int or None. Longer inputs, in subwords, are
        rejected; capped at (and by default) the model's
        `max_sequence_length`.
      warmup_task: `(src_lang, tgt_lang, tags)` of the warm-up requests
        (default: `default_warmup_task`).

    Returns:
      The export directory as a `pathlib.Path`.

    Raises:
      FileNotFoundError / ValueError: a bad model directory or export path,
        or an unknown warm-up language or tag.
    """
    from task_space import data as data_lib
    from task_space.training import read_task_space_config

    search_options = search_options or SearchOptions()
    export_dir = savedmodel.check_export_dir(export_dir)
    config, options = read_task_space_config(model_dir)
    src, tgt, tags = warmup_task or default_warmup_task(config, options)
    config.task_features(src, tgt, data_lib.parse_tags(tags))  # known names
    model, subwords, payload = model_dir_lib.load_model(model_dir)
    module = TaskSpaceTranslationModule(
        model, subwords, search_options, beam_sizes, max_source_length)
    if warmup_sentences is None:
        warmup_sentences = savedmodel.DEFAULT_WARMUP_SENTENCES
    warmup_sentences = savedmodel.usable_warmup_sentences(module,
                                                          warmup_sentences)
    requests = ()
    if warmup_sentences:
        n = len(warmup_sentences)
        requests = savedmodel.warmup_requests(
            {"text": [s.encode("utf-8") for s in warmup_sentences],
             "src_lang": [src.encode()] * n, "tgt_lang": [tgt.encode()] * n,
             "tags": [tags.encode()] * n},
            beam_size=search_options.beam_size)
    metadata = {
        "model_type": payload.get("model_type"),
        "languages": list(config.languages),
        "scene_tags": list(config.scene_tags),
        "directions": options.directions,
        "target_language_token": options.target_language_token,
        "max_sequence_length": config.max_sequence_length,
        **savedmodel.module_metadata(module),
    }
    return savedmodel.save_module(module, pathlib.Path(export_dir), requests,
                                  metadata)
