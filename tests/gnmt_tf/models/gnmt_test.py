"""Tests for gnmt_tf.models.gnmt.model.GNMT. (The cached step against the full
pass: `tests/harness/model_family_test.py`, for every model family.)"""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from gnmt_tf.config import GNMTConfig
from gnmt_tf.models.gnmt.model import GNMT
from gnmt_tf.training.losses import MaskedCrossEntropy

CONFIG = GNMTConfig(vocabulary_size=20, num_encoder_layers=3, num_decoder_layers=3,
                    hidden_dim=16, attention_dim=8, dropout=0.0)
SOURCE = tf.constant([[5, 6, 7, 8, 3], [9, 10, 3, 0, 0]])
TARGET_IN = tf.constant([[2, 11, 12, 13], [2, 14, 15, 0]])


@pytest.fixture(scope="module",
                params=[{}, {"input_feeding": True},
                        {"input_feeding": True, "bidirectional_layers": 3}],
                ids=["plain", "input_feeding", "bidirectional_encoder"])
def model(request):
    keras.utils.set_random_seed(0)
    return GNMT(dataclasses.replace(CONFIG, **request.param))


def test_shapes(model):
    logits, attention = model({"source_ids": SOURCE, "target_in_ids": TARGET_IN},
                              return_attention=True)
    assert logits.shape == (2, 4, 20) and attention.shape == (2, 4, 5)
    np.testing.assert_array_equal(attention.numpy()[1, :, 3:], 0.0)


def test_source_padding_is_ignored(model):
    base = model({"source_ids": SOURCE, "target_in_ids": TARGET_IN}).numpy()
    padded = tf.concat([SOURCE, tf.zeros([2, 3], tf.int32)], axis=1)
    more = model({"source_ids": padded, "target_in_ids": TARGET_IN}).numpy()
    np.testing.assert_allclose(base, more, atol=1e-5)
    # The second sentence alone gives the same logits as in the batch.
    alone = model({"source_ids": SOURCE[1:, :3], "target_in_ids": TARGET_IN[1:]}).numpy()
    np.testing.assert_allclose(alone[0], base[1], atol=1e-5)


def test_decoder_is_causal(model):
    base = model({"source_ids": SOURCE, "target_in_ids": TARGET_IN}).numpy()
    changed = tf.tensor_scatter_nd_update(TARGET_IN, [[0, 3]], [17])
    other = model({"source_ids": SOURCE, "target_in_ids": changed}).numpy()
    np.testing.assert_allclose(base[:, :3], other[:, :3], atol=1e-6)
    assert np.abs(base[0, 3] - other[0, 3]).max() > 1e-6


def test_step_by_step_equals_full_pass(model):
    """`encode` / `initial_state` / `step` fed the reference prefix give
    the full pass's log-probabilities and attention at every real target
    position (with input feeding, the context carried in the state)."""
    logits, attention = model({"source_ids": SOURCE, "target_in_ids": TARGET_IN},
                              return_attention=True)
    state = model.initial_state(model.encode(SOURCE))
    for t in range(TARGET_IN.shape[1]):
        log_probs, step_attention, state = model.step(TARGET_IN[:, t], state)
        real = TARGET_IN.numpy()[:, t] != 0
        np.testing.assert_allclose(
            log_probs.numpy()[real],
            tf.nn.log_softmax(logits[:, t]).numpy()[real], atol=1e-5)
        np.testing.assert_allclose(step_attention.numpy()[real],
                                   attention.numpy()[real, t], atol=1e-6)
    assert ("context" in state) == model.config.input_feeding


def test_input_feeding_widens_only_the_bottom_decoder_lstm(model):
    kernels = {w.name.split("/", 1)[1]: w.shape for w in model.weights
               if w.name.endswith("/kernel:0") and "decoder/lstm" in w.name}
    extra = CONFIG.hidden_dim if model.config.input_feeding else 0
    assert kernels["decoder/lstm_1/kernel:0"] == (CONFIG.hidden_dim + extra,
                                                 4 * CONFIG.hidden_dim)
    assert kernels["decoder/lstm_2/kernel:0"] == (2 * CONFIG.hidden_dim,
                                                 4 * CONFIG.hidden_dim)


def test_bidirectional_layers_split_the_upper_encoder_layers(model):
    """Layers 2..k run both ways with hidden_dim / 2 units a direction;
    the layers above keep their unidirectional names and shapes."""
    kernels = {w.name.split("/", 1)[1]: w.shape for w in model.weights
               if w.name.endswith("/kernel:0") and "encoder/lstm" in w.name}
    h = CONFIG.hidden_dim
    if model.config.bidirectional_layers == 1:
        assert set(kernels) == {"encoder/lstm_1_forward/kernel:0",
                                "encoder/lstm_1_backward/kernel:0",
                                "encoder/lstm_2/kernel:0",
                                "encoder/lstm_3/kernel:0"}
        return
    assert kernels["encoder/lstm_2_forward/kernel:0"] == (2 * h, 2 * h)
    assert kernels["encoder/lstm_2_backward/kernel:0"] == (2 * h, 2 * h)
    assert kernels["encoder/lstm_3_backward/kernel:0"] == (h, 2 * h)
    assert "encoder/lstm_2/kernel:0" not in kernels


def test_bidirectional_layers_are_validated():
    with pytest.raises(ValueError, match="bidirectional_layers"):
        dataclasses.replace(CONFIG, bidirectional_layers=4)
    with pytest.raises(ValueError, match="hidden_dim"):
        dataclasses.replace(CONFIG, bidirectional_layers=2, hidden_dim=15)


def test_logit_clip_and_clipped_cells():
    config = dataclasses.replace(CONFIG, logit_clip=0.5, clip_cell=True)
    model = GNMT(config)
    logits = model({"source_ids": SOURCE, "target_in_ids": TARGET_IN})
    assert np.abs(logits.numpy()).max() <= 0.5
    assert model.cell_clip is not None and float(model.cell_clip.numpy()) == 8.0


def test_get_config_round_trip(model):
    clone = GNMT.from_config(model.get_config())
    assert clone.config == model.config


def test_fit_overfits_two_sentences():
    keras.utils.set_random_seed(1)
    model = GNMT(CONFIG)
    model.compile(optimizer=keras.optimizers.Adam(0.02), loss=MaskedCrossEntropy())
    labels = tf.constant([[11, 12, 13, 3], [14, 15, 3, 0]])
    dataset = tf.data.Dataset.from_tensors(
        ({"source_ids": SOURCE, "target_in_ids": TARGET_IN}, labels)).repeat(120)
    model.fit(dataset, epochs=1, verbose=0)
    assert model.evaluate(dataset.take(1), verbose=0) < 0.3
    predicted = tf.argmax(model({"source_ids": SOURCE, "target_in_ids": TARGET_IN}),
                          -1).numpy()
    assert (predicted[labels.numpy() != 0] == labels.numpy()[labels.numpy() != 0]).all()


def test_lookups_never_gather_from_the_embedding_variable(model):
    # A ResourceGather would put the tied matrix in copy-on-read mode: each
    # search step's softmax projection would then copy all of it.
    model(model.dummy_inputs())

    @tf.function(autograph=False)
    def logits(inputs):
        return model(inputs)

    graph = logits.get_concrete_function(
        {"source_ids": tf.TensorSpec([None, None], tf.int32),
         "target_in_ids": tf.TensorSpec([None, None], tf.int32)}).graph
    types = {op.type for op in graph.get_operations()}
    assert "ResourceGather" not in types
    assert "GatherV2" in types


def test_embedding_matches_keras():
    from gnmt_tf.models.gnmt.embedding import Embedding

    ours = Embedding(12, 4)
    reference = keras.layers.Embedding(12, 4)
    ids = tf.constant([[1, 5, 0], [11, 2, 2]], tf.int64)
    ours.build(ids.shape)
    reference.build(ids.shape)
    reference.set_weights(ours.get_weights())
    np.testing.assert_array_equal(ours(ids), reference(ids))
    assert ours(tf.constant([3.0])).shape == (1, 4)  # floats cast as Keras does
