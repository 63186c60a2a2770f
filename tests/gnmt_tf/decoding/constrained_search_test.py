"""Lexically constrained search (dynamic beam allocation) against brute
force on the toy decoder of `conftest.py`."""

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

from gnmt_tf.decoding.beam_search import beam_search
from gnmt_tf.decoding.constrained_search import _advance
from gnmt_tf.decoding.constrained_search import constrained_search

START_ID = 2
MAX_LENGTH = 4
# The toy decoder (5 tokens, outputs of at most 4) has at most 4**3 = 64
# live prefixes at the last step, so 64 * 5 proposals: a beam of 320 takes
# every extension of every prefix, and the search is exhaustive.
EXHAUSTIVE_BEAM = 320


def _contains(ids, constraint):
    n = len(constraint)
    return any(tuple(ids[i:i + n]) == tuple(constraint)
               for i in range(len(ids) - n + 1))


def _search(model, end_id, constraints, **kwargs):
    return constrained_search(model.step_fn,
                              model.initial_state([START_ID], [0]), START_ID,
                              end_id, MAX_LENGTH, constraints, **kwargs)


@pytest.mark.parametrize("constraints", [[(3,)], [(0, 4)], [(4,), (3, 3)],
                                         [(2, 2, 3)]])
@pytest.mark.parametrize("seed", range(4))
def test_large_beam_finds_the_best_outputs_with_the_constraints(
        toy_model, end_id, constraints, seed):
    model = toy_model(seed, [3], sharpness=2.0)
    got = _search(model, end_id, constraints, beam_size=EXHAUSTIVE_BEAM,
                  num_hypotheses=3, length_penalty=0.0)
    expected = [h for h in model.brute_force(0, START_ID, MAX_LENGTH, 0.0,
                                             0.0)
                if all(_contains(h["ids"], c) for c in constraints)][:3]
    assert [h.ids for h in got] == [h["ids"] for h in expected]
    np.testing.assert_allclose([h.score for h in got],
                               [h["score"] for h in expected], atol=1e-5)
    assert all(h.met for h in got)


def _with_improbable_token(model, token, penalty=8.0):
    logits = model.log_probs.astype(np.float64)
    logits[..., token] -= penalty
    logits -= np.log(np.exp(logits).sum(-1, keepdims=True))
    model.log_probs = logits.astype(np.float32)
    return model


@pytest.mark.parametrize("beam_size", [1, 3, 10])
def test_an_improbable_term_still_appears(toy_model, end_id, beam_size):
    model = _with_improbable_token(toy_model(1, [3], sharpness=2.0), 4)
    plain = beam_search(model.step_fn, model.initial_state([START_ID], [0]),
                        [START_ID], end_id, 4, [MAX_LENGTH],
                        num_hypotheses=4)
    assert 4 not in plain.ids.numpy()  # the model never chooses it
    got = _search(model, end_id, [(4,)], beam_size=beam_size)
    assert got[0].met and 4 in got[0].ids


def test_the_end_token_waits_for_every_constraint(toy_model, end_id):
    model = toy_model(2, [3], sharpness=2.0)
    for hyp in _search(model, end_id, [(3,), (0,)], beam_size=6,
                       num_hypotheses=6):
        assert hyp.met
        assert 3 in hyp.ids and 0 in hyp.ids


def test_unreachable_constraints_fall_back_to_an_unconstrained_output(
        toy_model, end_id):
    model = toy_model(2, [3])
    got = _search(model, end_id, [(3, 3, 3, 3, 3)], beam_size=4)
    assert len(got) == 1 and not got[0].met


def test_a_failed_continuation_falls_back_to_a_shorter_match():
    # After (2, 2) a third 2 keeps (2, 2) of (2, 2, 3) matched.
    assert _advance((2,), [(2, 2, 3)], (2, 2), 2) == (2,)
    assert _advance((2,), [(2, 2, 3)], (2, 2), 3) == (3,)
    assert _advance((1,), [(2, 3)], (2,), 4) == (0,)
    assert _advance((2,), [(2, 3)], (2, 3), 4) == (2,)  # met stays met


@pytest.mark.parametrize("constraints, match", [
    ([()], "non-empty"), ([(1,)], "end token")])
def test_invalid_constraints_raise(toy_model, end_id, constraints, match):
    with pytest.raises(ValueError, match=match):
        _search(toy_model(0, [3]), end_id, constraints)
