import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.decoding.beam_search import beam_search
from gnmt_tf.decoding.greedy_search import greedy_search

START_IDS = [0, 2, 3]
MAX_LENGTHS = [6, 2, 4]
SOURCE_LENGTHS = [4, 2, 3]
FIELDS = ("ids", "lengths", "scores", "log_probs", "attention",
                  "num_steps")


def _numpy_greedy(model, sentence, start_id, max_length, end_id):
    """Follows the argmax of the toy model's tables."""
    prev2 = prev = start_id
    ids, log_prob = [], 0.0
    for step in range(max_length):
        row = model.log_probs[sentence, min(step, model.num_steps - 1), prev2,
                              prev]
        token = int(np.argmax(row))
        ids.append(token)
        log_prob += float(row[token])
        prev2, prev = prev, token
        if token == end_id:
            break
    return ids, log_prob


def test_greedy_follows_the_argmax(toy_model, end_id):
    model = toy_model(0, SOURCE_LENGTHS, num_steps=6, sharpness=2.0)
    result = greedy_search(model.step_fn, model.initial_state(START_IDS),
                           START_IDS, end_id, MAX_LENGTHS)
    assert result.ids.shape[:2] == (3, 1)
    for b, (start, max_length) in enumerate(zip(START_IDS, MAX_LENGTHS)):
        ids, log_prob = _numpy_greedy(model, b, start, max_length, end_id)
        length = len(ids)
        assert int(result.lengths[b, 0]) == length
        np.testing.assert_array_equal(result.ids[b, 0, :length], ids)
        assert not result.ids[b, 0, length:].numpy().any()
        np.testing.assert_allclose(result.log_probs[b, 0], log_prob,
                                   rtol=1e-5)
        np.testing.assert_array_equal(result.scores, result.log_probs)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_equals_beam_size_one(toy_model, end_id, seed):
    model = toy_model(seed, SOURCE_LENGTHS, num_steps=6, sharpness=2.0)
    state = model.initial_state(START_IDS)
    greedy = greedy_search(model.step_fn, state, START_IDS, end_id,
                           MAX_LENGTHS)
    beam = beam_search(model.step_fn, state, START_IDS, end_id, beam_size=1,
                       max_lengths=MAX_LENGTHS)
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(greedy, field),
                                      getattr(beam, field), field)
    # Penalties change the scores of a single beam but not its choices.
    penalised = beam_search(model.step_fn, state, START_IDS, end_id, 1,
                            MAX_LENGTHS, source_lengths=SOURCE_LENGTHS,
                            length_penalty=0.6, coverage_penalty=0.2)
    np.testing.assert_array_equal(greedy.ids, penalised.ids)
    np.testing.assert_array_equal(greedy.log_probs, penalised.log_probs)


def test_greedy_in_tf_function_with_dynamic_batch(toy_model, end_id):
    model = toy_model(0, SOURCE_LENGTHS, num_steps=6)
    spec = tf.TensorSpec([None], tf.int32)

    @tf.function(input_signature=[spec, spec, spec,
                                  tf.TensorSpec([None, 4], tf.float32)])
    def search(start_ids, max_lengths, sentence, memory):
        state = {"sentence": sentence, "step": tf.zeros_like(start_ids),
                 "prev": start_ids, "memory": memory}
        return greedy_search(model.step_fn, state, start_ids, end_id,
                             max_lengths)._asdict()

    for rows in ([0, 1, 2], [2, 1]):
        starts = [START_IDS[r] for r in rows]
        lengths = [MAX_LENGTHS[r] for r in rows]
        eager = greedy_search(model.step_fn,
                              model.initial_state(starts, rows), starts,
                              end_id, lengths)
        graph = search(tf.constant(starts), tf.constant(lengths),
                       tf.constant(rows), tf.constant(model.memory[rows]))
        for field in FIELDS:
            np.testing.assert_allclose(graph[field], getattr(eager, field),
                                       rtol=1e-6, err_msg=field)


def test_greedy_without_attention(toy_model, end_id):
    model = toy_model(0, SOURCE_LENGTHS)
    state = model.initial_state(START_IDS)
    result = greedy_search(model.step_fn_without_attention, state, START_IDS,
                           end_id, 3)
    assert result.attention is None
    assert (result.lengths.numpy() <= 3).all()
    reference = greedy_search(model.step_fn, state, START_IDS, end_id, 3)
    np.testing.assert_array_equal(result.ids, reference.ids)


def test_greedy_with_fixed_shapes_compiles_with_xla(toy_model, end_id):
    model = toy_model(2, SOURCE_LENGTHS, num_steps=6)
    state = model.initial_state(START_IDS)
    want = greedy_search(model.step_fn, state, START_IDS, end_id,
                         MAX_LENGTHS)
    got = tf.function(lambda: greedy_search(
        model.step_fn, state, START_IDS, end_id, MAX_LENGTHS, max_time=5,
        attention_width=model.source_size), jit_compile=True)()
    time = want.ids.shape[2]
    assert got.ids.shape[2] == 5
    np.testing.assert_array_equal(got.ids[:, :, :time], want.ids)
    assert not got.ids.numpy()[:, :, time:].any()
    np.testing.assert_array_equal(got.lengths, want.lengths)
    tolerance = 64 * np.finfo(np.float32).eps  # XLA reorders float32 sums
    np.testing.assert_allclose(got.log_probs, want.log_probs,
                               rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(got.attention[:, :, :time], want.attention,
                               rtol=tolerance, atol=tolerance)
