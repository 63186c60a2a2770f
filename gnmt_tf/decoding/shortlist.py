"""Vocabulary reduction: a per-batch output shortlist (Facebook's NMT).

Before a batch is searched, its output vocabulary is cut to the union of

- the `top_k` most probable translations of every source token of the batch
  (a fast_align lexical table, `gnmt_tf.text.lexical_table`),
- the `frequent` most frequent target tokens,
- the special tokens (pad, unk, bos, eos),

as in Facebook's production NMT (Gehring et al. 2017 / L'Hostis, Grangier
& Auli 2016, "Vocabulary selection strategies for neural machine
translation"). The output projection's rows (and bias) for those `V'` ids
are gathered once per batch and every step projects onto that subset only,
so the softmax, the matmul and the beam's `top_k` over `K * V'` all shrink.
The search itself is unchanged: it runs over shortlist positions
`0..V'-1`, the step function maps them back to vocabulary ids before the
embedding lookup, and the result's ids are mapped back at the end. Ids are
kept sorted, so a shortlist holding every id is the identity map and the
search is exactly the unrestricted one.

The table lives in the graph as a constant `[V, k]` (`-1` padded), so a
SavedModel built from a `Translator` with a shortlist carries it.

A shortlist table is for one translation direction: a task-space model
should get a batch of that direction only.

Example:

    >>> shortlist = Shortlist.from_table(read_lexical_table("lex.tsv"),
    ...                                  subwords, top_k=20, frequent=1000)
    >>> translator = Translator(model, subwords, shortlist=shortlist)
"""

from typing import Iterable, NamedTuple, Optional

import numpy as np
import tensorflow as tf

from gnmt_tf.checks import check_number
from gnmt_tf.seq2seq_model import SplitStep


class RestrictedSearch(NamedTuple):
    """What a search needs to run over a shortlist.

    Attributes:
      step_fn: `(positions [N], state) -> (log_probs [N, V'], attention,
        state)`, a softmax over the shortlist only.
      rows: int32 `[V']`, the sorted vocabulary ids of the shortlist.
      start_id: int32 scalar, the position of the start token in `rows`.
      end_id: int32 scalar, the position of the end token in `rows`.
    """

    step_fn: object
    rows: tf.Tensor
    start_id: tf.Tensor
    end_id: tf.Tensor

    def to_vocabulary(self, ids, lengths):
        """Shortlist positions `ids [..., T]` -> vocabulary ids, 0 after each
        hypothesis' `lengths [...]`."""
        valid = tf.sequence_mask(lengths, tf.shape(ids)[-1])
        return tf.where(valid, tf.gather(self.rows, ids), 0)


class Shortlist:
    """Per-batch output vocabulary: lexical candidates + frequent tokens.

    Args:
      candidates: int `[V, k]`. Row `i`: the target ids a source id `i`
        brings in, `-1` for none.
      frequent: int `[F]`. Target ids always in the shortlist (the most
        frequent ones).
      always: iterable of int. Ids always in the shortlist (the special
        tokens: the search needs bos, eos and unk whatever the table says).
      vocabulary_size: int `V`.
    """

    def __init__(self, candidates, frequent, always, vocabulary_size):
        check_number("vocabulary_size", vocabulary_size, integer=True,
                     minimum=1)
        candidates = np.asarray(candidates, np.int32).reshape(
            [vocabulary_size, -1])
        frequent = np.asarray(frequent, np.int32).reshape([-1])
        always = np.asarray(sorted(set(int(i) for i in always)), np.int32)
        for name, ids in (("candidates", candidates[candidates >= 0]),
                          ("frequent", frequent), ("always", always)):
            if ids.size and (ids.min() < 0 or ids.max() >= vocabulary_size):
                raise ValueError(f"{name} holds ids outside [0, "
                                 f"{vocabulary_size})")
        self.vocabulary_size = int(vocabulary_size)
        self.top_k = candidates.shape[1]
        self.candidates = candidates
        self.base = np.union1d(frequent, always).astype(np.int32)

    @classmethod
    def from_table(cls, table, subwords, top_k=20, frequent=1000,
                   always=None):
        """Builds a shortlist from a `gnmt_tf.text.lexical_table.LexicalTable`
        over the pieces of `subwords`.

        Table tokens that are not pieces of the vocabulary (surfaces of
        `<unk>` pieces, words of a word-level table) are skipped.

        Args:
          table: the lexical table.
          subwords: `gnmt_tf.text.subword.Subwords` of the model.
          top_k: int >= 0. Translations per source piece.
          frequent: int >= 0. Most frequent target pieces added.
          always: ids always included; default the special ids
            (pad, unk, bos, eos).
        """
        from gnmt_tf.text.subword import SPECIAL_IDS, UNK_ID

        check_number("top_k", top_k, integer=True, minimum=0)
        check_number("frequent", frequent, integer=True, minimum=0)
        size = subwords.vocabulary_size
        piece_id = subwords.piece_id
        candidates = np.full([size, max(top_k, 1)], -1, np.int32)
        for source, entries in table.translations.items():
            row = piece_id(source)
            if row == UNK_ID:
                continue
            ids = [i for i in (piece_id(t) for t, _ in entries)
                   if i != UNK_ID][:top_k]
            candidates[row, :len(ids)] = ids
        frequent_ids = []
        for target, _ in table.frequencies:
            if len(frequent_ids) >= frequent:
                break
            i = piece_id(target)
            if i != UNK_ID:
                frequent_ids.append(i)
        return cls(candidates, frequent_ids,
                   SPECIAL_IDS if always is None else always, size)

    def ids(self, source_ids, extra_ids=None):
        """The batch's shortlist: sorted distinct int32 ids `[V']`.

        Args:
          source_ids: int `[B, S]` (any shape), the batch's source ids.
          extra_ids: optional int ids (any shape) to add, e.g. the reference
            tokens in a training-style use; negative ids are ignored.
        """
        source_ids = tf.reshape(tf.cast(source_ids, tf.int32), [-1])
        picked = tf.reshape(
            tf.gather(tf.constant(self.candidates), source_ids), [-1])
        parts = [picked, tf.constant(self.base)]
        if extra_ids is not None:
            parts.append(tf.reshape(tf.cast(extra_ids, tf.int32), [-1]))
        ids = tf.concat(parts, 0)
        ids = tf.boolean_mask(ids, ids >= 0)
        # A dense mask over V: sorted and distinct in O(V + |ids|).
        mask = tf.scatter_nd(ids[:, tf.newaxis], tf.ones_like(ids),
                             [self.vocabulary_size])
        return tf.cast(tf.where(mask > 0)[:, 0], tf.int32)

    def restrict(self, model, source_ids, bos_id, eos_id, extra_ids=None):
        """A `RestrictedSearch` of `model` for the batch `source_ids`.

        `model` needs `step_hidden(ids, state)` and `output_logits(hidden,
        rows)` (GNMT and the task-space Transformer have them).
        """
        rows = self.ids(source_ids, extra_ids)
        return restrict_to(model, rows, bos_id, eos_id)


def restrict_to(model, rows, bos_id, eos_id) -> RestrictedSearch:
    """A `RestrictedSearch` over the sorted vocabulary ids `rows [V']`
    (which must hold `bos_id` and `eos_id`)."""
    rows = tf.convert_to_tensor(rows, tf.int32)
    if not isinstance(model, SplitStep):
        raise ValueError(f"{type(model).__name__} has no step_hidden / "
                         "output_logits: it cannot decode over a shortlist")

    def step_fn(positions, state):
        ids = tf.gather(rows, positions)
        hidden, attention, state = model.step_hidden(ids, state)
        logits = tf.cast(model.output_logits(hidden, rows), tf.float32)
        return tf.nn.log_softmax(logits), attention, state

    def position(token_id):  # rows are sorted: the count of smaller ids
        return tf.reduce_sum(tf.cast(rows < token_id, tf.int32))

    return RestrictedSearch(step_fn, rows, position(bos_id), position(eos_id))


def coverage(shortlist_ids: np.ndarray, reference_ids: Iterable[int]
             ) -> Optional[float]:
    """Fraction of `reference_ids` found in `shortlist_ids` (None if empty)."""
    reference = np.asarray(list(reference_ids), np.int64)
    if reference.size == 0:
        return None
    return float(np.isin(reference, shortlist_ids).mean())
