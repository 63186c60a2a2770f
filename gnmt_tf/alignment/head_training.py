"""Adding a convolutional alignment head to a trained translation model.

Ctrip trains its alignment head on a finished model's attention maps, with
fast_align links as labels, and leaves the translation model as it is.
`train_alignment_head` does the same for any model whose
`call(..., return_attention=True)` gives attention (GNMT, the Transformers):

1. `corpus_links` word-aligns raw sentence pairs with our fast_align (both
   directions, `-d -o -v`, grow-diag-final-and, lower-cased words);
2. `encode_examples` turns word links into subword links of the model's own
   tokenisation of the *raw* text (SentencePiece byte offsets map each
   subword to the word it lies in), so the head learns the attention of the
   inputs it will see at translation time;
3. the head trains alone (`AlignedTranslationModel(...,
   freeze_translation_model=True)`): the model's weights do not change and
   its attention comes from inference mode.

`gnmt_tf.alignment.head_files` stores the head in a model directory and loads it
back; `gnmt-tf add-alignment-head` (`gnmt_tf.alignment.cli`) runs all of this.
"""

import bisect
import dataclasses
import re
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

_WORD = re.compile(r"\w+(?:['\u2019-]\w+)*|[^\w\s]")
Link = Tuple[int, int]


@dataclasses.dataclass(frozen=True)
class HeadExample:
    """One sentence pair to train or score a head on: raw texts, the task,
    and word links `(i, j)` between `words(source)` and `words(target)`."""

    src_lang: str
    tgt_lang: str
    source: str
    target: str
    links: Tuple[Link, ...]

    def reversed(self) -> "HeadExample":
        """The same pair the other way round."""
        return HeadExample(self.tgt_lang, self.src_lang, self.target,
                           self.source, tuple((j, i) for i, j in self.links))


def words(text: str) -> List[str]:
    """The words fast_align sees: letters/digits runs (with inner
    apostrophes and hyphens) and single punctuation marks."""
    return _WORD.findall(text)


def word_byte_spans(text: str) -> List[Tuple[int, int]]:
    """UTF-8 byte `(begin, end)` of each of `words(text)`."""
    spans = []
    for match in _WORD.finditer(text):
        begin = len(text[:match.start()].encode("utf-8"))
        spans.append((begin, begin + len(match.group().encode("utf-8"))))
    return spans


def piece_word_index(piece_offsets: Sequence[Tuple[int, int]],
                     spans: Sequence[Tuple[int, int]]) -> List[int]:
    """Word index of each subword (-1 for one in no word, such as a bare
    word-boundary piece): the word whose bytes hold the subword's first.
    `spans` are in text order (`word_byte_spans`)."""
    starts = [begin for begin, _ in spans]
    index = []
    for begin, end in piece_offsets:
        k = bisect.bisect_right(starts, begin) - 1
        index.append(k if end > begin and k >= 0 and begin < spans[k][1]
                     else -1)
    return index


def corpus_links(pairs: Sequence[Tuple[Sequence[str], Sequence[str]]],
                 iterations: int = 5) -> List[List[Link]]:
    """grow-diag-final-and links `(i, j)` of word-list pairs (fast_align
    `-d -o -v` in both directions, on lower-cased words)."""
    from gnmt_tf.alignment import symmetrize
    from gnmt_tf.alignment.fast_align import FastAlign

    lowered = [([w.lower() for w in s], [w.lower() for w in t])
               for s, t in pairs]
    options = dict(favor_diagonal=True, optimize_tension=True,
                   variational_bayes=True, iterations=iterations)
    forward = FastAlign(**options).fit_align(lowered)
    reverse = FastAlign(reverse=True, **options).fit_align(lowered)
    return symmetrize.symmetrize_corpus(forward, reverse,
                                        "grow-diag-final-and")


def make_examples(src_lang: str, tgt_lang: str, sources: Sequence[str],
                  targets: Sequence[str], iterations: int = 5
                  ) -> List[HeadExample]:
    """Word-aligns parallel raw sentences; pairs with an empty side are
    left out."""
    kept = [(s, t) for s, t in zip(sources, targets)
            if words(s) and words(t)]
    links = corpus_links([(words(s), words(t)) for s, t in kept], iterations)
    return [HeadExample(src_lang, tgt_lang, s, t, tuple(map(tuple, pair)))
            for (s, t), pair in zip(kept, links)]


def model_task(model, src_lang: str, tgt_lang: str, tags=()) -> dict:
    """The task arguments `model` takes for a direction (none for a model
    of one fixed direction, which must be this one)."""
    names = {t.name for t in model.task_inputs()}
    fixed = model.fixed_task or {}
    if not names and fixed and (fixed.get("src_lang"), fixed.get(
            "tgt_lang")) != (src_lang, tgt_lang):
        raise ValueError(f"the model translates {fixed['src_lang']}-"
                         f"{fixed['tgt_lang']} only, not {src_lang}-"
                         f"{tgt_lang}")
    given = {"src_lang": src_lang, "tgt_lang": tgt_lang, "tags": list(tags)}
    return {name: value for name, value in given.items() if name in names}


@dataclasses.dataclass(frozen=True)
class EncodedExample:
    """An example as the model reads it: `source_ids` (after the model's
    source prefix, `prefix_length` ids, if any), `target_ids`, the word
    links made subword links `(s, t)` (s counted after the prefix), and
    the task ids by name."""

    source_ids: Tuple[int, ...]
    target_ids: Tuple[int, ...]
    links: Tuple[Link, ...]
    prefix_length: int
    task_ids: dict


def encode_example(model, subwords, example: HeadExample,
                   tags=()) -> EncodedExample:
    """The model's subwords of the raw texts, and the subword links."""
    from gnmt_tf.alignment.aligned_model import links_of_word_indices
    from gnmt_tf import seq2seq_model

    ids = seq2seq_model.task_ids(model, model_task(
        model, example.src_lang, example.tgt_lang, tags))
    prefix = seq2seq_model.prefix_ids(model.source_prefix, ids)
    source_ids, source_offsets = subwords.encode_with_offsets(example.source)
    target_ids, target_offsets = subwords.encode_with_offsets(example.target)
    links = links_of_word_indices(
        piece_word_index(source_offsets, word_byte_spans(example.source)),
        piece_word_index(target_offsets, word_byte_spans(example.target)),
        example.links)
    return EncodedExample(tuple(prefix) + tuple(source_ids),
                          tuple(target_ids), tuple(links), len(prefix), ids)


def _task_columns(model, encoded: Sequence[EncodedExample]) -> dict:
    """Task ids by input name, one per example (the models' task layout)."""
    return {t.name: [e.task_ids[t.name] for e in encoded]
            for t in model.task_inputs()}


def encode_examples(model, subwords, examples: Sequence[HeadExample],
                    tags=()):
    """`(source_ids, target_ids, link_pairs, task_inputs)` for
    `gnmt_tf.alignment.aligned_model.make_aligned_dataset`."""
    from gnmt_tf.alignment.aligned_model import link_pairs

    encoded = [encode_example(model, subwords, e, tags) for e in examples]
    return ([list(e.source_ids) for e in encoded],
            [list(e.target_ids) for e in encoded],
            [link_pairs(e.links, source_offset=e.prefix_length)
             for e in encoded], _task_columns(model, encoded))


@dataclasses.dataclass
class HeadTrainingConfig:
    """How the head trains (`train_alignment_head`)."""

    steps: int = 600
    max_tokens: int = 2048
    max_length: int = 100
    learning_rate: float = 2e-3
    warmup_steps: int = 100
    filters: Tuple[int, ...] = (32, 32)
    kernel_size: int = 3
    seed: int = 1234


def train_alignment_head(model, subwords, examples: Sequence[HeadExample],
                         config: HeadTrainingConfig = HeadTrainingConfig(),
                         tags=(), progress: Optional[Callable] = None):
    """Trains a new head on `model`'s attention; returns the
    `AlignedTranslationModel` (the model's own weights are unchanged).

    `progress(step, alignment_loss)` is called every 50 steps.
    """
    import tf_keras as keras

    from gnmt_tf.alignment import head_files
    from gnmt_tf.alignment.aligned_model import make_aligned_dataset
    from gnmt_tf.config import TrainConfig
    from gnmt_tf.training import trainer

    if not examples:
        raise ValueError("no sentence pairs to train the alignment head on")
    keras.utils.set_random_seed(config.seed)
    aligned = head_files.wrap_with_head(model, filters=config.filters,
                                        kernel_size=config.kernel_size)
    source_ids, target_ids, pairs, task_inputs = encode_examples(
        model, subwords, examples, tags)
    train_config = TrainConfig(
        max_tokens=config.max_tokens, max_length=config.max_length,
        learning_rate=config.learning_rate,
        warmup_steps=config.warmup_steps, label_smoothing=0.0, clip_norm=1.0,
        seed=config.seed)
    trainer.compile_model(aligned, train_config, model.config.pad_id)
    dataset = make_aligned_dataset(
        source_ids, target_ids, pairs, config.max_tokens, config.max_length,
        task_inputs=task_inputs, seed=config.seed)

    class Progress(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if progress is not None and (batch + 1) % 50 == 0:
                progress(batch + 1, float(logs["alignment_loss"]))

    aligned.fit(dataset, steps_per_epoch=config.steps, epochs=1, verbose=0,
                callbacks=[Progress()])
    return aligned


def score_head(aligned, subwords, examples: Sequence[HeadExample],
               tags=(), batch_size: int = 32) -> dict:
    """Alignment error rate against the examples' fast_align links, at
    subword level, of the head (probability > 0.5) and of the attention
    (each target subword linked to its argmax source subword)."""
    from gnmt_tf.alignment.aligned_model import alignment_error_rate, predicted_links

    model = aligned.translation_model
    encoded = [encode_example(model, subwords, e, tags) for e in examples]
    probabilities, attention = aligned.forced_alignment(
        [e.source_ids for e in encoded], [e.target_ids for e in encoded],
        _task_columns(model, encoded), batch_size=batch_size)
    head, argmax = [], []
    for n, e in enumerate(encoded):
        first = e.prefix_length
        s_len = len(e.source_ids) - first
        t_len = len(e.target_ids)
        head.append(predicted_links(
            probabilities[n][:t_len, first:first + s_len], 0.5))
        rows = attention[n][:t_len, first:first + s_len]
        argmax.append([(int(np.argmax(r)), t) for t, r in enumerate(rows)])
    reference = [e.links for e in encoded]
    return {"aer_head": alignment_error_rate(head, reference),
            "aer_attention_argmax": alignment_error_rate(argmax, reference),
            "sentences": len(examples)}
