import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf
import tf_keras as keras

from gnmt_tf.decoding.greedy_search import greedy_search
from gnmt_tf.decoding.sampling import sample_search

START_IDS = [0, 2, 3]
MAX_LENGTHS = [6, 2, 4]
SOURCE_LENGTHS = [4, 2, 3]


def test_samples_follow_the_model_distribution(end_id):
    probs = np.array([0.1, 0.5, 0.3, 0.1], np.float32)
    rows = 4000

    def step_fn(ids, state):
        log_probs = tf.math.log(tf.tile(probs[None], [tf.shape(ids)[0], 1]))
        return log_probs, None, state

    keras.utils.set_random_seed(3)
    result = sample_search(step_fn, {"x": tf.zeros([rows, 1])},
                           tf.zeros([rows], tf.int32), end_id, 1)
    first = result.ids[:, 0, 0].numpy()
    frequencies = np.bincount(first, minlength=4) / rows
    # 4 standard deviations of a frequency estimate from 4000 draws: 0.032.
    np.testing.assert_allclose(frequencies, probs, atol=0.032)
    np.testing.assert_allclose(result.log_probs[:, 0], np.log(probs[first]),
                               rtol=1e-6)


def test_sample_log_probs_are_those_of_the_sampled_ids(toy_model, end_id):
    model = toy_model(0, SOURCE_LENGTHS, num_steps=6)
    keras.utils.set_random_seed(0)
    result = sample_search(model.step_fn, model.initial_state(START_IDS),
                           START_IDS, end_id, MAX_LENGTHS)
    for b, (start, limit) in enumerate(zip(START_IDS, MAX_LENGTHS)):
        length = int(result.lengths[b, 0])
        ids = result.ids[b, 0, :length].numpy().tolist()
        assert 1 <= length <= limit
        assert ids[-1] == end_id or length == limit
        assert end_id not in ids[:-1]
        prev2 = prev = start
        log_prob = 0.0
        for step, token in enumerate(ids):
            log_prob += model.log_probs[b, min(step, model.num_steps - 1),
                                        prev2, prev, token]
            prev2, prev = prev, token
        assert float(result.log_probs[b, 0]) == pytest.approx(log_prob,
                                                              rel=1e-5)


def test_low_temperature_is_greedy(toy_model, end_id):
    model = toy_model(1, SOURCE_LENGTHS, num_steps=6, sharpness=2.0)
    state = model.initial_state(START_IDS)
    greedy = greedy_search(model.step_fn, state, START_IDS, end_id,
                           MAX_LENGTHS)
    cold = sample_search(model.step_fn, state, START_IDS, end_id,
                         MAX_LENGTHS, temperature=1e-4)
    np.testing.assert_array_equal(cold.ids, greedy.ids)
    np.testing.assert_allclose(cold.log_probs, greedy.log_probs, rtol=1e-6)
    with pytest.raises(ValueError, match="temperature"):
        sample_search(model.step_fn, state, START_IDS, end_id, MAX_LENGTHS,
                      temperature=0.0)
