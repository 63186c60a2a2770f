"""`beam_search(..., drop_stopped=True)`: sentences that stop leave the
batch; the results equal those of the search that steps them on."""

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.decoding.beam_search import beam_search

# Six sentences that stop at different steps: maximum lengths 1 to 6.
START_IDS = [0, 2, 3, 4, 0, 2]
MAX_LENGTHS = [6, 2, 3, 1, 5, 4]
SOURCE_LENGTHS = [4, 2, 3, 4, 1, 2]
FIELDS = ("ids", "lengths", "scores", "log_probs", "attention")


def _search(model, end_id, drop_stopped, step_fn=None, **kwargs):
    args = dict(start_ids=START_IDS, end_id=end_id, max_lengths=MAX_LENGTHS,
                source_lengths=SOURCE_LENGTHS, beam_size=3)
    args.update(kwargs)
    state = model.initial_state(args["start_ids"])
    return beam_search(step_fn or model.step_fn, state,
                       drop_stopped=drop_stopped, **args)


def _assert_same(a, b, fields=FIELDS):
    for field in fields:
        np.testing.assert_array_equal(getattr(a, field).numpy(),
                                      getattr(b, field).numpy(), field)


@pytest.mark.parametrize("kwargs", [
    dict(),
    dict(length_penalty=0.6, coverage_penalty=0.2, num_hypotheses=2),
    dict(early_stopping="exact", length_penalty=1.0),
    dict(early_stopping="none", num_hypotheses=3),
    dict(beam_width=1.0, length_penalty=0.6),
    dict(source_lengths=None, length_penalty=0.6),
])
def test_dropping_stopped_sentences_changes_no_result(toy_model, end_id,
                                                      kwargs):
    model = toy_model(7, SOURCE_LENGTHS, num_steps=6, sharpness=2.0)
    stepped_on = _search(model, end_id, False, **kwargs)
    dropped = _search(model, end_id, True, **kwargs)
    _assert_same(dropped, stepped_on)
    assert int(dropped.num_steps) == int(stepped_on.num_steps)


def test_the_step_runs_on_live_sentences_only(toy_model, end_id):
    model = toy_model(3, SOURCE_LENGTHS, num_steps=6)
    rows = []

    def counting_step(ids, state):
        rows.append(int(tf.shape(ids)[0]))
        return model.step_fn(ids, state)

    _search(model, end_id, True, step_fn=counting_step, early_stopping="none")
    # Without early stopping each sentence runs to its maximum length.
    k = 3
    expected = [k * sum(m > t for m in MAX_LENGTHS) for t in range(6)]
    assert rows == expected


def test_in_a_graph_with_a_dynamic_batch_and_without_attention(toy_model,
                                                               end_id):
    model = toy_model(11, SOURCE_LENGTHS, num_steps=6, sharpness=2.0)

    @tf.function(autograph=False, input_signature=[
        tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int32),
        tf.TensorSpec([None], tf.int32)])
    def search(start_ids, max_lengths, sentences):
        state = {"sentence": sentences, "step": tf.zeros_like(start_ids),
                 "prev": start_ids,
                 "memory": tf.gather(tf.constant(model.memory), sentences)}
        results = [beam_search(model.step_fn_without_attention, state,
                               start_ids, end_id, 3, max_lengths,
                               length_penalty=0.6, drop_stopped=drop)
                   for drop in (False, True)]
        return [(r.ids, r.lengths, r.scores, r.num_steps) for r in results]

    for rows in ([0, 1, 2, 3, 4, 5], [5, 3], []):
        stepped_on, dropped = search(
            tf.constant([START_IDS[r] for r in rows], tf.int32),
            tf.constant([MAX_LENGTHS[r] for r in rows], tf.int32),
            tf.constant(rows, tf.int32))
        assert dropped[0].shape[0] == len(rows)
        for a, b in zip(dropped, stepped_on):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert search.experimental_get_tracing_count() == 1


def test_not_with_segments(toy_model, end_id):
    model = toy_model(0, SOURCE_LENGTHS)
    with pytest.raises(ValueError, match="not with segments"):
        _search(model, end_id, True, max_time=6,
                segments=[tf.constant(3), tf.constant(6)],
                resize_state=lambda state, length: state)
