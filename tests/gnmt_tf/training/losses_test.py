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
