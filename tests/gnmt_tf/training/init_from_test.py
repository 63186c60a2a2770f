import json

import numpy as np
import pytest

from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf.cli.main import main
from gnmt_tf.config import apply_overrides
from gnmt_tf.models.gnmt.presets import get_preset
from gnmt_tf.training.init_from import INIT_KEY
from gnmt_tf.models.gnmt.training import train_gnmt


def _weights(model_dir):
    model, _, _ = model_dir_lib.load_model(model_dir)
    return model.get_weights()


@pytest.fixture(scope="module")
def continued(tiny_model_dir, toy_data_dir, tmp_path_factory):
    """A run of 2 steps at a negligible learning rate started from the
    tiny model, with a different architecture asked for (it must be
    ignored: the source's is used)."""
    out = tmp_path_factory.mktemp("continued") / "run"
    model_config, train_config = get_preset("gnmt_tiny")
    train_config = apply_overrides(train_config, [
        "train_steps=2", "checkpoint_every=2", "learning_rate=1e-9",
        "warmup_steps=0", "bleu_every=0"])
    train_gnmt(out, toy_data_dir, "en", "de", model_config, train_config,
               init_from=tiny_model_dir)
    return out


def test_a_run_started_from_a_model_starts_from_its_weights(
        tiny_model_dir, continued):
    source, trained = _weights(tiny_model_dir), _weights(continued)
    assert [w.shape for w in trained] == [w.shape for w in source]
    # Adam moves each weight by about the learning rate per step, whatever
    # the gradient: 2 steps at 1e-9 leave them equal to float32 precision.
    for a, b in zip(trained, source):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_it_takes_the_vocabulary_and_records_the_source(tiny_model_dir,
                                                       continued):
    assert ((continued / "spm.model").read_bytes()
            == (tiny_model_dir / "spm.model").read_bytes())
    config = json.loads((continued / "config.json").read_text())
    source = json.loads((tiny_model_dir / "config.json").read_text())
    assert config["model"] == source["model"]
    record = config[INIT_KEY]
    progress = json.loads((tiny_model_dir / "progress.json").read_text())
    assert record["history"]["steps"] == progress["step"]
    assert record["history"]["train_seconds"] == progress["train_seconds"]


def test_a_resumed_run_keeps_its_own_weights(tiny_model_dir, toy_data_dir,
                                             tmp_path):
    model_config, train_config = get_preset("gnmt_tiny")
    train_config = apply_overrides(train_config, [
        "train_steps=2", "checkpoint_every=2", "learning_rate=0.01",
        "warmup_steps=0", "bleu_every=0"])
    run = tmp_path / "run"
    train_gnmt(run, toy_data_dir, "en", "de", model_config, train_config,
               init_from=tiny_model_dir)
    trained = _weights(run)
    assert any(np.abs(a - b).max() > 1e-3
               for a, b in zip(trained, _weights(tiny_model_dir)))
    # Already at step 2: nothing is trained and nothing is re-initialised.
    train_gnmt(run, toy_data_dir, "en", "de", model_config, train_config,
               init_from=tiny_model_dir)
    for a, b in zip(_weights(run), trained):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("argv, message", [
    (["--vocab", "x.model"], "leave out --vocab"),
    (["--refine-rl"], "does not go with --refine-rl"),
])
def test_cli_errors_are_one_line(argv, message, tiny_model_dir, tmp_path,
                                 capsys):
    code = main(["train", "--model-dir", str(tmp_path / "m"),
                 "--init-from", str(tiny_model_dir), *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_a_model_of_another_type_is_refused(tmp_path):
    from gnmt_tf.training.init_from import read_source

    (tmp_path / "config.json").write_text(json.dumps(
        {"model_type": "task_space", "model": {}}))
    with pytest.raises(ValueError, match="is a task_space model"):
        read_source(tmp_path, "gnmt")


def test_a_task_space_run_starts_from_a_task_space_model(
        ts_model_dir, multiway_dir, tmp_path):
    """The Transformer trainer takes `init_from` as the GNMT one does: the
    source's weights (2 steps at a negligible rate leave them equal), its
    vocabulary and architecture (a different one asked for is ignored), and
    its directions unless others are given."""
    from gnmt_tf.models.task_space.training import TaskSpaceOptions
    from gnmt_tf.models.task_space.training import get_preset as ts_preset
    from gnmt_tf.models.task_space.training import train_task_space

    model_config, train_config = ts_preset("transformer_tiny")
    model_config = model_config.replace(vocabulary_size=60, num_layers=1)
    train_config = apply_overrides(train_config, [
        "train_steps=2", "checkpoint_every=2", "learning_rate=1e-9",
        "warmup_steps=0"])
    run = tmp_path / "run"
    train_task_space(run, multiway_dir, "en-fr,de-cs", model_config,
                     train_config, TaskSpaceOptions(validation_lines=0),
                     log_every=1000, init_from=ts_model_dir)
    for a, b in zip(_weights(run), _weights(ts_model_dir), strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    assert ((run / "spm.model").read_bytes()
            == (ts_model_dir / "spm.model").read_bytes())
    config = json.loads((run / "config.json").read_text())
    source = json.loads((ts_model_dir / "config.json").read_text())
    assert config["model"] == source["model"]
    assert config[INIT_KEY]["history"]["steps"] == json.loads(
        (ts_model_dir / "progress.json").read_text())["step"]


def test_a_task_space_run_refuses_a_gnmt_source(tiny_model_dir,
                                                multiway_dir, tmp_path):
    from gnmt_tf.models.task_space.training import train_task_space

    with pytest.raises(ValueError, match="is a gnmt model"):
        train_task_space(tmp_path / "run", multiway_dir, "en-fr",
                         init_from=tiny_model_dir)
