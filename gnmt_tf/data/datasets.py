"""tf.data pipelines for teacher-forced training.

Sentence pairs arrive pre-tokenised (lists of ids); the pipeline appends end and
start tokens, drops over-long pairs, shuffles, buckets by length with token-based
batch sizes (every batch holds about `max_tokens` target tokens), pads, and
prefetches. Elements are `(features, labels)` with
`features = {"source_ids": [B, S], "target_in_ids": [B, T]}` and `labels [B, T]`,
0-padded, which is what `model.fit` and the masked losses expect.
"""

import numpy as np
import tensorflow as tf

from gnmt_tf.text.subword import BOS_ID, EOS_ID


def kept_indices(source_ids, target_ids, max_length):
    """Indices of pairs whose sides are non-empty and fit `max_length` with
    EOS/BOS added."""
    return [i for i, (s, t) in enumerate(zip(source_ids, target_ids))
            if 0 < len(s) < max_length and 0 < len(t) < max_length]


def filter_pairs(source_ids, target_ids, max_length):
    """Keeps pairs whose sides are non-empty and fit `max_length` with EOS/BOS."""
    keep = kept_indices(source_ids, target_ids, max_length)
    return [source_ids[i] for i in keep], [target_ids[i] for i in keep]


def _ragged(sequences, prefix=(), suffix=()):
    lengths = np.array([len(s) + len(prefix) + len(suffix) for s in sequences],
                       dtype=np.int64)
    flat = np.fromiter(
        (i for s in sequences for i in (*prefix, *s, *suffix)), dtype=np.int32,
        count=int(lengths.sum()))
    return tf.RaggedTensor.from_row_lengths(flat, lengths)


def bucket_boundaries(max_length, min_length=8, step=1.25, width=None):
    """Length boundaries up to `max_length`: geometric between `min_length`
    and `max_length` (width 0 or None), or every `width` tokens."""
    if width:
        return list(range(1 + width, max_length, width)) + [max_length + 1]
    bounds, b = [], min_length
    while b < max_length:
        bounds.append(int(b))
        b = max(b + 1, b * step)
    return bounds + [max_length + 1]


def ragged_sequences(sequences, prefix=(), suffix=()):
    """Lists of ids -> `tf.RaggedTensor [N, None]` with `prefix`/`suffix` added."""
    return _ragged(sequences, prefix, suffix)


def teacher_forcing_features(source_ids, target_ids):
    """Ragged `source_ids` (+EOS), `target_in_ids` (BOS+), `labels` (+EOS)."""
    return {
        "source_ids": _ragged(source_ids, suffix=(EOS_ID,)),
        "target_in_ids": _ragged(target_ids, prefix=(BOS_ID,)),
        "labels": _ragged(target_ids, suffix=(EOS_ID,)),
    }


def permuted(indices, seed=None):
    """`indices` in one random order (numpy `default_rng(seed)`).

    Multi-direction corpora arrive grouped by direction, and a
    `Dataset.shuffle` buffer smaller than the corpus would then feed one
    direction after another; permuting the whole index list once first
    makes every buffer window a mix.
    """
    order = np.random.default_rng(seed).permutation(len(indices))
    return [indices[i] for i in order]


def batch_by_length(columns, max_tokens, max_length, shuffle=True,
                    shuffle_buffer=30000, repeat=True, seed=None, transform=None,
                    pad_to_bucket=False, bucket_width=None):
    """Turns per-example columns into padded, length-bucketed training batches.

    Args:
      columns: dict of name -> ragged `[N, None]` or dense `[N, ...]` values;
        must hold `source_ids`, `target_in_ids` and `labels`. Every other
        column is carried along as a feature.
      max_tokens: int. Approximate padded tokens per batch.
      max_length: int. The longest sequence the batches must hold.
      transform: optional per-example function (dict -> dict) applied before
        batching, e.g. to densify per-example link lists.
      pad_to_bucket: bool. Pad every sequence to its bucket's boundary (minus
        one) instead of the longest in the batch, so that batches come in one
        shape per bucket (for an XLA-compiled step).
      bucket_width: int or None. Buckets of this many lengths each (1: all
        sequences of a batch have the same longer side, as OpenNMT-tf's
        `length_bucket_width`), or 0 / None: geometric buckets 25 % wide
        (fewer shapes, more padding).

    Returns:
      A dataset of `(features, labels)`.
    """
    dataset = tf.data.Dataset.from_tensor_slices(columns)
    # Slices of a ragged matrix come out as ragged_rank-0 specs, which
    # padded_batch rejects; identity makes them plain dense vectors.
    dataset = dataset.map(lambda x: {k: tf.identity(v) for k, v in x.items()})
    if transform is not None:
        dataset = dataset.map(transform)
    if shuffle:
        size = int(columns["labels"].shape[0])
        dataset = dataset.shuffle(min(shuffle_buffer, size), seed=seed,
                                  reshuffle_each_iteration=True)
    if repeat:
        dataset = dataset.repeat()
    return bucket_batches(dataset, max_tokens, max_length, pad_to_bucket,
                          bucket_width)


def bucket_batches(dataset, max_tokens, max_length, pad_to_bucket=False,
                   bucket_width=None):
    """Buckets examples by length into padded batches of about `max_tokens`
    tokens, then splits off the labels and prefetches.

    Args:
      dataset: a dataset of dicts of 1-D (or fixed-shape) tensors holding
        `source_ids`, `target_in_ids` and `labels`.
      max_tokens, max_length, pad_to_bucket, bucket_width: see
        `batch_by_length`.

    Returns:
      A dataset of `(features, labels)`.
    """
    boundaries = bucket_boundaries(max_length + 1, width=bucket_width)
    batch_sizes = [max(1, max_tokens // b) for b in boundaries]
    batch_sizes.append(max(1, max_tokens // (max_length + 1)))
    dataset = dataset.bucket_by_sequence_length(
        element_length_func=lambda x: tf.maximum(
            tf.shape(x["source_ids"])[0], tf.shape(x["target_in_ids"])[0]),
        bucket_boundaries=boundaries,
        bucket_batch_sizes=batch_sizes,
        pad_to_bucket_boundary=pad_to_bucket,
        # A repeated dataset has no remainder; a finite one keeps its last,
        # smaller batches (one more shape per bucket to compile).
        drop_remainder=False)
    dataset = dataset.map(
        lambda x: ({k: v for k, v in x.items() if k != "labels"}, x["labels"]),
        num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


def make_dataset(source_ids, target_ids, max_tokens, max_length,
                 shuffle=True, shuffle_buffer=30000, repeat=True, seed=None,
                 pad_to_bucket=False, bucket_width=None):
    """Builds the training `tf.data.Dataset` from id lists.

    Args:
      source_ids: list of lists of int. Source subword ids (no special tokens).
      target_ids: list of lists of int. Target subword ids (no special tokens).
      max_tokens: int. Approximate padded target tokens per batch.
      max_length: int. Longer pairs are dropped.
      shuffle, repeat: bool. Shuffle each pass; loop forever.
      pad_to_bucket, bucket_width: see `batch_by_length`.

    Returns:
      A dataset of `({"source_ids", "target_in_ids"}, labels)`.
    """
    source_ids, target_ids = filter_pairs(source_ids, target_ids, max_length)
    if not source_ids:
        raise ValueError(f"no sentence pair fits max_length={max_length} "
                         "subwords; raise it (--set max_length=N)")
    return batch_by_length(teacher_forcing_features(source_ids, target_ids),
                           max_tokens, max_length, shuffle, shuffle_buffer,
                           repeat, seed, pad_to_bucket=pad_to_bucket,
                           bucket_width=bucket_width)
