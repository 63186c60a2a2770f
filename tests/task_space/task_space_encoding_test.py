"""Tests for gnmt_tf.models.task_space.task_space_encoding.TaskSpaceEncoding."""

import itertools

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.models.task_space.task_space_encoding import TaskSpaceEncoding

NUM_TAGS = 4
TAG_SETS = [
    [0, 0, 0, 0],  # empty set
    [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1],  # single tags
    [1, 1, 0, 0], [0, 1, 0, 1],  # pairs
    [1, 1, 1, 1],  # a combination no training data need contain
]


@pytest.fixture(scope="module")
def encoding():
    return TaskSpaceEncoding(num_languages=3, num_tags=NUM_TAGS, hidden_dim=8)


def _encode(encoding, tag_sets, src=0, tgt=1, dtype=tf.int32):
    batch = len(tag_sets)
    return encoding(tf.fill([batch], src), tf.fill([batch], tgt),
                    tf.constant(tag_sets, dtype), return_weights=True)


def test_fixed_size_finite_and_distinct(encoding):
    task, weights = _encode(encoding, TAG_SETS)
    task = task.numpy()
    assert task.shape == (len(TAG_SETS), 8)
    assert weights.shape == (len(TAG_SETS), NUM_TAGS + 1)
    assert np.all(np.isfinite(task))
    for i, j in itertools.combinations(range(len(TAG_SETS)), 2):
        assert np.abs(task[i] - task[j]).max() > 1e-6, (TAG_SETS[i],
                                                        TAG_SETS[j])


def test_weights_cover_present_tags_and_no_tag_entry(encoding):
    _, weights = _encode(encoding, TAG_SETS)
    weights = weights.numpy()
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-6)
    present = np.concatenate(
        [np.array(TAG_SETS), np.ones([len(TAG_SETS), 1])], axis=1) > 0
    assert np.all(weights[~present] == 0.0)
    assert np.all(weights[present] > 0.0)
    np.testing.assert_allclose(weights[0], [0, 0, 0, 0, 1])  # empty set


def test_empty_set_is_direction_plus_no_tag_entry(encoding):
    task, _ = _encode(encoding, [[0] * NUM_TAGS], src=2, tgt=0)
    expected = (encoding.source_language_embeddings[2]
                + encoding.target_language_embeddings[0]
                + encoding.tag_embeddings[NUM_TAGS])
    np.testing.assert_allclose(task[0], expected, atol=1e-7)


def test_direction_matters_and_float_tags_work(encoding):
    task_ab, _ = _encode(encoding, [[1, 0, 1, 0]], src=0, tgt=1)
    task_ba, _ = _encode(encoding, [[1, 0, 1, 0]], src=1, tgt=0)
    assert np.abs(task_ab - task_ba).max() > 1e-6
    task_float, _ = _encode(encoding, [[1.0, 0.0, 1.0, 0.0]], dtype=tf.float32)
    np.testing.assert_allclose(task_float, task_ab, atol=1e-7)


def test_wrong_number_of_tag_columns_raises(encoding):
    with pytest.raises(ValueError, match="tags must have 4 columns"):
        encoding(tf.constant([0]), tf.constant([1]), tf.constant([[1, 0]]))


def test_gradients_reach_all_weights(encoding):
    with tf.GradientTape() as tape:
        task, _ = _encode(encoding, TAG_SETS)
        loss = tf.reduce_sum(task ** 2)
    gradients = tape.gradient(loss, encoding.trainable_weights)
    assert len(gradients) == 5
    assert all(g is not None for g in gradients)


def test_config_round_trip(encoding):
    config = encoding.get_config()
    clone = TaskSpaceEncoding.from_config(config)
    assert clone.get_config() == config
