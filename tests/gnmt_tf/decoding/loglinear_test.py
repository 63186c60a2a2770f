"""Log-linear predictor combination, the word-count predictor and forced
decoding on the toy decoders of `conftest.py`, against brute force."""

import itertools
import math

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.decoding.beam_search import beam_search
from gnmt_tf.decoding.ensemble import LogLinearStepFunction
from gnmt_tf.decoding.ensemble import WordCountPredictor
from gnmt_tf.decoding.exact_search import exact_search
from gnmt_tf.decoding.forced import forced_decode

START_IDS = [0, 2, 3]
SOURCE_LENGTHS = [4, 2, 3]


def _search(step_fn, state, end_id, beam_size=3, max_lengths=(4, 2, 3),
            **kwargs):
    kwargs = {"length_penalty": 0.6, "coverage_penalty": 0.2,
              "num_hypotheses": 2, **kwargs}
    return beam_search(step_fn, state, START_IDS, end_id, beam_size,
                       list(max_lengths), source_lengths=SOURCE_LENGTHS,
                       **kwargs)


def test_weight_zero_takes_a_member_out_exactly(toy_model, end_id):
    """Weights 1, 0: the ids, scores and attention of the first model."""
    a, b = toy_model(0, SOURCE_LENGTHS), toy_model(1, SOURCE_LENGTHS)
    state = a.initial_state(START_IDS)
    single = _search(a.step_fn, state, end_id)
    combined = _search(LogLinearStepFunction([a.step_fn, b.step_fn], [1, 0]),
                       (state, state), end_id)
    for field in ("ids", "lengths", "scores", "log_probs", "attention"):
        np.testing.assert_array_equal(getattr(single, field),
                                      getattr(combined, field))


def test_weight_zero_ignores_infinite_scores(toy_model):
    a = toy_model(0, SOURCE_LENGTHS)
    state = a.initial_state(START_IDS)

    def minus_inf(ids, s):
        return tf.fill([tf.shape(ids)[0], a.vocab_size], -math.inf), None, s

    ids = tf.constant([1, 4, 0])
    scores, _, _ = LogLinearStepFunction([a.step_fn, minus_inf],
                                         [1, 0])(ids, (state, state))
    np.testing.assert_array_equal(scores, a.step_fn(ids, state)[0])


def _brute_force(models, weights, sentence, start_id, max_length, end_id):
    """Every output of at most `max_length` tokens with its weighted sum of
    the models' log-probabilities (float64), best first."""
    results = []
    for length in range(1, max_length + 1):
        for ids in itertools.product(range(models[0].vocab_size),
                                     repeat=length):
            if end_id in ids[:-1] or (length < max_length
                                      and ids[-1] != end_id):
                continue
            total = 0.0
            for model, w in zip(models, weights):
                prev2 = prev = start_id
                for step, token in enumerate(ids):
                    total += w * float(model.log_probs[
                        sentence, min(step, model.num_steps - 1), prev2,
                        prev, token])
                    prev2, prev = prev, token
            results.append((total, ids))
    return sorted(results, reverse=True)


@pytest.mark.parametrize("seed", range(4))
def test_loglinear_matches_brute_force(toy_model, end_id, seed):
    """Exact search and exhaustive beam search over the weighted sum find
    the argmax over all outputs of <= 3 tokens of `w_a lp_a + w_b lp_b`."""
    weights = [1.0, 0.5 + seed]
    a = toy_model(seed, [3, 2], sharpness=2.0)
    b = toy_model(seed + 10, [3, 2], sharpness=2.0)
    combined = LogLinearStepFunction([a.step_fn, b.step_fn], weights)
    for sentence in (0, 1):
        expected = _brute_force([a, b], weights, sentence, 0, 3, end_id)
        state = a.initial_state([0], [sentence])
        got = exact_search(combined, (state, state), 0, end_id, 3)
        assert got.optimal
        assert got.score == pytest.approx(expected[0][0], abs=1e-4)
        assert got.ids == expected[0][1]
        # Beam 25 = every 2-token prefix: exhaustive up to 3 tokens.
        beam = beam_search(combined, (state, state), [0], end_id, 25, [3],
                           length_penalty=0.0, num_hypotheses=3)
        lengths = beam.lengths.numpy()[0]
        for rank in range(3):
            assert tuple(beam.ids.numpy()[0, rank, :lengths[rank]]) == \
                expected[rank][1]
            assert float(beam.scores[0, rank]) == pytest.approx(
                expected[rank][0], abs=1e-4)


def test_word_count_bonus(toy_model, end_id):
    a = toy_model(0, SOURCE_LENGTHS)
    state = a.initial_state(START_IDS)
    wc = WordCountPredictor(a.vocab_size, end_id)
    combined = LogLinearStepFunction([a.step_fn, wc.step], [1.0, 0.25],
                                     [0.0, wc.max_score])
    ids = tf.constant([1, 4, 0])
    scores, attention, (_, wc_state) = combined(ids, (state, {}))
    bonus = np.full([3, a.vocab_size], 0.25, np.float32)
    bonus[:, end_id] = 0.0
    np.testing.assert_allclose(scores, a.step_fn(ids, state)[0] + bonus,
                               rtol=1e-6)
    np.testing.assert_allclose(attention, a.step_fn(ids, state)[1])
    assert wc_state == {} and combined.max_step_score == 0.25


@pytest.mark.parametrize("weights,match", [
    ([1.0], "2 weights|1 weights"),
    ([1.0, -0.5], ">= 0"),
    ([1.0, math.nan], ">= 0"),
    ([1.0, math.inf], ">= 0"),
    ([0.0, 0.0], "at least one"),
])
def test_bad_weights_raise(weights, match):
    with pytest.raises(ValueError, match=match):
        LogLinearStepFunction([lambda i, s: None] * 2, weights)


@pytest.mark.parametrize("alpha,beta", [(0.0, 0.0), (0.6, 0.2)])
def test_forced_decoding_scores_beam_search_outputs(toy_model, end_id,
                                                    alpha, beta):
    """Each n-best hypothesis scores under forced decoding what beam search
    gave it (GNMT score and log-probability), for one model and a
    log-linear combination."""
    a, b = toy_model(2, SOURCE_LENGTHS), toy_model(3, SOURCE_LENGTHS)
    state = a.initial_state(START_IDS)
    for step_fn, initial in (
            (a.step_fn, state),
            (LogLinearStepFunction([a.step_fn, b.step_fn], [1.0, 0.3]),
             (state, state))):
        result = _search(step_fn, initial, end_id, length_penalty=alpha,
                         coverage_penalty=beta)
        for rank in range(2):
            forced = forced_decode(
                step_fn, initial, START_IDS, result.ids[:, rank],
                result.lengths[:, rank], SOURCE_LENGTHS, alpha, beta)
            np.testing.assert_allclose(forced.scores, result.scores[:, rank],
                                       rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(forced.log_probs,
                                       result.log_probs[:, rank],
                                       rtol=1e-5, atol=1e-5)
            lengths = result.lengths.numpy()[:, rank]
            tokens = forced.token_scores.numpy()
            assert all((tokens[i, n:] == 0).all()
                       for i, n in enumerate(lengths))
