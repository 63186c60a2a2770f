"""Settings files (`--config run.yaml`): parsing, errors, precedence of
`--set`, and the two commands that take them."""

import json

import pytest

from gnmt_tf.cli.main import main
from gnmt_tf.config import split_overrides
from gnmt_tf.config_file import layered, read_settings
from gnmt_tf.models.gnmt.presets import get_preset


def test_yaml_values_read_as_set_would_spell_them(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("# a run\nhidden_dim: 32\nlearning_rate: 1.0e-3\n"
                    "clip_cell: true\nlogit_clip: null\n"
                    "languages: [en, de]\n")
    assert read_settings(path) == [
        "hidden_dim=32", "learning_rate=0.001", "clip_cell=true",
        "logit_clip=none", "languages=en,de"]
    (tmp_path / "empty.yaml").write_text("# nothing yet\n")
    assert read_settings(tmp_path / "empty.yaml") == []


def test_json_is_read_too(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"train_steps": 7, "tie_embeddings": False}))
    assert read_settings(path) == ["train_steps=7", "tie_embeddings=false"]


@pytest.mark.parametrize("name, text, message", [
    ("bad.yaml", "hidden_dim: [1,\n", "bad.yaml: not valid YAML: "),
    ("bad.json", "{'a': 1}", "bad.json: not valid JSON: "),
    ("list.yaml", "- hidden_dim\n", "expected a mapping of settings"),
    ("nested.yaml", "model:\n  hidden_dim: 3\n",
     "model: expected a number, string, boolean or list, got a mapping"),
])
def test_bad_files_are_one_line_errors(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError) as error:
        read_settings(path)
    assert message in str(error.value)
    assert len(str(error.value).splitlines()) == 1


def test_set_overrides_the_file_and_unknown_keys_name_the_file(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("hidden_dim: 32\ntrain_steps: 50\n")
    model, train = layered(split_overrides, get_preset("gnmt_tiny"), path,
                           ["train_steps=7"])
    assert model.hidden_dim == 32 and train.train_steps == 7
    path.write_text("hiden_dim: 32\n")
    with pytest.raises(ValueError, match=f"^{path}: unknown setting "
                                         "'hiden_dim'; known: "):
        layered(split_overrides, get_preset("gnmt_tiny"), path, [])


def _capture(monkeypatch, module, name):
    """Replaces the training function `module.name` by one that records
    its arguments."""
    calls = []

    def fake(*args, **kwargs):
        calls.append((args, kwargs))
        raise SystemExit(0)

    monkeypatch.setattr(module, name, fake)
    return calls


def test_train_takes_a_config_file(tmp_path, monkeypatch, capsys):
    from gnmt_tf.models.gnmt import training

    calls = _capture(monkeypatch, training, "train_gnmt")
    path = tmp_path / "run.yaml"
    path.write_text("hidden_dim: 24\ntrain_steps: 50\nbleu_every: 5\n")
    with pytest.raises(SystemExit):
        main(["train", "--preset", "gnmt_tiny", "--model-dir",
              str(tmp_path / "m"), "--config", str(path), "--set",
              "train_steps=9"])
    (_, _, _, _, model_config, train_config), _ = calls[0]
    assert model_config.hidden_dim == 24
    assert train_config.train_steps == 9 and train_config.bleu_every == 5

    path.write_text("hidden_dim: 24\nnot_a_setting: 1\n")
    code = main(["train", "--preset", "gnmt_tiny", "--model-dir",
                 str(tmp_path / "m"), "--config", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"gnmt-tf train: error: {path}: unknown "
                             "setting 'not_a_setting'")


def test_task_space_train_takes_a_config_file(tmp_path, monkeypatch):
    from gnmt_tf.models.task_space import training

    calls = _capture(monkeypatch, training, "train_task_space")
    path = tmp_path / "run.yaml"
    path.write_text("languages: [en, de]\nvalidation_lines: 5\n"
                    "train_steps: 40\n")
    with pytest.raises(SystemExit):
        main(["task-space", "train", "--preset", "transformer_tiny",
              "--model-dir", str(tmp_path / "m"), "--config", str(path),
              "--set", "validation_lines=3"])
    (_, _, _, model_config, train_config, options), _ = calls[0]
    assert model_config.languages == ("en", "de")
    assert train_config.train_steps == 40 and options.validation_lines == 3
