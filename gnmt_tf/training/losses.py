"""Masked, label-smoothed cross-entropy for 0-padded targets."""

import tensorflow as tf
import tf_keras as keras


class MaskedCrossEntropy(keras.losses.Loss):
    """Token-level cross-entropy averaged over non-padding labels.

    With label smoothing eps, the target distribution puts 1 - eps on the label
    and eps spread uniformly over the vocabulary:
    `loss = logsumexp(z) - (1 - eps) * z[label] - eps * mean(z)` per token,
    with its gradient written out (`smoothed_cross_entropy`), never
    materialising one-hot targets.

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
        mask = tf.cast(tf.not_equal(y_true, self.pad_id), tf.float32)
        weights = mask / tf.maximum(tf.reduce_sum(mask), 1.0)
        return smoothed_cross_entropy(tf.cast(y_pred, tf.float32), y_true,
                                      weights, self.label_smoothing)

    def get_config(self):
        config = super().get_config()
        config.update({"label_smoothing": self.label_smoothing,
                       "pad_id": self.pad_id})
        return config


def smoothed_cross_entropy(logits, labels, weights, label_smoothing):
    """`sum(weights * loss)` of label-smoothed cross-entropy, and its
    gradient with respect to `logits`.

    `loss = logsumexp(z) - (1 - eps) * z[label] - eps * mean(z)` (the
    cross-entropy against `1 - eps` on the label plus `eps` spread
    uniformly), and `d loss / dz = softmax(z) - (1 - eps) * onehot(label)
    - eps / V`.

    Why by hand: over `[tokens, vocabulary]` every op is a pass through
    memory, and the autodiff of `log_softmax` + `gather` + `reduce_mean`
    makes about ten of them (the gather's gradient a dense scatter, the
    log-softmax's a second exp); here the forward pass keeps `exp(z - max)`
    and the backward pass is one scale and a scatter at the labels. In
    training this halves the loss's share of a step
    (`benchmarks/training_speed.py`).

    Args:
      logits: float32 `[..., V]`.
      labels: int32 `[...]`.
      weights: float32 `[...]`, e.g. the non-padding mask over its sum.
      label_smoothing: float in [0, 1).

    Returns:
      A float32 scalar.
    """
    eps = float(label_smoothing)
    labels = tf.cast(labels, tf.int32)

    @tf.custom_gradient
    def loss(logits):
        vocabulary = tf.shape(logits)[-1]
        peak = tf.stop_gradient(tf.reduce_max(logits, -1, keepdims=True))
        exp = tf.exp(logits - peak)
        total = tf.reduce_sum(exp, -1, keepdims=True)
        log_norm = tf.squeeze(peak + tf.math.log(total), -1)
        per_token = log_norm - (1.0 - eps) * tf.gather(
            logits, labels, batch_dims=labels.shape.rank)
        if eps:
            per_token -= eps * tf.reduce_mean(logits, -1)

        def grad(upstream):
            scale = tf.expand_dims(upstream * weights, -1)  # [..., 1]
            gradient = exp * (scale / total)
            if eps:
                gradient -= scale * (eps / tf.cast(vocabulary, tf.float32))
            # Subtract (1 - eps) * scale at each label: a scatter into the
            # flat gradient (static shapes, so XLA compiles it too).
            shape = tf.shape(gradient)
            flat = tf.reshape(gradient, [-1])
            rows = tf.range(tf.size(labels))
            at_label = rows * vocabulary + tf.reshape(labels, [-1])
            flat = tf.tensor_scatter_nd_sub(
                flat, at_label[:, None],
                tf.reshape(scale, [-1]) * (1.0 - eps))
            return tf.reshape(flat, shape)

        return tf.reduce_sum(per_token * weights), grad

    return loss(logits)


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
