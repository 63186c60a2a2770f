"""Tests for gnmt_tf.models.task_space.ctranslate2_converter (needs `ctranslate2`)."""

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.models.task_space.task_space_translation_model import TaskSpaceTranslationModel

ctranslate2 = pytest.importorskip("ctranslate2")

from gnmt_tf.models.task_space.ctranslate2_converter import (  # noqa: E402
                                                             TaskSpaceCTranslate2Converter)

V = 40
VOCAB = ["<pad>", "<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(4, V)]
TASK = ("en", "fr", ("caption", "news"))


@pytest.mark.parametrize("use_task_space", [True, False])
def test_converted_model_scores_like_ours(tmp_path, use_task_space):
    """Per-token log-probabilities of CTranslate2 equal ours (1e-5)."""
    model = TaskSpaceTranslationModel.from_preset(
        "transformer_tiny", vocabulary_size=V, use_task_space=use_task_space)
    rng = np.random.default_rng(0)
    for weight in model.weights:  # larger than init, so outputs differ
        weight.assign(rng.normal(0, 0.5, weight.shape).astype("float32"))
    TaskSpaceCTranslate2Converter(model, VOCAB, *TASK).convert(
        str(tmp_path / "ct2"))
    translator = ctranslate2.Translator(str(tmp_path / "ct2"), device="cpu",
                                        intra_threads=1)

    source = np.concatenate([rng.integers(4, V, (3, 6)),
                             np.full((3, 1), 3)], axis=1)  # EOS-terminated
    target = rng.integers(4, V, (3, 5))
    scored = translator.score_batch(
        [[VOCAB[i] for i in row] for row in source],
        [[VOCAB[i] for i in row] for row in target])
    task = model.config.task_features(*TASK)
    logits = model({
        "source_ids": tf.constant(source, tf.int32),
        "target_in_ids": tf.constant(
            np.concatenate([np.full((3, 1), 2), target], 1), tf.int32),
        "src_lang": tf.fill([3], task["src_lang"]),
        "tgt_lang": tf.fill([3], task["tgt_lang"]),
        "tags": tf.constant([task["tags"]] * 3)})
    labels = np.concatenate([target, np.full((3, 1), 3)], axis=1)
    ours = np.take_along_axis(tf.nn.log_softmax(logits).numpy(),
                              labels[..., None], -1)[..., 0]
    np.testing.assert_allclose([r.log_probs for r in scored], ours,
                               atol=1e-5)


def test_task_is_required_with_task_space(tmp_path):
    model = TaskSpaceTranslationModel.from_preset("transformer_tiny",
                                                  vocabulary_size=V)
    with pytest.raises(ValueError, match="src_lang and tgt_lang"):
        TaskSpaceCTranslate2Converter(model, VOCAB).convert(
            str(tmp_path / "ct2"))
    with pytest.raises(ValueError, match="unknown scene tag"):
        TaskSpaceCTranslate2Converter(model, VOCAB, "en", "de",
                                      ["poetry"]).convert(
            str(tmp_path / "ct2"))
