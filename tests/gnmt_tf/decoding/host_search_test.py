"""`gnmt_tf.decoding.host_beam_search`: the NumPy batch search against the in-graph one,
against itself one sentence at a time, and against brute force."""

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.decoding.beam_search import beam_search as graph_beam_search
from gnmt_tf.decoding import host_beam_search as host_search
from gnmt_tf.decoding.host_beam_search import beam_search, beam_search_batch, top_k

START_ID = 0
MAX_LENGTHS = [4, 2, 3, 4]
SOURCE_LENGTHS = [4, 2, 3, 1]
SEARCHES = [
    dict(beam_size=1, length_penalty=0.0, coverage_penalty=0.0),
    dict(beam_size=2, length_penalty=0.6, coverage_penalty=0.2),
    dict(beam_size=3, length_penalty=1.0, coverage_penalty=0.5,
         num_hypotheses=2),
    dict(beam_size=4, length_penalty=0.6, coverage_penalty=0.0,
         beam_width=1.5, num_hypotheses=3),
]


def _host_step(model):
    """`model.step_fn` as the host search calls it: NumPy in and out, and
    only the entries it changes returned (``memory``, ``sentence`` stay)."""

    def step(ids, state):
        log_probs, attention, new_state = model.step_fn(
            tf.constant(ids), {k: tf.constant(v) for k, v in state.items()})
        return log_probs.numpy(), attention.numpy(), {
            name: new_state[name].numpy() for name in ("step", "prev")}

    return step


def _host_state(model, sentences):
    return {k: v.numpy() for k, v in model.initial_state(
        [START_ID] * len(sentences), sentences).items()}


def _host(model, end_id, sentences, **search):
    return beam_search_batch(
        _host_step(model), _host_state(model, sentences),
        [SOURCE_LENGTHS[s] for s in sentences], START_ID, end_id,
        [MAX_LENGTHS[s] for s in sentences], **search)

# A hypothesis' score sums a few float32 log-probs (|score| < ~20) and
# divides once: both searches round it to within ~10 float32 ulps there,
# whatever the SIMD width (AVX2 or AVX-512) orders the sums in.
SCORE_TOLERANCE = 1e-5


def _assert_same_as_graph(got, expected, end_id, num_hypotheses=None):
    """The host search's `(ids, score)` pairs equal the in-graph search's
    result `expected` (ids without the end token; scores to float32
    rounding); with `num_hypotheses`, each sentence has that many."""
    for b, pairs in enumerate(got):
        if num_hypotheses is not None:
            assert len(pairs) == num_hypotheses
        for i, (ids, score) in enumerate(pairs):
            length = int(expected.lengths[b, i])
            want = expected.ids[b, i, :length].numpy().tolist()
            if want and want[-1] == end_id:
                want.pop()
            assert ids == want, (b, i)
            assert score == pytest.approx(float(expected.scores[b, i]),
                                          abs=SCORE_TOLERANCE)



@pytest.mark.parametrize("seed", [0, 1])
def test_top_k_is_a_stable_sort_with_ties(seed):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 4, size=[6, 40]).astype(np.float32)
    scores[rng.random(scores.shape) < 0.3] = -np.inf
    scores[0] = -np.inf  # a row of ties only
    scores[1:3, rng.random(40) < 0.8] = -np.inf  # mostly -inf, tied finite
    for k in (1, 2, 5, 40, 50):
        expected = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        np.testing.assert_array_equal(top_k(scores, k), expected)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_top_k_mixes_rows_with_and_without_ties_at_the_cut(seed):
    """Rows of distinct values take the fast path, rows whose k-th value is
    tied past the cut the exact fallback; one call must get both right."""
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=[8, 300]).astype(np.float32)
    scores[1::2] = rng.integers(0, 3, size=[4, 300])  # ties everywhere
    scores[2, :290] = -np.inf  # fewer than 16 finite entries
    for k in (2, 4, 16):
        expected = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        np.testing.assert_array_equal(top_k(scores, k), expected)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_top_k_of_vocabulary_rows_through_group_maxima(seed):
    """Rows as long as a vocabulary (with a short last part) take the
    group-maxima path: ties within and across the groups that reach the
    cut, the k best in the last part; rows where many groups reach the cut
    (mostly -inf, or tied) take the fallbacks."""
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=[10, 8003]).astype(np.float32)
    scores[1] = np.round(scores[1])  # ties within and across groups
    scores[2, rng.random(8003) < 0.4] = -np.inf
    scores[3] = -1.0
    scores[3, [5, 700, 8001]] = 0.0  # the best in the short last part
    scores[4, -3:] = 9.0  # the k best all in the last part
    scores[5, ::2] = 7.0  # every group's maximum tied
    # A tie among the k best across two groups: the lower index (100) is
    # in the later group (groups hold entries `groups` apart).
    groups = 8003 // host_search.GROUP_SIZE
    scores[6] = -5.0
    scores[6, [groups + 50, 100, 7, 9]] = [9.0, 9.0, 3.0, 2.0]
    scores[7, rng.random(8003) < 0.995] = -np.inf  # pruned: ~40 finite
    scores[8] = -np.inf  # fewer finite entries than k
    scores[8, [4000, 8002]] = [1.0, 2.0]
    scores[9] = np.round(scores[9] * 4) / 4  # an int8 model's few levels
    for k in (2, 4, 10):
        assert scores.shape[1] >= 8 * k * host_search.GROUP_SIZE
        expected = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        np.testing.assert_array_equal(top_k(scores, k), expected)


@pytest.mark.parametrize("search", SEARCHES,
                         ids=["greedy", "beam2", "beam3_n2", "beam4_pruned"])
@pytest.mark.parametrize("seed", [0, 3])
def test_batch_matches_in_graph_search(toy_model, end_id, seed, search):
    model = toy_model(seed, SOURCE_LENGTHS, sharpness=2.0)
    sentences = list(range(len(SOURCE_LENGTHS)))
    got = _host(model, end_id, sentences, **search)
    n = search.get("num_hypotheses", 1)
    expected = graph_beam_search(
        model.step_fn, model.initial_state([START_ID] * len(sentences)),
        start_ids=[START_ID] * len(sentences), end_id=end_id,
        max_lengths=MAX_LENGTHS, source_lengths=SOURCE_LENGTHS, **search)
    _assert_same_as_graph(got, expected, end_id, n)


@pytest.mark.parametrize("search", SEARCHES[1:],
                         ids=["beam2", "beam3_n2", "beam4_pruned"])
def test_batch_equals_one_sentence_at_a_time(toy_model, end_id, search):
    """Sentences stop at different steps and leave the batch; what is left
    of it still decodes as it would alone, in any batch order."""
    model = toy_model(5, SOURCE_LENGTHS, sharpness=2.0)
    alone = [beam_search(_host_step(model), _host_state(model, [s]),
                         SOURCE_LENGTHS[s], START_ID, end_id, MAX_LENGTHS[s],
                         **search) for s in range(len(SOURCE_LENGTHS))]
    for order in ([0, 1, 2, 3], [3, 1, 0, 2]):
        got = _host(model, end_id, order, **search)
        assert got == [alone[s] for s in order]
    assert len({tuple(map(tuple, (ids for ids, _ in r))) for r in alone}) > 1


@pytest.mark.parametrize("search", SEARCHES,
                         ids=["greedy", "beam2", "beam3_n2", "beam4_pruned"])
def test_a_step_that_gathers_rows_gets_the_same_search(toy_model, end_id,
                                                       search):
    """With `step_gathers` the search hands the step row indices instead of
    gathering the state itself: the entries the step leaves unchanged stay
    the encoded arrays for the whole search, and every result is the
    same as when the search gathers."""
    model = toy_model(5, SOURCE_LENGTHS, sharpness=2.0)
    sentences = [3, 1, 0, 2]
    encoded = _host_state(model, sentences)
    plain_step = _host_step(model)
    memory_rows = []

    def gathering_step(ids, state, rows):
        assert state["memory"] is encoded["memory"]
        memory_rows.append(rows["memory"])
        return plain_step(ids, {
            name: value if rows[name] is None else value[rows[name]]
            for name, value in state.items()})

    got = beam_search_batch(
        gathering_step, encoded, [SOURCE_LENGTHS[s] for s in sentences],
        START_ID, end_id, [MAX_LENGTHS[s] for s in sentences],
        step_gathers=True, **search)
    assert got == _host(model, end_id, sentences, **search)
    if search["beam_size"] > 1:  # rows moved between sentences
        assert any(rows is not None for rows in memory_rows)


def test_exhaustive_beam_is_brute_force(toy_model, end_id):
    model = toy_model(2, SOURCE_LENGTHS)
    got = _host(model, end_id, [0, 1, 2, 3], beam_size=80, num_hypotheses=3,
                length_penalty=0.6, coverage_penalty=0.2)
    for s, pairs in enumerate(got):
        best = model.brute_force(s, START_ID, MAX_LENGTHS[s], 0.6, 0.2)[:3]
        for (ids, score), want in zip(pairs, best):
            want_ids = list(want["ids"])
            if want_ids[-1] == end_id:
                want_ids.pop()
            assert ids == want_ids
            assert score == pytest.approx(want["score"], abs=1e-4)


def test_bad_settings_raise(toy_model, end_id):
    model = toy_model(0, SOURCE_LENGTHS)
    with pytest.raises(ValueError, match="num_hypotheses"):
        _host(model, end_id, [0], beam_size=2, num_hypotheses=3)
    with pytest.raises(ValueError, match="max lengths must be >= 1"):
        beam_search_batch(_host_step(model), _host_state(model, [0]), [4],
                          START_ID, end_id, [0])
    assert beam_search_batch(_host_step(model), {}, [], START_ID, end_id,
                             []) == []


def test_steps_run_on_live_hypotheses_only():
    """The first step runs one row per sentence, and a hypothesis that ends
    has no row in the next step; entries the step leaves unchanged follow
    their rows' sentences. Every row's next-token distribution is
    [end .4, a .3, b .2, c .1], beam 3, 3 hypotheses: step 1 keeps a and b
    (end finishes), step 2 keeps only a·a (a·end and b·end finish), step 3
    finds nothing better than the three finished."""
    log_probs = np.array([-np.inf] + np.log([0.4, 0.3, 0.2, 0.1]).tolist(),
                         np.float32)
    calls = []

    def step(ids, state):
        calls.append(state["memory"].tolist())
        assert len(ids) == len(state["memory"]) == len(state["step"])
        return (np.tile(log_probs, [len(ids), 1]), None,
                {"step": state["step"] + 1})

    state = {"memory": np.array([7, 8]), "step": np.zeros(2, np.int32)}
    got = beam_search_batch(step, state, [3, 3], START_ID, 1, [5, 5],
                            beam_size=3, length_penalty=0.0,
                            num_hypotheses=3)
    assert calls == [[7, 8], [7, 7, 8, 8], [7, 8]]
    for pairs in got:
        assert [ids for ids, _ in pairs] == [[], [2], [3]]
        np.testing.assert_allclose([score for _, score in pairs],
                                   np.log([0.4, 0.3 * 0.4, 0.2 * 0.4]),
                                   rtol=1e-6)


@pytest.mark.parametrize("search", SEARCHES,
                         ids=["greedy", "beam2", "beam3_n2", "beam4_pruned"])
def test_tied_log_probs_match_in_graph_search(toy_model, end_id, search):
    """Log-probs on a coarse grid (as an int8 model's: many exact ties): the
    host search takes each row's best from its log-probs and scores only
    those, and still picks what the in-graph search, which scores every
    candidate, picks (ties to the lower beam, then the lower token)."""
    model = toy_model(7, SOURCE_LENGTHS, sharpness=2.0)
    levels = 1.0  # whole log-probs

    def graph_step(ids, state):
        log_probs, attention, new_state = model.step_fn(ids, state)
        return tf.round(log_probs * levels) / levels, attention, new_state

    host_step = _host_step(model)
    k = search["beam_size"]
    tied_rows = []  # rows whose k + 1 best log-probs hold a tie

    def tied_host_step(ids, state):
        log_probs, attention, changed = host_step(ids, state)
        log_probs = (np.round(log_probs * np.float32(levels))
                     / np.float32(levels))
        best = -np.sort(-log_probs, axis=1)[:, :k + 1]
        tied_rows.append(int((np.diff(best, axis=1) == 0).any(axis=1).sum()))
        return log_probs, attention, changed

    sentences = list(range(len(SOURCE_LENGTHS)))
    got = beam_search_batch(
        tied_host_step, _host_state(model, sentences), SOURCE_LENGTHS,
        START_ID, end_id, MAX_LENGTHS, **search)
    expected = graph_beam_search(
        graph_step, model.initial_state([START_ID] * len(sentences)),
        start_ids=[START_ID] * len(sentences), end_id=end_id,
        max_lengths=MAX_LENGTHS, source_lengths=SOURCE_LENGTHS, **search)
    _assert_same_as_graph(got, expected, end_id)
    assert sum(tied_rows), "no ties among the best: the test lost its point"
