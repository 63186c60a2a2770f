import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.decoding.ensemble import EnsembleStepFunction
from gnmt_tf.decoding.beam_search import beam_search

START_IDS = [0, 2, 3]
MAX_LENGTHS = [4, 2, 3]
SOURCE_LENGTHS = [4, 2, 3]


def _search(step_fn, state, end_id):
    return beam_search(step_fn, state, START_IDS, end_id, beam_size=3,
                       max_lengths=MAX_LENGTHS, source_lengths=SOURCE_LENGTHS,
                       length_penalty=0.6, coverage_penalty=0.2,
                       num_hypotheses=2)


def test_ensemble_of_one_model_is_that_model(toy_model, end_id):
    model = toy_model(0, SOURCE_LENGTHS)
    state = model.initial_state(START_IDS)
    ensemble = EnsembleStepFunction([model.step_fn])
    ids = tf.constant([1, 4, 0])
    log_probs, attention, new_state = ensemble(ids, (state,))
    expected = model.step_fn(ids, state)
    np.testing.assert_allclose(log_probs, expected[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(attention, expected[1], rtol=1e-6)
    assert isinstance(new_state, tuple) and len(new_state) == 1
    np.testing.assert_array_equal(new_state[0]["step"], [1, 1, 1])

    single = _search(model.step_fn, state, end_id)
    combined = _search(ensemble, (state,), end_id)
    np.testing.assert_array_equal(single.ids, combined.ids)
    np.testing.assert_allclose(single.scores, combined.scores, rtol=1e-5)


def test_ensemble_of_two_identical_models_is_that_model(toy_model, end_id):
    model = toy_model(1, SOURCE_LENGTHS)
    state = model.initial_state(START_IDS)
    ensemble = EnsembleStepFunction([model.step_fn, model.step_fn],
                                    weights=[3.0, 1.0])
    single = _search(model.step_fn, state, end_id)
    combined = _search(ensemble, (state, state), end_id)
    np.testing.assert_array_equal(single.ids, combined.ids)
    np.testing.assert_array_equal(single.lengths, combined.lengths)
    np.testing.assert_allclose(single.scores, combined.scores, rtol=1e-5)
    np.testing.assert_allclose(single.attention, combined.attention,
                               rtol=1e-5, atol=1e-6)


def test_ensemble_averages_probabilities_and_attention(toy_model):
    a, b = toy_model(0, SOURCE_LENGTHS), toy_model(1, SOURCE_LENGTHS)
    state_a, state_b = a.initial_state(START_IDS), b.initial_state(START_IDS)
    ids = tf.constant([1, 4, 0])
    log_probs, attention, _ = EnsembleStepFunction(
        [a.step_fn, b.step_fn], weights=[3.0, 1.0])(ids, (state_a, state_b))
    lp_a, att_a, _ = a.step_fn(ids, state_a)
    lp_b, att_b, _ = b.step_fn(ids, state_b)
    expected = np.log(0.75 * np.exp(lp_a) + 0.25 * np.exp(lp_b))
    np.testing.assert_allclose(log_probs, expected, rtol=1e-5)
    np.testing.assert_allclose(np.exp(log_probs).sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(attention, 0.75 * att_a + 0.25 * att_b,
                               rtol=1e-5)


def test_ensemble_attention_skips_members_without_attention(toy_model):
    a, b = toy_model(0, SOURCE_LENGTHS), toy_model(1, SOURCE_LENGTHS)
    state = a.initial_state(START_IDS)
    ids = tf.constant([1, 4, 0])
    _, attention, _ = EnsembleStepFunction(
        [a.step_fn, b.step_fn_without_attention])(ids, (state, state))
    np.testing.assert_allclose(attention, a.step_fn(ids, state)[1],
                               rtol=1e-6)
    _, attention, _ = EnsembleStepFunction(
        [b.step_fn_without_attention])(ids, (state,))
    assert attention is None


@pytest.mark.parametrize("step_fns,weights,match", [
    ([], None, "at least one"),
    ([lambda i, s: None] * 2, [1.0], "weights"),
    ([lambda i, s: None] * 2, [1.0, 0.0], "> 0"),
])
def test_invalid_ensembles_raise(step_fns, weights, match):
    with pytest.raises(ValueError, match=match):
        EnsembleStepFunction(step_fns, weights)
