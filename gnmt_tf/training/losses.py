"""Masked, label-smoothed cross-entropy for 0-padded targets."""

import tensorflow as tf
import tf_keras as keras


class MaskedCrossEntropy(keras.losses.Loss):
    """Token-level cross-entropy averaged over non-padding labels.

    With label smoothing eps, the target distribution puts 1 - eps on the label
    and eps spread uniformly over the vocabulary; computed from log-softmax
    directly, never materialising one-hot targets.

    Args:
      label_smoothing: float in [0, 1).
      pad_id: int. Labels equal to it are ignored.

    Call arguments:
      y_true: int `[B, T]` labels.
      y_pred: float `[B, T, V]` logits.

    Returns:
      A scalar: the mean loss per target token.
    """

    def __init__(self, label_smoothing=0.0, pad_id=0, name="masked_cross_entropy",
                 **kwargs):
        super().__init__(name=name, reduction=keras.losses.Reduction.NONE, **kwargs)
        self.label_smoothing = label_smoothing
        self.pad_id = pad_id

    def call(self, y_true, y_pred):
        y_true = tf.cast(y_true, tf.int32)
        log_probs = tf.nn.log_softmax(tf.cast(y_pred, tf.float32))
        nll = -tf.gather(log_probs, y_true, batch_dims=2)  # [B, T]
        if self.label_smoothing:
            smooth = -tf.reduce_mean(log_probs, axis=-1)
            nll = (1.0 - self.label_smoothing) * nll + self.label_smoothing * smooth
        mask = tf.cast(tf.not_equal(y_true, self.pad_id), tf.float32)
        return tf.reduce_sum(nll * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)

    def get_config(self):
        config = super().get_config()
        config.update({"label_smoothing": self.label_smoothing,
                       "pad_id": self.pad_id})
        return config


class MaskedAccuracy(keras.metrics.Mean):
    """Fraction of non-padding target tokens predicted exactly (argmax)."""

    def __init__(self, pad_id=0, name="token_accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.pad_id = pad_id

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = tf.cast(y_true, tf.int32)
        correct = tf.cast(tf.equal(tf.argmax(y_pred, -1, output_type=tf.int32),
                                   y_true), tf.float32)
        mask = tf.cast(tf.not_equal(y_true, self.pad_id), tf.float32)
        return super().update_state(correct, sample_weight=mask)


class TargetTokens(keras.metrics.Sum):
    """Running count of non-padding target tokens (for throughput logging)."""

    def __init__(self, pad_id=0, name="target_tokens", **kwargs):
        super().__init__(name=name, **kwargs)
        self.pad_id = pad_id

    def update_state(self, y_true, y_pred, sample_weight=None):
        mask = tf.cast(tf.not_equal(tf.cast(y_true, tf.int32), self.pad_id),
                       tf.float32)
        return super().update_state(tf.reduce_sum(mask))
