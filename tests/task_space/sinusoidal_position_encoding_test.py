"""Tests for gnmt_tf.models.task_space.sinusoidal_position_encoding."""

import math

import numpy as np

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.models.task_space.sinusoidal_position_encoding import SinusoidalPositionEncoding


def test_values_and_shapes():
    layer = SinusoidalPositionEncoding(8)
    table = layer(tf.range(5)).numpy()  # [5, 8]
    assert table.shape == (5, 8)
    np.testing.assert_allclose(table[0], [0] * 4 + [1] * 4, atol=1e-7)
    np.testing.assert_allclose(table[3, 0], math.sin(3.0), atol=1e-6)
    np.testing.assert_allclose(table[3, 5], math.cos(3 / 10000 ** 0.25),
                               atol=1e-6)
    # Per-row positions (decoding time) give the same rows.
    rows = layer(tf.constant([3, 0])).numpy()
    np.testing.assert_allclose(rows, table[[3, 0]], atol=1e-7)


def test_config_round_trip():
    layer = SinusoidalPositionEncoding(8, max_wavelength=100.0)
    clone = SinusoidalPositionEncoding.from_config(layer.get_config())
    assert clone.max_wavelength == 100.0 and clone.hidden_dim == 8
