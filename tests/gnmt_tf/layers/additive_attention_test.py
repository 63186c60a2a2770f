import numpy as np
import tensorflow as tf

from gnmt_tf.models.gnmt.additive_attention import AdditiveAttention


def test_masked_softmax_and_single_step():
    layer = AdditiveAttention(5)
    memory = tf.random.normal([2, 4, 3], seed=2)
    mask = tf.constant([[True, True, True, False], [True, False, False, False]])
    keys = layer.project_memory(memory)
    query = tf.random.normal([2, 6, 7], seed=3)
    context, probs = layer(query, memory, keys, mask)
    assert context.shape == (2, 6, 3) and probs.shape == (2, 6, 4)
    np.testing.assert_allclose(probs.numpy().sum(-1), 1.0, atol=1e-6)
    assert (probs.numpy()[0, :, 3] == 0).all() and (probs.numpy()[1, :, 1:] == 0).all()
    np.testing.assert_allclose(context.numpy()[1], np.repeat(memory.numpy()[1, :1], 6, 0),
                               atol=1e-6)
    step_context, step_probs = layer(query[:, 2], memory, keys, mask)
    np.testing.assert_allclose(step_probs.numpy(), probs.numpy()[:, 2], atol=1e-6)
    np.testing.assert_allclose(step_context.numpy(), context.numpy()[:, 2], atol=1e-6)
