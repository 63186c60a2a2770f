import numpy as np
import tensorflow as tf

from gnmt_tf.models.gnmt.lstm import LSTM


def test_sequence_equals_steps():
    layer = LSTM(6)
    x = tf.random.normal([3, 5, 4], seed=1)
    full = layer(x).numpy()
    state = layer.zero_state(3)
    for t in range(5):
        h, state = layer.step(x[:, t], state)
        np.testing.assert_allclose(h.numpy(), full[:, t], atol=1e-6)


def test_cell_clip_bounds_cell_state():
    clip = tf.Variable(0.05, trainable=False)
    layer = LSTM(4, cell_clip=clip)
    x = 10.0 * tf.ones([2, 8, 3])
    layer(x)
    state = layer.zero_state(2)
    for _ in range(8):
        _, state = layer.step(x[:, 0], state)
    assert np.abs(state[1].numpy()).max() <= 0.05 + 1e-7
    clip.assign(100.0)
    for _ in range(8):
        _, state = layer.step(x[:, 0], state)
    assert np.abs(state[1].numpy()).max() > 0.05


def test_forget_bias_is_one():
    layer = LSTM(3)
    layer.build([None, None, 2])
    np.testing.assert_array_equal(layer.bias.numpy()[3:6], 1.0)
