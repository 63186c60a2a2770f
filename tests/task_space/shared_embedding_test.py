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


def test_lookup_reads_the_matrix_instead_of_gathering_from_the_variable():
    # A ResourceGather puts the variable in copy-on-read mode, after which
    # each read for the output projection copies the whole matrix.
    layer = SharedEmbedding(10, 4)
    layer.build()

    @tf.function(autograph=False)
    def embed_and_project(ids):
        return layer.project(layer(ids))

    graph = embed_and_project.get_concrete_function(
        tf.TensorSpec([None, None], tf.int32)).graph
    types = {op.type for op in graph.get_operations()}
    assert "ResourceGather" not in types
    assert "GatherV2" in types


def test_gradient_of_a_lookup_reaches_only_its_rows():
    layer = SharedEmbedding(6, 3)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(tf.constant([[1, 4]])))
    gradient = tf.convert_to_tensor(tape.gradient(loss, layer.embeddings))
    rows = np.abs(gradient.numpy()).sum(axis=1)
    assert rows[1] > 0 and rows[4] > 0
    assert rows[[0, 2, 3, 5]].sum() == 0
