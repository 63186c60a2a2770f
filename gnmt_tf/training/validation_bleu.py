"""BLEU of a validation sample while training (`TrainConfig.bleu_every`).

Every `every` optimizer steps, `ValidationBleu` translates a few validation
sentences with the model being trained (greedy search through
`gnmt_tf.translator.Translator`), scores them with sacreBLEU against their
references, prints the score and hands it to `record` (TensorBoard tag
`bleu` of the `validation` run, and `metrics.csv`). A multi-direction model
gives one `BleuSample` group per task; the score is corpus BLEU over all of
them.
"""

import dataclasses
import sys
from typing import List, Mapping, Sequence

import tf_keras as keras


@dataclasses.dataclass(frozen=True)
class BleuGroup:
    """Sentences translated with one task (`{}` for a GNMT model)."""

    task: Mapping[str, object]
    sources: Sequence[str]
    references: Sequence[str]


@dataclasses.dataclass(frozen=True)
class BleuSample:
    """The validation sentences `ValidationBleu` translates, by task."""

    groups: List[BleuGroup]

    @classmethod
    def from_pairs(cls, sources, references, lines, **task):
        """The first `lines` pairs, with one task for all."""
        return cls([BleuGroup(task, list(sources[:lines]),
                              list(references[:lines]))])

    def __len__(self):
        return sum(len(group.sources) for group in self.groups)


class ValidationBleu(keras.callbacks.Callback):
    """Scores BLEU on `sample` every `every` optimizer steps.

    Args:
      sample: `BleuSample`.
      subwords: the model's `gnmt_tf.text.subword.Subwords`.
      every: int >= 1. Steps between scores.
      record: `(split, step, {name: value})` callable or None.
      payload: dict or None. The model directory's `config.json`, given to
        the model's `attach_model_dir` (what its inference inputs need,
        e.g. the `<2xx>` token ids) before the first translation.
      batch_size: int. Sentences per search call.
      stream: where the score lines go (None: stderr).
    """

    def __init__(self, sample, subwords, every, record=None, payload=None,
                 batch_size=64, stream=None):
        super().__init__()
        self.sample = sample
        self.subwords = subwords
        self.every = every
        self.record = record
        self.payload = payload
        self.batch_size = batch_size
        self.stream = stream
        self._translator = None

    def translator(self):
        """A `Translator` of the model being trained (made once); the
        sample loses the sources longer than it takes."""
        if self._translator is None:
            from gnmt_tf.translator import Translator

            if self.payload is not None:
                self.model.attach_model_dir(self.subwords, self.payload)
            # The graph search: the weights change between validations,
            # and a compiled search would compile again at every new shape
            # of every run for a few hundred sentences.
            self._translator = Translator(self.model, self.subwords,
                                          jit_compile_search=False)
            self.sample = _within(self.sample, self.subwords,
                                  self._translator.max_source_length)
        return self._translator

    def score(self) -> float:
        """Corpus BLEU of greedy translations of the whole sample."""
        import sacrebleu

        from gnmt_tf.translator import SearchOptions

        translator = self.translator()
        greedy = SearchOptions(beam_size=1)
        hypotheses, references = [], []
        for group in self.sample.groups:
            hypotheses += translator.translate(group.sources, greedy,
                                               self.batch_size, **group.task)
            references += group.references
        return sacrebleu.metrics.BLEU().corpus_score(
            hypotheses, [references]).score

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step % self.every:
            return
        bleu = self.score()
        print(f"step {step}  validation BLEU {bleu:.2f} "
              f"({len(self.sample)} sentences, greedy)",
              file=self.stream or sys.stderr, flush=True)
        if self.record is not None:
            self.record("validation", step, {"bleu": bleu})


def _within(sample, subwords, max_length):
    """`sample` without the pairs whose source has over `max_length`
    subwords."""
    groups = []
    for group in sample.groups:
        lengths = [len(ids) for ids in subwords.encode(list(group.sources))]
        keep = [i for i, n in enumerate(lengths) if n <= max_length]
        groups.append(BleuGroup(group.task,
                                [group.sources[i] for i in keep],
                                [group.references[i] for i in keep]))
    return BleuSample(groups)
