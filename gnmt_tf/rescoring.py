"""Forced decoding of (source, target) pairs and n-best rescoring.

`score_pairs` scores given translations under a `Translator`'s model (one
model or a `gnmt_tf.predictor_model.PredictorModel`) with the GNMT score the
searches use, so a search's own output scores what the search said;
`rescore_nbest` re-ranks n-best lists (`gnmt-tf translate --n-best`'s
`i ||| text ||| score` lines) by it (`gnmt-tf translate --rescore`).
"""

import dataclasses

import numpy as np

from gnmt_tf.checks import check_number


def score_pairs(translator, sources, targets, length_penalty=0.0,
                coverage_penalty=0.0, batch_size=32, **task):
    """The score of each target as the translation of its source.

    Each target is tokenized with the model's vocabulary and ends in the end
    token (as a finished search hypothesis does). A search output scores
    what the search gave it when its text gives back its pieces: one cut at
    the length limit (no end token) or with pieces that detokenise to
    doubled spaces (SentencePiece normalises them away) scores otherwise.

    Args:
      translator: a `gnmt_tf.translator.Translator`.
      sources, targets: lists of str, of the same length.
      length_penalty, coverage_penalty: GNMT's alpha and beta (0: the
        summed step scores, `log P(Y | X)` for one model).
      batch_size: int. Pairs scored at once.
      **task: the model's task arguments.

    Returns:
      A list of floats.

    Raises:
      ValueError: lists of different lengths, a bad task argument, an
        over-long source or target.
    """
    import tensorflow as tf

    from gnmt_tf.decoding.forced import forced_decode

    check_number("batch_size", batch_size, integer=True, minimum=1)
    sources, targets = list(sources), list(targets)
    if len(sources) != len(targets):
        raise ValueError(f"got {len(sources)} sources but {len(targets)} "
                         "targets")
    ids = translator.task_ids(**task)
    translator.check_inputs(sources)
    eos = translator.eos_id
    target_ids = [list(t) + [eos] for t in translator.subwords.encode(targets)]
    limit = translator.model.max_target_length
    for i, t in enumerate(target_ids, 1):
        if limit and len(t) > limit:
            raise ValueError(f"target {i} has {len(t)} subwords with the end "
                             f"token; the model's limit is {limit}")
    model = translator.model
    names = [t.name for t in translator.task_inputs]

    @tf.function(autograph=False, reduce_retracing=True)
    def score(sentences, targets_in, lengths, *task_batch):
        task_ids = dict(zip(names, task_batch))
        source_ids, source_lengths = translator.tokenize(sentences, task_ids)
        encoded = model.encode(source_ids, **task_ids)
        state = model.initial_state(encoded, tf.shape(targets_in)[1])
        start = tf.fill([tf.shape(lengths)[0]], translator.bos_id)
        return forced_decode(model.step, state, start, targets_in, lengths,
                             source_lengths, length_penalty,
                             coverage_penalty).scores

    out = []
    for begin in range(0, len(sources), batch_size):
        rows = target_ids[begin:begin + batch_size]
        width = max(map(len, rows))
        padded = np.array([r + [0] * (width - len(r)) for r in rows],
                          np.int32)
        task_batch = [tf.constant([ids[t.name]] * len(rows), tf.int32)
                      for t in translator.task_inputs]
        scores = score(tf.constant(sources[begin:begin + batch_size]),
                       tf.constant(padded),
                       tf.constant([len(r) for r in rows], tf.int32),
                       *task_batch)
        out.extend(float(s) for s in scores.numpy())
    return out


@dataclasses.dataclass(frozen=True)
class NbestEntry:
    """One n-best line: the sentence index, the text and the old score."""

    index: int
    text: str
    score: float


def parse_nbest(lines):
    """`i ||| text ||| score` lines -> `NbestEntry`s (blank lines skipped).

    Raises:
      ValueError: a malformed line (its 1-based number named).
    """
    entries = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        parts = line.rstrip("\n").split(" ||| ")
        try:
            if len(parts) != 3:
                raise ValueError
            entries.append(NbestEntry(int(parts[0]), parts[1],
                                      float(parts[2])))
        except ValueError:
            raise ValueError(f"n-best line {number} is not 'i ||| text ||| "
                             f"score': {line.strip()[:80]!r}") from None
    return entries


def rescore_nbest(translator, sources, entries, length_penalty=0.0,
                  coverage_penalty=0.0, batch_size=32, **task):
    """Scores each n-best entry under `translator` and re-ranks each
    sentence's list, best first.

    Args:
      sources: list of str; entry `i` translates `sources[i]`.
      entries: `NbestEntry`s (from `parse_nbest`).

    Returns:
      `NbestEntry`s with the new scores, sorted by sentence, then best first
      (ties keep the input order).

    Raises:
      ValueError: an entry whose index has no source.
    """
    for e in entries:
        if not 0 <= e.index < len(sources):
            raise ValueError(f"n-best entry for sentence {e.index}, but "
                             f"there are {len(sources)} sources")
    scores = score_pairs(translator, [sources[e.index] for e in entries],
                         [e.text for e in entries], length_penalty,
                         coverage_penalty, batch_size, **task)
    order = sorted(range(len(entries)),
                   key=lambda i: (entries[i].index, -scores[i], i))
    return [dataclasses.replace(entries[i], score=scores[i]) for i in order]
