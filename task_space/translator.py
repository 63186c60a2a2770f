"""Text in, text out for the task-space Transformer.

`TaskSpaceTranslator` is `gnmt_tf.translator.Translator` (same in-graph
SentencePiece tokenisation, beam/greedy search through the model's step
function, detokenisation, length-sorted batching and input checks) with the
task as extra inputs: every sentence has a source language, a target
language and a set of scene tags, and the search sizes the decoder's KV
cache to the longest output it allows (`max_length_ratio` times the source,
at most the model's `max_sequence_length`).
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

from gnmt_tf.translator import SearchOptions, Translator
from task_space import data as data_lib
from task_space import registry  # noqa: F401  (registers the model type)


class TaskSpaceTranslator(Translator):
    """Translates raw sentences for any direction and scene of one model.

    Args:
        model: `TaskSpaceTransformer` (or subclass), trained.
        subwords: `gnmt_tf.text.subword.Subwords` of the model.
        target_language_token: bool. Prepend `<2tgt>` to each source, as
            the model was trained (the Johnson et al. baseline).
        max_source_length: int or None. Longer inputs (in subwords) are
            rejected; default `model.config.max_sequence_length`.

    Example:
    ```python
    translator = TaskSpaceTranslator.from_model_dir("runs/ts")
    translator.translate(["A dog runs."], "en", "fr", ["caption"])
    ```
    """

    def __init__(self, model, subwords, target_language_token=False,
                 max_source_length=None):
        config = model.config
        super().__init__(
            model, subwords,
            max_source_length or config.max_sequence_length)
        self.config = config
        self.target_language_token = target_language_token
        self._language_token_ids = None
        if target_language_token:
            self._language_token_ids = tf.constant(
                data_lib.target_language_token_ids(subwords,
                                                   config.languages),
                tf.int32)

    def max_lengths(self, source_lengths, options: SearchOptions):
        """Output length limits `[B]`: `max_length_ratio` times the source,
        at most `config.max_sequence_length` (the longest target the model
        is meant for, and the KV cache of the exported `encode` signature,
        so host-driven and in-graph searches stop at the same length)."""
        return tf.minimum(super().max_lengths(source_lengths, options),
                          self.config.max_sequence_length)

    @classmethod
    def from_model_dir(cls, model_dir, **kwargs):
        """Loads a directory written by `task_space.training`."""
        from gnmt_tf.model_dir import load_model
        from task_space.training import read_task_space_config

        _, options = read_task_space_config(model_dir)
        model, subwords, _ = load_model(model_dir)
        kwargs.setdefault("target_language_token",
                          options.target_language_token)
        return cls(model, subwords, **kwargs)

    # --- Graph -------------------------------------------------------------

    def tokenize_task(self, sentences, tgt_lang):
        """Strings `[B]` -> `(source_ids [B, S], lengths [B])`: subwords,
        EOS and, for the baseline, the `<2tgt>` token first."""
        if self._language_token_ids is None:
            return self.tokenize(sentences)
        tokens = self.tokenizer.tokenize(sentences)
        first = tf.gather(self._language_token_ids, tgt_lang)[:, None]
        eos = tf.fill([tokens.nrows(), 1], self.eos_id)
        tokens = tf.concat([tf.RaggedTensor.from_tensor(first), tokens,
                            tf.RaggedTensor.from_tensor(eos)], axis=1)
        return tokens.to_tensor(0), tf.cast(tokens.row_lengths(), tf.int32)

    def search_task(self, sentences, src_lang, tgt_lang, tags,
                    options: SearchOptions):
        """Graph body: strings `[B]`, `src_lang`/`tgt_lang` int32 `[B]`,
        `tags` int32 `[B, K]` -> dict(translations [B, N], scores [B, N])."""
        source_ids, source_lengths = self.tokenize_task(sentences, tgt_lang)
        max_lengths = self.max_lengths(source_lengths, options)
        encoded = self.model.encode(source_ids, src_lang, tgt_lang, tags)
        # The search runs at most max(max_lengths) steps: that is the cache.
        state = self.model.initial_state(
            encoded, tf.maximum(tf.reduce_max(max_lengths), 1))
        return self.decode(state, source_lengths, options, max_lengths)

    def search_fn(self, options: SearchOptions):
        """The `tf.function` `(sentences [B], src_lang [B], tgt_lang [B],
        tags [B, K]) -> dict` for `options`, cached."""
        if options not in self._functions:
            signature = [tf.TensorSpec([None], tf.string),
                         tf.TensorSpec([None], tf.int32),
                         tf.TensorSpec([None], tf.int32),
                         tf.TensorSpec([None, self.config.num_tags],
                                       tf.int32)]
            self._functions[options] = tf.function(
                lambda *args: self.search_task(*args, options),
                input_signature=signature, autograph=False)
        return self._functions[options]

    # --- Python API ----------------------------------------------------------

    def task_inputs(self, src_lang, tgt_lang, tags=()):
        """Checks a task and returns `(src_id, tgt_id, tag_vector)`.

        Raises:
            ValueError: unknown language or tag (naming the known ones), or
                the same source and target language.
        """
        src_id = self.config.language_id(src_lang)
        tgt_id = self.config.language_id(tgt_lang)
        if src_id == tgt_id:
            raise ValueError(f"source and target language are both "
                             f"{src_lang!r}")
        return src_id, tgt_id, self.config.tag_vector(
            data_lib.parse_tags(tags))

    def check_inputs(self, sentences):
        lengths = super().check_inputs(sentences)
        extra = 1 if self.target_language_token else 0
        return [n + extra for n in lengths]

    def translate_nbest(self, sentences, src_lang, tgt_lang, tags=(),
                        options=SearchOptions(), batch_size=32):
        """Translates `sentences` (list of str) from `src_lang` to
        `tgt_lang` in the scene `tags` (list of names, or `"a,b"`).

        Returns an n-best list of `gnmt_tf.translator.Hypothesis` per input;
        empty inputs give one empty hypothesis. Sentences are batched by
        length; results come back in input order.

        Raises:
            ValueError: unknown language or tag, or an over-long input.
            TypeError: an input that is not a str.
        """
        src_id, tgt_id, tag_vector = self.task_inputs(src_lang, tgt_lang,
                                                      tags)
        return self._translate_in_batches(
            sentences, self.search_fn(options), batch_size,
            lambda n: (tf.fill([n], src_id), tf.fill([n], tgt_id),
                       tf.constant([tag_vector] * n, tf.int32)))

    def translate(self, sentences, src_lang, tgt_lang, tags=(),
                  options=SearchOptions(), batch_size=32):
        """Best translation of each sentence (list of str)."""
        return [h[0].text for h in self.translate_nbest(
            sentences, src_lang, tgt_lang, tags, options, batch_size)]
