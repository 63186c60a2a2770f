"""Quantization-aware training of GNMT (tfmot QuantizeConfigs, fake-quant
layers) and int8 TFLite. (Fine-tuning through the CLI, the QAT model's step
against its full pass, and the int8 export against the QAT model:
`tests/harness/model_family_test.py`, for every family with a QAT
variant.)"""

import numpy as np
import pytest


@pytest.fixture(scope="session")
def qat_model(tiny_model_dir, toy_data_dir):
    """The tiny float model restored into a `QATGNMT`, ranges calibrated."""
    from gnmt_tf import quantization
    from gnmt_tf.models.gnmt.qat import finetune_data
    from gnmt_tf.export.qat import load_qat_from_float
    from gnmt_tf.config import TrainConfig

    model, subwords, payload = load_qat_from_float(tiny_model_dir)
    quantization.init_weight_ranges(model)
    _, dataset = finetune_data(model, subwords, payload, toy_data_dir,
                               TrainConfig(max_tokens=256, max_length=32,
                                           shuffle_buffer=64))
    quantization.calibrate(model, (x for x, _ in dataset.take(5)))
    return model


@pytest.fixture(scope="session")
def int8_model(gnmt):
    """`(model_path, vocabulary_path)` of the fine-tuned QAT model as int8
    TFLite (the harness's `gnmt-tf export qat` + `export tflite --int8`)."""
    return (gnmt.int8_dir / "model_int8.tflite", gnmt.int8_dir / "spm.model")


def test_quantizers():
    import tensorflow as tf
    import tensorflow_model_optimization as tfmot

    from gnmt_tf.models.gnmt import qat as gnmt_qat

    quantizers = tfmot.quantization.keras.quantizers
    lstm = gnmt_qat.QATLSTM(4)
    lstm.build((None, None, 3))
    points = lstm.quantizers()
    assert set(points) == {"kernel", "recurrent_kernel", "input", "projected",
                           "recurrent", "output"}
    for name in ("kernel", "recurrent_kernel"):
        assert isinstance(points[name], quantizers.LastValueQuantizer)
        assert points[name].get_config()["symmetric"]
        assert points[name].get_config()["num_bits"] == 8
    assert isinstance(points["output"], quantizers.FixedQuantizer)
    assert isinstance(points["input"], quantizers.MovingAverageQuantizer)

    clipped = gnmt_qat.QATLSTM(4, tf.Variable(1.5))
    clipped.build((None, None, 3))
    cell = clipped.quantizers()["cell"]
    assert isinstance(cell, gnmt_qat.ClipRangeQuantizer)
    out = cell(tf.constant([-3.0, 0.3, 3.0]), False, {})
    assert out.numpy()[[0, 2]] == pytest.approx([-1.5, 1.5])

    logits = gnmt_qat.OutputQuantizers(25.0).quantizers()["logits"]
    assert logits.get_config() == {"clip": 25.0}
    assert isinstance(gnmt_qat.OutputQuantizers().quantizers()["logits"],
                      quantizers.MovingAverageQuantizer)
    embedding = gnmt_qat.QATEmbedding(8, 4)
    embedding.build((None,))
    assert set(embedding.quantizers()) == {"embeddings"}
    assert set(gnmt_qat.QATAdditiveAttention(4).quantizers()) == {
        "memory", "hidden", "probabilities"}


def test_qat_model_layers(qat_model, translator):
    from gnmt_tf import quantization as q

    layers = {type(layer).__name__ for layer in q.qat_layers(qat_model)}
    assert layers == {"QATLSTM", "QATAdditiveAttention", "QATDense",
                      "QATEmbedding", "OutputQuantizers"}
    lstm = qat_model.encoder.forward_lstm
    assert set(lstm.quantizers()) == {"kernel", "recurrent_kernel", "input",
                                      "projected", "recurrent", "output"}
    # The float weights restored under their float names.
    float_model = translator.model
    np.testing.assert_array_equal(
        lstm.kernel.numpy(), float_model.encoder.forward_lstm.kernel.numpy())
    names = {v.name.split("/", 1)[-1] for v in qat_model.variables}
    assert {v.name.split("/", 1)[-1] for v in float_model.variables} <= names


def test_qat_outputs_close_to_float(qat_model, translator, toy_data_dir,
                                    tiny_model_dir):
    import tensorflow as tf

    from gnmt_tf.data.corpus import read_parallel
    from gnmt_tf.text.subword import Subwords

    src, tgt = read_parallel(toy_data_dir, "val", "en", "de")
    subwords = Subwords(tiny_model_dir / "spm.model")
    src_ids = [s + [3] for s in subwords.encode(src[:8])]
    tgt_ids = [[2] + t for t in subwords.encode(tgt[:8])]
    pad = lambda rows: tf.constant(  # noqa: E731
        [r + [0] * (max(map(len, rows)) - len(r)) for r in rows], tf.int32)
    features = {"source_ids": pad(src_ids), "target_in_ids": pad(tgt_ids)}
    mask = features["target_in_ids"].numpy() != 0
    p_float = tf.nn.softmax(translator.model(features)).numpy()[mask]
    p_qat = tf.nn.softmax(qat_model(features)).numpy()[mask]
    total_variation = 0.5 * np.abs(p_float - p_qat).sum(-1)
    agree = (p_float.argmax(-1) == p_qat.argmax(-1)).mean()
    print(f"mean TV {total_variation.mean():.4f}, argmax agreement {agree}")
    assert total_variation.mean() < 0.05
    assert agree >= 0.85


def test_int8_weights(int8_model):
    from gnmt_tf.export.tflite import int8_report

    report = int8_report(int8_model[0])
    weights = [n for n in report["int8"]
               if "LastValueQuant" in n or n.endswith("einsum/Einsum")]
    # 4 encoder + 3 decoder LSTMs x (kernel, recurrent_kernel), attention
    # query / memory / score, the embedding (lookup and softmax).
    assert len(weights) >= 2 * 7 + 3 + 1
    # A weight seen as float32 is a Dequantize output of its int8 copy, or
    # the attention's memory projection in `encode` (a known float op, see
    # gnmt_tf.models.gnmt.qat).
    float_weights = {n for n in report.get("float32", [])
                     if "LastValueQuant" in n and not n.startswith("memory/")}
    assert float_weights <= set(report["int8"])


def test_int8_cli_float_model_is_usage_error(capsys, tiny_model_dir,
                                             tmp_path):
    from gnmt_tf.cli.main import main

    code = main(["export", "tflite", "--int8", "--model", str(tiny_model_dir),
                 "--out", str(tmp_path)])
    assert code == 2
    assert "QAT model directory" in capsys.readouterr().err


def test_int8_conversion_rejects_float_model(translator):
    from gnmt_tf.export.tflite import convert

    with pytest.raises(ValueError, match="quantization-aware"):
        convert(translator.model, "int8")


def test_tied_table_is_stored_once(qat_model, tmp_path):
    from gnmt_tf.export.tflite import convert
    from gnmt_tf.export.tflite_tied_table import int8_table_tensors
    from gnmt_tf.tflite_translator import interpreter_class

    config = qat_model.config
    shape = (config.vocabulary_size, config.hidden_dim)
    table = qat_model.embedding.embeddings.numpy()
    copies = convert(qat_model, "int8", 32, share_table=False)
    shared = convert(qat_model, "int8", 32)
    assert len({b for b, _ in int8_table_tensors(copies, table)}) >= 2
    tables = int8_table_tensors(shared, table)
    # encode's Gather and the logits FullyConnected at least; decode_step's
    # Gather too unless the converter folded the next layer's input range
    # into its copy (then it is not the table any more and stays as is).
    assert len(tables) >= 2
    assert len({b for b, _ in tables}) == 1
    assert len({scale for _, scale in tables}) == 1
    assert len(shared) < len(copies)

    # Same decode_step outputs up to int8 rounding on both sides.
    rng = np.random.default_rng(0)
    outputs = []
    for flatbuffer in (copies, shared):
        path = tmp_path / f"m{len(outputs)}.tflite"
        path.write_bytes(flatbuffer)
        runner = interpreter_class()(model_path=str(path)).get_signature_runner(
            "decode_step")
        inputs = {}
        for name, detail in runner.get_input_details().items():
            shape_ = [2 if d < 0 else d for d in detail["shape"]]
            if detail["dtype"] == np.int32:
                inputs[name] = rng.integers(4, shape[0], shape_).astype(np.int32)
            elif detail["dtype"] == np.bool_:
                inputs[name] = np.ones(shape_, bool)
            else:
                inputs[name] = rng.normal(0, 0.3, shape_).astype(detail["dtype"])
        rng = np.random.default_rng(0)
        outputs.append(runner(**inputs)["log_probs"])
    np.testing.assert_allclose(np.exp(outputs[0]), np.exp(outputs[1]), atol=0.05)


def test_input_feeding_qat_model_trains_and_steps_as_its_full_pass():
    """A QAT GNMT with input feeding (the bottom decoder LSTM and the
    attention inside one loop) and a bidirectional encoder (fake-quantized
    LSTMs both ways in every layer) calibrates eagerly, trains in a graph,
    and its `step` then computes its teacher-forced pass exactly (the same
    fake-quant points in the same order)."""
    import tensorflow as tf
    import tf_keras as keras

    from gnmt_tf import quantization
    from gnmt_tf.models.gnmt.qat import QATGNMT, QATLSTM
    from gnmt_tf.config import GNMTConfig
    from gnmt_tf.training.losses import MaskedCrossEntropy

    keras.utils.set_random_seed(0)
    model = QATGNMT(GNMTConfig(
        vocabulary_size=20, num_encoder_layers=3, num_decoder_layers=3,
        hidden_dim=16, attention_dim=8, dropout=0.1, input_feeding=True,
        bidirectional_layers=3))
    assert all(isinstance(lstm, QATLSTM) for lstm in
               model.encoder.upper_lstms + model.encoder.upper_backward_lstms)
    features = {"source_ids": tf.constant([[5, 6, 7, 8, 3], [9, 10, 3, 0, 0]]),
                "target_in_ids": tf.constant([[2, 11, 12, 13], [2, 14, 15, 0]])}
    labels = tf.constant([[11, 12, 13, 3], [14, 15, 3, 0]])
    model(features)
    assert quantization.calibrate(model, [features]) == 1
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss=MaskedCrossEntropy())
    history = model.fit(tf.data.Dataset.from_tensors((features, labels))
                        .repeat(40), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])

    # Both paths run the same per-position arithmetic except the output
    # projection's matmul shape, so a logit within float rounding of a
    # grid boundary may round the other way (one grid step, at most
    # doubled by log-softmax); a state bug would move every position.
    from reference_decoding import float_tolerance, grid_step

    logits = model(features).numpy()
    full = tf.nn.log_softmax(logits).numpy()
    real = features["target_in_ids"].numpy() != 0
    step = grid_step(logits[real])
    state = model.initial_state(model.encode(features["source_ids"]))
    errors = []
    for t in range(4):
        log_probs, _, state = model.step(features["target_in_ids"][:, t], state)
        errors += list(np.abs(log_probs.numpy() - full[:, t]).max(-1)[real[:, t]])
    errors = np.array(errors)
    assert (errors > float_tolerance(np.float32, np.abs(full).max())).mean() <= 0.2
    assert errors.max() <= 2 * step, (errors, step)
