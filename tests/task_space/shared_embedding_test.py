"""Tests for gnmt_tf.models.task_space.shared_embedding."""

import numpy as np

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.models.task_space.shared_embedding import SharedEmbedding


def test_embed_and_project_share_weights():
    layer = SharedEmbedding(10, 4)
    x = layer(tf.constant([[1, 2, 3]]))  # [1, 3, 4]
    assert x.shape == (1, 3, 4)
    matrix = layer.embeddings.numpy()
    np.testing.assert_allclose(x[0, 0], matrix[1] * 2.0, rtol=1e-6)
    logits = layer.project(x)  # [1, 3, 10]
    np.testing.assert_allclose(logits, x.numpy() @ matrix.T, rtol=1e-5,
                               atol=1e-6)
    assert len(layer.trainable_weights) == 1


def test_config_round_trip():
    layer = SharedEmbedding(10, 4, name="shared")
    clone = SharedEmbedding.from_config(layer.get_config())
    assert (clone.vocabulary_size, clone.hidden_dim, clone.name) == (
        10, 4, "shared")
