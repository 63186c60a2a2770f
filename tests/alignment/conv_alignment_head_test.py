"""Tests for gnmt_tf.alignment.conv_alignment_head."""

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.alignment.conv_alignment_head import (ConvAlignmentHead, alignment_loss,
                                                   attention_image, pixel_mask,
                                                   sample_loss_weights)


def _masks(source_lengths, target_lengths, s, t):
    source = tf.sequence_mask(source_lengths, s)
    target = tf.sequence_mask(target_lengths, t)
    return source, target


@pytest.mark.parametrize("shape, channels", [((2, 5, 7), 1),
                                             ((2, 6, 5, 7), 6)])
def test_head_shapes_and_masking(shape, channels):
    attention = tf.random.uniform(shape)
    source_mask, target_mask = _masks([7, 4], [5, 3], 7, 5)
    head = ConvAlignmentHead(filters=(4, 4))
    probabilities, logits = head(attention, source_mask=source_mask,
                                 target_mask=target_mask, return_logits=True)
    assert probabilities.shape == (2, 5, 7) and logits.shape == (2, 5, 7)
    assert attention_image(attention).shape == (2, 5, 7, channels)
    p = probabilities.numpy()
    assert np.all(p[1, 3:, :] == 0) and np.all(p[1, :, 4:] == 0)
    assert np.all(p[0] > 0) and np.all(p[1, :3, :4] > 0)
    # Conv kernels: 2C attention channels, mask and 3 position channels.
    assert head.convolutions[0].kernel.shape[-2] == 2 * channels + 4
    plain = ConvAlignmentHead(filters=(4,), position_features=False)
    plain(attention)
    assert plain.convolutions[0].kernel.shape[-2] == 2 * channels + 1


def test_padding_does_not_leak_into_valid_pixels():
    head = ConvAlignmentHead(filters=(4,), kernel_size=3)
    attention = tf.random.uniform([1, 4, 5])
    source_mask, target_mask = _masks([3], [2], 5, 4)
    noisy = tf.tensor_scatter_nd_update(
        attention, [[0, 3, 4], [0, 0, 4], [0, 2, 0]], [9.0, 9.0, 9.0])
    a = head(attention, source_mask=source_mask, target_mask=target_mask)
    b = head(noisy, source_mask=source_mask, target_mask=target_mask)
    np.testing.assert_allclose(a.numpy()[0, :2, :3], b.numpy()[0, :2, :3],
                               rtol=1e-6)


def test_padded_pixels_give_zero_loss_and_gradient():
    head = ConvAlignmentHead(filters=(4,))
    attention = tf.Variable(tf.random.uniform([2, 4, 5]))
    source_mask, target_mask = _masks([5, 3], [4, 2], 5, 4)
    valid = pixel_mask(source_mask, target_mask)
    links = np.zeros([2, 4, 5], np.float32)
    links[0, 0, 0] = links[0, 1, 1] = links[1, 0, 0] = links[1, 1, 2] = 1
    # A "link" in the padding must be ignored too.
    links[1, 3, 4] = 1
    with tf.GradientTape(persistent=True) as tape:
        _, logits = head(attention, source_mask=source_mask,
                         target_mask=target_mask, return_logits=True)
        loss = alignment_loss(links, logits, valid, training=True,
                              negative_ratio=None, label_rate=1.0)
    grad_logits = tape.gradient(loss, logits).numpy()
    grad_attention = tape.gradient(loss, attention).numpy()
    pad = ~valid.numpy()
    assert np.all(grad_logits[pad] == 0)
    assert np.all(grad_attention[pad] == 0)
    assert np.any(grad_logits[~pad] != 0)
    # Huge logits on padded pixels change nothing.
    shifted = tf.where(valid, logits, 1e4)
    same = alignment_loss(links, shifted, valid, training=False)
    np.testing.assert_allclose(
        same.numpy(), alignment_loss(links, logits, valid,
                                     training=False).numpy(), rtol=1e-6)


def _bce(label, logit):
    return float(np.log1p(np.exp(-logit)) if label else
                 np.log1p(np.exp(logit)))


def test_loss_on_hand_made_map():
    links = np.array([[[1, 0, 0], [0, 1, 0]]], np.float32)  # [1, 2, 3]
    logits = tf.constant([[[2.0, -1.0, 0.0], [-3.0, 1.0, 0.5]]])
    valid = tf.constant([[[True, True, False], [True, True, False]]])
    full = alignment_loss(links, logits, valid, training=False,
                          positive_weight=2.0).numpy()
    expected = (2 * _bce(1, 2.0) + _bce(0, -1.0) + _bce(0, -3.0)
                + 2 * _bce(1, 1.0)) / 6.0
    assert full == pytest.approx(expected, rel=1e-5)


def test_negative_sampling_and_label_sampling():
    tf.random.set_seed(0)
    t, s = 40, 50
    links = np.zeros([4, t, s], np.float32)
    for k in range(t):
        links[:, k, k] = 1
    valid = tf.ones([4, t, s], tf.bool)
    weights = sample_loss_weights(links, valid, negative_ratio=3.0,
                                  label_rate=0.5).numpy()
    positives = links > 0
    kept_positive = (weights[positives] > 0).mean()
    kept_negatives = (weights[~positives] > 0).sum()
    assert 0.35 < kept_positive < 0.65
    # About three negatives per kept positive.
    ratio = kept_negatives / (weights[positives] > 0).sum()
    assert 2.4 < ratio < 3.6
    # Kept weights are exactly 1 (no positive_weight), dropped are 0.
    assert set(np.unique(weights)) <= {0.0, 1.0}
    # With everything kept, the sampled loss equals the full one.
    logits = tf.random.normal([4, t, s])
    a = alignment_loss(links, logits, valid, training=True,
                       negative_ratio=None, label_rate=1.0)
    b = alignment_loss(links, logits, valid, training=False)
    assert a.numpy() == pytest.approx(b.numpy(), rel=1e-6)


def test_hard_negatives_are_always_kept():
    links = np.zeros([1, 3, 4], np.float32)
    links[0, 0, 0] = 1
    valid = tf.ones([1, 3, 4], tf.bool)
    hard = np.zeros([1, 3, 4], bool)
    hard[0, 2, 3] = hard[0, 1, 1] = True
    weights = sample_loss_weights(links, valid, negative_ratio=1e-9,
                                  label_rate=1.0, hard_negatives=hard).numpy()
    assert weights[0, 0, 0] == 1 and weights[0, 2, 3] == 1
    assert weights[0, 1, 1] == 1 and weights.sum() == 3


def test_bad_arguments():
    with pytest.raises(ValueError, match="kernel_size"):
        ConvAlignmentHead(kernel_size=2)
    with pytest.raises(ValueError, match="attention"):
        attention_image(tf.zeros([2, 3]))


def test_config_round_trip():
    head = ConvAlignmentHead(filters=(3, 5), kernel_size=5, prior=0.2)
    clone = ConvAlignmentHead.from_config(head.get_config())
    assert clone.filters == (3, 5) and clone.kernel_size == 5
