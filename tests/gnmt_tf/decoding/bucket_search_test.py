"""Bucket search against exact (depth-first) search and the greedy path, on
the toy decoder of `conftest.py`."""

import itertools

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

from gnmt_tf.decoding.bucket_search import bucket_search
from gnmt_tf.decoding.exact_search import exact_search

START_ID = 0


def _state(model, sentence):
    return model.initial_state([START_ID], [sentence])


@pytest.mark.parametrize("seed", range(6))
def test_large_budget_equals_exact_search(toy_model, end_id, seed):
    model = toy_model(seed, [3, 2], sharpness=1.0 + seed % 3)
    for sentence in (0, 1):
        exact = exact_search(model.step_fn, _state(model, sentence),
                             START_ID, end_id, 4)
        got = bucket_search(model.step_fn, _state(model, sentence), START_ID,
                            end_id, 4, max_expansions=10_000)
        assert got.optimal
        assert got.ids == exact.ids
        assert got.score == pytest.approx(exact.score, abs=1e-9)


def _greedy_path_best(model, sentence, max_length, end_id):
    """The best complete output on the greedy path: the greedy output or an
    end token taken at one of its prefixes (float64, from the tables)."""
    prev2 = prev = START_ID
    ids, total, best = (), 0.0, (None, -np.inf)
    for step in range(max_length):
        row = model.log_probs[sentence, min(step, model.num_steps - 1),
                              prev2, prev].astype(np.float64)
        if step + 1 == max_length:
            token = int(np.argmax(row))
            return max(best, (ids + (token,), total + row[token]),
                       key=lambda b: b[1])
        if total + row[end_id] > best[1]:
            best = (ids + (end_id,), total + row[end_id])
        if int(np.argmax(row)) == end_id:
            return best
        row = row.copy()
        row[end_id] = -np.inf
        token = int(np.argmax(row))
        ids, total = ids + (token,), total + row[token]
        prev2, prev = prev, token
    return best


@pytest.mark.parametrize("seed", range(6))
def test_budget_one_is_the_greedy_round(toy_model, end_id, seed):
    model = toy_model(seed, [3], sharpness=1.0 + seed % 3)
    got = bucket_search(model.step_fn, _state(model, 0), START_ID, end_id, 4,
                        max_expansions=1)
    ids, score = _greedy_path_best(model, 0, 4, end_id)
    assert got.ids == ids
    assert got.score == pytest.approx(score, abs=1e-5)
    assert got.expansions <= 4


def test_budgets_trade_expansions_for_score(toy_model, end_id):
    model = toy_model(3, [4], vocab_size=6, num_steps=6, sharpness=1.5)
    scores, expansions = [], []
    for budget in (1, 5, 20, 10_000):
        got = bucket_search(model.step_fn, _state(model, 0), START_ID,
                            end_id, 6, max_expansions=budget)
        scores.append(got.score)
        expansions.append(got.expansions)
    assert scores == sorted(scores)  # a bigger budget never does worse
    assert expansions == sorted(expansions)
    exact = exact_search(model.step_fn, _state(model, 0), START_ID, end_id, 6)
    assert scores[-1] == pytest.approx(exact.score, abs=1e-9)


def test_time_budget_stops_after_the_first_round(toy_model, end_id):
    model = toy_model(3, [4], vocab_size=6, num_steps=6, sharpness=1.5)
    ticks = itertools.count()
    got = bucket_search(model.step_fn, _state(model, 0), START_ID, end_id, 6,
                        max_seconds=0.5, clock=lambda: next(ticks))
    one = bucket_search(model.step_fn, _state(model, 0), START_ID, end_id, 6,
                        max_expansions=1)
    assert (got.ids, got.expansions) == (one.ids, one.expansions)
    assert not got.optimal


@pytest.mark.parametrize("kwargs, match", [
    (dict(max_length=0), "max_length"),
    (dict(max_length=3, max_expansions=0), "max_expansions"),
    (dict(max_length=3, max_seconds=0.0), "max_seconds"),
])
def test_invalid_arguments_raise(toy_model, end_id, kwargs, match):
    model = toy_model(0, [3])
    with pytest.raises(ValueError, match=match):
        bucket_search(model.step_fn, _state(model, 0), START_ID, end_id,
                      **kwargs)
