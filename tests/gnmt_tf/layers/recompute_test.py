"""Tests for gnmt_tf.layers.recompute: with `recompute=True` (gradient
checkpointing around every layer) a training step computes the same loss
and gradients as without, for GNMT and the task-space Transformer."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from gnmt_tf.config import GNMTConfig
from gnmt_tf.layers.recompute import checkpointed
from gnmt_tf.models.gnmt.model import GNMT
from gnmt_tf.models.task_space.task_space_transformer import TaskSpaceTransformer
from gnmt_tf.models.task_space.config import TransformerConfig

SOURCE = tf.constant([[5, 6, 7, 8, 3], [9, 10, 3, 0, 0]])
TARGET_IN = tf.constant([[2, 11, 12, 13], [2, 14, 15, 0]])
TARGET_OUT = tf.constant([[11, 12, 13, 3], [14, 15, 3, 0]])
TASK = {"src_lang": tf.constant([0, 0]), "tgt_lang": tf.constant([1, 1]),
        "tags": tf.constant([[1, 0], [0, 1]])}


def _gnmt(recompute, input_feeding=False):
    config = GNMTConfig(vocabulary_size=20, num_encoder_layers=3,
                        num_decoder_layers=3, hidden_dim=16, attention_dim=8,
                        dropout=0.0, recompute=recompute,
                        input_feeding=input_feeding)
    return GNMT(config), 6


def _gnmt_input_feeding(recompute):
    return _gnmt(recompute, input_feeding=True)


def _transformer(recompute):
    config = TransformerConfig(
        vocabulary_size=20, num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=16, dropout=0.0, max_sequence_length=16,
        scene_tags=("a", "b"), recompute=recompute)
    return TaskSpaceTransformer(config), 4


def _loss_and_gradients(model, inputs):
    with tf.GradientTape() as tape:
        logits = model(inputs, training=True)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(TARGET_OUT, logits))
    # Keyed by position: both models list their variables in one order.
    gradients = tape.gradient(loss, model.trainable_variables)
    return loss, dict(enumerate(gradients))


@pytest.mark.parametrize("build", [_gnmt, _gnmt_input_feeding, _transformer])
@pytest.mark.parametrize(
    "compiled", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_recompute_gives_the_same_gradients(build, compiled):
    keras.utils.set_random_seed(0)
    inputs = {"source_ids": SOURCE, "target_in_ids": TARGET_IN, **TASK}
    plain, depth = build(False)
    plain(inputs)  # builds the variables
    recomputing, _ = build(True)
    recomputing(inputs)
    recomputing.set_weights(plain.get_weights())
    run = tf.function if compiled else (lambda f: f)
    loss, grads = run(lambda: _loss_and_gradients(plain, inputs))()
    loss_r, grads_r = run(lambda: _loss_and_gradients(recomputing, inputs))()
    # Recomputation runs the same ops again; allow float32 rounding that
    # grows with depth (e.g. another kernel choice for a shape).
    rtol = 1e-5 * depth
    np.testing.assert_allclose(loss_r, loss, rtol=rtol)
    assert set(grads) == set(grads_r)
    assert len(grads) == len(plain.trainable_variables)
    dense = {name: tf.convert_to_tensor(g).numpy()
             for name, g in grads.items()}
    # Rounding noise is relative to the largest gradient (some are 0 up to it).
    scale = max(np.abs(g).max() for g in dense.values())
    for name, gradient in dense.items():
        assert grads_r[name] is not None, name
        np.testing.assert_allclose(
            tf.convert_to_tensor(grads_r[name]), gradient, rtol=rtol,
            atol=rtol * scale, err_msg=str(name))


def test_checkpointed_recomputes_in_the_backward_pass():
    calls = []
    weight = tf.Variable(3.0)

    def layer(x):
        calls.append(1)
        return tf.sin(x * weight)

    x = tf.constant(0.5)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = checkpointed(layer, True)(x)
    assert len(calls) == 1
    dx, dw = tape.gradient(y, [x, weight])
    assert len(calls) == 2  # ran again for the gradient
    np.testing.assert_allclose(dx, 3.0 * np.cos(1.5), rtol=1e-6)
    np.testing.assert_allclose(dw, 0.5 * np.cos(1.5), rtol=1e-6)
    assert checkpointed(layer, False) is layer
