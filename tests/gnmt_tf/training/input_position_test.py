"""A resumed run goes on in its input stream where the killed one stopped
(`gnmt_tf.training.input_position`): every element once, in the order of
an uninterrupted run, through `trainer.fit` and a real checkpoint."""

import dataclasses

import numpy as np
import pytest

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

ELEMENTS = 200


def _counting_model():
    """A model whose training step counts how often it saw each element
    (a variable, so it is checkpointed with the model) and records the
    order of the batches' first elements."""
    import tensorflow as tf
    import tf_keras as keras

    from gnmt_tf.seq2seq_model import Seq2SeqModelBase

    class Counting(Seq2SeqModelBase, keras.Model):
        def __init__(self):
            super().__init__()
            self.weight = tf.Variable(1.0)
            self.seen = tf.Variable(tf.zeros([ELEMENTS]), trainable=False)
            self.order = tf.Variable(tf.zeros([ELEMENTS]), trainable=False)

        def dummy_inputs(self):
            return tf.constant([0], tf.int64)

        def call(self, inputs):
            return self.weight * tf.cast(inputs, tf.float32)

        def train_step(self, data):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(self(data)) * 0.0 + self.weight
            self.optimizer.apply_gradients(zip(
                tape.gradient(loss, [self.weight]), [self.weight]))
            self.seen.scatter_nd_add(data[:, None], tf.ones_like(
                data, tf.float32))
            step = tf.cast(self.optimizer.iterations, tf.int32) - 1
            self.order.scatter_nd_update([[step]], [tf.cast(data[0],
                                                            tf.float32)])
            return {"loss": loss}

    model = Counting()
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    return model


def _dataset():
    import tensorflow as tf

    # A shuffle buffer and a repeat: what a resumed iterator must bring back.
    return (tf.data.Dataset.range(ELEMENTS).shuffle(64, seed=3)
            .repeat().batch(4).prefetch(2))


def _fit(model_dir, steps):
    from gnmt_tf.config import TrainConfig
    from gnmt_tf.training import trainer

    config = dataclasses.replace(TrainConfig(), train_steps=steps,
                                 checkpoint_every=10, bleu_every=0,
                                 max_minutes=None)
    model = _counting_model()
    trainer.fit(model, config, _dataset(), model_dir, log_every=1000)
    return model.seen.numpy(), model.order.numpy()


def test_resumed_run_reads_on_where_the_killed_one_stopped(tmp_path, capsys):
    whole_seen, whole_order = _fit(tmp_path / "whole", 40)
    _fit(tmp_path / "killed", 20)  # "killed" after the step-20 checkpoint
    seen, order = _fit(tmp_path / "killed", 40)
    assert "input stream resumed at step 20" in capsys.readouterr().err
    # 40 steps of 4 = 160 of the 200 elements, each once, in the same order.
    assert sorted(set(whole_seen)) == [0.0, 1.0]
    np.testing.assert_array_equal(seen, whole_seen)
    np.testing.assert_array_equal(order, whole_order)


def test_without_a_saved_position_the_stream_starts_over(tmp_path, capsys):
    """A model directory from before (no `checkpoints/input`) resumes as it
    always did, saying so: the stream starts again."""
    import shutil

    _fit(tmp_path / "old", 20)
    shutil.rmtree(tmp_path / "old" / "checkpoints" / "input")
    seen, _ = _fit(tmp_path / "old", 40)
    assert "input stream starts again" in capsys.readouterr().err
    assert seen.max() == 2.0  # the first 20 steps' elements, read twice
