import json

import pytest
import tensorflow as tf

from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf.config import apply_overrides
from gnmt_tf.models.gnmt.presets import get_preset
from gnmt_tf.training.metrics_log import read_metrics
from gnmt_tf.models.gnmt.training import train_gnmt
from gnmt_tf.training.trainer import make_strategy


def _checkpoint_steps(model_dir):
    """`(every, last)`: the checkpoint interval and last step of a model
    dir's training run (the tiny model's: tests/conftest.py)."""
    train = json.loads((model_dir / "config.json").read_text())["train"]
    return train["checkpoint_every"], train["train_steps"]


def test_trained_model_dir_layout(tiny_model_dir):
    config = json.loads((tiny_model_dir / "config.json").read_text())
    assert config["model_type"] == "gnmt"
    assert config["model"]["vocabulary_size"] <= 100
    assert (tiny_model_dir / "spm.model").exists()
    _, last = _checkpoint_steps(tiny_model_dir)
    assert tf.train.latest_checkpoint(str(tiny_model_dir / "checkpoints")).endswith(f"-{last}")
    progress = json.loads((tiny_model_dir / "progress.json").read_text())
    assert progress["step"] == last and progress["target_tokens"] > 0


def _validation_losses(model_dir):
    return [row.step for row in read_metrics(model_dir)
            if (row.split, row.metric) == ("validation", "loss")]


def test_resume_continues_and_keeps_architecture(toy_data_dir, tmp_path,
                                                 capsys):
    model_config, train_config = get_preset("gnmt_tiny")
    model_config = apply_overrides(model_config, ["vocabulary_size=100"])
    first = apply_overrides(train_config, ["train_steps=10", "checkpoint_every=5"])
    result = train_gnmt(tmp_path, toy_data_dir, "en", "de", model_config, first)
    assert result.steps == 10 and result.resumed_from is None
    assert _validation_losses(tmp_path) == [5, 10]
    assert "step 10  validation loss " in capsys.readouterr().err
    # A resumed run ignores a different architecture and continues from step 10.
    wider = apply_overrides(model_config, ["hidden_dim=32"])
    second = apply_overrides(train_config, ["train_steps=15", "checkpoint_every=5"])
    result = train_gnmt(tmp_path, toy_data_dir, "en", "de", wider, second)
    assert result.resumed_from.endswith("ckpt-10") and result.steps == 15
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model"]["hidden_dim"] == model_config.hidden_dim
    # The validation losses of both runs, in one file.
    assert _validation_losses(tmp_path) == [5, 10, 15]
    assert "step 15  validation loss " in capsys.readouterr().err


def test_time_budget_already_spent_trains_nothing(toy_data_dir, tiny_model_dir, tmp_path):
    import shutil

    copy = tmp_path / "m"
    shutil.copytree(tiny_model_dir, copy)
    _, last = _checkpoint_steps(copy)
    (copy / "progress.json").write_text(
        json.dumps({"step": last, "train_seconds": 600.0, "target_tokens": 1.0}))
    model_config, train_config = get_preset("gnmt_tiny")
    train_config = apply_overrides(train_config, [f"train_steps={last + 70}",
                                                  "max_minutes=5"])
    result = train_gnmt(copy, toy_data_dir, "en", "de", model_config, train_config)
    assert result.steps == last


def _truncate(model_dir, step):
    for data in (model_dir / "checkpoints").glob(f"ckpt-{step}.data*"):
        data.write_bytes(data.read_bytes()[:7])


def test_truncated_latest_checkpoint_falls_back(tiny_model_dir, tmp_path,
                                                capsys):
    import shutil

    copy = tmp_path / "m"
    shutil.copytree(tiny_model_dir, copy)
    every, last = _checkpoint_steps(copy)
    _truncate(copy, last)
    model_dir_lib.load_model(copy)
    err = capsys.readouterr().err
    assert "cannot restore checkpoint" in err and f"ckpt-{last}" in err
    assert "restored " in err and (
        f"ckpt-{last - every}, the newest readable one" in err)


def test_no_readable_checkpoint_is_a_clear_error(tiny_model_dir, tmp_path):
    import shutil

    copy = tmp_path / "m"
    shutil.copytree(tiny_model_dir, copy)
    every, last = _checkpoint_steps(copy)
    for step in range(every, last + 1, every):
        _truncate(copy, step)
    with pytest.raises(ValueError,
                       match=f"cannot restore checkpoint .*ckpt-{last} .nor "
                             "any older one"):
        model_dir_lib.load_model(copy)


def test_training_resumes_from_the_newest_readable_checkpoint(
        tiny_model_dir, toy_data_dir, tmp_path, capsys):
    import shutil

    copy = tmp_path / "m"
    shutil.copytree(tiny_model_dir, copy)
    every, last = _checkpoint_steps(copy)
    _truncate(copy, last)
    model_config, train_config = get_preset("gnmt_tiny")
    train_config = apply_overrides(train_config, [
        f"train_steps={last - every + 5}", "checkpoint_every=10"])
    result = train_gnmt(copy, toy_data_dir, "en", "de", model_config,
                        train_config)
    assert result.resumed_from.endswith(f"ckpt-{last - every}")
    assert result.steps == last - every + 5
    assert "restored " in capsys.readouterr().err


def test_missing_model_dir_and_strategy_names(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a model directory"):
        model_dir_lib.load_model(tmp_path)
    assert make_strategy("default") is tf.distribute.get_strategy()
    with pytest.raises(ValueError, match="unknown strategy"):
        make_strategy("tpu")


def test_mirrored_strategy_trains_exact_step_count(toy_data_dir, tmp_path):
    model_config, train_config = get_preset("gnmt_tiny")
    model_config = apply_overrides(model_config, ["vocabulary_size=100"])
    # train_steps below checkpoint_every: training still stops at train_steps.
    train_config = apply_overrides(train_config, ["train_steps=3", "checkpoint_every=10"])
    result = train_gnmt(tmp_path, toy_data_dir, "en", "de", model_config, train_config,
                        strategy="mirrored")
    assert result.steps == 3
    assert tf.train.latest_checkpoint(str(tmp_path / "checkpoints")).endswith("-3")


@pytest.mark.slow  # XLA compiles one program per batch shape: minutes
def test_xla_step_on_bucket_padded_batches_trains_the_same_model(
        toy_data_dir, tmp_path):
    # Padding to the bucket boundary only adds masked positions, and XLA only
    # fuses the same float32 ops: the losses must agree to float32 rounding
    # over a few steps (a mask that let padding in would move them by far more).
    model_config, train_config = get_preset("gnmt_tiny")
    model_config = apply_overrides(model_config, ["vocabulary_size=100"])
    losses = {}
    for jit in (False, True):
        config = apply_overrides(train_config, [
            "train_steps=4", "checkpoint_every=4", f"jit_compile={jit}"])
        train_gnmt(tmp_path / str(jit), toy_data_dir, "en", "de",
                   model_config, config, log_every=2)
        losses[jit] = [row.value for row in read_metrics(tmp_path / str(jit))
                       if row.metric == "loss"]
    assert len(losses[True]) == 3  # steps 2 and 4, validation at 4
    assert losses[True] == pytest.approx(losses[False], rel=1e-4)


def test_jit_compile_option_reaches_keras():
    from gnmt_tf.models.gnmt.model import GNMT
    from gnmt_tf.training.trainer import compile_model

    model_config, train_config = get_preset("gnmt_tiny")
    for jit in (False, True):
        model = GNMT(model_config)
        compile_model(model, apply_overrides(train_config,
                                             [f"jit_compile={jit}"]))
        assert model.jit_compile is jit
