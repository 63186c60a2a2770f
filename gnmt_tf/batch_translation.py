"""Translating large inputs with the batch-decoding pipeline
(`gnmt_tf.batch_decoding`): `TranslationStages` are its three stages for a
`gnmt_tf.translator.Translator`.

- Scheduler thread (`prepare`): SentencePiece on the host, length checks
  with the input's line numbers, the model's source prefix and end token.
- Compute thread (`compute`): the search on ids only
  (`Translator.ids_search_fn`), with the same batches as
  `Translator.translate_nbest`, so the translations are the same.
- Post-processing thread (`finish`): detokenisation, and the decision
  whether a translation is final. *Unfinished work* is a sentence whose best
  hypothesis stopped at its length limit without an end token: it is handed
  back, up to `max_retries` times, with the length limit doubled each time
  (`max_length_ratio * 2 ** attempt`), unless the model's own limit
  (`max_target_length`) leaves no room to grow; after that its cut
  translation is kept. A batch that runs out of memory is handed back one
  sentence at a time (`batch_pipeline.OutOfMemory`).
"""

import dataclasses
import math

import numpy as np
import tensorflow as tf

from gnmt_tf import seq2seq_model
from gnmt_tf.batch_decoding import OutOfMemory, Work
from gnmt_tf.checks import check_number
from gnmt_tf.translator import Hypothesis, SearchOptions


@dataclasses.dataclass
class SearchOutput:
    """One sentence's search result, as the compute thread leaves it.

    Attributes:
      ids: int `[N, T]` hypotheses (end token included).
      lengths: int `[N]`.
      scores: float `[N]`.
      max_length: int. The sentence's output length limit in that search.
    """

    ids: np.ndarray
    lengths: np.ndarray
    scores: np.ndarray
    max_length: int


class TranslationStages:
    """The stages of `BatchPipeline` for a `Translator` (see the module doc).

    Args:
      translator: `gnmt_tf.translator.Translator`.
      options: `SearchOptions`.
      max_retries: int >= 0. Times a cut translation is handed back with a
        doubled length limit (0: never; the output then equals
        `Translator.translate_nbest`'s).
      **task: the model's task arguments (checked here).

    Raises:
      ValueError: a bad task argument or `max_retries`.
    """

    def __init__(self, translator, options=SearchOptions(), max_retries=1,
                 **task):
        check_number("max_retries", max_retries, integer=True, minimum=0)
        self.translator = translator
        self.options = options
        self.max_retries = max_retries
        self.task = translator.task_ids(**task)
        model = translator.model
        self.prefix = seq2seq_model.prefix_ids(model.source_prefix, self.task)
        self.eos_id = translator.eos_id
        self.empty_lines = 0  # counted by `prepare`

    def prepare(self, lines, first):
        for i, line in enumerate(lines, first + 1):
            if not isinstance(line, str):
                raise TypeError(f"input {i} is {type(line).__name__}, not str")
        works = []
        for i, (line, ids) in enumerate(
                zip(lines, self.translator.subwords.encode(lines)), first):
            if len(ids) > self.translator.max_source_length:
                raise ValueError(
                    f"input {i + 1} has {len(ids)} subwords; the limit is "
                    f"{self.translator.max_source_length} (split it into "
                    "sentences)")
            self.empty_lines += not line.strip()
            works.append(Work(index=i, length=len(ids),
                              data=self.prefix + ids + [self.eos_id],
                              empty=not line.strip()))
        return works

    def options_for(self, attempt) -> SearchOptions:
        """The search options of an attempt (the length ratio doubled per
        retry)."""
        if attempt == 0:
            return self.options
        return dataclasses.replace(
            self.options,
            max_length_ratio=self.options.max_length_ratio * 2 ** attempt)

    def max_length(self, source_length, attempt) -> int:
        """A source's output length limit in an attempt (as
        `Translator.max_lengths`)."""
        limit = math.ceil(self.options_for(attempt).max_length_ratio
                          * source_length)
        model_limit = self.translator.model.max_target_length
        return min(limit, model_limit) if model_limit else limit

    def compute(self, batch):
        attempt = batch[0].attempt
        lengths = np.array([len(w.data) for w in batch], np.int32)
        ids = np.zeros([len(batch), lengths.max()], np.int32)
        for row, work in enumerate(batch):
            ids[row, :len(work.data)] = work.data
        task = [tf.constant([self.task[t.name]] * len(batch), tf.int32)
                for t in self.translator.task_inputs]
        function = self.translator.ids_search_fn(self.options_for(attempt))
        try:
            out = function(tf.constant(ids), tf.constant(lengths), *task)
        except tf.errors.ResourceExhaustedError as e:
            raise OutOfMemory(str(e).splitlines()[0]) from None
        out = {key: value.numpy() for key, value in out.items()}
        return [SearchOutput(out["ids"][row], out["lengths"][row],
                             out["scores"][row],
                             self.max_length(int(lengths[row]), attempt))
                for row in range(len(batch))]

    def finish(self, work, result: SearchOutput):
        """The hypotheses, or None to hand the sentence back (cut at its
        limit, with retries and room left)."""
        best_length = int(result.lengths[0])
        cut = (best_length == result.max_length
               and result.ids[0, best_length - 1] != self.eos_id)
        if (cut and work.attempt < self.max_retries
                and self.max_length(len(work.data), work.attempt + 1)
                > result.max_length):
            return None
        rows = []
        for ids, length in zip(result.ids, result.lengths):
            length = int(length)
            if length and ids[length - 1] == self.eos_id:
                length -= 1
            rows.append(ids[:length].tolist())
        texts = self.translator.subwords.decode(rows)
        return [Hypothesis(text, float(score))
                for text, score in zip(texts, result.scores)]

    def empty_result(self, work):
        return [Hypothesis("", 0.0)]
