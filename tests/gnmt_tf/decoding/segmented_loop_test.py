"""A search's loop in segments, the Transformer's KV cache grown between
them (`gnmt_tf.decoding.segmented_loop`): the same results as one loop over
the full cache, for beam and greedy search, in graph mode and compiled."""

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.decoding.beam_search import beam_search
from gnmt_tf.decoding.greedy_search import greedy_search
from gnmt_tf.decoding.segmented_loop import segment_lengths
from gnmt_tf.model_dir import load_model
from gnmt_tf.seq2seq_model import task_ids


def test_segment_lengths_end_at_max_time_and_never_decrease():
    for max_time in (1, 2, 5, 48):
        ends = [int(e) for e in segment_lengths(tf.constant(max_time),
                                                (0.25, 0.5, 1.0))]
        assert ends[-1] == max_time
        assert all(1 <= a <= b for a, b in zip(ends, ends[1:]))
    assert [int(e) for e in segment_lengths(48)] == [24, 48]


@pytest.fixture(scope="module")
def transformer(ts_model_dir):
    model, _, _ = load_model(ts_model_dir)
    return model


def _search(model, decoder, segmented, compiled):
    ids = task_ids(model, dict(src_lang="en", tgt_lang="fr",
                               tags=["caption"]))
    rng = np.random.default_rng(0)
    source = rng.integers(4, model.config.vocabulary_size, [3, 8])
    source[:, -1] = model.config.eos_id
    max_time, width = 16, 8

    def search(source):
        task = [tf.constant([v] * 3, tf.int32) for v in ids.values()]
        encoded = model.encode(source, *task)
        segments = segment_lengths(max_time, (0.25, 0.5, 1.0))
        state = model.initial_state(
            encoded, segments[0] if segmented else max_time)
        shapes = dict(max_time=max_time, attention_width=width)
        if segmented:
            shapes.update(segments=segments,
                          resize_state=model.resize_cache)
        start = tf.fill([3], model.config.bos_id)
        if decoder == "greedy":
            result = greedy_search(model.step, state, start,
                                   model.config.eos_id, max_time, **shapes)
        else:
            result = beam_search(model.step, state, start,
                                 model.config.eos_id, 3, max_time,
                                 num_hypotheses=2, length_penalty=0.6,
                                 **shapes)
        return result.ids, result.scores, result.lengths

    function = tf.function(search, jit_compile=compiled, autograph=False)
    with model.compiled_step_context():
        return [t.numpy() for t in function(tf.constant(source, tf.int32))]


@pytest.mark.parametrize("decoder", ["beam", "greedy"])
@pytest.mark.parametrize("compiled", [False, True])
def test_segments_change_no_result(transformer, decoder, compiled):
    whole = _search(transformer, decoder, False, compiled)
    segmented = _search(transformer, decoder, True, compiled)
    np.testing.assert_array_equal(segmented[0], whole[0])
    np.testing.assert_array_equal(segmented[2], whole[2])
    # Attention over zero-padded, masked positions: the same sums in
    # float32, up to the order XLA or TensorFlow add them in.
    np.testing.assert_allclose(segmented[1], whole[1], rtol=1e-5, atol=1e-5)
    assert whole[2].max() > 4  # the search ran past the first segment
