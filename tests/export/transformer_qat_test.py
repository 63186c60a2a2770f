"""Quantization-aware training of the task-space Transformer
(`export.transformer_qat`)."""

import numpy as np
import pytest

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)


@pytest.fixture(scope="module")
def float_model(ts_model_dir):
    from gnmt_tf.model_dir import load_model

    return load_model(ts_model_dir)[0]


@pytest.fixture(scope="module")
def batches(ts_model_dir, multiway_dir, float_model):
    """Five training batches of the directions the model was trained on."""
    from export.transformer_qat import finetune_data
    from gnmt_tf.config import TrainConfig
    from gnmt_tf.model_dir import read_config
    from gnmt_tf.text.subword import Subwords
    import tf_keras as keras

    subwords = Subwords(ts_model_dir / "spm.model")
    keras.utils.set_random_seed(0)  # the shuffle mixes in the global seed
    _, dataset = finetune_data(float_model, subwords, read_config(ts_model_dir),
                               multiway_dir,
                               TrainConfig(max_tokens=256, max_length=16,
                                           shuffle_buffer=64))
    return [features for features, _ in dataset.take(5)]


@pytest.fixture(scope="module")
def qat_model(ts_model_dir, batches):
    """The float model restored into a QAT model, ranges calibrated."""
    from export import quantization
    from export.qat import load_qat_from_float

    model, _, _ = load_qat_from_float(ts_model_dir)
    quantization.init_weight_ranges(model)
    assert quantization.calibrate(model, batches[:4]) == 4
    return model


def test_quantizers(qat_model):
    import tensorflow_model_optimization as tfmot

    from export import transformer_qat

    quantizers = tfmot.quantization.keras.quantizers
    layer = qat_model.decoder_layers[0]
    attention = layer._attention.quantizers()
    assert set(attention) == {"query", "scores", "probabilities", "context"}
    assert isinstance(attention["probabilities"], quantizers.FixedQuantizer)
    assert isinstance(attention["scores"], quantizers.MovingAverageQuantizer)
    assert set(layer.quantizers()) == {
        "self_attention_residual", "cross_attention_residual", "ffn_residual"}
    embedding = qat_model.embedding.quantizers()
    assert set(embedding) == {"embeddings", "lookup", "logits"}
    assert embedding["embeddings"].get_config()["symmetric"]
    with pytest.raises(ValueError, match="equation"):
        transformer_qat._matmul_equation("btd,hdk->bthk")


def test_key_value_ranges_symmetric(qat_model):
    """TFLite's int8 BatchMatMul needs a zero zero point on keys/values."""
    for layer in qat_model.decoder_layers:
        for attention in (layer._attention, layer._cross_attention):
            for dense, symmetric in ((attention._key_dense, True),
                                     (attention._value_dense, True),
                                     (attention._query_dense, False)):
                ranges = dense._fq.activations["output"][1]
                low = ranges["min_var"].numpy()
                high = ranges["max_var"].numpy()
                assert (low == -high) == symmetric, dense.name


def test_restores_float_weights(qat_model, float_model):
    from export import quantization
    from export.qat import variables_by_name

    layers = {type(layer).__name__
              for layer in quantization.qat_layers(qat_model)}
    assert layers == {
        "QATTaskSpaceTransformer", "QATSharedEmbedding", "QATEinsumDense",
        "QATCachedMultiHeadAttention", "QATTransformerEncoderLayer",
        "QATTransformerDecoderLayer", "QATDense", "QATLayerNormalization"}
    float_variables = variables_by_name(float_model)
    qat_variables = variables_by_name(qat_model)
    assert len(float_variables) > 50
    for name, variable in float_variables.items():
        np.testing.assert_array_equal(qat_variables[name].numpy(),
                                      variable.numpy(), err_msg=name)
    extra = set(qat_variables) - set(float_variables)
    assert extra and all(n.endswith(("_min:0", "_max:0")) for n in extra)


def test_outputs_close_to_float_but_quantized(qat_model, float_model,
                                              batches):
    import tensorflow as tf

    features = batches[4]  # not used for calibration
    mask = features["target_in_ids"].numpy() != 0
    float_logits = float_model(features).numpy()[mask]
    qat_logits = qat_model(features).numpy()[mask]
    error = np.abs(qat_logits - float_logits).max() / np.abs(
        float_logits).max()
    correlation = np.corrcoef(float_logits.ravel(), qat_logits.ravel())[0, 1]
    agree = (float_logits.argmax(-1) == qat_logits.argmax(-1)).mean()
    print(f"relative error {error:.4f}, correlation {correlation:.5f}, "
          f"argmax agreement {agree:.3f}")
    assert error > 1e-4  # fake quantization is applied
    assert error < 0.1 and correlation > 0.99 and agree >= 0.9
    # Logits lie on the int8 grid of their learned range, which holds 0.
    ranges = qat_model.embedding._fq.activations["logits"][1]
    scale = (ranges["max_var"].numpy() - ranges["min_var"].numpy()) / 255
    steps = qat_logits / scale
    assert np.abs(steps - np.round(steps)).max() < 0.05
    assert qat_model(features, training=False).dtype == tf.float32


def test_cached_step_matches_teacher_forced(qat_model, batches):
    import tensorflow as tf

    features = {k: v[:4] for k, v in batches[4].items()}
    logits, attention = qat_model(features, return_attention=True)
    encoded = qat_model.encode(features["source_ids"], features["src_lang"],
                               features["tgt_lang"], features["tags"])
    length = features["target_in_ids"].shape[1]
    state = qat_model.initial_state(encoded, length + 2)
    log_probs, maps = [], []
    for t in range(length):
        step_log_probs, step_attention, state = qat_model.step(
            features["target_in_ids"][:, t], state)
        log_probs.append(step_log_probs)
        maps.append(step_attention)
    heads = qat_model.config.num_heads
    mask = features["target_in_ids"].numpy() != 0
    got = tf.stack(log_probs, 1).numpy()[mask]  # [positions, V]
    expected = tf.nn.log_softmax(logits).numpy()[mask]
    got_maps = tf.stack(maps, 1).numpy()[mask]
    expected_maps = tf.reduce_mean(attention[:, -heads:], 1).numpy()[mask]
    # The step and the full pass compute the same sums with other shapes,
    # so a value within float rounding of a fake-quant rounding boundary
    # may round the other way in one of them (seen on AVX-512 machines).
    # Such a flip moves that position's logits by whole steps of their int8
    # grid (log-softmax at most doubles that), and leaves the others alone.
    # A cache bug moves every position.
    ranges = qat_model.embedding._fq.activations["logits"][1]
    step = (ranges["max_var"].numpy() - ranges["min_var"].numpy()) / 255
    error = np.maximum(np.abs(got - expected).max(-1),
                       np.abs(got_maps - expected_maps).max(-1))
    flipped = error > 1e-4
    assert flipped.mean() <= 0.1, error
    assert np.abs(got - expected).max() <= 4 * step, step


@pytest.fixture(scope="module")
def qat_dir(ts_model_dir, multiway_dir, tmp_path_factory):
    """A QAT model directory fine-tuned 3 steps through the CLI."""
    from gnmt_tf.cli.main import main

    out = tmp_path_factory.mktemp("ts_qat") / "model"
    assert main(["export", "qat", "--model", str(ts_model_dir),
                 "--out", str(out), "--data-dir", str(multiway_dir),
                 "--steps", "3", "--calibration-batches", "2"]) == 0
    return out


SENTENCES = ["a dog runs", "a big cat sleeps", "   ", "a man runs",
             "a red ball"]


def test_qat_finetune_cli_translates(qat_dir, ts_model_dir):
    from export.transformer_qat import QATTaskSpaceTransformer
    from gnmt_tf.model_dir import read_config
    from gnmt_tf.translator import Translator

    payload = read_config(qat_dir)
    assert payload["model_type"] == "task_space_transformer_qat"
    assert payload["task_space"] == read_config(ts_model_dir)["task_space"]
    assert payload["train"]["train_steps"] == 3
    assert (qat_dir / "checkpoints").is_dir()

    translator = Translator.from_model_dir(qat_dir)
    assert isinstance(translator.model, QATTaskSpaceTransformer)
    texts = translator.translate(SENTENCES[:3], src_lang="en",
                                 tgt_lang="fr", tags=["caption"])
    assert len(texts) == 3 and texts[2] == ""
    assert any(texts[:2])


def test_int8_tflite_translates_like_the_qat_model(qat_dir, tmp_path):
    from export.tflite_tied_table import int8_table_tensors
    from gnmt_tf.tflite_translator import TFLiteTranslator
    from gnmt_tf.cli.main import main
    from gnmt_tf.translator import SearchOptions
    from gnmt_tf.translator import Translator

    out = tmp_path / "int8"
    assert main(["export", "tflite", "--model", str(qat_dir), "--out",
                 str(out), "--int8"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "model.json", "model_int8.tflite", "spm.model"]
    qat_translator = Translator.from_model_dir(qat_dir)
    flatbuffer = (out / "model_int8.tflite").read_bytes()
    tables = int8_table_tensors(
        flatbuffer, qat_translator.model.embedding.embeddings.numpy())
    # The Gathers and the logits FullyConnected: one buffer on one grid.
    assert len(tables) >= 2 and len(set(tables)) == 1

    tflite = TFLiteTranslator(out / "model_int8.tflite")
    expected = qat_translator.translate_nbest(
        SENTENCES, SearchOptions(beam_size=1), src_lang="en", tgt_lang="fr",
        tags=["caption"])
    got = tflite.translate_nbest(SENTENCES, beam_size=1, src_lang="en",
                                 tgt_lang="fr", tags="caption")
    # int8 arithmetic is not the fake-quant float arithmetic: the text may
    # differ where the tiny model's scores are close, the scores by int8
    # steps (LogSoftmax's output grid is 1/16 nat).
    same = [i for i in (0, 1, 3, 4) if got[i][0].text == expected[i][0].text]
    assert len(same) >= 3
    for i in same:
        assert got[i][0].score == pytest.approx(expected[i][0].score, abs=0.5)
    assert got[2][0].text == "" and got[2][0].score == 0.0


def test_qat_finetune_rejects_qat_model_dir(ts_model_dir, tmp_path):
    import shutil

    from export.qat import qat_finetune

    qat_dir = tmp_path / "already_qat"
    shutil.copytree(ts_model_dir, qat_dir)
    config = (qat_dir / "config.json").read_text().replace(
        '"task_space_transformer"', '"task_space_transformer_qat"')
    (qat_dir / "config.json").write_text(config)
    with pytest.raises(ValueError, match="task_space_transformer"):
        qat_finetune(qat_dir, tmp_path / "out", None, steps=1)
