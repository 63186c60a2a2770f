"""Text in, text out: tokenisation, search and detokenisation in one graph.

`Translator.search_fn` is a `tf.function` from a batch of UTF-8 strings to
translations and scores; the SavedModel exporter serves the same function. The
Python-side `translate` adds what a graph should not do: input validation with
clear errors, batching of similar-length sentences (GNMT §7) and restoring the
input order.
"""

import dataclasses
import numbers
import typing

import numpy as np
import tensorflow as tf

from gnmt_tf import seq2seq_model
from gnmt_tf.checks import check_number
from gnmt_tf.decoding import beam_search, greedy_search, xla_step
from gnmt_tf.decoding.beam_search import EARLY_STOPPING_MODES

# Source limit (subwords) of models without a length limit of their own.
DEFAULT_MAX_SOURCE_LENGTH = 250


@dataclasses.dataclass(frozen=True)
class SearchOptions:
    """How to search.

    Attributes:
      beam_size: int. 1 means greedy search.
      length_penalty: float. GNMT's alpha (0 = none).
      coverage_penalty: float. GNMT's beta (0 = none).
      beam_width: float or None. GNMT's score-space pruning width.
      num_hypotheses: int. n-best list size (<= beam_size).
      early_stopping: "gnmt", "exact" or "none" (see `beam_search`).
      max_length_ratio: float. Output may be at most this times the source
        length in subwords (GNMT: 2).
    """

    beam_size: int = 5
    length_penalty: float = 0.6
    coverage_penalty: float = 0.0
    beam_width: typing.Optional[float] = None
    num_hypotheses: int = 1
    early_stopping: str = "gnmt"
    max_length_ratio: float = 2.0

    def __post_init__(self):
        check_number("beam_size", self.beam_size, integer=True, minimum=1)
        check_number("num_hypotheses", self.num_hypotheses, integer=True,
                     minimum=1, maximum=self.beam_size)
        # Penalties may be graph tensors (the SavedModel's
        # translate_with_options): only Python/NumPy numbers are checked.
        for name, bounds in (("length_penalty", {}),
                             ("coverage_penalty", {}),
                             ("beam_width", {"above": 0}),
                             ("max_length_ratio", {"above": 0})):
            value = getattr(self, name)
            if value is None or isinstance(value, numbers.Real):
                check_number(name, value, optional=name == "beam_width",
                             **bounds)
        if self.early_stopping not in EARLY_STOPPING_MODES:
            raise ValueError(f"early_stopping must be one of "
                             f"{', '.join(EARLY_STOPPING_MODES)}, got "
                             f"{self.early_stopping!r}")


@dataclasses.dataclass(frozen=True)
class Hypothesis:
    text: str
    score: float


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
      jit_compile_step: bool. Run the model's step compiled with XLA
        (`gnmt_tf.decoding.xla_step`): faster per step, but compiled again
        for each new batch shape; off by default.

    Example:
    ```python
    translator = Translator.from_model_dir("runs/ts")
    translator.translate(["A dog runs."], src_lang="en", tgt_lang="fr",
                         tags=["caption"])
    ```
    """

    def __init__(self, model, subwords, max_source_length=None,
                 jit_compile_step=False):
        self.model = model
        self._step = xla_step(model.step) if jit_compile_step else model.step
        self.subwords = subwords
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
        # Create the tokenizer's resource eagerly: made inside a tf.function it
        # would belong to that function's graph and be unusable in the next.
        self.tokenizer = subwords.tf_tokenizer

    @classmethod
    def from_model_dir(cls, model_dir, **kwargs):
        """Loads a trained model directory (any registered model type)."""
        from gnmt_tf.model_dir import load_model

        model, subwords, _ = load_model(model_dir)
        return cls(model, subwords, **kwargs)

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

    def search(self, sentences, options: SearchOptions, **task):
        """Graph body: strings `[B]` and the task as int32 ids (`[B]`, or
        `[B, K]` multi-hot) -> dict(translations [B, N], scores [B, N])."""
        source_ids, source_lengths = self.tokenize(sentences, task)
        max_lengths = self.max_lengths(source_lengths, options)
        encoded = self.model.encode(source_ids, **task)
        # The search runs at most max(max_lengths) steps: the state's size.
        state = self.model.initial_state(
            encoded, tf.maximum(tf.reduce_max(max_lengths), 1))
        return self.decode(state, source_lengths, options, max_lengths)

    def max_lengths(self, source_lengths, options: SearchOptions):
        """Output length limits `[B]`: `max_length_ratio` times the source, at
        most the model's `max_target_length` (so host-driven and in-graph
        searches stop at the same length)."""
        lengths = tf.cast(tf.math.ceil(
            options.max_length_ratio * tf.cast(source_lengths, tf.float32)), tf.int32)
        if self.model.max_target_length:
            lengths = tf.minimum(lengths, self.model.max_target_length)
        return lengths

    def decode(self, state, source_lengths, options: SearchOptions, max_lengths=None):
        """Runs the search from a decoding `state` and detokenises the result."""
        if max_lengths is None:
            max_lengths = self.max_lengths(source_lengths, options)
        start_ids = tf.fill([tf.shape(source_lengths)[0]], self.bos_id)
        if options.beam_size == 1:
            result = greedy_search(self._step, state, start_ids, self.eos_id,
                                   max_lengths)
        else:
            result = beam_search(
                self._step, state, start_ids, self.eos_id, options.beam_size,
                max_lengths, source_lengths=source_lengths,
                length_penalty=options.length_penalty,
                coverage_penalty=options.coverage_penalty,
                beam_width=options.beam_width,
                num_hypotheses=options.num_hypotheses,
                early_stopping=options.early_stopping)
        return {"translations": self.detokenize(result.ids, result.lengths),
                "scores": result.scores}

    def task_specs(self):
        """The int32 `TensorSpec`s of the task inputs, in order."""
        return [tf.TensorSpec(t.shape, tf.int32, name=t.name)
                for t in self.task_inputs]

    def search_fn(self, options: SearchOptions):
        """The `tf.function` `(sentences [B], *task ids) -> dict` for
        `options`, cached."""
        if options not in self._functions:
            names = [t.name for t in self.task_inputs]
            # No autograph: the search is explicit tf.while_loops already, and
            # converting the whole model call tree doubles the tracing time.
            self._functions[options] = tf.function(
                lambda sentences, *task: self.search(
                    sentences, options, **dict(zip(names, task))),
                input_signature=[tf.TensorSpec([None], tf.string),
                                 *self.task_specs()],
                autograph=False)
        return self._functions[options]

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

    def translate_nbest(self, sentences, options=SearchOptions(), batch_size=32,
                        **task):
        """Translates `sentences`, returning an n-best list of `Hypothesis` each.

        `task` holds the model's task arguments by name (e.g. `src_lang="en",
        tgt_lang="fr", tags=["caption"]`; none for GNMT). Empty (or
        whitespace-only) inputs give one empty hypothesis and never reach the
        model. Sentences are sorted by length and translated in batches of
        similar length; results come back in input order.

        Raises:
          ValueError: a bad task argument or an over-long input.
          TypeError: an input that is not a str.
        """
        check_number("batch_size", batch_size, integer=True, minimum=1)
        ids = self.task_ids(**task)
        sentences = list(sentences)
        lengths = self.check_inputs(sentences)
        function = self.search_fn(options)
        results = [[Hypothesis("", 0.0)] for _ in sentences]
        order = sorted((i for i, s in enumerate(sentences) if s.strip()),
                       key=lambda i: lengths[i])
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            batch = np.array([sentences[i].encode("utf-8") for i in chunk], dtype=object)
            task_batch = [tf.constant([ids[t.name]] * len(chunk), tf.int32)
                          for t in self.task_inputs]
            out = self._run(function, options, tf.constant(batch), task_batch)
            texts, scores = out["translations"].numpy(), out["scores"].numpy()
            for row, i in enumerate(chunk):
                results[i] = [Hypothesis(t.decode("utf-8"), float(s))
                              for t, s in zip(texts[row], scores[row])]
        return results

    def _run(self, function, options, batch, task_batch):
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
        self.subwords.reset_tf_tokenizer()
        self.tokenizer = self.subwords.tf_tokenizer
        self._functions.clear()
        return self.search_fn(options)(batch, *task_batch)

    def translate(self, sentences, options=SearchOptions(), batch_size=32, **task):
        """Translates `sentences` (list of str) to a list of best translations."""
        return [h[0].text for h in self.translate_nbest(sentences, options,
                                                        batch_size, **task)]
