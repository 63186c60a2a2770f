"""Tests for gnmt_tf.models.task_space.cached_multi_head_attention."""

import numpy as np

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.models.task_space.cached_multi_head_attention import CachedMultiHeadAttention
from gnmt_tf.models.task_space.cached_multi_head_attention import one_query_products


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


def _one_query_inputs(seed):
    generator = tf.random.Generator.from_seed(seed)
    query = generator.normal([3, 1, 2, 4])  # [B, 1, H, Dh]
    key = generator.normal([3, 5, 2, 4])
    value = generator.normal([3, 5, 2, 4])
    mask = tf.constant([[[True] * 5], [[True] * 2 + [False] * 3],
                        [[False] + [True] * 4]])  # [B, 1, S]
    return query, key, value, mask


def test_one_query_products_match_the_einsums():
    # A decoding step's attention (products and sums) against the full
    # pass's einsums, on the same projected inputs: the same arithmetic
    # but for the order of the sums, so equal to a few float32 ulps.
    layer = CachedMultiHeadAttention(num_heads=2, head_dim=4)
    layer(tf.zeros([1, 1, 8]), tf.zeros([1, 1, 8]))  # builds it
    query, key, value, mask = _one_query_inputs(0)
    outputs = {}
    for on in (False, True):
        layer.one_query_products = on
        outputs[on] = layer.attend(query, key, value, mask=mask)
    (einsum_out, einsum_p), (out, p) = outputs[False], outputs[True]
    assert p.shape == einsum_p.shape == (3, 2, 1, 5)
    eps = np.finfo(np.float32).eps
    np.testing.assert_allclose(p, einsum_p, rtol=0, atol=64 * eps)
    np.testing.assert_allclose(out, einsum_out, rtol=0,
                               atol=64 * eps * np.abs(einsum_out).max())
    assert np.all(p.numpy()[1, :, :, 2:] == 0.0)  # masked: exactly zero
    assert np.all(p.numpy()[2, :, :, 0] == 0.0)


def test_one_query_products_only_for_one_float32_query():
    # Only where turned on (a TFLite export), and there longer queries (the full pass) and bfloat16 keep the einsums: a
    # query the products path cannot take would fail in it.
    calls = []
    layers = {}
    for policy in ("float32", "mixed_bfloat16"):
        layer = CachedMultiHeadAttention(num_heads=2, head_dim=4,
                                         dtype=policy)
        layer(tf.zeros([1, 1, 8]), tf.zeros([1, 1, 8]))
        layer._attend_one_query = (
            lambda *args: calls.append(args) or (None, None))
        layers[policy] = layer
    query, key, value, mask = _one_query_inputs(1)
    layers["float32"].attend(query, key, value, mask=mask)
    assert not calls  # off by default (TensorFlow keeps the einsums)
    with one_query_products():
        layers["float32"].attend(query, key, value, mask=mask)
        assert len(calls) == 1
        layers["float32"].attend(tf.concat([query, query], 1), key, value,
                                 mask=mask)
        layers["mixed_bfloat16"].attend(
            tf.cast(query, tf.bfloat16), tf.cast(key, tf.bfloat16),
            tf.cast(value, tf.bfloat16), mask=mask)
    assert len(calls) == 1
    assert not CachedMultiHeadAttention.one_query_products  # restored
