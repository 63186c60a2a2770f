"""`gnmt_tf.decoding.host_beam_search.beam_search` against the in-graph beam search on the
toy decoder of `tests/gnmt_tf/decoding/conftest.py`, pruning included."""

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.decoding import host_beam_search as host_search
from gnmt_tf.decoding.beam_search import beam_search
from tests.gnmt_tf.decoding.conftest import END_ID, ToyModel


def _numpy_step(model):
    def step(ids, state):
        log_probs, attention, new_state = model.step_fn(
            tf.constant(ids), {k: tf.constant(v) for k, v in state.items()})
        return (log_probs.numpy(), attention.numpy(),
                {k: v.numpy() for k, v in new_state.items()})
    return step


@pytest.mark.parametrize("beam_width", [None, 0.4, 1.5])
def test_host_search_matches_in_graph_search_with_pruning(beam_width):
    model = ToyModel(11, [3], sharpness=2.0)
    kwargs = dict(beam_size=6, length_penalty=0.6, coverage_penalty=0.2,
                  num_hypotheses=3, beam_width=beam_width)
    start = 2
    state = model.initial_state([start])
    graph = beam_search(model.step_fn, state, [start], END_ID,
                        max_lengths=[4], source_lengths=[3], **kwargs)
    host = host_search.beam_search(
        _numpy_step(model), {k: v.numpy() for k, v in state.items()}, 3,
        start, END_ID, 4, **kwargs)
    for i, (ids, score) in enumerate(host):
        expected = float(graph.scores[0, i])
        if np.isinf(expected):
            assert score == expected
            continue
        length = int(graph.lengths[0, i])
        graph_ids = graph.ids[0, i, :length].numpy().tolist()
        if graph_ids[-1] == END_ID:
            graph_ids.pop()
        assert ids == graph_ids
        np.testing.assert_allclose(score, expected, rtol=1e-5)
