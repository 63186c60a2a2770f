"""Tests for task_space.cached_multi_head_attention."""

import numpy as np

import gnmt_tf  # noqa: F401

import tensorflow as tf

from task_space.cached_multi_head_attention import CachedMultiHeadAttention


def test_shapes_and_mask():
    layer = CachedMultiHeadAttention(num_heads=2, head_dim=3)
    query = tf.random.normal([2, 4, 6])
    value = tf.random.normal([2, 5, 6])
    mask = tf.constant([[[True] * 5], [[True] * 3 + [False] * 2]])  # [2,1,5]
    output, probabilities = layer(query, value, mask=mask)
    assert output.shape == (2, 4, 6)
    assert probabilities.shape == (2, 2, 4, 5)
    np.testing.assert_allclose(tf.reduce_sum(probabilities, -1), 1.0,
                               rtol=1e-6)
    assert np.all(probabilities.numpy()[1, :, :, 3:] == 0.0)


def test_parts_equal_call():
    layer = CachedMultiHeadAttention(num_heads=2, head_dim=3)
    query = tf.random.normal([1, 2, 6])
    value = tf.random.normal([1, 3, 6])
    expected, _ = layer(query, value)
    key, value_heads = layer.project_key_value(value)
    output, _ = layer.attend(layer.project_query(query), key, value_heads)
    np.testing.assert_allclose(output, expected, atol=1e-6)


def test_config_round_trip():
    layer = CachedMultiHeadAttention(4, 8, dropout=0.1, name="attention")
    config = layer.get_config()
    clone = CachedMultiHeadAttention.from_config(config)
    assert clone.get_config() == config
