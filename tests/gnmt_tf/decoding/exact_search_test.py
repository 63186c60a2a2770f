"""Exact (depth-first) search against exhaustive search, and beam search
never beating it: on the toy decoder of `conftest.py` and on the tiny
trained models of the model-family harness."""

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

from gnmt_tf.decoding.exact_search import exact_search
from gnmt_tf.decoding.exact_search import exact_translate
from reference_decoding import brute_force
from reference_decoding import float_tolerance

START_ID = 0


def _toy_search(model, sentence, max_length, **kwargs):
    state = model.initial_state([START_ID], [sentence])
    return exact_search(model.step_fn, state, START_ID, 1, max_length,
                        **kwargs)


@pytest.mark.parametrize("seed", range(8))
def test_toy_matches_brute_force(toy_model, end_id, seed):
    """The best output of at most 4 tokens and its summed log-prob, on
    random toy decoders (peaky ones: long outputs win too)."""
    model = toy_model(seed, [3, 2], sharpness=1.0 + seed % 3)
    for sentence in (0, 1):
        expected = model.brute_force(sentence, START_ID, 4, 0.0, 0.0)
        got = _toy_search(model, sentence, 4)
        assert got.optimal
        assert got.score == pytest.approx(expected[0]["score"], abs=1e-5)
        if expected[0]["score"] - expected[1]["score"] > 1e-5:
            assert got.ids == expected[0]["ids"]


def test_toy_prunes_and_budget(toy_model):
    """Pruning expands fewer hypotheses than there are prefixes; a budget
    below what the search needs returns the best so far, not proven."""
    model = toy_model(3, [3], vocab_size=5, num_steps=4)
    full = _toy_search(model, 0, 4)
    # Prefixes of 0..3 non-end tokens: 1 + 4 + 16 + 64.
    assert full.optimal and full.expansions < 85
    cut = _toy_search(model, 0, 4, max_expansions=full.expansions - 1)
    assert not cut.optimal and cut.expansions == full.expansions - 1
    assert cut.score <= full.score
    first = _toy_search(model, 0, 4, max_expansions=1)
    assert not first.optimal


def test_rejects_bad_arguments(toy_model):
    model = toy_model(0, [3])
    with pytest.raises(ValueError, match="max_length"):
        _toy_search(model, 0, 0)
    with pytest.raises(ValueError, match="max_expansions"):
        _toy_search(model, 0, 3, max_expansions=0)


FAMILIES = ("gnmt", "task_space_transformer")


@pytest.mark.parametrize("name", FAMILIES)
def test_model_matches_brute_force(model_families, name):
    """On a tiny trained model: the same ids and score as scoring every
    output of at most 3 tokens."""
    family = model_families(name)
    translator = family.translator
    task, sentences = family.family.requests[0]
    for sentence in [s for s in sentences if s.strip()][:2]:
        expected = brute_force(translator, sentence, task, 3, 0.0, 0.0, 2)
        got = exact_translate(translator, sentence, max_length=3, **task)
        tolerance = float_tolerance(np.float32, abs(expected[0][1]), terms=3)
        assert got.optimal
        assert got.score == pytest.approx(expected[0][1], abs=tolerance)
        if expected[0][1] - expected[1][1] > tolerance:
            assert got.ids == tuple(int(i) for i in expected[0][0])


@pytest.mark.parametrize("name", FAMILIES)
def test_beam_search_never_beats_exact_search(model_families, name):
    """Beam search without penalties (beams 1, 2, 4), under the same output
    length limit (5 tokens), scores at most what exact search proves
    optimal; a budget too small for the search says it is not proven."""
    import tensorflow as tf

    from gnmt_tf.translator import SearchOptions

    family = model_families(name)
    translator = family.translator
    task, sentences = family.family.requests[0]
    sentence = [s for s in sentences if s.strip()][0]
    task_ids = {k: tf.constant([v])
                for k, v in translator.task_ids(**task).items()}
    source_length = int(translator.tokenize(tf.constant([sentence]),
                                            task_ids)[1][0])
    ratio = 4.5 / source_length  # ceil(ratio * source length) = 5
    exact = exact_translate(translator, sentence, max_length_ratio=ratio,
                            **task)
    assert exact.optimal and len(exact.ids) <= 5
    for beam_size in (1, 2, 4):
        options = SearchOptions(beam_size=beam_size, length_penalty=0.0,
                                max_length_ratio=ratio)
        beam = translator.translate_nbest([sentence], options, **task)[0][0]
        tolerance = float_tolerance(np.float32, abs(beam.score), terms=5)
        assert beam.score <= exact.score + tolerance
    if exact.expansions > 1:
        cut = exact_translate(translator, sentence, max_length_ratio=ratio,
                              max_expansions=exact.expansions - 1, **task)
        assert not cut.optimal
        assert cut.score <= exact.score
