import numpy as np
import tensorflow as tf

from gnmt_tf.training.losses import MaskedAccuracy, MaskedCrossEntropy, TargetTokens


def _reference(labels, logits, eps):
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    total, count = 0.0, 0
    for b in range(labels.shape[0]):
        for t in range(labels.shape[1]):
            if labels[b, t] == 0:
                continue
            target = np.full(logits.shape[-1], eps / logits.shape[-1])
            target[labels[b, t]] += 1.0 - eps
            total -= (target * log_probs[b, t]).sum()
            count += 1
    return total / count


def test_matches_reference_with_and_without_smoothing():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 4, 7)).astype(np.float32)
    labels = np.array([[1, 2, 3, 0], [4, 5, 0, 0], [6, 1, 2, 3]])
    for eps in (0.0, 0.1):
        got = MaskedCrossEntropy(label_smoothing=eps)(labels, logits).numpy()
        np.testing.assert_allclose(got, _reference(labels, logits, eps), rtol=1e-5)


def test_padding_does_not_count():
    logits = tf.random.normal([1, 3, 5], seed=0)
    labels = tf.constant([[1, 2, 0]])
    extra = tf.concat([logits, 100.0 * tf.ones([1, 2, 5])], axis=1)
    padded = tf.constant([[1, 2, 0, 0, 0]])
    loss = MaskedCrossEntropy()
    np.testing.assert_allclose(loss(labels, logits).numpy(), loss(padded, extra).numpy(),
                               rtol=1e-6)


def test_accuracy_and_token_count():
    logits = tf.one_hot([[1, 2, 4, 0]], 5) * 10.0
    labels = tf.constant([[1, 2, 3, 0]])
    accuracy, tokens = MaskedAccuracy(), TargetTokens()
    accuracy.update_state(labels, logits)
    tokens.update_state(labels, logits)
    assert abs(float(accuracy.result()) - 2 / 3) < 1e-6
    assert float(tokens.result()) == 3.0


def _reference_gradient(labels, logits, eps):
    """d mean-loss / d logits in float64: (softmax - target) / tokens on
    non-padding positions, zero on padding."""
    logits = logits.astype(np.float64)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    vocabulary = logits.shape[-1]
    target = np.full(logits.shape, eps / vocabulary)
    np.put_along_axis(target, labels[..., None],
                      np.take_along_axis(target, labels[..., None], -1)
                      + 1.0 - eps, -1)
    mask = (labels != 0)[..., None]
    return (probs - target) * mask / mask.sum()


def _loss_and_gradient(labels, logits, eps, jit_compile=False):
    @tf.function(jit_compile=jit_compile)
    def run(logits):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            loss = MaskedCrossEntropy(label_smoothing=eps)(labels, logits)
        return loss, tape.gradient(loss, logits)

    loss, gradient = run(tf.constant(logits))
    return loss.numpy(), gradient.numpy()


def test_gradient_matches_softmax_minus_smoothed_target():
    rng = np.random.default_rng(1)
    labels = np.array([[1, 2, 3, 0], [4, 5, 0, 0], [6, 1, 2, 3]])
    # Plain, peaked and offset rows: the written-out gradient must stay
    # exact where a naive exp would overflow.
    for scale, offset in ((1.0, 0.0), (20.0, 0.0), (1.0, 300.0)):
        logits = (scale * rng.normal(size=(3, 4, 7)) + offset).astype(
            np.float32)
        for eps in (0.0, 0.1):
            loss, gradient = _loss_and_gradient(labels, logits, eps)
            np.testing.assert_allclose(
                loss, _reference(labels, logits.astype(np.float64), eps),
                rtol=64 * np.finfo(np.float32).eps)
            # Entries are at most 1 / tokens; float32 rounding of the
            # exp and the scale is a few eps of that.
            np.testing.assert_allclose(
                gradient, _reference_gradient(labels, logits, eps),
                rtol=0, atol=8 * np.finfo(np.float32).eps)
            assert np.all(gradient[labels == 0] == 0.0)


def test_gradient_under_xla_and_for_flat_logits():
    rng = np.random.default_rng(2)
    labels = np.array([[1, 2, 0], [3, 4, 5]])
    logits = rng.normal(size=(2, 3, 6)).astype(np.float32)
    eager = _loss_and_gradient(labels, logits, 0.1)
    compiled = _loss_and_gradient(labels, logits, 0.1, jit_compile=True)
    flat = _loss_and_gradient(labels.reshape(-1), logits.reshape(-1, 6), 0.1)
    for other in (compiled, flat):
        np.testing.assert_allclose(other[0], eager[0],
                                   rtol=8 * np.finfo(np.float32).eps)
        np.testing.assert_allclose(other[1].reshape(eager[1].shape), eager[1],
                                   rtol=0, atol=8 * np.finfo(np.float32).eps)


def test_bfloat16_logits_get_a_float32_loss_and_a_bfloat16_gradient():
    labels = np.array([[1, 2, 0]])
    logits = tf.cast(tf.random.normal([1, 3, 5], seed=3), tf.bfloat16)
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = MaskedCrossEntropy(label_smoothing=0.1)(labels, logits)
    gradient = tape.gradient(loss, logits)
    assert loss.dtype == tf.float32 and gradient.dtype == tf.bfloat16
    reference = _reference_gradient(
        labels, tf.cast(logits, tf.float32).numpy(), 0.1)
    # The gradient is rounded to bfloat16 (8 significant bits).
    np.testing.assert_allclose(tf.cast(gradient, tf.float32).numpy(),
                               reference, rtol=2.0 ** -8, atol=1e-7)
