"""Quantization-aware training of the task-space Transformer
(`gnmt_tf.models.task_space.qat`). (The QAT model's step against its full pass,
and the int8 export against the QAT model: `tests/harness/model_family_test.py`,
for every family with a QAT variant.)"""

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
    from gnmt_tf.models.task_space.qat import finetune_data
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
    from gnmt_tf import quantization
    from gnmt_tf.export.qat import load_qat_from_float

    model, _, _ = load_qat_from_float(ts_model_dir)
    quantization.init_weight_ranges(model)
    assert quantization.calibrate(model, batches[:4]) == 4
    return model


def test_quantizers(qat_model):
    import tensorflow_model_optimization as tfmot

    from gnmt_tf.models.task_space import qat as transformer_qat

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
    from gnmt_tf import quantization
    from gnmt_tf.export.qat import variables_by_name

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


@pytest.fixture(scope="session")
def qat_dir(task_space):
    """The harness's QAT model directory: fine-tuned 3 steps through
    `gnmt-tf export qat`."""
    return task_space.qat_dir


def test_qat_finetune_cli_writes_a_qat_model_dir(qat_dir, ts_model_dir):
    from gnmt_tf.models.task_space.qat import QATTaskSpaceTransformer
    from gnmt_tf.model_dir import load_model
    from gnmt_tf.model_dir import read_config

    payload = read_config(qat_dir)
    assert payload["model_type"] == "task_space_transformer_qat"
    assert payload["task_space"] == read_config(ts_model_dir)["task_space"]
    assert payload["train"]["train_steps"] == 3
    assert (qat_dir / "checkpoints").is_dir()
    assert isinstance(load_model(qat_dir)[0], QATTaskSpaceTransformer)


def test_int8_export_stores_the_tied_table_once(task_space):
    from gnmt_tf.export.tflite_tied_table import int8_table_tensors

    out = task_space.int8_dir
    assert sorted(p.name for p in out.iterdir()) == [
        "model.json", "model_int8.tflite", "spm.model"]
    tables = int8_table_tensors(
        (out / "model_int8.tflite").read_bytes(),
        task_space.qat_translator.model.embedding.embeddings.numpy())
    # The Gathers and the logits FullyConnected: one buffer on one grid.
    assert len(tables) >= 2 and len(set(tables)) == 1


def test_qat_finetune_rejects_qat_model_dir(ts_model_dir, tmp_path):
    import shutil

    from gnmt_tf.export.qat import qat_finetune

    qat_dir = tmp_path / "already_qat"
    shutil.copytree(ts_model_dir, qat_dir)
    config = (qat_dir / "config.json").read_text().replace(
        '"task_space_transformer"', '"task_space_transformer_qat"')
    (qat_dir / "config.json").write_text(config)
    with pytest.raises(ValueError, match="task_space_transformer"):
        qat_finetune(qat_dir, tmp_path / "out", None, steps=1)
