"""`gnmt_tf.decoding.top_k`: the same values and indices as `tf.math.top_k`,
ties included, and the same beam search."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.decoding import top_k
from gnmt_tf.decoding.beam_search import beam_search


def _assert_same_as_tf(scores, k, block=top_k.BLOCK):
    scores = tf.constant(scores, tf.float32)
    values, indices = top_k.blocked_top_k(scores, k, block)
    want_values, want_indices = tf.math.top_k(scores, k)
    np.testing.assert_array_equal(values.numpy(), want_values.numpy())
    np.testing.assert_array_equal(indices.numpy(), want_indices.numpy())


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 5), k=st.integers(1, 6),
       extra=st.integers(0, 300), levels=st.integers(1, 6),
       seed=st.integers(0, 2**31 - 1))
def test_blocked_top_k_equals_tf_top_k_with_many_ties(rows, k, extra, levels,
                                                       seed):
    # Few distinct values (some -inf): most of the top k are ties, spread
    # over blocks, and the width is rarely a multiple of the block.
    block = 16
    rng = np.random.default_rng(seed)
    width = k * block + extra
    scores = rng.integers(0, levels, (rows, width)).astype(np.float32)
    scores[rng.random((rows, width)) < 0.2] = -np.inf
    _assert_same_as_tf(scores, k, block)


def test_blocked_top_k_all_equal_and_all_minus_infinity():
    for value in (0.0, -np.inf):
        _assert_same_as_tf(np.full((3, 1000), value, np.float32), 4)


def test_top_k_blocks_only_long_rows_of_many_rows():
    long_width = top_k.MIN_BLOCKS_PER_K * 4 * top_k.BLOCK

    def blocked(shape):
        spec = tf.TensorSpec(shape, tf.float32)
        function = tf.function(lambda s: top_k.top_k(s, 4))
        graph = function.get_concrete_function(spec).graph
        # More than one top-k (tf.sort is one too).
        return sum(op.type == "TopKV2" for op in graph.get_operations()) > 1

    assert blocked([None, long_width])
    assert blocked([top_k.MIN_ROWS, long_width])
    assert not blocked([1, long_width])
    assert not blocked([None, long_width - 1])


def test_beam_search_over_a_large_vocabulary_is_unchanged(monkeypatch):
    # A vocabulary large enough for the blocked top-k, with tied scores.
    vocab, beam, end_id = 2 * top_k.MIN_BLOCKS_PER_K * top_k.BLOCK, 4, 1
    table = np.random.default_rng(0).integers(0, 3, (vocab, vocab))
    log_probs = tf.nn.log_softmax(tf.constant(table, tf.float32))

    def step_fn(ids, state):
        return tf.gather(log_probs, ids), None, state

    def search():
        return beam_search(step_fn, {"s": tf.zeros([6, 1])},
                           tf.range(2, 8), end_id, beam, max_lengths=5,
                           length_penalty=0.6, num_hypotheses=4)

    blocked = tf.function(search)()
    monkeypatch.setattr(top_k, "MIN_BLOCKS_PER_K", 10**9)
    plain = tf.function(search)()
    for field in ("ids", "lengths", "scores", "log_probs"):
        np.testing.assert_array_equal(getattr(blocked, field).numpy(),
                                      getattr(plain, field).numpy(), field)
