"""Tests for gnmt_tf.alignment.aligned_model: links, dataset and joint training."""

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf
import tf_keras as keras

from gnmt_tf.alignment.aligned_model import (LINKS_KEY, AlignedTranslationModel,
                                             alignment_error_rate, dense_links,
                                             link_pairs, make_aligned_dataset,
                                             predicted_links, subword_links,
                                             word_index_of_pieces)
from gnmt_tf.alignment.conv_alignment_head import ConvAlignmentHead
from gnmt_tf.config import TrainConfig
from gnmt_tf.training.trainer import compile_model


def test_word_index_and_subword_links():
    source = ["▁a", "▁big", "ger", "▁", "⟦NUM⟧", "▁dog"]
    target = ["▁ein", "▁größ", "erer", "▁", "⟦NUM⟧", "▁Hund"]
    assert word_index_of_pieces(source) == [0, 1, 1, 2, 2, 3]
    links = subword_links(source, target, [(0, 0), (1, 1), (2, 2), (3, 3)])
    assert (1, 2) in links and (2, 1) in links and (4, 4) in links
    assert (5, 5) in links and (0, 1) not in links
    assert len(links) == 1 + 4 + 4 + 1
    matrix = dense_links(links, 7, 7)
    assert matrix.shape == (7, 7) and matrix.sum() == len(links)
    assert matrix[5, 5] == 1 and matrix[6, 6] == 0  # EOS unlinked
    np.testing.assert_array_equal(link_pairs([(2, 1)], source_offset=1),
                                  [[1, 3]])


def test_alignment_error_rate_and_predicted_links():
    assert alignment_error_rate([[(0, 0), (1, 1)]], [[(0, 0), (1, 1)]]) == 0
    assert alignment_error_rate([[(0, 0), (1, 2)]],
                                [[(0, 0), (1, 1)]]) == pytest.approx(0.5)
    probabilities = np.array([[0.9, 0.1, 0.7], [0.2, 0.8, 0.9]])
    assert predicted_links(probabilities, source_length=2) == [(0, 0), (1, 1)]


def _toy(n=48, seed=0):
    """Reversed-order copying: target word j = source word n-1-j, + 10."""
    rng = np.random.default_rng(seed)
    sources, targets, links = [], [], []
    for _ in range(n):
        length = int(rng.integers(3, 7))
        src = rng.integers(4, 14, size=length).tolist()
        sources.append(src)
        targets.append([w + 10 for w in reversed(src)])
        links.append(link_pairs([(length - 1 - j, j) for j in range(length)]))
    return sources, targets, links


def test_dataset_carries_dense_links():
    sources, targets, links = _toy(8)
    dataset = make_aligned_dataset(sources, targets, links, max_tokens=64,
                                   max_length=10, shuffle=False, repeat=False,
                                   task_inputs={"src_lang": [1] * 8})
    features, labels = next(iter(dataset))
    matrix = features[LINKS_KEY].numpy()
    assert matrix.shape == labels.shape + (features["source_ids"].shape[1],)
    assert "src_lang" in features
    for row in range(labels.shape[0]):
        t_len = int((labels[row] != 0).numpy().sum()) - 1  # without EOS
        s_len = int((features["source_ids"][row] != 0).numpy().sum()) - 1
        assert matrix[row].sum() == t_len
        for j in range(t_len):
            assert matrix[row, j, s_len - 1 - j] == 1


def _models():
    from gnmt_tf.models.gnmt.presets import get_preset
    from gnmt_tf.models.gnmt.model import GNMT
    from gnmt_tf.models.task_space.task_space_translation_model import (
                                                                        TaskSpaceTranslationModel)
    config, _ = get_preset("gnmt_tiny")
    yield "gnmt", GNMT(config), None
    transformer = TaskSpaceTranslationModel.from_preset(
        "transformer_tiny", use_task_space=False)
    yield "transformer", transformer, None


@pytest.mark.parametrize("kind", ["gnmt", "transformer"])
def test_joint_fit_lowers_both_losses(kind):
    keras.utils.set_random_seed(1)
    model = dict((k, m) for k, m, _ in _models())[kind]
    aligned = AlignedTranslationModel(
        model, ConvAlignmentHead(filters=(8, 8), name="alignment_head"),
        alignment_weight=1.0, stop_gradient=(kind == "gnmt"))
    compile_model(aligned, TrainConfig(learning_rate=2e-2, warmup_steps=5,
                                       label_smoothing=0.0))
    # GNMT's graph takes long to trace on a busy CPU; the Transformer runs
    # as a tf.function, as in real training.
    aligned.run_eagerly = kind == "gnmt"
    sources, targets, links = _toy(64)
    dataset = make_aligned_dataset(sources, targets, links, max_tokens=128,
                                   max_length=10, seed=0)
    history = aligned.fit(dataset, epochs=4, steps_per_epoch=8, verbose=0)
    h = history.history
    assert h["translation_loss"][-1] < 0.8 * h["translation_loss"][0]
    assert h["alignment_loss"][-1] < 0.8 * h["alignment_loss"][0]
    assert h["loss"][-1] == pytest.approx(
        h["translation_loss"][-1] + h["alignment_loss"][-1], rel=1e-4)
    # Evaluation without sampling, and the head's probabilities in shape.
    evaluation = aligned.evaluate(dataset, steps=1, return_dict=True,
                                  verbose=0)
    assert evaluation["alignment_loss"] > 0
    source, target = sources[:2], targets[:2]
    probabilities, attention = aligned.forced_alignment(source, target)
    assert probabilities[0].shape == (len(target[0]) + 1,
                                      len(source[0]) + 1)
    assert attention[1].shape == probabilities[1].shape
    # That the step interface passes through (searches, exports):
    # tests/harness/model_family_test.py, family "aligned_model".


def test_stop_gradient_keeps_attention_weights_out_of_alignment_loss():
    from gnmt_tf.models.gnmt.presets import get_preset
    from gnmt_tf.models.gnmt.model import GNMT
    config, _ = get_preset("gnmt_tiny")
    sources, targets, links = _toy(4)
    dataset = make_aligned_dataset(sources, targets, links, max_tokens=64,
                                   max_length=10, shuffle=False, repeat=False)
    x, _ = next(iter(dataset))
    for stop in (True, False):
        aligned = AlignedTranslationModel(GNMT(config), stop_gradient=stop)
        with tf.GradientTape() as tape:
            _, _, _, head_logits = aligned.align(x, return_logits=True)
            loss = tf.reduce_mean(head_logits)
        grads = tape.gradient(
            loss, aligned.translation_model.trainable_variables)
        reaches = any(g is not None for g in grads)
        assert reaches == (not stop)
