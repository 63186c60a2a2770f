import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.decoding.beam_search import beam_search
from gnmt_tf.decoding.beam_search import flatten_beams
from gnmt_tf.decoding.beam_search import gather_beams
from gnmt_tf.decoding.beam_search import tile_beams
from gnmt_tf.decoding.beam_search import unflatten_beams

# Batch used for the brute-force checks: different start tokens, maximum
# lengths and source lengths per sentence.
START_IDS = [0, 2, 3]
MAX_LENGTHS = [4, 2, 3]
SOURCE_LENGTHS = [4, 2, 3]
# With max length 4 over 5 tokens, step 2 has at most 5 * 4**2 = 80
# candidates; at step 3 every candidate finishes, so the 80 best contain the
# N best. A beam of 80 therefore never drops a hypothesis: it is exhaustive.
EXHAUSTIVE_BEAM = 80
PENALTIES = [(0.0, 0.0), (0.6, 0.2), (1.0, 0.0), (0.0, 0.5)]


def _search(model, end_id, sentences=None, **kwargs):
    args = dict(start_ids=START_IDS, end_id=end_id, max_lengths=MAX_LENGTHS,
                source_lengths=SOURCE_LENGTHS)
    args.update(kwargs)
    state = model.initial_state(args["start_ids"], sentences)
    return beam_search(model.step_fn, state, **args)


def _hypothesis(result, b, i):
    length = int(result.lengths[b, i])
    return tuple(result.ids[b, i, :length].numpy().tolist())


def _assert_same_result(a, b):
    for field in ("ids", "lengths", "scores", "log_probs", "attention"):
        np.testing.assert_array_equal(getattr(a, field).numpy(),
                                      getattr(b, field).numpy(), field)


# --- helpers -----------------------------------------------------------------


def test_tile_beams_repeats_each_row():
    state = {"h": tf.constant([[1, 2], [3, 4]]), "c": tf.constant([5, 6])}
    tiled = tile_beams(state, 3)
    np.testing.assert_array_equal(
        tiled["h"], [[1, 2], [1, 2], [1, 2], [3, 4], [3, 4], [3, 4]])
    np.testing.assert_array_equal(tiled["c"], [5, 5, 5, 6, 6, 6])


def test_flatten_and_unflatten_beams_are_inverse():
    x = tf.reshape(tf.range(2 * 3 * 4), [2, 3, 4])
    flat = flatten_beams(x)
    assert flat.shape == (6, 4)
    np.testing.assert_array_equal(flat[4], x[1, 1])
    back = unflatten_beams(flat, 3)
    np.testing.assert_array_equal(back, x)


def test_gather_beams_selects_per_sentence():
    x = tf.constant([[[1, 1], [2, 2], [3, 3]],
                     [[4, 4], [5, 5], [6, 6]]])                  # [B=2, K=3, 2]
    indices = tf.constant([[2, 2], [0, 1]])                       # [B=2, K'=2]
    gathered = gather_beams({"x": x, "y": x[:, :, 0]}, indices)
    np.testing.assert_array_equal(gathered["x"],
                                  [[[3, 3], [3, 3]], [[4, 4], [5, 5]]])
    np.testing.assert_array_equal(gathered["y"], [[3, 3], [4, 5]])


# --- against brute force ------------------------------------------------------


@pytest.mark.parametrize("early_stopping", ["none", "exact"])
@pytest.mark.parametrize("alpha,beta", PENALTIES)
def test_exhaustive_beam_matches_brute_force(toy_model, end_id, alpha, beta,
                                             early_stopping):
    n = 3
    model = toy_model(0, SOURCE_LENGTHS)
    result = _search(model, end_id, beam_size=EXHAUSTIVE_BEAM,
                     num_hypotheses=n, length_penalty=alpha,
                     coverage_penalty=beta, early_stopping=early_stopping)
    assert result.ids.shape[:2] == (3, n)
    for b, (start, max_length) in enumerate(zip(START_IDS, MAX_LENGTHS)):
        expected = model.brute_force(b, start, max_length, alpha, beta)
        scores = [h["score"] for h in expected[:n + 1]]
        assert min(-np.diff(scores)) > 1e-4, "near tie: pick another seed"
        for i, hyp in enumerate(expected[:n]):
            length = len(hyp["ids"])
            assert _hypothesis(result, b, i) == hyp["ids"]
            assert not result.ids[b, i, length:].numpy().any()
            np.testing.assert_allclose(result.scores[b, i], hyp["score"],
                                       rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(result.log_probs[b, i],
                                       hyp["log_prob"], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(
                result.attention[b, i, :length, :4], hyp["attention"],
                rtol=1e-5, atol=1e-6)
            assert not result.attention[b, i, length:].numpy().any()


@pytest.mark.parametrize("beam_size", [1, 2, 3])
def test_small_beams_never_beat_brute_force(toy_model, end_id, beam_size):
    alpha, beta = 0.6, 0.2
    model = toy_model(1, SOURCE_LENGTHS)
    result = _search(model, end_id, beam_size=beam_size,
                     num_hypotheses=beam_size, length_penalty=alpha,
                     coverage_penalty=beta, early_stopping="none")
    for b, (start, max_length) in enumerate(zip(START_IDS, MAX_LENGTHS)):
        expected = model.brute_force(b, start, max_length, alpha, beta)
        by_ids = {h["ids"]: h["score"] for h in expected}
        scores = result.scores[b].numpy()
        assert scores[0] <= expected[0]["score"] + 1e-5
        assert (np.diff(scores[np.isfinite(scores)]) <= 0).all()
        for i in range(beam_size):
            if np.isfinite(scores[i]):  # a real hypothesis, correctly scored
                np.testing.assert_allclose(
                    scores[i], by_ids[_hypothesis(result, b, i)], rtol=1e-5,
                    atol=1e-5)


def test_hypothesis_at_max_length_has_no_end_token(toy_model, end_id):
    model = toy_model(0, SOURCE_LENGTHS)
    result = _search(model, end_id, beam_size=EXHAUSTIVE_BEAM,
                     num_hypotheses=3, early_stopping="none")
    lengths = result.lengths.numpy()
    assert (lengths <= np.array(MAX_LENGTHS)[:, None]).all()
    for b in range(3):
        for i in range(3):
            hyp = _hypothesis(result, b, i)
            assert (hyp[-1] == end_id) != (len(hyp) == MAX_LENGTHS[b]
                                           and end_id not in hyp)


# --- early stopping and pruning -----------------------------------------------


def test_exact_early_stopping_returns_the_full_search_result(toy_model,
                                                             end_id):
    saved_steps = []
    for seed in (0, 1, 5):
        model = toy_model(seed, [4, 3], num_steps=8, sharpness=3.0)
        for alpha in (0.6, 1.0):
            results = {
                mode: _search(model, end_id, start_ids=[0, 0], beam_size=3,
                              num_hypotheses=2, max_lengths=[8, 8],
                              source_lengths=[4, 3], length_penalty=alpha,
                              coverage_penalty=0.2, early_stopping=mode)
                for mode in ("none", "exact")}
            _assert_same_result(results["none"], results["exact"])
            assert int(results["none"].num_steps) == 8
            saved_steps.append(8 - int(results["exact"].num_steps))
    assert min(saved_steps) >= 0
    assert max(saved_steps) > 0


def test_gnmt_early_stopping_equals_exact_without_penalties(toy_model,
                                                            end_id):
    # With alpha = beta = 0 a live hypothesis' current score bounds its
    # descendants, so GNMT's heuristic is exact too.
    model = toy_model(1, [4, 3], num_steps=8, sharpness=3.0)
    kwargs = dict(start_ids=[0, 0], beam_size=3, num_hypotheses=2,
                  max_lengths=[8, 8], source_lengths=[4, 3])
    gnmt = _search(model, end_id, early_stopping="gnmt", **kwargs)
    _assert_same_result(gnmt, _search(model, end_id, early_stopping="none",
                                      **kwargs))
    assert int(gnmt.num_steps) < 8


def test_huge_beam_width_changes_nothing(toy_model, end_id):
    model = toy_model(2, SOURCE_LENGTHS)
    kwargs = dict(beam_size=4, num_hypotheses=2, length_penalty=0.6,
                  coverage_penalty=0.2)
    _assert_same_result(_search(model, end_id, **kwargs),
                        _search(model, end_id, beam_width=1e9, **kwargs))


def test_small_beam_width_prunes_but_returns_valid_hypotheses(toy_model,
                                                              end_id):
    model = toy_model(2, SOURCE_LENGTHS, sharpness=3.0)
    kwargs = dict(beam_size=EXHAUSTIVE_BEAM, num_hypotheses=3,
                  length_penalty=0.6, coverage_penalty=0.2,
                  early_stopping="none")
    full = _search(model, end_id, **kwargs)
    pruned = _search(model, end_id, beam_width=0.5, **kwargs)
    # Pruning drops hypotheses: some slots become empty.
    assert np.isinf(pruned.scores.numpy()).any()
    assert not np.isinf(full.scores.numpy()).any()
    for b, (start, max_length) in enumerate(zip(START_IDS, MAX_LENGTHS)):
        expected = model.brute_force(b, start, max_length, 0.6, 0.2)
        by_ids = {h["ids"]: h["score"] for h in expected}
        assert pruned.scores[b, 0] <= full.scores[b, 0]
        for i in range(3):  # every kept hypothesis is real and well scored
            if np.isfinite(pruned.scores[b, i]):
                np.testing.assert_allclose(
                    pruned.scores[b, i], by_ids[_hypothesis(pruned, b, i)],
                    rtol=1e-5, atol=1e-5)


def _within_local_width(model, sentence, start, ids, width):
    """Whether every token of `ids` scores (log-probability) at most `width`
    below the best token of its step (GNMT pruning rule 1)."""
    prev2 = prev = start
    for step, token in enumerate(ids):
        row = model.log_probs[sentence, min(step, model.num_steps - 1),
                              prev2, prev]
        if row[token] < row.max() - width:
            return False
        prev2, prev = prev, token
    return True


@pytest.mark.parametrize("width", [0.3, 1.0, 2.5])
def test_gnmt_pruning_is_exactly_the_papers_two_rules(toy_model, end_id,
                                                      width):
    # Without penalties rule 2 is admissible, so an exhaustive beam with
    # pruning returns exactly the brute-force best outputs made of tokens
    # within `width` of their step's best token (rule 1) that score within
    # `width` of the best of those (rule 2), best first.
    model = toy_model(5, SOURCE_LENGTHS, sharpness=2.0)
    n = 3
    pruned = _search(model, end_id, beam_size=EXHAUSTIVE_BEAM,
                     num_hypotheses=n, length_penalty=0.0,
                     coverage_penalty=0.0, beam_width=width,
                     early_stopping="none")
    pruned_some = False
    for b, (start, max_length) in enumerate(zip(START_IDS, MAX_LENGTHS)):
        every = model.brute_force(b, start, max_length, 0.0, 0.0)
        allowed = [h for h in every
                   if _within_local_width(model, b, start, h["ids"], width)]
        best = allowed[0]["score"]
        expected = [h for h in allowed if h["score"] >= best - width][:n]
        got = [(_hypothesis(pruned, b, i), float(pruned.scores[b, i]))
               for i in range(n) if np.isfinite(pruned.scores[b, i])]
        assert [ids for ids, _ in got] == [h["ids"] for h in expected]
        np.testing.assert_allclose([s for _, s in got],
                                   [h["score"] for h in expected], atol=1e-5)
        pruned_some |= [h["ids"] for h in expected] != [
            h["ids"] for h in every[:n]]
    assert pruned_some  # the width prunes something on this model


def test_gnmt_pruning_never_drops_the_greedy_path_and_saves_steps(toy_model,
                                                                  end_id):
    # Rule 1 keeps each hypothesis' best token, so beam size 1 with pruning
    # is still greedy search; on a wide beam, pruning ends the search sooner.
    model = toy_model(7, SOURCE_LENGTHS, sharpness=3.0)
    greedy = _search(model, end_id, beam_size=1, length_penalty=0.0)
    _assert_same_result(greedy, _search(model, end_id, beam_size=1,
                                        length_penalty=0.0, beam_width=0.01))
    wide = dict(beam_size=EXHAUSTIVE_BEAM, length_penalty=0.0,
                early_stopping="exact")
    full = _search(model, end_id, **wide)
    pruned = _search(model, end_id, beam_width=0.5, **wide)
    assert int(pruned.num_steps) <= int(full.num_steps)
    np.testing.assert_allclose(pruned.scores[:, 0], full.scores[:, 0])


# --- graph mode, export, interface -------------------------------------------


def _graph_search_fn(model, end_id):
    spec = tf.TensorSpec([None], tf.int32)

    @tf.function(input_signature=[spec, spec, spec, spec,
                                  tf.TensorSpec([None, 4], tf.float32)])
    def search(start_ids, max_lengths, source_lengths, sentence, memory):
        state = {"sentence": sentence, "step": tf.zeros_like(start_ids),
                 "prev": start_ids, "memory": memory}
        r = beam_search(model.step_fn, state, start_ids, end_id, beam_size=4,
                        max_lengths=max_lengths, source_lengths=source_lengths,
                        length_penalty=0.6, coverage_penalty=0.2,
                        beam_width=5.0, num_hypotheses=2,
                        early_stopping="exact")
        return {"ids": r.ids, "lengths": r.lengths, "scores": r.scores,
                "log_probs": r.log_probs, "attention": r.attention,
                "num_steps": r.num_steps}

    return search


def _eager_and_graph_inputs(model, rows):
    eager = _search(model, 1, rows, start_ids=[START_IDS[r] for r in rows],
                    max_lengths=[MAX_LENGTHS[r] for r in rows],
                    source_lengths=[SOURCE_LENGTHS[r] for r in rows],
                    beam_size=4, length_penalty=0.6, coverage_penalty=0.2,
                    beam_width=5.0, num_hypotheses=2, early_stopping="exact")
    inputs = [tf.constant([START_IDS[r] for r in rows]),
              tf.constant([MAX_LENGTHS[r] for r in rows]),
              tf.constant([SOURCE_LENGTHS[r] for r in rows]),
              tf.constant(rows, tf.int32), tf.constant(model.memory[rows])]
    return eager, inputs


def _assert_matches(eager, outputs):
    for field in ("ids", "lengths", "scores", "log_probs", "attention",
                  "num_steps"):
        np.testing.assert_allclose(outputs[field], getattr(eager, field),
                                   rtol=1e-6, err_msg=field)


def test_tf_function_with_dynamic_batch_matches_eager(toy_model, end_id):
    model = toy_model(4, SOURCE_LENGTHS)
    search = _graph_search_fn(model, end_id)
    for rows in ([0, 1, 2], [2, 0]):
        eager, inputs = _eager_and_graph_inputs(model, rows)
        _assert_matches(eager, search(*inputs))
    assert search.experimental_get_tracing_count() == 1


def test_saved_model_round_trip(toy_model, end_id, tmp_path):
    model = toy_model(5, SOURCE_LENGTHS)
    module = tf.Module()
    module.search = _graph_search_fn(model, end_id)
    tf.saved_model.save(module, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    eager, inputs = _eager_and_graph_inputs(model, [1, 0, 2])
    _assert_matches(eager, loaded.search(*inputs))


def test_step_function_without_attention(toy_model, end_id):
    model = toy_model(0, SOURCE_LENGTHS)
    state = model.initial_state(START_IDS)
    kwargs = dict(start_ids=START_IDS, end_id=end_id, beam_size=3,
                  max_lengths=MAX_LENGTHS, length_penalty=0.6)
    result = beam_search(model.step_fn_without_attention, state, **kwargs)
    assert result.attention is None
    with_attention = beam_search(model.step_fn, state, **kwargs)
    np.testing.assert_array_equal(result.ids, with_attention.ids)
    with pytest.raises(ValueError, match="attention"):
        beam_search(model.step_fn_without_attention, state,
                    coverage_penalty=0.2, **kwargs)


@pytest.mark.parametrize("kwargs,match", [
    (dict(beam_size=0), "beam_size"),
    (dict(num_hypotheses=4), "num_hypotheses"),
    (dict(early_stopping="sometimes"), "early_stopping"),
    (dict(beam_width=0.0), "beam_width"),
    (dict(early_stopping="exact", coverage_penalty=-0.1), "coverage_penalty"),
])
def test_invalid_arguments_raise(toy_model, end_id, kwargs, match):
    model = toy_model(0, SOURCE_LENGTHS)
    args = dict(beam_size=3, num_hypotheses=1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        _search(model, end_id, **args)


def test_scalar_max_length_and_empty_source_mask(toy_model, end_id):
    model = toy_model(0, SOURCE_LENGTHS)
    result = beam_search(model.step_fn, model.initial_state(START_IDS),
                         START_IDS, end_id, beam_size=2, max_lengths=3)
    assert (result.lengths.numpy() <= 3).all()
    assert result.ids.shape[2] == result.lengths.numpy().max()


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("beam_width", [None, 2.0])
def test_fixed_shapes_search_the_same_and_compile_with_xla(
        toy_model, end_id, compiled, beam_width):
    """`max_time` and `attention_width` fix every shape of the search (`T`
    is `max_time`, untrimmed), so the whole search compiles with XLA; the
    hypotheses, scores and attention are the default search's."""
    model = toy_model(3, SOURCE_LENGTHS)
    kwargs = dict(beam_size=3, num_hypotheses=2, length_penalty=0.6,
                  coverage_penalty=0.2, beam_width=beam_width)
    want = _search(model, end_id, **kwargs)

    def fixed():
        return _search(model, end_id, max_time=6,
                       attention_width=model.source_size, **kwargs)

    got = (tf.function(fixed, jit_compile=True, autograph=False)()
           if compiled else fixed())
    assert got.ids.shape[2] == 6 and got.attention.shape[2] == 6
    time = want.ids.shape[2]
    np.testing.assert_array_equal(got.lengths, want.lengths)
    np.testing.assert_array_equal(got.ids[:, :, :time], want.ids)
    assert not got.ids.numpy()[:, :, time:].any()
    assert not got.attention.numpy()[:, :, time:].any()
    # XLA may fuse and reorder the float32 sums: a few dozen ulps of the
    # scores (a handful of steps) and of the attention (within [0, 1]).
    tolerance = 64 * np.finfo(np.float32).eps if compiled else 0
    np.testing.assert_allclose(got.scores, want.scores, rtol=tolerance,
                               atol=tolerance)
    np.testing.assert_allclose(got.attention[:, :, :time], want.attention,
                               rtol=tolerance, atol=tolerance)


def test_max_time_clips_the_maximum_lengths(toy_model, end_id):
    model = toy_model(1, SOURCE_LENGTHS)
    got = _search(model, end_id, beam_size=3, max_time=2)
    want = _search(model, end_id, beam_size=3,
                   max_lengths=np.minimum(MAX_LENGTHS, 2))
    assert got.ids.shape[2] == 2
    np.testing.assert_array_equal(got.lengths, want.lengths)
    np.testing.assert_array_equal(got.ids[:, :, :want.ids.shape[2]],
                                  want.ids)
    np.testing.assert_array_equal(got.scores, want.scores)
