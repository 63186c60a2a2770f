"""A convolutional alignment head over cross-attention maps (Ctrip MT, 2020).

The decoder's cross-attention maps of every layer and head are stacked as the
channels of an image whose rows are target positions and whose columns are
source positions. A few same-padded `Conv2D` layers and a per-pixel logistic
output turn that image into alignment probabilities `p(t ~ s)`, trained on
word alignments from fast_align (see `gnmt_tf.alignment.aligned_model` for joint
training and `gnmt_tf.alignment.placeholder_translation` for restoring placeholders
through it).

Shapes: `B` batch, `T` target length, `S` source length, `C` channels (GNMT:
1, its single attention; the Transformer: `L*H`, all layers and heads).

Our reading of the Ctrip recipe for the loss (the description is short, so
this is an interpretation, not a transcription):

- The link matrix is very sparse (about one link per target row), so a plain
  per-pixel cross-entropy is dominated by easy negatives. Each training step
  draws a fresh *random mask over the negative pixels*: every negative pixel
  is kept with probability `negative_ratio * positives / negatives` of its
  batch, so about `negative_ratio` negatives are kept per positive.
- fast_align labels are noisy, so the positives themselves are *randomly
  sampled*: each is kept with probability `label_rate` and a dropped positive
  is ignored for the step (neither positive nor negative).
- Our addition (hard-negative mining, on by default): negatives the head
  currently predicts as links (probability > 0.5) are always kept, so the
  confusions that matter (e.g. a placeholder row against the column of
  another placeholder of the same type) are not left to chance.
- The kept pixels form a weighted binary cross-entropy, positives weighted
  by `positive_weight`, normalised by the total weight, so the loss is an
  average per kept pixel. Padded pixels (outside either length) have weight
  zero: they contribute neither loss nor gradient. At evaluation
  (`training=False`) nothing is sampled and every valid pixel counts.
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import math

import tensorflow as tf
import tf_keras as keras


def attention_image(attention):
    """Cross-attention as an image `[B, T, S, C]` (float32).

    Accepts GNMT's `[B, T, S]` (one channel) or the Transformer's
    `[B, L*H, T, S]`.
    """
    attention = tf.cast(attention, tf.float32)
    if attention.shape.rank == 3:
        return attention[..., None]
    if attention.shape.rank == 4:
        return tf.transpose(attention, [0, 2, 3, 1])
    raise ValueError(f"attention must be [B, T, S] or [B, C, T, S], got "
                     f"shape {attention.shape}")


def pixel_mask(source_mask, target_mask):
    """`source_mask [B, S]`, `target_mask [B, T]` (bool) -> bool `[B, T, S]`."""
    return tf.logical_and(tf.cast(target_mask, tf.bool)[:, :, None],
                          tf.cast(source_mask, tf.bool)[:, None, :])


@keras.utils.register_keras_serializable(package="alignment")
class ConvAlignmentHead(keras.layers.Layer):
    """Alignment probabilities from stacked cross-attention maps.

    The input image gets, per attention channel, the attention itself and
    the attention divided by its column maximum over target positions (the
    "reverse" view: which target row a source token attends most to), plus
    the validity mask as one more channel, so that a same-padded
    convolution can tell the sentence border from a low attention, and
    (with `position_features`) three position channels: `t / T`, `s / S`
    (relative to each sentence's lengths) and `|t / T - s / S|`, from
    which the head can learn a diagonal prior. Padded pixels are zeroed
    before the first convolution and after each; probabilities are zero
    outside the lengths.

    Args:
        filters: sequence of int. Channels of the hidden `Conv2D` layers
            (ReLU); one layer per entry.
        kernel_size: int. Odd square kernel size of the hidden layers.
        prior: float in (0, 1). Initial output probability (sets the output
            bias), about the fraction of linked pixels.
        position_features: bool. Add the relative-position channels.
        **kwargs: passed to `keras.layers.Layer`.

    Call arguments:
        attention: `[B, T, S]` or `[B, C, T, S]` attention probabilities.
        source_mask: bool `[B, S]` (True = real token), or None (all real).
        target_mask: bool `[B, T]`, or None.
        return_logits: bool. Also return the pre-sigmoid logits.

    Returns:
        float32 probabilities `[B, T, S]` (0 on padded pixels), or
        `(probabilities, logits)` with `return_logits=True`.

    Example:
    ```python
    head = ConvAlignmentHead(filters=(16, 16))
    probabilities = head(attention, source_mask=src_ids != 0,
                         target_mask=labels != 0)
    ```
    """

    def __init__(self, filters=(32, 32), kernel_size=3, prior=0.1,
                 position_features=True, **kwargs):
        super().__init__(**kwargs)
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd, got {kernel_size}")
        if not 0.0 < prior < 1.0:
            raise ValueError(f"prior must be in (0, 1), got {prior}")
        self.filters = tuple(int(f) for f in filters)
        self.kernel_size = kernel_size
        self.prior = prior
        self.position_features = bool(position_features)
        self.convolutions = [
            keras.layers.Conv2D(f, kernel_size, padding="same",
                                activation="relu", name=f"conv_{i}")
            for i, f in enumerate(self.filters)]
        self.output_layer = keras.layers.Conv2D(
            1, 1, name="logit", bias_initializer=keras.initializers.Constant(
                math.log(prior / (1.0 - prior))))

    def build(self, input_shape):
        # input_shape: of `attention`; channels of the image fed to the convs.
        input_shape = tf.TensorShape(input_shape)
        channels = 1 if input_shape.rank == 3 else input_shape[1]
        if channels is None:
            raise ValueError("the number of attention channels must be known")
        extra = 4 if self.position_features else 1
        shape = [None, None, None, 2 * channels + extra]
        for layer in self.convolutions + [self.output_layer]:
            layer.build(shape)
            shape = [None, None, None, layer.filters]
        super().build(input_shape)

    def call(self, attention, source_mask=None, target_mask=None,
             return_logits=False):
        image = attention_image(attention)  # [B, T, S, C]
        shape = tf.shape(image)
        if source_mask is None:
            source_mask = tf.ones(tf.stack([shape[0], shape[2]]), tf.bool)
        if target_mask is None:
            target_mask = tf.ones(shape[:2], tf.bool)
        valid = tf.cast(pixel_mask(source_mask, target_mask), tf.float32)
        image *= valid[..., None]
        column_max = tf.reduce_max(image, axis=1, keepdims=True)
        features = [image, image / (column_max + 1e-6), valid[..., None]]
        if self.position_features:
            features += _position_channels(source_mask, target_mask, valid)
        x = tf.concat(features, axis=-1)
        for layer in self.convolutions:
            x = layer(x) * valid[..., None]
        logits = self.output_layer(x)[..., 0]  # [B, T, S]
        probabilities = tf.sigmoid(logits) * valid
        if return_logits:
            return probabilities, logits
        return probabilities

    def get_config(self):
        config = super().get_config()
        config.update({"filters": list(self.filters),
                       "kernel_size": self.kernel_size, "prior": self.prior,
                       "position_features": self.position_features})
        return config


def _position_channels(source_mask, target_mask, valid):
    """`[t/T, s/S, |t/T - s/S|]` channels `[B, T, S, 1]` each, 0 on padding."""
    def relative(mask):
        mask = tf.cast(mask, tf.float32)
        length = tf.reduce_sum(mask, axis=1, keepdims=True)
        position = tf.cumsum(mask, axis=1, exclusive=True)
        return position / tf.maximum(length - 1.0, 1.0)  # [B, N] in [0, 1]

    target = relative(target_mask)[:, :, None] * valid
    source = relative(source_mask)[:, None, :] * valid
    return [target[..., None], source[..., None],
            tf.abs(target - source)[..., None]]


def sample_loss_weights(links, valid, negative_ratio=3.0, label_rate=0.9,
                        positive_weight=1.0, hard_negatives=None):
    """Per-pixel loss weights with Ctrip-style sampling (module docstring).

    Args:
        links: `[B, T, S]`, 1 where linked (any dtype).
        valid: bool `[B, T, S]`, True inside both lengths.
        negative_ratio: float or None. Expected kept negatives per kept
            positive; None keeps every negative.
        label_rate: float in (0, 1]. Probability of keeping each positive.
        positive_weight: float. Weight of a kept positive (negatives: 1).
        hard_negatives: optional bool `[B, T, S]`; negatives marked here are
            always kept.

    Returns:
        float32 `[B, T, S]` weights, 0 on padded and dropped pixels.
    """
    valid = tf.cast(valid, tf.float32)
    positive = tf.cast(links > 0, tf.float32) * valid
    negative = valid - positive
    keep_positive = positive
    if label_rate < 1.0:
        draw = tf.random.uniform(tf.shape(positive))
        keep_positive = positive * tf.cast(draw < label_rate, tf.float32)
    keep_negative = negative
    if negative_ratio is not None:
        rate = tf.minimum(1.0, negative_ratio * tf.maximum(
            tf.reduce_sum(keep_positive), 1.0) / tf.maximum(
                tf.reduce_sum(negative), 1.0))
        draw = tf.random.uniform(tf.shape(negative))
        keep_negative = negative * tf.cast(draw < rate, tf.float32)
        if hard_negatives is not None:
            keep_negative = tf.maximum(
                keep_negative, negative * tf.cast(hard_negatives, tf.float32))
    return positive_weight * keep_positive + keep_negative


def alignment_loss(links, logits, valid, training=True, negative_ratio=3.0,
                   label_rate=0.9, positive_weight=1.0, mine_hard_negatives=True):
    """Weighted, sampled binary cross-entropy of the head's logits.

    Args:
        links: `[B, T, S]` gold links (1 = linked).
        logits: float `[B, T, S]` from `ConvAlignmentHead(...,
            return_logits=True)`.
        valid: bool `[B, T, S]` (`pixel_mask`).
        training: bool. Sample negatives and labels (else weight every valid
            pixel, positives by `positive_weight`).
        negative_ratio, label_rate, positive_weight: see
            `sample_loss_weights`.
        mine_hard_negatives: bool. When sampling, always keep negatives
            with a logit above 0 (predicted links).

    Returns:
        float32 scalar: the weighted mean cross-entropy over kept pixels
        (0 when none is kept).
    """
    labels = tf.cast(links > 0, tf.float32)
    if training:
        hard = logits > 0 if mine_hard_negatives else None
        weights = sample_loss_weights(links, valid, negative_ratio,
                                      label_rate, positive_weight, hard)
    else:
        weights = sample_loss_weights(links, valid, None, 1.0,
                                      positive_weight)
    weights = tf.stop_gradient(weights)
    logits = tf.cast(logits, tf.float32)
    # Evaluated on every pixel, so keep padded logits finite before weighting.
    cross_entropy = tf.nn.sigmoid_cross_entropy_with_logits(labels, logits)
    cross_entropy = tf.where(weights > 0, cross_entropy, 0.0)
    return tf.reduce_sum(weights * cross_entropy) / tf.maximum(
        tf.reduce_sum(weights), 1e-9)
