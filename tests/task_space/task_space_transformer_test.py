"""Tests for gnmt_tf.models.task_space.task_space_transformer.TaskSpaceTransformer."""

import json

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf
import tf_keras as keras

from gnmt_tf.decoding.beam_search import state_shape_invariant
from gnmt_tf.models.task_space.config import TransformerConfig
from gnmt_tf.models.task_space.task_space_transformer import TaskSpaceTransformer

CONFIG = TransformerConfig.from_preset("transformer_tiny")
L, H, V = CONFIG.num_layers, CONFIG.num_heads, CONFIG.vocabulary_size
MAX_LENGTH = 8


def _inputs():
    """3 examples: source [3, 5] with padding, target [3, 4]."""
    tasks = [CONFIG.task_features("en", "de", ["news", "formal"]),
             CONFIG.task_features("fr", "en", []),
             CONFIG.task_features("de", "cs", ["caption"])]
    return {
        "source_ids": tf.constant([[5, 6, 7, 0, 0], [4, 5, 6, 7, 8],
                                   [9, 3, 0, 0, 0]]),
        "target_in_ids": tf.constant([[2, 5, 6, 7], [2, 8, 9, 10],
                                      [2, 11, 12, 13]]),
        "src_lang": tf.constant([t["src_lang"] for t in tasks]),
        "tgt_lang": tf.constant([t["tgt_lang"] for t in tasks]),
        "tags": tf.constant([t["tags"] for t in tasks]),
    }


@pytest.fixture(scope="module")
def model():
    return TaskSpaceTransformer(CONFIG)


def _with(inputs, **changes):
    return {**inputs, **{k: tf.constant(v) for k, v in changes.items()}}


def test_shapes_and_attention(model):
    inputs = _inputs()
    logits, attention = model(inputs, return_attention=True)
    assert logits.shape == (3, 4, V) and logits.dtype == tf.float32
    assert attention.shape == (3, L * H, 4, 5)
    np.testing.assert_allclose(tf.reduce_sum(attention, -1), 1.0, rtol=1e-5)
    assert np.all(attention.numpy()[0, :, :, 3:] == 0.0)  # padded source
    np.testing.assert_allclose(model(inputs), logits, atol=1e-6)


def test_padded_source_positions_do_not_matter(model):
    """Extra padding, or batching with longer sentences, changes nothing."""
    inputs = _inputs()
    more_padding = _with(inputs, source_ids=[[5, 6, 7, 0, 0, 0, 0],
                                             [4, 5, 6, 7, 8, 0, 0],
                                             [9, 3, 0, 0, 0, 0, 0]])
    expected = model(inputs)
    np.testing.assert_allclose(model(more_padding), expected, atol=1e-5)
    alone = {k: v[2:] for k, v in inputs.items()}
    alone["source_ids"] = alone["source_ids"][:, :2]
    np.testing.assert_allclose(model(alone), expected[2:], atol=1e-5)


def test_future_targets_do_not_change_earlier_logits(model):
    inputs = _inputs()
    changed = _with(inputs, target_in_ids=[[2, 5, 20, 21], [2, 8, 22, 23],
                                           [2, 11, 24, 25]])
    np.testing.assert_allclose(model(changed)[:, :2], model(inputs)[:, :2],
                               atol=1e-6)
    assert not np.allclose(model(changed)[:, 2:], model(inputs)[:, 2:])


def test_task_inputs_change_outputs(model):
    inputs = _inputs()
    expected = model(inputs)
    for key, value in [("src_lang", [1, 1, 1]), ("tgt_lang", [0, 0, 0]),
                       ("tags", [[0] * 6] * 3)]:
        assert not np.allclose(model(_with(inputs, **{key: value})), expected)


def test_encoder_and_decoder_task_encodings_differ(model):
    inputs = _inputs()
    args = (inputs["src_lang"], inputs["tgt_lang"], inputs["tags"])
    encoder_task = model.encoder_task_encoding(*args)
    decoder_task = model.decoder_task_encoding(*args)
    assert encoder_task.shape == decoder_task.shape == (3, CONFIG.hidden_dim)
    assert np.all(np.abs(encoder_task - decoder_task).max(-1) > 1e-6)


def _cached_decode(model, inputs, max_length=MAX_LENGTH, growing=False):
    encoded = model.encode(inputs["source_ids"], inputs["src_lang"],
                           inputs["tgt_lang"], inputs["tags"])
    state = model.initial_state(encoded, max_length, growing_cache=growing)
    log_probs, attention = [], []
    for t in range(inputs["target_in_ids"].shape[1]):
        step_log_probs, step_attention, state = model.step(
            inputs["target_in_ids"][:, t], state)
        log_probs.append(step_log_probs)
        attention.append(step_attention)
    return tf.stack(log_probs, 1), tf.stack(attention, 1), state


def _expected(model, inputs):
    logits, attention = model(inputs, return_attention=True)
    last_layer = tf.reduce_mean(attention[:, (L - 1) * H:], axis=1)
    return tf.nn.log_softmax(logits), last_layer  # [B,T,V], [B,T,S]


def test_decoding_state(model):
    """`step` counts positions in `time` and fills a KV cache of the length
    `initial_state` was given. (That cached steps give the full pass's
    outputs: `tests/harness/model_family_test.py`.)"""
    inputs = _inputs()
    _, _, state = _cached_decode(model, inputs)
    np.testing.assert_array_equal(state["time"], [4, 4, 4])
    for tensor in tf.nest.flatten(state):
        assert tensor.shape[0] == 3
    assert state["layer_0"]["self_key"].shape == (
        3, MAX_LENGTH, H, CONFIG.head_dim)


def test_growing_cache_gives_the_full_pass(model):
    """A growing cache starts empty, gains one position per `step`, and
    gives the full pass's log-probabilities and attention."""
    inputs = _inputs()
    log_probs, attention, state = _cached_decode(model, inputs, growing=True)
    expected_log_probs, expected_attention = _expected(model, inputs)
    np.testing.assert_allclose(log_probs, expected_log_probs, atol=1e-5)
    np.testing.assert_allclose(attention, expected_attention, atol=1e-6)
    steps = inputs["target_in_ids"].shape[1]
    for name in ("past_key", "past_value"):
        assert state["layer_0"][name].shape == (3, steps, H, CONFIG.head_dim)
    assert "self_key" not in state["layer_0"]
    empty = model.initial_state(
        model.encode(inputs["source_ids"], inputs["src_lang"],
                     inputs["tgt_lang"], inputs["tags"]), growing_cache=True)
    assert empty["layer_0"]["past_key"].shape[1] == 0


@pytest.mark.parametrize("growing", [False, True])
def test_cached_decoding_in_while_loop_with_beams(model, growing):
    """tf.function, None batch, tf.repeat tiling, tf.gather reordering,
    with either cache layout."""
    beams = 2
    spec = tf.TensorSpec

    @tf.function(input_signature=[
        spec([None, None], tf.int32), spec([None], tf.int32),
        spec([None], tf.int32), spec([None, CONFIG.num_tags], tf.int32),
        spec([None, None], tf.int32)])
    def decode(source_ids, src_lang, tgt_lang, tags, target_in_ids):
        encoded = model.encode(source_ids, src_lang, tgt_lang, tags)
        state = model.initial_state(encoded, MAX_LENGTH,
                                    growing_cache=growing)
        state = tf.nest.map_structure(
            lambda t: tf.repeat(t, beams, axis=0), state)
        targets = tf.repeat(target_in_ids, beams, axis=0)  # [N, T]
        rows = tf.shape(targets)[0]
        reverse = tf.reverse(tf.range(rows), [0])

        def body(t, state, origin, outputs):
            # Row n of the state now holds original row origin[n].
            ids = tf.gather(targets[:, t], origin)
            log_probs, _, state = model.step(ids, state)
            log_probs = tf.scatter_nd(origin[:, None], log_probs,
                                      tf.shape(log_probs))
            state = tf.nest.map_structure(
                lambda s: tf.gather(s, reverse), state)
            return (t + 1, state, tf.gather(origin, reverse),
                    outputs.write(t, log_probs))

        length = tf.shape(targets)[1]
        loop_vars = (0, state, tf.range(rows),
                     tf.TensorArray(tf.float32, size=length))
        _, _, _, outputs = tf.while_loop(
            lambda t, *_: t < length, body, loop_vars,
            shape_invariants=(
                tf.TensorShape([]),
                tf.nest.map_structure(state_shape_invariant, state),
                tf.TensorShape([None]), tf.TensorShape(None)))
        return tf.transpose(outputs.stack(), [1, 0, 2])  # [N, T, V]

    inputs = _inputs()
    log_probs = decode(*(inputs[k] for k in (
        "source_ids", "src_lang", "tgt_lang", "tags", "target_in_ids")))
    expected, _ = _expected(model, inputs)
    np.testing.assert_allclose(log_probs,
                               tf.repeat(expected, beams, axis=0), atol=1e-5)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision(model, policy):
    mixed = TaskSpaceTransformer(CONFIG, dtype=policy)
    mixed.set_weights(model.get_weights())
    inputs = _inputs()
    expected, _ = _expected(model, inputs)
    log_probs, attention, state = _cached_decode(mixed, inputs)
    assert log_probs.dtype == attention.dtype == tf.float32
    assert state["layer_0"]["self_key"].dtype == mixed.compute_dtype
    np.testing.assert_allclose(log_probs, expected, atol=0.1)
    # The cached step and the full pass compute the same sums with other
    # shapes (and, on AVX-512, other kernels), so they agree only up to
    # rounding in the compute dtype: a few units in the last place at the
    # logits' magnitude (log-softmax at most doubles an error). A cache bug
    # is off by whole nats.
    logits = mixed(inputs)
    tolerance = 4 * _epsilon(mixed.compute_dtype) * np.abs(logits).max()
    np.testing.assert_allclose(log_probs, _expected(mixed, inputs)[0],
                               atol=tolerance)


def _epsilon(dtype):
    """Machine epsilon of a floating dtype name (bfloat16 included)."""
    import ml_dtypes

    return float(ml_dtypes.finfo(getattr(ml_dtypes, dtype, dtype)).eps)


def test_config_round_trip_and_checkpoint(model, tmp_path):
    config = json.loads(json.dumps(model.get_config()))
    clone = TaskSpaceTransformer.from_config(config)
    assert clone.config == model.config
    assert len(clone.weights) == len(model.weights)
    model.save_weights(str(tmp_path / "ckpt"))
    clone.load_weights(str(tmp_path / "ckpt"))  # before any call
    inputs = _inputs()
    np.testing.assert_allclose(clone(inputs), model(inputs), atol=1e-6)


def test_fit_overfits_two_sentences():
    tf.random.set_seed(1)
    model = TaskSpaceTransformer(CONFIG.replace(num_layers=1))
    inputs = _inputs()
    features = {k: v[:2] for k, v in inputs.items()}
    labels = tf.constant([[5, 6, 7, 3], [8, 9, 3, 0]])  # target_out_ids
    weights = tf.cast(labels != 0, tf.float32)
    dataset = tf.data.Dataset.from_tensor_slices(
        (features, labels, weights)).batch(2).repeat()
    model.compile(keras.optimizers.Adam(0.01),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(dataset, steps_per_epoch=10, epochs=2, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0], losses


def test_without_task_space():
    model = TaskSpaceTransformer(CONFIG.replace(use_task_space=False))
    assert model.encoder_task_encoding is None
    inputs = _inputs()
    plain = {k: inputs[k] for k in ("source_ids", "target_in_ids")}
    np.testing.assert_allclose(model(plain), model(inputs), atol=0)
    log_probs, _, state = _cached_decode(model, inputs)
    assert "decoder_task" not in state
    np.testing.assert_allclose(log_probs, _expected(model, inputs)[0],
                               atol=1e-5)


def test_bad_inputs_raise(model):
    inputs = _inputs()
    with pytest.raises(ValueError, match="inputs lack \\['tags'\\]"):
        model({k: v for k, v in inputs.items() if k != "tags"})
    with pytest.raises(ValueError, match="required when use_task_space"):
        model.encode(inputs["source_ids"])
    with pytest.raises(ValueError, match="unknown language 'jp'"):
        CONFIG.task_features("jp", "en")
    with pytest.raises(ValueError, match="unknown preset"):
        TaskSpaceTransformer.from_preset("transformer_medium")
    with pytest.raises(TypeError, match="config must be"):
        TaskSpaceTransformer("transformer_tiny")
