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

from gnmt_tf.checks import check_number
from gnmt_tf.decoding import beam_search, greedy_search
from gnmt_tf.decoding.beam_search import EARLY_STOPPING_MODES


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
    """Translates raw sentences with a model exposing the step-function API.

    Args:
      model: a model with `encode(source_ids)`, `initial_state(encoded)` and
        `step(ids, state)` (e.g. `gnmt_tf.models.GNMT`).
      subwords: `gnmt_tf.text.subword.Subwords` of the model.
      max_source_length: int. Longer inputs (in subwords) are rejected.
    """

    def __init__(self, model, subwords, max_source_length=250):
        self.model = model
        self.subwords = subwords
        self.max_source_length = max_source_length
        self.bos_id = model.config.bos_id
        self.eos_id = model.config.eos_id
        self._functions = {}
        # Create the tokenizer's resource eagerly: made inside a tf.function it
        # would belong to that function's graph and be unusable in the next.
        self.tokenizer = subwords.tf_tokenizer

    def tokenize(self, sentences):
        """`sentences [B]` strings -> `(source_ids [B, S], lengths [B])` with EOS."""
        tokens = self.tokenizer.tokenize(sentences)
        eos = tf.fill([tokens.nrows(), 1], tf.constant(self.eos_id, tokens.dtype))
        tokens = tf.concat([tokens, tf.RaggedTensor.from_tensor(eos)], axis=1)
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

    def search(self, sentences, options: SearchOptions):
        """Graph body: strings `[B]` -> dict(translations [B, N], scores [B, N])."""
        source_ids, source_lengths = self.tokenize(sentences)
        state = self.model.initial_state(self.model.encode(source_ids))
        return self.decode(state, source_lengths, options)

    def max_lengths(self, source_lengths, options: SearchOptions):
        """Output length limits `[B]`: `max_length_ratio` times the source."""
        return tf.cast(tf.math.ceil(
            options.max_length_ratio * tf.cast(source_lengths, tf.float32)), tf.int32)

    def decode(self, state, source_lengths, options: SearchOptions, max_lengths=None):
        """Runs the search from a decoding `state` and detokenises the result."""
        if max_lengths is None:
            max_lengths = self.max_lengths(source_lengths, options)
        start_ids = tf.fill([tf.shape(source_lengths)[0]], self.bos_id)
        if options.beam_size == 1:
            result = greedy_search(self.model.step, state, start_ids, self.eos_id,
                                   max_lengths)
        else:
            result = beam_search(
                self.model.step, state, start_ids, self.eos_id, options.beam_size,
                max_lengths, source_lengths=source_lengths,
                length_penalty=options.length_penalty,
                coverage_penalty=options.coverage_penalty,
                beam_width=options.beam_width,
                num_hypotheses=options.num_hypotheses,
                early_stopping=options.early_stopping)
        return {"translations": self.detokenize(result.ids, result.lengths),
                "scores": result.scores}

    def search_fn(self, options: SearchOptions):
        """The `tf.function` (string batch -> dict) for `options`, cached."""
        if options not in self._functions:
            # No autograph: the search is explicit tf.while_loops already, and
            # converting the whole model call tree doubles the tracing time.
            self._functions[options] = tf.function(
                lambda sentences: self.search(sentences, options),
                input_signature=[tf.TensorSpec([None], tf.string)],
                autograph=False)
        return self._functions[options]

    def check_inputs(self, sentences):
        """Validates raw inputs; returns their subword lengths.

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

    def translate_nbest(self, sentences, options=SearchOptions(), batch_size=32):
        """Translates `sentences`, returning an n-best list of `Hypothesis` each.

        Empty (or whitespace-only) inputs give one empty hypothesis and never
        reach the model. Sentences are sorted by length and translated in
        batches of similar length; results come back in input order.
        """
        return self._translate_in_batches(sentences, self.search_fn(options),
                                          batch_size)

    def _translate_in_batches(self, sentences, function, batch_size,
                              extra_inputs=lambda n: ()):
        """Validates, sorts by length, runs `function(strings, *extra_inputs(n))`
        per batch of `n` and returns n-best lists in input order."""
        check_number("batch_size", batch_size, integer=True, minimum=1)
        sentences = list(sentences)
        lengths = self.check_inputs(sentences)
        results = [[Hypothesis("", 0.0)] for _ in sentences]
        order = sorted((i for i, s in enumerate(sentences) if s.strip()),
                       key=lambda i: lengths[i])
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            batch = np.array([sentences[i].encode("utf-8") for i in chunk], dtype=object)
            out = function(tf.constant(batch), *extra_inputs(len(chunk)))
            texts, scores = out["translations"].numpy(), out["scores"].numpy()
            for row, i in enumerate(chunk):
                results[i] = [Hypothesis(t.decode("utf-8"), float(s))
                              for t, s in zip(texts[row], scores[row])]
        return results

    def translate(self, sentences, options=SearchOptions(), batch_size=32):
        """Translates `sentences` (list of str) to a list of best translations."""
        return [h[0].text for h in self.translate_nbest(sentences, options, batch_size)]
