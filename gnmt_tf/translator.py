"""Text in, text out: tokenisation, search and detokenisation in one graph.

`Translator.search_fn` is a `tf.function` from a batch of UTF-8 strings to
translations and scores; the SavedModel exporter serves the same function. The
Python-side `translate` adds what a graph should not do: input validation with
clear errors, batching of similar-length sentences (GNMT §7) and restoring the
input order.
"""

import numpy as np
import tensorflow as tf

from gnmt_tf import search_engine, seq2seq_model
from gnmt_tf.checks import check_number
from gnmt_tf.decoding import segmented_loop
from gnmt_tf.decoding.beam_search import beam_search
from gnmt_tf.decoding.greedy_search import greedy_search
from gnmt_tf.decoding.xla_step import xla_step
# One search options type and one result type for every translator
# (`gnmt_tf.translation`); imported from here as well.
from gnmt_tf.translation import (DECODERS, GRAPH_DECODERS, Hypothesis,  # noqa: F401
                                 SearchOptions, runs_on_host,
                                 split_search_arguments)

# Source limit (subwords) of models without a length limit of their own.
DEFAULT_MAX_SOURCE_LENGTH = 250

# With `jit_compile_search`, source widths are padded up to a multiple of
# this: XLA compiles the search again for every new input shape (seconds),
# and a file sorted by length has a new width in almost every batch.
XLA_WIDTH_MULTIPLE = 8

class Translator:
    """Translates raw sentences with any `gnmt_tf.seq2seq_model.Seq2SeqModel`.

    The model's task inputs (`model.task_inputs()`: none for GNMT; source
    and target language and scene tags for the task-space Transformer) are
    keyword arguments of `translate` / `translate_nbest`, checked with clear
    errors, and int32 id inputs of `search_fn` after the text.

    Args:
      model: a `Seq2SeqModel` (e.g. `gnmt_tf.models.GNMT`).
      subwords: `gnmt_tf.text.subword.Subwords` of the model.
      max_source_length: int or None. Longer inputs (in subwords) are
        rejected; default and upper bound: the
        model's `max_target_length`; default without one: 250.
      shortlist: a `gnmt_tf.decoding.shortlist.Shortlist` or None. Each
        batch is searched over its shortlist only (vocabulary reduction;
        in the graph, so exports built on this translator carry it).
      unk_replacer: a `gnmt_tf.unk_replacement.UnkReplacer` or None. Each
        output `<unk>` is replaced by a translation or a copy of the source
        token it attends to most (Python side: `translate` /
        `translate_nbest` only, not `search_fn`).
      jit_compile_step: bool. Run the model's step compiled with XLA
        (`gnmt_tf.decoding.xla_step`): faster per step, but compiled again
        for each new batch shape; off by default.
      growing_cache: bool or None. Search with a decoder cache that grows
        by a position each step (`initial_state(..., growing_cache=True)`)
        instead of one allocated for the longest output. Default: on for
        models that offer it (`supports_growing_cache`), off with
        `jit_compile_step` or `jit_compile_search` (XLA needs fixed shapes).
      jit_compile_search: bool or None. Compile the whole search (encoder,
        decoder loop, beam bookkeeping) with XLA, every shape fixed by the
        source's width (padded up to a multiple of `XLA_WIDTH_MULTIPLE`):
        the TF executor's per-op cost goes, which is most of a step at
        small batches. Each new batch shape compiles once (seconds; kept
        on disk across processes by `gnmt_tf.xla_cache`). True: always
        (not with a shortlist); False: the graph search. None (default):
        the engine of `gnmt_tf.search_engine` (``auto``: compiled where
        the model and options allow, see `compiles_search`; the graph
        search for the rest, with the same results).

    Example:
    ```python
    translator = Translator.from_model_dir("runs/ts")
    translator.translate(["A dog runs."], src_lang="en", tgt_lang="fr",
                         tags=["caption"])
    ```
    """

    def __init__(self, model, subwords, max_source_length=None,
                 shortlist=None, unk_replacer=None, jit_compile_step=False,
                 growing_cache=None, jit_compile_search=None):
        self.model = model
        if jit_compile_search and (jit_compile_step or shortlist is not None):
            raise ValueError("jit_compile_search compiles the step too, and "
                             "takes no shortlist (its size varies by batch)")
        self._step = xla_step(model.step) if jit_compile_step else model.step
        # Chosen by default: the graph search stands in, with its growing
        # cache, wherever the compiled one cannot run (`compiles_search`).
        self._search_chosen = jit_compile_search is None
        if self._search_chosen:
            jit_compile_search = search_engine.compiles_by_default(
                model, shortlist, jit_compile_step, growing_cache)
        self.jit_compile_search = bool(jit_compile_search)
        supported = model.supports_growing_cache
        compiled = jit_compile_step or (jit_compile_search
                                        and not self._search_chosen)
        if growing_cache is None:
            growing_cache = supported and not compiled
        if growing_cache and not supported:
            raise ValueError(f"{type(model).__name__} has no growing cache")
        if growing_cache and compiled:
            raise ValueError("XLA needs a fixed-size cache: "
                             "growing_cache=False")
        self.growing_cache = bool(growing_cache)
        self.subwords = subwords
        self.shortlist = shortlist
        self.unk_replacer = unk_replacer
        limit = model.max_target_length
        if limit:
            self.max_source_length = min(int(max_source_length or limit), limit)
        else:
            self.max_source_length = int(max_source_length
                                         or DEFAULT_MAX_SOURCE_LENGTH)
        self.task_inputs = tuple(model.task_inputs())
        self.bos_id = model.config.bos_id
        self.eos_id = model.config.eos_id
        self._functions = {}
        # A `HostTranslator` over the model's float32 TFLite export, for
        # the requests it runs (`from_model_dir`); None: all in process.
        self.tflite_search = None
        # Create the tokenizer's resource eagerly: made inside a tf.function it
        # would belong to that function's graph and be unusable in the next.
        self.tokenizer = subwords.tf_tokenizer

    @classmethod
    def from_model_dir(cls, model_dir, precision="float32", engine=None,
                       **kwargs):
        """Loads a trained model directory (any registered model type),
        computing in `precision` (see `gnmt_tf.model_dir.load_model`),
        searching with `engine` (see `for_engine`).

        Raises:
          ValueError: an unknown engine; ``tflite`` with in-process
            arguments or with no export at hand.
        """
        from gnmt_tf.model_dir import load_model

        search_engine.check_engine(engine)
        model, subwords, _ = load_model(model_dir, precision)
        return cls.for_engine(model, subwords, model_dir, engine, precision,
                              **kwargs)

    @classmethod
    def for_engine(cls, model, subwords, model_dir, engine=None,
                   precision="float32", **kwargs):
        """A translator of `model`, loaded from `model_dir`, searching with
        `engine` (`gnmt_tf.search_engine`; None: its default): ``graph`` or
        ``xla`` in process (`jit_compile_search` False or True); ``auto``
        and ``tflite`` also send what the host search runs to the model's
        float32 TFLite export (`search_engine.host_export`; under ``auto``
        only where the directory carries one, as the shipped models do),
        held in `tflite_search`. The other keyword arguments go to
        `Translator`; any of them keeps every search in process.

        Raises:
          ValueError: an unknown engine; ``tflite`` with in-process
            arguments or with no export at hand.
        """
        from gnmt_tf.pretrained import locate

        engine = search_engine.check_engine(engine)
        if engine == "tflite" and kwargs:
            raise ValueError(f"the tflite engine takes none of "
                             f"{', '.join(sorted(kwargs))} (in-process "
                             "search arguments)")
        if engine in ("graph", "xla"):
            kwargs.setdefault("jit_compile_search", engine == "xla")
        translator = cls(model, subwords, **kwargs)
        path = (None if kwargs else search_engine.host_export(
            locate(model_dir), engine, precision))
        if path is not None:
            from gnmt_tf.host_translator import HostTranslator

            translator.tflite_search = HostTranslator.from_tflite(path)
        return translator

    def tokenize(self, sentences, task=None):
        """`sentences [B]` strings -> `(source_ids [B, S], lengths [B])`: the
        model's source prefix (for `task`, int32 id tensors), subwords, EOS."""
        tokens = self.tokenizer.tokenize(sentences)
        eos = tf.fill([tokens.nrows(), 1], tf.constant(self.eos_id, tokens.dtype))
        parts = [tokens, tf.RaggedTensor.from_tensor(eos)]
        if self.model.source_prefix is not None:
            name, prefix_ids = self.model.source_prefix
            prefix = tf.gather(tf.constant(prefix_ids, tokens.dtype),
                               task[name])[:, None]
            parts.insert(0, tf.RaggedTensor.from_tensor(prefix))
        tokens = tf.concat(parts, axis=1)
        return tokens.to_tensor(0), tf.cast(tokens.row_lengths(), tf.int32)

    def detokenize(self, ids, lengths):
        """`ids [B, N, T]`, `lengths [B, N]` -> strings `[B, N]` (end token cut)."""
        shape = tf.shape(ids)
        flat_ids = tf.reshape(ids, [-1, shape[2]])
        flat_lengths = tf.reshape(lengths, [-1])
        last = tf.gather(flat_ids, tf.maximum(flat_lengths - 1, 0), batch_dims=1)
        ends = tf.logical_and(flat_lengths > 0, tf.equal(last, self.eos_id))
        flat_lengths -= tf.cast(ends, tf.int32)
        ragged = tf.RaggedTensor.from_tensor(flat_ids, lengths=flat_lengths)
        text = self.tokenizer.detokenize(ragged)
        return tf.reshape(text, shape[:2])

    def search(self, sentences, options: SearchOptions, details=False,
               **task):
        """Graph body: strings `[B]` and the task as int32 ids (`[B]`, or
        `[B, K]` multi-hot) -> dict(translations [B, N], scores [B, N],
        ids [B, N, T], lengths [B, N], log_probs [B, N]); with `details`,
        also `attention [B, N, T, S]` (see `outputs`)."""
        source_ids, source_lengths = self.tokenize(sentences, task)
        return self.outputs(self.search_ids(source_ids, source_lengths,
                                            options, **task), details)

    def search_ids(self, source_ids, source_lengths, options: SearchOptions,
                   **task):
        """Graph body without text: `source_ids [B, S]` (source prefix,
        subwords, end token; 0-padded), their `source_lengths [B]` and the
        task ids -> the search's `DecodingResult` (with
        `jit_compile_search`, `T` is the longest output the padded source
        allows, not the longest hypothesis)."""
        if self.compiles_search:
            if self.shortlist is not None:  # set after construction
                raise ValueError("jit_compile_search takes no shortlist")
            return self._compiled_search(options)(
                pad_width(source_ids, XLA_WIDTH_MULTIPLE), source_lengths,
                task)
        return self._search_ids(source_ids, source_lengths, options, task)

    @property
    def compiles_search(self) -> bool:
        """Whether the next search runs XLA-compiled: `jit_compile_search`,
        unless it was chosen by default and a shortlist or UNK replacement
        (set after construction, as the CLI does) needs the graph search."""
        if self._search_chosen:
            return (self.jit_compile_search and self.shortlist is None
                    and self.unk_replacer is None)
        return self.jit_compile_search

    def _search_ids(self, source_ids, source_lengths, options, task,
                    fixed_shapes=False):
        max_lengths = self.max_lengths(source_lengths, options)
        encoded = self.model.encode(source_ids, **task)
        shapes = {}
        if fixed_shapes:
            # Every buffer sized from the source's width, a compile-time
            # constant under XLA; max_lengths stay within it.
            width = tf.shape(source_ids)[1]
            max_time = self.max_lengths(width[tf.newaxis], options)[0]
            shapes = {"max_time": tf.maximum(max_time, 1),
                      "attention_width": width}
            length = shapes["max_time"]
            if self.model.resizes_cache:  # a short cache, grown as needed
                shapes["segments"] = segmented_loop.segment_lengths(length)
                shapes["resize_state"] = self.model.resize_cache
                length = shapes["segments"][0]
            state = self.model.initial_state(encoded, length)
        else:
            # The search runs at most max(max_lengths) steps: the state's size.
            state = self.initial_state(
                encoded, tf.maximum(tf.reduce_max(max_lengths), 1))
        return self.run_search(state, source_lengths, options, max_lengths,
                               source_ids=source_ids, **shapes)

    def _compiled_search(self, options):
        """`_search_ids` with fixed shapes as one XLA-compiled function,
        cached per `options`; traced in the model's
        `compiled_search_context()`."""
        key = ("xla", options)
        if _hashable(options) and key in self._functions:
            return self._functions[key]
        context = self.model.compiled_search_context

        def search(source_ids, source_lengths, task):
            with context():
                return self._search_ids(source_ids, source_lengths, options,
                                        task, fixed_shapes=True)

        function = tf.function(search, jit_compile=True, autograph=False)
        if _hashable(options):  # not with graph tensors (an export's request)
            self._functions[key] = function
        return function

    def initial_state(self, encoded, max_length):
        """The model's decoding state for `encoded`, with room for
        `max_length` steps (a growing cache where this translator uses one)."""
        if self.growing_cache:
            return self.model.initial_state(encoded, max_length,
                                            growing_cache=True)
        return self.model.initial_state(encoded, max_length)

    def max_lengths(self, source_lengths, options: SearchOptions):
        """Output length limits `[B]`: `max_length_ratio` times the source, at
        most the model's `max_target_length` (so host-driven and in-graph
        searches stop at the same length)."""
        lengths = tf.cast(tf.math.ceil(
            options.max_length_ratio * tf.cast(source_lengths, tf.float32)), tf.int32)
        if self.model.max_target_length:
            lengths = tf.minimum(lengths, self.model.max_target_length)
        return lengths

    def decode(self, state, source_lengths, options: SearchOptions,
               max_lengths=None, source_ids=None, details=False):
        """Runs the search from a decoding `state` and detokenises the
        result (see `outputs`); `source_ids [B, S]` are needed with a
        shortlist."""
        return self.outputs(self.run_search(state, source_lengths, options,
                                            max_lengths, source_ids),
                            details)

    def outputs(self, result, details=False):
        """A search's `DecodingResult` as the graph's outputs:
        dict(translations [B, N], scores [B, N], ids [B, N, T],
        lengths [B, N], log_probs [B, N]); with `details` also
        `attention [B, N, T, S]` (zeros `[B, N, T, 0]` without attention)."""
        outputs = {"translations": self.detokenize(result.ids, result.lengths),
                   "scores": result.scores, "ids": result.ids,
                   "lengths": result.lengths, "log_probs": result.log_probs}
        if details:
            attention = result.attention
            if attention is None:
                attention = tf.zeros(tf.concat([tf.shape(result.ids), [0]], 0))
            outputs["attention"] = attention
        return outputs

    def run_search(self, state, source_lengths, options: SearchOptions,
                   max_lengths=None, source_ids=None, max_time=None,
                   attention_width=None, segments=None, resize_state=None):
        """Runs the search from a decoding `state`; returns its
        `DecodingResult` (ids in the model's vocabulary, not text).
        `source_ids [B, S]` are needed with a shortlist; `max_time` and
        `attention_width` fix the search's shapes, and `segments` and
        `resize_state` split its loop (see `beam_search`)."""
        if max_lengths is None:
            max_lengths = self.max_lengths(source_lengths, options)
        if options.decoder not in GRAPH_DECODERS:
            raise ValueError(
                f"the {options.decoder} decoder is a host-side loop and "
                "cannot run in a graph (use Translator.translate_nbest, or "
                "beam or greedy in an export)")
        step_fn, bos_id, eos_id = self._step, self.bos_id, self.eos_id
        restricted = None
        if self.shortlist is not None:
            if source_ids is None:
                raise ValueError("a shortlist needs the batch's source_ids")
            restricted = self.shortlist.restrict(self.model, source_ids,
                                                 self.bos_id, self.eos_id)
            step_fn = restricted.step_fn
            bos_id, eos_id = restricted.start_id, restricted.end_id
        start_ids = tf.fill([tf.shape(source_lengths)[0]], bos_id)
        if options.beam_size == 1 or options.decoder == "greedy":
            result = greedy_search(step_fn, state, start_ids, eos_id,
                                   max_lengths, max_time=max_time,
                                   attention_width=attention_width,
                                   segments=segments,
                                   resize_state=resize_state)
        else:
            result = beam_search(
                step_fn, state, start_ids, eos_id, options.beam_size,
                max_lengths, source_lengths=source_lengths,
                length_penalty=options.length_penalty,
                coverage_penalty=options.coverage_penalty,
                beam_width=options.beam_width,
                num_hypotheses=options.num_hypotheses,
                early_stopping=options.early_stopping, max_time=max_time,
                attention_width=attention_width, segments=segments,
                resize_state=resize_state,
                # A graph's shapes may change: stopped sentences leave the
                # batch. XLA's may not (the buffers' length is fixed).
                drop_stopped=max_time is None)
        if restricted is not None:
            result = result._replace(ids=restricted.to_vocabulary(
                result.ids, result.lengths))
        return result

    def task_specs(self):
        """The int32 `TensorSpec`s of the task inputs, in order."""
        return [tf.TensorSpec(t.shape, tf.int32, name=t.name)
                for t in self.task_inputs]

    def search_fn(self, options: SearchOptions, details=False):
        """The `tf.function` `(sentences [B], *task ids) -> dict` for
        `options` (and `details`, see `search`), cached."""
        key = (options, details)
        if key not in self._functions:
            names = [t.name for t in self.task_inputs]
            # No autograph: the search is explicit tf.while_loops already, and
            # converting the whole model call tree doubles the tracing time.
            self._functions[key] = tf.function(
                lambda sentences, *task: self.search(
                    sentences, options, details, **dict(zip(names, task))),
                input_signature=[tf.TensorSpec([None], tf.string),
                                 *self.task_specs()],
                autograph=False)
        return self._functions[key]

    def ids_search_fn(self, options: SearchOptions):
        """The `tf.function` `(source_ids [B, S], source_lengths [B], *task
        ids) -> dict(ids [B, N, T], lengths [B, N], scores [B, N])` for
        `options`, cached: `search_ids` for callers that tokenise and
        detokenise on the host (`gnmt_tf.batch_translation`)."""
        key = ("ids", options)
        if key not in self._functions:
            names = [t.name for t in self.task_inputs]

            def search(source_ids, source_lengths, *task):
                result = self.search_ids(source_ids, source_lengths, options,
                                         **dict(zip(names, task)))
                return {"ids": result.ids, "lengths": result.lengths,
                        "scores": result.scores}

            self._functions[key] = tf.function(
                search, input_signature=[
                    tf.TensorSpec([None, None], tf.int32),
                    tf.TensorSpec([None], tf.int32), *self.task_specs()],
                autograph=False)
        return self._functions[key]

    def task_ids(self, **task):
        """Checks Python task arguments; returns their ids by name.

        Raises:
          ValueError: a missing, unexpected or unknown task argument.
        """
        return seq2seq_model.task_ids(self.model, task)

    def check_inputs(self, sentences):
        """Validates raw inputs; returns their subword lengths (a source
        prefix such as `<2xx>` not counted, as in the exported graph).

        Raises:
          TypeError: an input is not a `str`.
          ValueError: an input is too long (names its 1-based position).
        """
        for i, s in enumerate(sentences, 1):
            if not isinstance(s, str):
                raise TypeError(f"input {i} is {type(s).__name__}, not str")
        lengths = [len(ids) for ids in self.subwords.encode(sentences)]
        for i, n in enumerate(lengths, 1):
            if n > self.max_source_length:
                raise ValueError(
                    f"input {i} has {n} subwords; the limit is "
                    f"{self.max_source_length} (split it into sentences)")
        return lengths

    def translate_nbest(self, sentences, options=None, batch_size=32,
                        constraints=None, members=(), member_weights=None,
                        **task):
        """Translates `sentences`, returning an n-best list of `Hypothesis` each
        (the `gnmt_tf.translation.TranslationBackend` protocol).

        `options` is a `SearchOptions` (default: its defaults); any of its
        fields may also be given as a keyword (`beam_size=4`).

        `constraints` (one list of target-language terms per sentence, or
        None) makes every term appear in its sentence's translation
        (lexically constrained beam search with dynamic beam allocation,
        `gnmt_tf.decoding.constrained_search`; decoder beam or greedy).
        `members` are more `Translator`s over the same target vocabulary for
        the sepbeam decoder (one beam each, with this one;
        `member_weights`: one weight per model, this one first).
        The host-side decoders (dfs, bucket, sepbeam, constraints) translate
        one sentence at a time (`gnmt_tf.decoding.host_decoding`).

        `task` holds the model's task arguments by name (e.g. `src_lang="en",
        tgt_lang="fr", tags=["caption"]`; none for GNMT). Empty (or
        whitespace-only) inputs give one empty hypothesis and never reach the
        model. Sentences are sorted by length and translated in batches of
        similar length; results come back in input order. With a
        `tflite_search` (`from_model_dir`), requests it runs are searched
        there: the same translations up to float rounding.

        Raises:
          ValueError: a bad task argument or an over-long input.
          TypeError: an input that is not a str.
        """
        options, task = split_search_arguments(options, **task)
        check_number("batch_size", batch_size, integer=True, minimum=1)
        ids = self.task_ids(**task)
        sentences = list(sentences)
        lengths = self.check_inputs(sentences)
        if self.sends_to_tflite(options, constraints, members):
            return self.tflite_search.translate_nbest(sentences, options,
                                                      batch_size, **task)
        if (options.decoder not in GRAPH_DECODERS or constraints is not None
                or members):
            if self.shortlist is not None or self.unk_replacer is not None:
                raise ValueError("a shortlist and UNK replacement work with "
                                 "the in-graph searches (beam, greedy) "
                                 "without constraints or sepbeam members")
            from gnmt_tf.decoding import host_decoding

            return [[Hypothesis(text, score) for text, score in pairs]
                    for pairs in host_decoding.translate_nbest(
                        self, sentences, options, constraints=constraints,
                        members=members, member_weights=member_weights,
                        **task)]
        details = self.unk_replacer is not None
        function = self.search_fn(options, details)
        results = [[Hypothesis("", 0.0)] for _ in sentences]
        order = sorted((i for i, s in enumerate(sentences) if s.strip()),
                       key=lambda i: lengths[i])
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            batch = np.array([sentences[i].encode("utf-8") for i in chunk], dtype=object)
            task_batch = [tf.constant([ids[t.name]] * len(chunk), tf.int32)
                          for t in self.task_inputs]
            out = self._run(function, options, details, tf.constant(batch),
                            task_batch)
            texts, scores = out["translations"].numpy(), out["scores"].numpy()
            texts = [[t.decode("utf-8") for t in row] for row in texts]
            if details:
                texts = self._replace_unk(
                    [sentences[i] for i in chunk], texts, out, ids)
            for row, i in enumerate(chunk):
                results[i] = [Hypothesis(t, float(s))
                              for t, s in zip(texts[row], scores[row])]
        return results

    def sends_to_tflite(self, options, constraints=None, members=()):
        """Whether a request goes to `tflite_search`: options the host
        search runs (`runs_on_host`), and no constraints, sepbeam members,
        shortlist or UNK replacement."""
        return (self.tflite_search is not None and constraints is None
                and not members and self.shortlist is None
                and self.unk_replacer is None and runs_on_host(options))

    def _replace_unk(self, sentences, texts, out, task):
        """`texts [B][N]` with the `<unk>`s of hypotheses replaced."""
        prefix = len(seq2seq_model.prefix_ids(self.model.source_prefix, task))
        ids, lengths = out["ids"].numpy(), out["lengths"].numpy()
        attention = out["attention"].numpy()
        replaced = []
        for b, sentence in enumerate(sentences):
            row = []
            for n, text in enumerate(texts[b]):
                length = lengths[b, n]
                if self.model.config.unk_id in ids[b, n, :length]:
                    text = self.unk_replacer.replace(
                        sentence, ids[b, n, :length],
                        attention[b, n, :length], prefix,
                        end_id=self.eos_id)
                row.append(text)
            replaced.append(row)
        return replaced

    def _run(self, function, options, details, batch, task_batch):
        """Calls a search function; remakes the tokenizer once if its
        resource is gone.

        Setting TensorFlow's global seed (`keras.utils.set_random_seed`, as
        every trainer does) clears the eager kernel cache, which holds the
        TF Text SentencePiece resource: a Translator made before a training
        in the same process would otherwise fail for good.
        """
        try:
            return function(batch, *task_batch)
        except tf.errors.NotFoundError as e:
            if "Sentencepiece" not in str(e):
                raise
        self.reset_tokenizer()
        return self.search_fn(options, details)(batch, *task_batch)

    def reset_tokenizer(self):
        """Makes the tokenizer again and drops the traced functions that
        used the old one (see `_run`)."""
        self.subwords.reset_tf_tokenizer()
        self.tokenizer = self.subwords.tf_tokenizer
        self._functions.clear()

    def translate(self, sentences, options=None, batch_size=32, **task):
        """Translates `sentences` (list of str) to a list of best translations
        (`options` and `task` as `translate_nbest`)."""
        return [h[0].text for h in self.translate_nbest(sentences, options,
                                                        batch_size, **task)]


def pad_width(source_ids, multiple):
    """`source_ids [B, S]` zero-padded (the pad id) on the right to a
    width that is a multiple of `multiple`."""
    width = tf.shape(source_ids)[1]
    pad = (multiple - width % multiple) % multiple
    return tf.pad(source_ids, [[0, 0], [0, pad]])


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return True
