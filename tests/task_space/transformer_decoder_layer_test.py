"""Tests for gnmt_tf.models.task_space.transformer_decoder_layer."""

import numpy as np

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.models.task_space.layer_utils import causal_mask
from gnmt_tf.models.task_space.transformer_decoder_layer import TransformerDecoderLayer


def _run(layer, x, memory, cross_mask):
    return layer(x, memory, self_mask=causal_mask(x.shape[1])[None],
                 cross_mask=cross_mask)


def test_shapes_and_causality():
    layer = TransformerDecoderLayer(num_heads=2, intermediate_dim=8)
    x = tf.random.normal([2, 4, 4])
    memory = tf.random.normal([2, 5, 4])
    cross_mask = tf.constant([[[True] * 5], [[True] * 2 + [False] * 3]])
    y, probabilities = _run(layer, x, memory, cross_mask)
    assert y.shape == (2, 4, 4)
    assert probabilities.shape == (2, 2, 4, 5)
    assert np.all(probabilities.numpy()[1, :, :, 2:] == 0.0)
    x2 = tf.concat([x[:, :2], tf.random.normal([2, 2, 4])], axis=1)
    y2, _ = _run(layer, x2, memory, cross_mask)
    np.testing.assert_allclose(y2[:, :2], y[:, :2], atol=1e-6)


def test_step_matches_call():
    layer = TransformerDecoderLayer(num_heads=2, intermediate_dim=8)
    x = tf.random.normal([2, 4, 4])
    memory = tf.random.normal([2, 5, 4])
    cross_mask = tf.constant([[[True] * 5], [[True] * 2 + [False] * 3]])
    expected, expected_probabilities = _run(layer, x, memory, cross_mask)
    cross_key, cross_value = layer.compute_cross_key_value(memory)
    cache = {"self_key": tf.zeros([2, 6, 2, 2]),
             "self_value": tf.zeros([2, 6, 2, 2]),
             "cross_key": cross_key, "cross_value": cross_value}
    for t in range(4):
        y, probabilities, cache = layer.step(
            x[:, t:t + 1], cache, tf.fill([2], t), cross_mask=cross_mask)
        np.testing.assert_allclose(y[:, 0], expected[:, t], atol=1e-5)
        np.testing.assert_allclose(probabilities[:, :, 0],
                                   expected_probabilities[:, :, t], atol=1e-5)
    assert cache["self_key"].shape == (2, 6, 2, 2)
    assert np.all(cache["self_key"].numpy()[:, 4:] == 0.0)
