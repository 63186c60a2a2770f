import json

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf
import tf_keras as keras

from gnmt_tf.cli.main import main as cli_main
from gnmt_tf.config import GNMTConfig
from gnmt_tf.models.gnmt.model import GNMT
from gnmt_tf.training.rl_refinement import RLOptions
from gnmt_tf.training.rl_refinement import draw_hypotheses
from gnmt_tf.training.rl_refinement import gleu_rewards
from gnmt_tf.training.rl_refinement import mixed_loss
from gnmt_tf.training.rl_refinement import refine_rl
from gnmt_tf.training.rl_refinement import sequence_log_probs

EOS, BOS = GNMTConfig.eos_id, GNMTConfig.bos_id  # 3, 2


class _WordIds:
    """A stand-in vocabulary: id `i` is the word `w<i>`."""

    def decode(self, rows):
        return [" ".join(f"w{i}" for i in row) for row in rows]


def test_gleu_rewards_pair_each_hypothesis_with_its_reference():
    # Two sentences, K = 2. Rows stop at the end token (2) or a pad (0).
    hypotheses = np.array([[5, 6, 2, 0], [5, 9, 9, 2],
                           [7, 0, 0, 0], [8, 7, 2, 7]])
    references = np.array([[5, 6, 2], [7, 2, 0]])
    rewards = gleu_rewards(hypotheses, references, 2, _WordIds(), eos_id=2)
    # [5 6] = ref 1: 1. [5 9 9] vs [5 6]: 1 match of max(6, 3) n-grams.
    # [7] = ref 2: 1. [8 7] vs [7]: 1 match of max(3, 1).
    np.testing.assert_allclose(rewards, [1.0, 1 / 6, 1.0, 1 / 3], rtol=1e-6)
    assert rewards.dtype == np.float32


def test_mixed_loss_baseline_and_empty_slots():
    rewards = tf.constant([1.0, 0.0, 0.5, 0.5])
    log_probs = tf.Variable([-1.0, -2.0, -1.0, -3.0])
    reference = tf.Variable([-4.0, -6.0])
    with tf.GradientTape() as tape:
        loss, ml, rl = mixed_loss(0.5, reference, log_probs, rewards,
                                  tf.constant([True] * 4), 2)
    grad_hyp, grad_ref = tape.gradient(loss, [log_probs, reference])
    # Advantages: sentence 1 +-0.5, sentence 2 (equal rewards) 0; over the 4
    # hypotheses: -(0.5 * -1 - 0.5 * -2) / 4.
    assert float(rl) == pytest.approx(-0.5 / 4)
    assert float(ml) == pytest.approx(5.0)
    assert float(loss) == pytest.approx(0.5 * 5.0 - 0.5 / 4)
    np.testing.assert_allclose(grad_hyp, [-0.125, 0.125, 0.0, 0.0])
    np.testing.assert_allclose(grad_ref, [-0.25, -0.25])
    # An empty n-best slot takes no part: the baseline of sentence 1 is
    # then its one valid reward, so nothing pushes.
    _, _, rl = mixed_loss(0.0, reference, log_probs, rewards,
                          tf.constant([True, False, True, True]), 2)
    assert float(rl) == 0.0


def _toy_gnmt():
    keras.utils.set_random_seed(0)
    model = GNMT(GNMTConfig(vocabulary_size=12, num_encoder_layers=2,
                            num_decoder_layers=2, hidden_dim=8,
                            attention_dim=8, dropout=0.0))
    model(model.dummy_inputs())
    return model


def test_rl_gradient_pushes_up_the_higher_reward_hypothesis():
    model = _toy_gnmt()
    source = tf.constant([[5, 6, EOS], [5, 6, EOS]])
    good = [7, 8, EOS]
    bad = [9, 10, EOS]
    ids = tf.constant([good, bad])
    lengths = tf.constant([3, 3])
    features = {"source_ids": source,
                "target_in_ids": tf.concat([tf.fill([2, 1], BOS), ids[:, :-1]],
                                           1)}

    def log_probs():
        return sequence_log_probs(model(features), ids, lengths)

    before = log_probs().numpy()
    optimizer = keras.optimizers.SGD(0.5)
    for _ in range(3):
        with tf.GradientTape() as tape:
            loss, _, _ = mixed_loss(0.0, tf.zeros([1]), log_probs(),
                                    tf.constant([1.0, 0.0]),
                                    tf.constant([True, True]), 2)
        optimizer.minimize(loss, model.trainable_variables, tape=tape)
    after = log_probs().numpy()
    assert after[0] > before[0] and after[1] < before[1]


@pytest.mark.parametrize("sampler", ["sample", "beam"])
def test_draw_hypotheses_shapes_and_limits(sampler):
    model = _toy_gnmt()
    source = tf.constant([[5, 6, 7, EOS], [8, EOS, 0, 0]])
    options = RLOptions(num_samples=3, sampler=sampler, max_length_ratio=1.5)
    ids, lengths = draw_hypotheses(model, {"source_ids": source}, options)
    ids, lengths = ids.numpy(), lengths.numpy()
    assert ids.shape[0] == 6 and lengths.shape == (6,)
    limits = np.repeat([6, 3], 3)  # ceil(1.5 * source length)
    assert (lengths <= limits).all() and (lengths >= 1).all()
    for row, length, limit in zip(ids, lengths, limits):
        assert not row[length:].any()  # 0-padded after the hypothesis
        assert row[length - 1] == EOS or length == limit
        assert EOS not in row[:length - 1]
    if sampler == "beam":  # an n-best list: distinct hypotheses
        for b in range(2):
            rows = {tuple(ids[b * 3 + k, :lengths[b * 3 + k]])
                    for k in range(3)}
            assert len(rows) == 3


def test_options_are_checked():
    for bad in ({"alpha": -0.1}, {"alpha": 1.5}, {"num_samples": 1},
                {"sampler": "greedy"}, {"max_length_ratio": 0}):
        with pytest.raises(ValueError):
            RLOptions(**bad)


@pytest.mark.slow  # two traces of the RL step: minutes on a shared CPU
def test_refinement_runs_resumes_and_keeps_the_ml_model(
        tiny_model_dir, toy_data_dir, tmp_path):
    from gnmt_tf.model_dir import load_model
    from gnmt_tf.translator import SearchOptions, Translator

    before = {p.name: p.read_bytes()
              for p in (tiny_model_dir / "checkpoints").iterdir()}
    out = tmp_path / "refined"
    settings = ["max_tokens=64", "checkpoint_every=2", "train_steps=3"]
    result = refine_rl(tiny_model_dir, out, toy_data_dir,
                       RLOptions(num_samples=2), overrides=settings,
                       log_every=1)
    assert result.steps == 3 and result.resumed_from is None
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "gnmt"
    assert config["rl_refinement"]["options"]["num_samples"] == 2
    assert config["train"]["train_steps"] == 3
    assert (out / "progress.json").exists()
    # The ML directory is untouched; the refined one loads and differs.
    assert {p.name: p.read_bytes()
            for p in (tiny_model_dir / "checkpoints").iterdir()} == before
    refined, _, _ = load_model(out)
    ml, _, _ = load_model(tiny_model_dir)
    assert any(not np.array_equal(a, b)
               for a, b in zip(refined.get_weights(), ml.get_weights()))
    texts = Translator.from_model_dir(out).translate(
        ["A big dog runs."], SearchOptions(beam_size=1))
    assert isinstance(texts[0], str)
    # A rerun resumes: one more step, the saved options kept.
    result = refine_rl(tiny_model_dir, out, toy_data_dir,
                       RLOptions(num_samples=3),
                       overrides=["train_steps=4"], log_every=1)
    assert result.steps == 4 and result.resumed_from.endswith("ckpt-3")
    config = json.loads((out / "config.json").read_text())
    assert config["rl_refinement"]["options"]["num_samples"] == 2


def test_refinement_errors(tmp_path, capsys):
    def error(args):
        assert cli_main(["train", *args]) == 2
        return capsys.readouterr().err.strip().splitlines()[-1]

    ml = tmp_path / "ml"  # the checks come before any weights are read
    ml.mkdir()
    (ml / "config.json").write_text('{"model_type": "gnmt"}')
    assert "has no config.json" in error(
        ["--refine-rl", "--model-dir", str(tmp_path)])
    assert "is not a model directory" in error(
        ["--refine-rl", "--model-dir", str(tmp_path / "missing")])
    assert "is the ML model directory" in error(
        ["--refine-rl", "--model-dir", str(ml), "--output-dir", str(ml)])
    assert "--alpha only go with --refine-rl" in error(
        ["--model-dir", str(tmp_path / "m"), "--alpha", "0.1"])
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.json").write_text('{"model_type": "gnmt"}')
    assert "holds another model" in error(
        ["--refine-rl", "--model-dir", str(ml), "--output-dir", str(other)])
    assert not (tmp_path / "ml-rl").exists()
    for alpha in ("-0.1", "1.5", "nan"):
        with pytest.raises(SystemExit) as exit_info:
            cli_main(["train", "--refine-rl", "--model-dir", str(ml),
                      "--alpha", alpha])
        assert exit_info.value.code == 2
        assert "--alpha: must be" in capsys.readouterr().err


@pytest.mark.slow  # traces the RL step of a Transformer: minutes
def test_refinement_of_a_task_space_model(ts_model_dir, multiway_dir,
                                          tmp_path):
    from gnmt_tf.model_dir import load_model

    out = tmp_path / "ts-rl"
    result = refine_rl(ts_model_dir, out, multiway_dir,
                       RLOptions(num_samples=2, sampler="beam"),
                       overrides=["max_tokens=64", "train_steps=2"])
    assert result.steps == 2
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "task_space_transformer"
    assert config["task_space"] == json.loads(
        (ts_model_dir / "config.json").read_text())["task_space"]
    model, _, _ = load_model(out)
    assert model.default_task["src_lang"] in ("en", "de")
