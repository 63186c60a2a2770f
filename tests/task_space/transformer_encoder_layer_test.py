"""Tests for gnmt_tf.models.task_space.transformer_encoder_layer."""

import numpy as np

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.models.task_space.transformer_encoder_layer import TransformerEncoderLayer


def test_shape_and_padding_mask():
    layer = TransformerEncoderLayer(num_heads=2, intermediate_dim=8)
    x = tf.random.normal([2, 5, 4])
    mask = tf.constant([[[True] * 3 + [False] * 2]] * 2)  # [2, 1, 5]
    y = layer(x, mask=mask)
    assert y.shape == (2, 5, 4)
    # Changing padded positions leaves the real positions unchanged.
    x2 = tf.concat([x[:, :3], tf.random.normal([2, 2, 4])], axis=1)
    np.testing.assert_allclose(layer(x2, mask=mask)[:, :3], y[:, :3],
                               atol=1e-6)


def test_dropout_only_in_training():
    layer = TransformerEncoderLayer(num_heads=2, intermediate_dim=8,
                                    dropout=0.5)
    x = tf.random.normal([1, 3, 4])
    np.testing.assert_allclose(layer(x), layer(x), atol=0)
    assert not np.allclose(layer(x, training=True), layer(x))


def test_config_round_trip():
    layer = TransformerEncoderLayer(2, 8, dropout=0.1, attention_dropout=0.2,
                                    layer_norm_epsilon=1e-5)
    config = layer.get_config()
    assert TransformerEncoderLayer.from_config(config).get_config() == config
