"""`xla_step`: the XLA-compiled step searches as the plain one."""

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.decoding.beam_search import beam_search
from gnmt_tf.decoding.xla_step import xla_step

START_IDS = [0, 2, 3]
MAX_LENGTHS = [4, 2, 3]
SOURCE_LENGTHS = [4, 2, 3]


def test_unchanged_entries_come_back_as_given(toy_model):
    model = toy_model(0, SOURCE_LENGTHS)
    state = model.initial_state(START_IDS)
    log_probs, attention, new_state = xla_step(model.step_fn)(
        tf.constant(START_IDS), state)
    want = model.step_fn(tf.constant(START_IDS), state)
    np.testing.assert_allclose(log_probs, want[0], atol=1e-6)
    np.testing.assert_allclose(attention, want[1], atol=1e-6)
    assert new_state["memory"] is state["memory"]
    assert new_state["sentence"] is state["sentence"]
    assert new_state["step"] is not state["step"]
    np.testing.assert_array_equal(new_state["step"], want[2]["step"])


@pytest.mark.parametrize("seed", [0, 1])
def test_search_with_xla_step_equals_plain(toy_model, end_id, seed):
    model = toy_model(seed, SOURCE_LENGTHS, sharpness=2.0)
    args = dict(start_ids=START_IDS, end_id=end_id, beam_size=3,
                max_lengths=MAX_LENGTHS, source_lengths=SOURCE_LENGTHS,
                length_penalty=0.6, coverage_penalty=0.2, num_hypotheses=2)
    plain = beam_search(model.step_fn, model.initial_state(START_IDS),
                        **args)
    compiled = tf.function(lambda: beam_search(
        xla_step(model.step_fn), model.initial_state(START_IDS), **args),
        autograph=False)()
    np.testing.assert_array_equal(compiled.ids, plain.ids)
    np.testing.assert_array_equal(compiled.lengths, plain.lengths)
    np.testing.assert_allclose(compiled.scores, plain.scores, atol=1e-5)
