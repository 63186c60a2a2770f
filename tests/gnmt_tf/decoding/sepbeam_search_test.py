"""Separate-beam search: with one predictor it is beam search; with two,
each beam follows its own predictor and the combined score decides."""

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

from gnmt_tf.decoding.beam_search import beam_search
from gnmt_tf.decoding.sepbeam_search import sepbeam_search

START_ID = 2
MAX_LENGTH = 4


def _beam(model, end_id, **kwargs):
    result = beam_search(model.step_fn, model.initial_state([START_ID], [0]),
                         [START_ID], end_id, max_lengths=[MAX_LENGTH],
                         source_lengths=[3], **kwargs)
    out = []
    for i in range(result.scores.shape[1]):
        if np.isfinite(result.scores[0, i]):
            length = int(result.lengths[0, i])
            out.append((tuple(result.ids[0, i, :length].numpy().tolist()),
                        float(result.scores[0, i])))
    return out


def _sep(models, end_id, **kwargs):
    return sepbeam_search([m.step_fn for m in models],
                          [m.initial_state([START_ID], [0]) for m in models],
                          START_ID, end_id, MAX_LENGTH, source_length=3,
                          **kwargs)


@pytest.mark.parametrize("kwargs", [
    dict(beam_size=1, length_penalty=0.6),
    dict(beam_size=3, num_hypotheses=2, length_penalty=0.6,
         coverage_penalty=0.2),
    dict(beam_size=4, num_hypotheses=3, length_penalty=1.0,
         beam_width=1.0),
    dict(beam_size=80, num_hypotheses=4, length_penalty=0.0),
])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_predictor_is_beam_search(toy_model, end_id, kwargs, seed):
    model = toy_model(seed, [3], sharpness=2.0)
    expected = _beam(model, end_id, **kwargs)
    got = _sep([model], end_id, **kwargs)
    assert [ids for ids, _ in got] == [ids for ids, _ in expected]
    np.testing.assert_allclose([s for _, s in got],
                               [s for _, s in expected], rtol=1e-5)


def test_two_predictors_rank_by_the_combined_score(toy_model, end_id):
    a = toy_model(3, [3], sharpness=2.0)
    b = toy_model(4, [3], sharpness=2.0)
    got = _sep([a, b], end_id, beam_size=80, num_hypotheses=5,
               length_penalty=0.0, weights=[3.0, 1.0])
    # Exhaustive beams without length penalty: each beam finishes with its
    # predictor's 5 best outputs; their union is ranked by
    # 0.75 log P_a + 0.25 log P_b.
    tables = [{h["ids"]: h["log_prob"] for h in model.brute_force(
        0, START_ID, MAX_LENGTH, 0.0, 0.0)} for model in (a, b)]
    found = {ids for table in tables
             for ids in sorted(table, key=lambda i: -table[i])[:5]}
    by_ids = {ids: 0.75 * tables[0][ids] + 0.25 * tables[1][ids]
              for ids in found}
    expected = sorted(by_ids.items(), key=lambda item: -item[1])[:5]
    assert [ids for ids, _ in got] == [ids for ids, _ in expected]
    np.testing.assert_allclose([s for _, s in got],
                               [s for _, s in expected], atol=1e-5)


def test_each_beam_keeps_its_own_predictors_favourite(toy_model, end_id):
    # With beam size 1 each beam is its predictor's greedy search: the
    # combined output is one of the two greedy outputs, the better one.
    a = toy_model(5, [3], sharpness=3.0)
    b = toy_model(6, [3], sharpness=3.0)
    greedy_a = _beam(a, end_id, beam_size=1)[0][0]
    greedy_b = _beam(b, end_id, beam_size=1)[0][0]
    got = _sep([a, b], end_id, beam_size=1, length_penalty=0.0)
    assert got[0][0] in (greedy_a, greedy_b)


def test_invalid_arguments_raise(toy_model, end_id):
    model = toy_model(0, [3])
    with pytest.raises(ValueError, match="initial state"):
        sepbeam_search([model.step_fn], [], START_ID, end_id, 3)
    with pytest.raises(ValueError, match="weights"):
        _sep([model], end_id, weights=[0.0])
    with pytest.raises(ValueError, match="num_hypotheses"):
        _sep([model], end_id, beam_size=2, num_hypotheses=3)
