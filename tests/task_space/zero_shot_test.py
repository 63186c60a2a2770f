"""Untrained directions of a task-space model are refused
(`task_space.zero_shot`, `gnmt-tf translate`)."""

import json
import shutil

import pytest

from task_space.zero_shot import check_direction

LANGUAGES = ("en", "de", "fr", "cs")


def test_trained_direction_passes(capsys):
    check_direction("en-de,en-fr", LANGUAGES, "en", "fr")
    check_direction("all-except:fr-cs", LANGUAGES, "cs", "fr")
    assert capsys.readouterr().err == ""


def test_untrained_direction_is_refused():
    with pytest.raises(ValueError, match="not trained on en-cs .only "
                                         "en-de,en-fr.*--allow-zero-shot"):
        check_direction("en-de,en-fr", LANGUAGES, "en", "cs", model="runs/m")
    with pytest.raises(ValueError, match="fr-cs"):
        check_direction("all-except:fr-cs", LANGUAGES, "fr", "cs")


def test_zero_shot_when_asked_warns(capsys):
    check_direction("en-de,en-fr", LANGUAGES, "en", "cs",
                    allow_zero_shot=True)
    assert "en-cs is zero-shot" in capsys.readouterr().err


def test_no_record_warns_only(capsys):
    check_direction(None, LANGUAGES, "en", "cs", model="old/model")
    assert "old/model does not record its training directions" in \
        capsys.readouterr().err


@pytest.fixture(scope="module")
def en_de_fr_model(multiway_dir, tmp_path_factory):
    """A transformer_tiny trained 2 steps on en-de and en-fr only."""
    from gnmt_tf.config import apply_overrides
    from task_space.training import (TaskSpaceOptions, get_preset,
                                     train_task_space)

    model_dir = tmp_path_factory.mktemp("en_de_fr")
    model_config, train_config = get_preset("transformer_tiny")
    model_config = model_config.replace(vocabulary_size=60)
    train_config = apply_overrides(train_config, ["train_steps=2",
                                                  "checkpoint_every=2"])
    train_task_space(model_dir, multiway_dir, "en-de,en-fr", model_config,
                     train_config, TaskSpaceOptions(validation_lines=0),
                     log_every=1000)
    return model_dir


def _translate(model_dir, tmp_path, capsys, *flags):
    from gnmt_tf.cli.main import main

    source = tmp_path / "in.txt"
    source.write_text("a dog runs\n")
    code = main(["translate", "--model", str(model_dir), "-i", str(source),
                 "--beam-size", "1", *flags])
    return code, capsys.readouterr()


def test_translate_refuses_an_untrained_direction(en_de_fr_model, tmp_path,
                                                  capsys):
    code, captured = _translate(en_de_fr_model, tmp_path, capsys,
                                "--src-lang", "en", "--tgt-lang", "cs")
    assert code == 2 and captured.out == ""
    assert captured.err.strip().endswith(
        "not trained on en-cs (only en-de,en-fr); pass --allow-zero-shot to "
        "translate it anyway")


def test_translate_zero_shot_on_request(en_de_fr_model, tmp_path, capsys):
    code, captured = _translate(en_de_fr_model, tmp_path, capsys,
                                "--src-lang", "en", "--tgt-lang", "cs",
                                "--allow-zero-shot")
    assert code == 0 and captured.out.count("\n") == 1
    assert "en-cs is zero-shot" in captured.err


def test_model_dir_without_a_record_still_translates(en_de_fr_model, tmp_path,
                                                     capsys):
    old = tmp_path / "old_model"
    shutil.copytree(en_de_fr_model, old)
    payload = json.loads((old / "config.json").read_text())
    del payload["task_space"]["directions"]
    (old / "config.json").write_text(json.dumps(payload))
    code, captured = _translate(old, tmp_path, capsys,
                                "--src-lang", "en", "--tgt-lang", "cs")
    assert code == 0 and captured.out.count("\n") == 1
    assert "does not record its training directions" in captured.err
